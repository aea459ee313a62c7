"""`dealer-station bridge-check --config FILE`: is the studio's way into this table alive? Run by
a timer (systemd/dealer-station-bridge-check.timer, every minute) beside the edge Mosquitto.

The bridge's `commands` subscription on the central tier can deliver nothing while its
connection stays up (seen with NATS 2.9 after the whole tier restarted: a JetStream consumer
restored wedged, or one whose creation timed out behind a SUBACK Mosquitto does not read;
docs/scale.md). Nothing shows it at the table but silence, and the betting system's own session
renewal cannot mend the table's side. So: a probe is published on the central tier to the
table's `commands`, with the table's own credentials, and must arrive at the edge broker; if it
does not, the bridge's connection on the tier is taken over by its client id (the tier closes
the bridge's), and Mosquitto connects again, with a new session (cleansession true) and so a
new subscription. The probe is a `resend` from beyond any seq: the daemon answers it
`"seq": null` and publishes nothing (docs/protocol.md).

No takeover through the tier ends a bridge held deaf by a node restored stale (docs/scale.md);
then the edge's Mosquitto is restarted (`systemctl restart mosquitto.service`, allowed by
systemd/dealer-station-bridge-check.rules), which ends the bridge from the edge's side.

Its line and exit code: `ok` 0; `restarted` 1; `edge restarted` 5; `not restarted` 4 (with
--no-edge-restart); `unreachable` 0 (no central node answers: an
outage, the bridge's own retries cover it); `bridge down` 3 (the tier answers, the edge's retained
bridge state says 0: the bridge is in its own reconnection backoff, and a takeover would be a
false restart); an error 2, one line on stderr (a login refused by the tier or the edge, a
certificate the CA does not verify, the edge broker not answering, a bad config)."""
import json
import ssl
import sys
import threading
import uuid

import paho.mqtt.client as mqtt

from .config import ConfigError, read_config
from .mqtt_link import login

PROBE_WAIT_S = 10.0      # a probe sent again each 2 s: the bridge delivers in milliseconds
TAKEOVER_WAIT_S = 5.0    # a takeover that ends the bridge's connection: the edge says 0 at once
NEVER_SEQ = 2 ** 53 - 1  # a resend from here publishes nothing


class CheckError(Exception):
    """A misconfiguration or a refusal the check cannot mend: one line, exit 2."""


REFUSED = (4, 5, 0x86, 0x87)  # CONNACK: bad user name or password, not authorised (3.1.1, v5)


def _central(cfg, client_id, clean=True, timeout=8.0, nodes=None):
    """A connection to the first central node (of `nodes`, else all of them) that takes the
    table's credentials, or None when none answers. A node that answers with a refusal (login,
    TLS) is a CheckError: retrying every minute would never mend it, and it is not an outage."""
    from .bridge import CENTRAL, _password
    b, table = cfg["bridge"], cfg["table"]["id"]
    for address in b["central"] if nodes is None else nodes:
        m = CENTRAL.match(address)
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                        protocol=mqtt.MQTTv311, clean_session=clean)
        c.username_pw_set(b["username"] or table, _password(b))
        c.tls_set(ca_certs=b["ca_file"], certfile=b["cert_file"], keyfile=b["key_file"],
                  cert_reqs=ssl.CERT_REQUIRED)
        answer, answered = [], threading.Event()
        c.on_connect = lambda cl, u, f, rc, p, a=answer, e=answered: (a.append(rc), e.set())
        try:
            c.connect(m["host"].strip("[]"), int(m["port"]), keepalive=30)
        except ssl.SSLCertVerificationError as e:
            raise CheckError(f"the central node {address}: its certificate is not verified by "
                             f"bridge.ca_file {b['ca_file']}: {e.verify_message}") from None
        except ssl.SSLError as e:
            raise CheckError(f"the central node {address}: TLS failed ({e.reason}); "
                             f"bridge.ca_file {b['ca_file']}") from None
        except OSError:
            continue
        c.loop_start()
        if answered.wait(timeout):
            if not answer[0].is_failure:
                return c
            _close(c)
            if answer[0].value in REFUSED:
                raise CheckError(f"not authorised by {address} ({answer[0]}): "
                                 f"bridge.username / bridge.password(_file)")
            continue
        _close(c)
    return None


