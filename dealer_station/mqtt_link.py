"""The MQTT link to the betting system: paho-mqtt 2.x, MQTT v5, QoS 1, a persistent session.

Callbacks run in paho's network thread and only enqueue (never touch the journal or the engine):
    ("mqtt", "connect_sent")      the socket is open and CONNECT goes out: the station's core
                                  watches for the CONNACK (station_broker.py)
    ("mqtt", "connected", session_present)   ("mqtt", "disconnected", reason)
    ("mqtt", "refused", reason, unanswered, kind)  a CONNACK refusal, a connection that failed
                                  (TLS, network), a publish or subscription refused: every time,
                                  the station says each cause once; `unanswered`: it ended a
                                  CONNECT that got no answer at all; `kind`: a station_types.Why
                                  code, what the station groups causes by (never the words)
    ("mqtt", "publish_refused", mid, reason, why)  a v5 PUBACK with an error (the ACL)
    ("mqtt", "puback", mid)                   ("mqtt", "command", payload, response_topic,
                                                correlation_data, mid, qos, user)
The link keeps no timer and no thread of its own: its state is paho's thread's alone.
Commands are acknowledged (PUBACK) only after the daemon has journaled them (manual ack), so a
crash between receipt and journal makes the broker deliver the command again.
"""
import json
import logging
import socket
import ssl
import sys

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from drivers.section import Key, Section

from controller.rights import sender_login

from .station_types import Why


def _check_config(cfg, errors):
    broker = cfg["broker"]
    if broker["tls"] and not broker["ca_file"]:
        errors.append("broker.ca_file: required when broker.tls is true")
    if bool(broker["cert_file"]) != bool(broker["key_file"]):
        errors.append("broker.key_file: a client certificate needs both cert_file and key_file")
    if broker["password"] and broker["password_file"]:
        errors.append("broker.password_file: give password or password_file, not both")
    if (broker["password"] or broker["password_file"]) and not broker["username"]:
        errors.append("broker.username: a password needs a username")
    if broker["reconnect_max_s"] < broker["reconnect_min_s"]:
        errors.append("broker.reconnect_max_s: must not be below reconnect_min_s")
    if broker["connack_timeout_s"] >= broker["keepalive_s"]:
        # paho gives a CONNECT up after keepalive_s: the watch would never speak, and the log
        # said "closed the connection before answering CONNECT (Keep alive timeout)", the client's
        errors.append(f"broker.connack_timeout_s: must be below broker.keepalive_s "
                      f"({broker['keepalive_s']}), got {broker['connack_timeout_s']}")


CONFIG = Section("broker", {
    "host": Key(str, "127.0.0.1", pattern=r"^[A-Za-z0-9._:\[\]-]{1,253}$"),
    "port": Key(int, 1883, lo=1, hi=65535),
    "username": Key(str, None),
    "password": Key(str, None, secret=True),
    "password_file": Key(str, None),
    "tls": Key(bool, False),
    "ca_file": Key(str, None),
    "cert_file": Key(str, None),
    "key_file": Key(str, None),
    "keepalive_s": Key(int, 15, lo=5, hi=600),
    "session_expiry_s": Key(int, 86400, lo=60, hi=7 * 86400),
    "message_expiry_s": Key(int, 86400, lo=60, hi=7 * 86400),
    "topic_prefix": Key(str, "dealer-station/v1", pattern=r"^[A-Za-z0-9_/-]{1,64}$"),
    "reconnect_min_s": Key(int, 1, lo=1, hi=60),
    "reconnect_max_s": Key(int, 10, lo=1, hi=600),
    "inflight": Key(int, 100, lo=1, hi=1000),
    # the v5 Receive Maximum: commands the broker hands the table before its PUBACKs (held until
    # each is journaled). The broker holds the rest in its one queue of this session, in arrival
    # order, where the loop's lanes cannot reach: at Mosquitto's 20 another login's command (or
    # the betting system's decision) published behind one login's 600 QoS 1 commands was handled
    # after 501-600 of them. Handed over, the lanes take it in turn. Mosquitto takes a v5 client's
    # value in place of its max_inflight_messages. The table holds this many unanswered commands
    # in memory (4 MB at 1000 of 4 KB), more where the broker overshoots it (Mosquitto 2.0.11
    # does while the table publishes its replies: docs/protocol.md, "Busy")
    "receive_maximum": Key(int, 1000, lo=20, hi=10000),
    # a CONNACK not come this long after CONNECT is said at once (paho itself waits keepalive_s):
    # the station core's watch (station_broker.py)
    "connack_timeout_s": Key(int, 5, lo=1, hi=60),
    # the loopback probe of the commands path (station_probe.py): a broker whose ACL lets the
    # table subscribe to `commands` but not read it drops every command and says nothing
    "probe_timeout_s": Key(int, 5, lo=1, hi=60),
    "probe_interval_s": Key(int, 60, lo=10, hi=3600),
}, _check_config)


