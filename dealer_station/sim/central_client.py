"""A client of the central tier (the betting system's side of a studio): MQTT 3.1.1 (what the
central brokers speak), TLS checked against the studio's CA, a persistent session (clean session
off: QoS 1 messages wait for it while it is away), and failover: a lost or refused connection
moves it to the next central node, as a load balancer in front of the cluster would.

`renew(c)`: a session the central tier holds may be broken after the whole tier restarted (see
docs/scale.md: a consumer bound to a delivery subject nobody reads, its state restored behind or
ahead); a client that sees its commands or probes go unanswered while connected drops it by
connecting once with a clean session (the tier deletes the session and its consumers), then
persistently again, subscribing anew (new consumers). What was published in between is a gap
the client asks for with `resend`."""
import socket
import ssl
import threading
import time

import paho.mqtt.client as mqtt

from dealer_station.mqtt_link import no_delay


RESUBSCRIBE_S = 1.0      # a subscription the tier refused is asked again after this long


class _Client(mqtt.Client):
    """Remembers what each SUBSCRIBE asked for, so that a refused one can be asked again. A
    central node that cannot make a QoS 1 subscription's JetStream consumer in time (a 4 s API
    timeout, common in the first seconds after a whole-tier restart) answers it 0x80 and keeps
    the connection ("Unable to add JetStream consumer"): a client that does not read SUBACK codes
    stays connected and deaf to that topic (seen: a betting system's `replies` after its session's
    renewal; nats-server drops the refused subscription, so a new SUBSCRIBE makes it anew)."""

    def subscribe(self, topic, *args, **kwargs):
        # held until the mid is recorded: asked again from a timer thread, the SUBACK can come
        # back on the network thread before subscribe() returns (its refusal then unseen)
        with self.asking:
            result, mid = super().subscribe(topic, *args, **kwargs)
            if result == mqtt.MQTT_ERR_SUCCESS:
                self.asked[mid] = list(topic) if isinstance(topic, list) else [(topic, 1)]
            return result, mid


def central_client(client_id, central, on_connect=None, on_message=None, on_subscribe=None):
    """central: {"nodes": [(host, port), ...], "ca": path, "username": .., "password": ..}.
    Connects in the background (loop_start); returns the client. A subscription the tier
    refuses (SUBACK 0x80) is asked again after RESUBSCRIBE_S, while connected (a reconnection
    subscribes anew by itself); `c.refused` counts them; on_subscribe sees every SUBACK."""
    c = _Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                protocol=mqtt.MQTTv311, clean_session=False)
    c.asked, c.refused, c.asking = {}, 0, threading.RLock()
    c.username_pw_set(central["username"], central["password"])
    c.tls_set(ca_certs=central["ca"], cert_reqs=ssl.CERT_REQUIRED)
    c.reconnect_delay_set(0.2, 1)
    nodes = list(central["nodes"])
    at = [central.get("first", 0) % len(nodes)]

    def next_node(*_):
        at[0] = (at[0] + 1) % len(nodes)
        # paho refuses the public setters unless the socket is closed: it is, here
        c._host, c._port = nodes[at[0]]
    c.on_disconnect = next_node
    c.on_connect_fail = next_node
    c.renewed_at = None

    def connected(cl, u, f, rc, p):
        if getattr(cl, "_clean_session", False) and not rc.is_failure:
            # the clean half of a renewal: the old session is gone; now persistent again
            cl._clean_session = False
            _drop(cl)
            return
        with cl.asking:
            cl.asked.clear()    # SUBACKs of a connection gone never come
        if on_connect:
            on_connect(cl, u, f, rc, p)
    c.on_connect = connected

    def subscribed(cl, u, mid, codes, p):
        with cl.asking:
            topics = cl.asked.pop(mid, [])
        again = [t for t, rc in zip(topics, codes) if rc.is_failure]
        if again:
            cl.refused += len(again)
            connection = cl.socket()

            def ask():      # the same connection only: a new one subscribes everything anew
                if cl.is_connected() and cl.socket() is connection:
                    cl.subscribe(again)
            timer = threading.Timer(RESUBSCRIBE_S, ask)
            timer.daemon = True
            timer.start()
        if on_subscribe:
            on_subscribe(cl, u, mid, codes, p)
    c.on_subscribe = subscribed
    if on_message:
        c.on_message = on_message
    no_delay(c)
    # keepalive 30 s: paho waits that long for a CONNACK, which a central tier taking its
    # sessions back after a restart gave in 4-8 s here (a node gone resets the connection)
    c.connect_async(*nodes[at[0]], keepalive=30)
    c.loop_start()
    return c


RENEW_EVERY_S = 60.0     # at most one renewal a minute: a table cut off answers nothing either


def renew(c):
    """Start a renewal (see the module's text); False if one was made less than RENEW_EVERY_S
    ago or the client is not connected."""
    now = time.monotonic()
    if not c.is_connected() or (c.renewed_at is not None and now - c.renewed_at < RENEW_EVERY_S):
        return False
    c.renewed_at = now
    c._clean_session = True      # paho reads it at its next CONNECT
    _drop(c)
    return True


def _drop(c):
    """End the connection as a network failure would: paho's loop reconnects by itself."""
    sock = c.socket()
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