def _edge(cfg, on_message, subscribed, refused):
    broker, table = cfg["broker"], cfg["table"]["id"]
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2,
                    client_id=f"dealer-station-check-{table}-{uuid.uuid4().hex[:6]}")
    login(c, broker)
    base = f"{broker['topic_prefix']}/{table}"

    def connected(cl, u, f, rc, p):
        if rc.is_failure:
            refused.append(rc)
            subscribed.set()
            cl.disconnect()
        else:       # the commands (the probe) and the bridge's own state (bridge.py)
            cl.subscribe([(f"{base}/commands", 1), (f"{base}/bridge", 1)])

    def suback(cl, u, mid, codes, p):
        refused.extend(rc for rc in codes if rc.is_failure)
        subscribed.set()
    c.on_connect = connected
    c.on_subscribe = suback
    c.on_message = on_message
    try:
        c.connect(broker["host"], broker["port"])
    except OSError as e:
        raise CheckError(f"the edge broker {broker['host']}:{broker['port']}: "
                         f"{e.strerror or e}") from None
    c.loop_start()
    return c


def _close(c):
    c.disconnect()
    c.loop_stop()


def check(cfg, wait_s=PROBE_WAIT_S, restart_edge=None):
    """'ok' (the probe came through), 'restarted' (it did not: the bridge's connection on the
    tier was taken over, the edge says it went down, Mosquitto connects again), 'not restarted'
    (every node that answered took the bridge's id, and the bridge stayed up: the next run tries
    again), 'edge restarted' (that, and `restart_edge()` restarted the edge broker, which ends
    the bridge's connection from the edge's side), 'unreachable' (no central node took the
    table's connection: an outage or a cut uplink, which the bridge's own retries cover) or
    'bridge down' (the tier answers but the edge says its bridge is not connected: it is in its
    own reconnection backoff, and a takeover would only be a false restart). CheckError: a
    misconfiguration or a refusal (edge or tier), one line."""
    table, broker = cfg["table"]["id"], cfg["broker"]
    edge_name = f"the edge broker {broker['host']}:{broker['port']}"
    state_topic = f"{broker['topic_prefix']}/{table}/bridge"
    probe = {"type": "resend", "from": NEVER_SEQ, "id": f"bridge-check-{uuid.uuid4().hex[:12]}"}
    arrived, subscribed, stated = threading.Event(), threading.Event(), threading.Event()
    went_down = threading.Event()
    state, refused = [], []

    def message(cl, u, msg):
        if msg.topic == state_topic:     # retained, 1 up / 0 down, set by Mosquitto itself
            state.append(msg.payload)
            stated.set()
            if msg.payload == b"0":
                went_down.set()
            return
        try:
            if json.loads(msg.payload).get("id") == probe["id"]:
                arrived.set()
        except (ValueError, AttributeError):
            pass

    def bridge_up():
        if not stated.wait(2):
            raise CheckError(f"{edge_name}: no bridge state on {state_topic} (the bridge "
                             f"written by `dealer-station bridge-conf`, mosquitto restarted? may "
                             f"broker.username read it in the ACL?)")
        return state[-1] == b"1"
    edge = _edge(cfg, message, subscribed, refused)
    central = None
    try:
        if not subscribed.wait(10):
            raise CheckError(f"{edge_name} did not answer the check's subscription in 10 s")
        if refused:
            raise CheckError(f"{edge_name}: not authorised ({refused[0]}): broker.username / "
                             f"broker.password and the ACL's read of {state_topic} and .../commands")
        central = _central(cfg, f"dealer-station-check-{table}")
        if central is None:
            return "unreachable"
        if not bridge_up():
            return "bridge down"
        topic = f"{broker['topic_prefix']}/{table}/commands"
        for _ in range(int(wait_s / 2)):
            central.publish(topic, json.dumps(probe), qos=1)
            if arrived.wait(2):
                return "ok"
        if not bridge_up():     # went down meanwhile: its own reconnection is under way
            return "bridge down"
        # the bridge's client id (bridge.py: remote_clientid): the tier ends its connection
        # and, clean, its session; Mosquitto's bridge connects again within restart_timeout.
        # Only when the edge says its bridge went down (0): a node restored stale from a
        # whole-tier restart held the bridge's deaf connection and refused the takeover
        # ("unable to delete session ... record"), another node took the id and ended nothing
        # (seen: 5 "restarted" in a row, the edge's bridge never reconnecting). So each node
        # is tried in turn, and `not restarted` says when none ended it (docs/scale.md)
        answered = False
        for address in cfg["bridge"]["central"]:
            went_down.clear()
            taker = _central(cfg, f"dealer-station-bridge-{table}", nodes=[address])
            if taker is None:
                continue
            answered = True
            _close(taker)
            if went_down.wait(TAKEOVER_WAIT_S):
                return "restarted"
        if not answered:
            return "unreachable"
        if restart_edge is None:
            return "not restarted"
        # no takeover through the tier ended it (a stale node holds it and refuses, or accepts
        # and ends nothing): only the edge can end its own bridge's connection. Mosquitto has
        # no command to restart one bridge; a restart of the broker ends it, and the bridge
        # connects again, new (cleansession true). The daemon reconnects and publishes again
        # what the edge had not acknowledged (its outbox); the edge's queue for the bridge is
        # kept in its persistence file across a clean restart
        restart_edge()
        return "edge restarted"
    finally:
        _close(edge)
        if central is not None:
            _close(central)