class Topics:
    def __init__(self, prefix, table):
        base = f"{prefix}/{table}"
        self.events = f"{base}/events"
        self.status = f"{base}/status"
        self.commands = f"{base}/commands"
        self.replies = f"{base}/replies"


def no_delay(client):
    """Send small packets at once. Without TCP_NODELAY a PUBACK and the next PUBLISH queue behind
    each other until the broker's delayed ACK (40 ms on Linux): measured as 47-86 ms per command."""
    def opened(cl, userdata, sock):
        if getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.on_socket_open = opened


class SocketErrors:
    """Stands in for paho's logger (enable_logger): keeps its last error (a TLS alert from the
    broker, say), which paho otherwise only logs before calling on_disconnect with "Unspecified
    error". Cheap: paho formats nothing for the levels this ignores."""

    def __init__(self):
        self.last = None

    def log(self, level, fmt, *args):
        if level >= logging.ERROR:
            self.last = fmt % args


def describe_failure(exc, cfg):
    """One line for an operator: what failed, where, and for TLS which setting to look at."""
    where = f"{cfg['host']}:{cfg['port']}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (f"TLS with {where} failed: certificate verify failed: {exc.verify_message} "
                f"(the broker's certificate must be signed by broker.ca_file {cfg['ca_file']} "
                f"and name broker.host {cfg['host']})")
    if isinstance(exc, ssl.SSLError):
        return f"TLS with {where} failed: {exc.reason or exc} (broker.ca_file, cert_file, key_file)"
    if isinstance(exc, OSError):
        return f"cannot connect to {where}: {exc.strerror or exc}"
    return f"cannot connect to {where}"


def login(c, broker):
    """A paho client given [broker]'s user, password (or password file) and TLS: the daemon's
    link and bridge-check's edge connection log in alike."""
    if broker["username"]:
        password = broker["password"]
        if broker["password_file"]:
            with open(broker["password_file"]) as f:
                password = f.read().strip()
        c.username_pw_set(broker["username"], password)
    if broker["tls"]:
        c.tls_set(ca_certs=broker["ca_file"], certfile=broker["cert_file"],
                  keyfile=broker["key_file"], tls_version=ssl.PROTOCOL_TLS_CLIENT)


