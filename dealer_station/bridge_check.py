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
`"seq": null` and publishes nothing (docs/protocol.md)."""
import argparse
import json
import ssl
import sys
import threading
import uuid

import paho.mqtt.client as mqtt

from .config import ConfigError, read_config

PROBE_WAIT_S = 10.0      # a probe sent again each 2 s: the bridge delivers in milliseconds
NEVER_SEQ = 2 ** 53 - 1  # a resend from here publishes nothing


def _central(cfg, client_id, clean=True, timeout=8.0):
    """A connection to the first central node that takes the table's credentials, or None."""
    from .bridge import CENTRAL, _password
    b, table = cfg["bridge"], cfg["table"]["id"]
    for address in b["central"]:
        m = CENTRAL.match(address)
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                        protocol=mqtt.MQTTv311, clean_session=clean)
        c.username_pw_set(b["username"] or table, _password(b))
        c.tls_set(ca_certs=b["ca_file"], certfile=b["cert_file"], keyfile=b["key_file"],
                  cert_reqs=ssl.CERT_REQUIRED)
        up = threading.Event()
        c.on_connect = lambda cl, u, f, rc, p, up=up: rc.is_failure or up.set()
        try:
            c.connect(m["host"].strip("[]"), int(m["port"]), keepalive=30)
        except OSError:
            continue
        c.loop_start()
        if up.wait(timeout):
            return c
        _close(c)
    return None


def _edge(cfg, on_message, subscribed):
    broker, table = cfg["broker"], cfg["table"]["id"]
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2,
                    client_id=f"dealer-station-check-{table}-{uuid.uuid4().hex[:6]}")
    if broker["username"]:
        password = broker["password"]
        if broker["password_file"]:
            with open(broker["password_file"]) as f:
                password = f.read().strip()
        c.username_pw_set(broker["username"], password)
    if broker["tls"]:
        c.tls_set(ca_certs=broker["ca_file"], certfile=broker["cert_file"],
                  keyfile=broker["key_file"])
    topic = f"{broker['topic_prefix']}/{table}/commands"
    c.on_connect = lambda cl, u, f, rc, p: cl.subscribe(topic, 1)
    c.on_subscribe = lambda *a: subscribed.set()
    c.on_message = on_message
    c.connect(broker["host"], broker["port"])
    c.loop_start()
    return c


def _close(c):
    c.disconnect()
    c.loop_stop()


def check(cfg, wait_s=PROBE_WAIT_S):
    """'ok' (the probe came through), 'restarted' (it did not: the bridge's connection on the
    tier was taken over, Mosquitto connects again) or 'unreachable' (no central node took the
    table's connection: an outage or a cut uplink, which the bridge's own retries cover)."""
    table = cfg["table"]["id"]
    probe = {"type": "resend", "from": NEVER_SEQ, "id": f"bridge-check-{uuid.uuid4().hex[:12]}"}
    arrived, subscribed = threading.Event(), threading.Event()

    def message(cl, u, msg):
        try:
            if json.loads(msg.payload).get("id") == probe["id"]:
                arrived.set()
        except (ValueError, AttributeError):
            pass
    edge = _edge(cfg, message, subscribed)
    central = None
    try:
        if not subscribed.wait(10):
            raise ConnectionError(f"the edge broker {cfg['broker']['host']}:{cfg['broker']['port']} "
                                  f"did not take the check's subscription")
        central = _central(cfg, f"dealer-station-check-{table}")
        if central is None:
            return "unreachable"
        topic = f"{cfg['broker']['topic_prefix']}/{table}/commands"
        for _ in range(int(wait_s / 2)):
            central.publish(topic, json.dumps(probe), qos=1)
            if arrived.wait(2):
                return "ok"
        # the bridge's client id (bridge.py: remote_clientid): the tier ends its connection
        # and, clean, its session; Mosquitto's bridge connects again within restart_timeout
        taker = _central(cfg, f"dealer-station-bridge-{table}")
        if taker is None:
            return "unreachable"
        _close(taker)
        return "restarted"
    finally:
        _close(edge)
        if central is not None:
            _close(central)


def _main(args):
    try:
        cfg = read_config(args.config)
    except ConfigError as e:
        for line in e.errors:
            print(f"{args.config}: {line}", file=sys.stderr)
        return 2
    if not cfg["bridge"]["enabled"]:
        print(f"{args.config}: bridge.enabled: false: this table has no bridge to check",
              file=sys.stderr)
        return 2
    try:
        result = check(cfg)
    except (OSError, ConnectionError) as e:
        print(f"bridge-check: {e}", file=sys.stderr)
        return 2
    print(f"bridge-check: {result}")
    return 1 if result == "restarted" else 0


def add_parser(sub):
    p = sub.add_parser("bridge-check", help="probe the studio's commands path into this table "
                       "through the central tier; restart the bridge's connection if it is dead")
    p.add_argument("--config", required=True)
    p.set_defaults(func=_main)