EXIT = {"ok": 0, "restarted": 1, "unreachable": 0, "bridge down": 3, "not restarted": 4,
        "edge restarted": 5}
EDGE_RESTART = ("systemctl", "restart", "mosquitto.service")
EDGE_RESTART_WAIT_S = 60.0


def restart_mosquitto():
    """The edge broker restarted (`systemctl restart mosquitto.service`: allowed to the check's
    user by systemd/dealer-station-bridge-check.rules, polkit). A CheckError if it fails: the
    bridge stays deaf until it is done by hand."""
    import subprocess
    try:
        done = subprocess.run(EDGE_RESTART, capture_output=True, text=True,
                              timeout=EDGE_RESTART_WAIT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CheckError(f"the bridge stays deaf and `{' '.join(EDGE_RESTART)}` failed: "
                         f"{e}") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        raise CheckError(f"the bridge stays deaf and `{' '.join(EDGE_RESTART)}` failed "
                         f"(exit {done.returncode}): {why[-1] if why else 'no message'} "
                         f"(the polkit rule of `install --bridge`, "
                         f"/etc/polkit-1/rules.d/50-dealer-station-bridge-check.rules)")
MOSQUITTO_CONF = "/etc/mosquitto"   # the edge broker's configuration, when it runs on this Pi


def username_as_clientid(conf_dir=MOSQUITTO_CONF):
    """'FILE:LINE' of a `use_username_as_clientid true` in the local Mosquitto's configuration,
    or None. With it the broker gives the check's login (broker.username, the daemon's) the
    daemon's own client id: each run would close the daemon's connection, and the daemon's
    reconnection the check's, whose probe then never arrives (a false restart)."""
    import glob
    import os
    for f in [os.path.join(conf_dir, "mosquitto.conf")] + sorted(
            glob.glob(os.path.join(conf_dir, "conf.d", "*.conf"))):
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    if line.split("#", 1)[0].split() == ["use_username_as_clientid", "true"]:
                        return f"{f}:{n}"
        except OSError:
            continue
    return None


def _main(args):
    try:
        cfg = read_config(args.config)
    except ConfigError as e:
        for line in e.errors:      # a file's own error names it already
            print(line if line.startswith(f"{args.config}: ") else f"{args.config}: {line}",
                  file=sys.stderr)
        return 2
    if not cfg["bridge"]["enabled"]:
        print(f"{args.config}: bridge.enabled: false: this table has no bridge to check",
              file=sys.stderr)
        return 2
    try:
        # whatever broker.host names (a TLS edge is reached by the name in its certificate), the
        # bridge and so the edge are this Pi's Mosquitto (install --bridge writes it there)
        where = username_as_clientid(args.mosquitto_conf)
        if where:
            raise CheckError(f"{where}: the edge Mosquitto takes the user name as the client id: "
                             f"the check's login as broker.username would close the daemon's "
                             f"connection at every run; the check does not run (docs/scale.md)")
        result = check(cfg, restart_edge=None if args.no_edge_restart else restart_mosquitto)
    except CheckError as e:
        print(f"bridge-check: {e}", file=sys.stderr)
        return 2
    except OSError as e:      # a file named by the config (CA, key, password file)
        print(f"bridge-check: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    print(f"bridge-check: {result}")
    return EXIT[result]


def add_parser(sub):
    p = sub.add_parser("bridge-check", help="probe the studio's commands path into this table "
                       "through the central tier; restart the bridge's connection if it is dead")
    p.add_argument("--config", required=True)
    p.add_argument("--mosquitto-conf", default=MOSQUITTO_CONF, metavar="DIR",
                   help="the local Mosquitto's configuration folder, looked through for "
                   "use_username_as_clientid (default %(default)s)")
    p.add_argument("--no-edge-restart", action="store_true",
                   help="a bridge no takeover through the tier ends is left as it is ("
                   "`not restarted`, exit 4) instead of restarting the edge Mosquitto")
    p.set_defaults(func=_main)