class MqttLink:
    def __init__(self, broker, table_id, enqueue, will_payload):
        self.cfg = broker
        self.topics = Topics(broker["topic_prefix"], table_id)
        self.enqueue = enqueue
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"dealer-station-{table_id}",
                        protocol=mqtt.MQTTv5, manual_ack=True)
        c.max_inflight_messages_set(broker["inflight"])
        c.max_queued_messages_set(0)
        c.reconnect_delay_set(broker["reconnect_min_s"], broker["reconnect_max_s"])
        login(c, broker)
        will = Properties(PacketTypes.WILLMESSAGE)
        will.ContentType = "application/json"
        c.will_set(self.topics.status, json.dumps(will_payload), qos=1, retain=True,
                   properties=will)
        c.on_connect = self._on_connect
        c.on_disconnect = self._on_disconnect
        c.on_connect_fail = self._on_connect_fail
        self._accepted = False          # this connection got its CONNACK
        self.last_status = None         # what close() did with its last status
        self._waiting = False           # CONNECT sent, nothing back yet
        self._errors = SocketErrors()
        c.enable_logger(self._errors)
        c.on_publish = self._on_publish
        c.on_subscribe = self._on_subscribe
        c.on_message = self._on_message
        no_delay(c)
        opened = c.on_socket_open
        c.on_socket_open = lambda cl, userdata, sock: (opened(cl, userdata, sock),
                                                       self._connect_sent())
        self.client = c

    # -- paho's thread: enqueue only -----------------------------------------------------------

    def _where(self):
        return f"{self.cfg['host']}:{self.cfg['port']}"

    def _connect_sent(self):
        """The socket is open and paho sends CONNECT now: a broker answers within milliseconds.
        A server that is not a broker (a web server, ssh, a database on the wrong port) answers
        never or with bytes paho cannot read, which paho alone reports only after keepalive_s as
        "Keep alive timeout" or at once as "Unspecified error". The station's core times the
        answer on the loop's own timer (a threading.Timer here raced paho's thread)."""
        self._waiting = True
        self.enqueue(("mqtt", "connect_sent"))

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        self._waiting = False
        if reason_code.is_failure:
            self._refused(str(reason_code), kind=Why.CONNACK)
            return
        self._accepted = True
        # No retained message at subscribe: a command left retained on the topic would otherwise
        # come again at every restart (with a new session), applied or refused each time.
        # commands/<user>: a staff member's own topic, which the broker's ACL lets only that
        # login write (docs/mosquitto/acl): the identity the staff rights trust
        opts = SubscribeOptions(qos=1, retainHandling=SubscribeOptions.RETAIN_DO_NOT_SEND)
        client.subscribe([(self.topics.commands, opts), (self.topics.commands + "/+", opts)])
        self.enqueue(("mqtt", "connected", bool(flags.session_present)))

    def _on_disconnect(self, client, userdata, flags, reason_code, properties):
        accepted, self._accepted = self._accepted, False
        error, self._errors.last = self._errors.last, None
        unanswered, self._waiting = self._waiting, False
        if accepted:
            self.enqueue(("mqtt", "disconnected", str(reason_code)))
            return
        if error is None and not unanswered:
            return      # paho 2.2's second call for one keepalive timeout: said already
        if error is None or not self.cfg["tls"]:
            # closed (or reset: a TLS-only listener given plain MQTT), or answered with bytes
            # that are not MQTT, before any CONNACK (not said when the station said this
            # CONNECT's silence already)
            self._refused(f"{self._where()} closed the connection before answering CONNECT "
                          f"({error or reason_code}): not an MQTT broker? (check broker.host and "
                          f"broker.port)", unanswered, Why.NOT_MQTT)
            return
        # dropped before its CONNACK: the broker refused the connection (a TLS client
        # certificate it requires, say)
        why = (f"the broker at {self.cfg['host']}:{self.cfg['port']} dropped the connection "
               f"before accepting it: {error}")
        if self.cfg["tls"]:
            why += " (broker.cert_file/key_file: does the broker require a client certificate?)"
        self._refused(why, unanswered, Why.TLS_DROPPED)

    def _on_connect_fail(self, client, userdata):
        # paho calls this from inside its `except OSError`: the exception being handled is why
        self._refused(describe_failure(sys.exc_info()[1], self.cfg), kind=Why.CONNECT_FAILED)

    def _on_publish(self, client, userdata, mid, reason_code, properties):
        if getattr(reason_code, "is_failure", False):
            # The broker took the message and threw it away (a v5 PUBACK with an error, e.g.
            # "Not authorized" from the ACL): not sent. Said once per cause, not per message.
            # The loop tells the station's own commands probe (its mid) from an event.
            self.enqueue(("mqtt", "publish_refused", mid, str(reason_code),
                          f"the broker refused a publish: {reason_code} (does the broker's ACL "
                          f"let user {self.cfg.get('username') or '(none)'!r} write this table's "
                          f"topics, {self.topics.events.rsplit('/', 1)[0]}/...?)"))
            return
        self.enqueue(("mqtt", "puback", mid))

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties):
        bad = [rc for rc in reason_codes if rc.is_failure]
        if bad:
            self._refused(f"the broker refused the subscription to {self.topics.commands}: "
                          f"{bad[0]} (does the broker's ACL let user "
                          f"{self.cfg.get('username') or '(none)'!r} read this table's commands?)",
                          kind=Why.SUBSCRIBE)

    def _refused(self, why, unanswered=False, kind=None):
        """Every time: the station says each cause once (station_broker.py), by its `kind`."""
        self.enqueue(("mqtt", "refused", why, unanswered, kind))

    def _on_message(self, client, userdata, msg):
        props = msg.properties
        rt = getattr(props, "ResponseTopic", None) if props else None
        cd = getattr(props, "CorrelationData", None) if props else None
        user = sender_login(msg.topic[len(self.topics.commands) + 1:] or None)
        self.enqueue(("mqtt", "command", msg.payload, rt, cd, msg.mid, msg.qos, user))

    # -- the main thread -----------------------------------------------------------------------

    def start(self):
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = self.cfg["session_expiry_s"]
        props.ReceiveMaximum = self.cfg["receive_maximum"]
        self.client.connect_async(self.cfg["host"], self.cfg["port"], keepalive=self.cfg["keepalive_s"],
                                  clean_start=False, properties=props)
        self.client.loop_start()

    def _props(self, expiry=True, correlation=None):
        p = Properties(PacketTypes.PUBLISH)
        p.ContentType = "application/json"
        if expiry:
            p.MessageExpiryInterval = self.cfg["message_expiry_s"]
        if correlation is not None:
            p.CorrelationData = correlation
        return p

    def publish_event(self, payload):
        """QoS 1 on the events topic. Returns the mid whose PUBACK marks it sent."""
        return self.client.publish(self.topics.events, payload, qos=1, properties=self._props()).mid

    def publish_probe(self, payload):
        """The station's loopback probe on its own `commands` (QoS 1, not retained), expiring
        with its deadline: a probe is never delivered to a later session. Returns its mid."""
        p = self._props(expiry=False)
        p.MessageExpiryInterval = self.cfg["probe_timeout_s"]
        return self.client.publish(self.topics.commands, payload, qos=1, properties=p).mid

    def publish_status(self, status):
        self.client.publish(self.topics.status, json.dumps(status), qos=1, retain=True,
                            properties=self._props(expiry=False))

    def reply(self, payload, response_topic=None, correlation=None):
        self.client.publish(response_topic or self.topics.replies, json.dumps(payload), qos=1,
                            properties=self._props(correlation=correlation))

    def backlog(self):
        """Messages paho holds for the broker (in flight or queued), read from the loop's thread
        (a dict's length: one atomic read)."""
        return len(getattr(self.client, "_out_messages", ()))

    def connected(self):
        """Whether paho holds a connection the broker accepted (read from the loop's thread)."""
        return self.client.is_connected()

    def ack(self, mid, qos):
        if qos:
            self.client.ack(mid, qos)

    def close(self, status=None, just_started=False):
        """Disconnect, with a last retained `status` (waited for up to 2 s) only on a connection
        the broker accepted: with none (never connected, or lost: the broker's will said
        offline already) there is nothing to wait for, and a stop waited 2 s for nothing.
        `just_started`: the link was started for this status alone (integrity_failed): it is
        sent and waited for while the first connection comes. `self.last_status` says what
        became of it: "acknowledged", "unacknowledged" or "not sent: not connected"."""
        if status is not None and (just_started or self.client.is_connected()):
            info = self.client.publish(self.topics.status, json.dumps(status), qos=1, retain=True,
                                       properties=self._props(expiry=False))
            try:
                info.wait_for_publish(timeout=2)
                self.last_status = "acknowledged" if info.is_published() else "unacknowledged"
            except (RuntimeError, ValueError):
                self.last_status = "unacknowledged"
        elif status is not None:
            self.last_status = "not sent: not connected"
        self.client.disconnect()
        self.client.loop_stop()
