"""A second MQTT session for the staff logins' commands/+ (session40): a decision past a flood?

Does it keep the betting system's decision clear of a staff login's QoS 1 flood longer than the
table's window?

Raw paho clients stand in for the table (no daemon: the broker's queueing alone is measured),
over the shipped Mosquitto configuration and ACL (tests/broker_rig.py). The "table" asks for
Receive Maximum `--window`, acknowledges each command (manual ack) in arrival order at `--rate`
a second (0: none until the decision has come: a table held still), login m0 publishes `--flood`
QoS 1 commands on commands/m0, then the betting system its decision on `commands` (once the
broker has acknowledged the flood's last command to m0). Reported per run: how many of the flood
the table was handed before the decision, and the decision's delay after the broker took it.

--mode one        the table's one session subscribes commands and commands/+ (main today)
--mode same-user  a second session with the table's user name and another client id
                  (the candidate): the shipped `use_username_as_clientid` makes both client id
                  `t1`; reported, the takeovers the broker logged
--mode account    a second session under its own account `t1-staff`, given read on
                  dealer-station/v1/t1/commands/+ by a per-table ACL line
--mode slash      a second account `t1/commands` and one ACL pattern for every table,
                  `pattern read dealer-station/v1/%u/+` (which also lets that account write as
                  staff logins named events, status or commands: the table patterns' %u)
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, ".."))

import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.packettypes import PacketTypes  # noqa: E402
from paho.mqtt.properties import Properties  # noqa: E402

from broker_rig import ShippedBroker, make_pki  # noqa: E402
from cli_args import int_range, parse, positive  # noqa: E402
from mqtt_rig import wait_for  # noqa: E402

BASE = "dealer-station/v1/t1/commands"


class Table:
    """The table's sessions: each acknowledges what it got in order, at `rate` a second."""

    def __init__(self, port, window, rate, sessions):
        self.got, self.lock, self.rate = [], threading.Lock(), rate
        self.connects, self.stop = [], False
        self.clients = []
        for user, cid, topics in sessions:
            c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=cid,
                            protocol=mqtt.MQTTv5, manual_ack=True)
            c.username_pw_set(user, "pw")
            if not self.clients:        # the main session's will, as the daemon's
                c.will_set(BASE[:-len("commands")] + "status", b'{"state":"offline"}', qos=1,
                           retain=True)
            c.on_message = lambda cl, u, m: self._got(cl, m)
            c.on_connect = (lambda cl, u, f, rc, p, cid=cid, topics=topics:
                            (self.connects.append(cid),
                             cl.subscribe([(t, 1) for t in topics])))
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = 3600
            props.ReceiveMaximum = window
            c.connect("127.0.0.1", port, clean_start=False, properties=props)
            c.loop_start()
            self.clients.append(c)
        self.pending = []
        self.most = 0           # the most commands held unacknowledged at once
        self.acker = threading.Thread(target=self._ack, daemon=True)
        self.acker.start()

    def _got(self, client, msg):
        with self.lock:
            self.got.append((time.monotonic(), msg.topic))
            self.pending.append((client, msg.mid))
            self.most = max(self.most, len(self.pending))

    def _ack(self):
        while not self.stop:
            if not self.rate and not any(t == BASE for _, t in self.got):
                time.sleep(0.01)
                continue
            with self.lock:
                todo = self.pending[:max(1, int(self.rate * 0.01))] if self.rate else self.pending
                del self.pending[:len(todo)]
            for c, mid in todo:
                c.ack(mid, 1)
            time.sleep(0.01)

    def close(self):
        self.stop = True
        for c in self.clients:
            c.disconnect()
            c.loop_stop()


def run(mode, flood, window, rate):
    d = tempfile.mkdtemp(prefix="s40-")
    users = {"t1": "pw", "t1-staff": "pw", "t1/commands": "pw", "m0": "pw",
             "betting-system": "pw"}
    extra = {"account": "user t1-staff\ntopic read dealer-station/v1/t1/commands/+\n",
             "slash": "pattern read dealer-station/v1/%u/+\n"}.get(mode, "")
    broker = ShippedBroker(d, users, make_pki(os.path.join(d, "pki")), acl_extra=extra)
    broker.start()
    sessions = {"one": [("t1", "dealer-station-t1", [BASE, BASE + "/+"])],
                "same-user": [("t1", "dealer-station-t1", [BASE]),
                              ("t1", "dealer-station-t1-staff", [BASE + "/+"])],
                "account": [("t1", "dealer-station-t1", [BASE]),
                            ("t1-staff", "dealer-station-t1-staff", [BASE + "/+"])],
                "slash": [("t1", "dealer-station-t1", [BASE]),
                          ("t1/commands", "dealer-station-t1-staff", [BASE + "/+"])]}[mode]
    table = Table(broker.port, window, rate, sessions)
    pubs, wills = [], []
    try:
        time.sleep(1.0)       # subscribed (a flapping pair never settles: measured as it is)
        for user in ("m0", "betting-system"):
            p = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=user,
                            protocol=mqtt.MQTTv5)
            p.username_pw_set(user, "pw")
            p.on_message = lambda cl, u, m: wills.append(m.payload)
            p.max_inflight_messages_set(1000)
            p.connect("127.0.0.1", broker.port)
            p.loop_start()
            pubs.append(p)
        pubs[1].subscribe(BASE[:-len("commands")] + "status", 1)   # the table's will, if said
        t0 = time.monotonic()
        for _ in range(flood):
            last = pubs[0].publish(BASE + "/m0", b'{"type":"bogus"}', qos=1)
        last.wait_for_publish(120)
        pubs[1].publish(BASE, b'{"type":"decision"}', qos=1).wait_for_publish(60)
        taken = time.monotonic()
        try:        # held: the decision never comes in a session queued behind the window
            wait_for(lambda: any(t == BASE for _, t in list(table.got)), 120 if rate else 10,
                     "the decision")
        except TimeoutError:
            pass
        got = list(table.got)
        at = next((i for i, (_, t) in enumerate(got) if t == BASE), None)
        return {"mode": mode, "flood": flood, "window": window, "rate": rate,
                "flood publish_s": round(taken - t0, 2),
                "decision handed over": at is not None,
                "flood handed over before it (or in all)": len(got) if at is None else at,
                "decision delay_s": None if at is None else round(got[at][0] - taken, 3),
                "most held unacknowledged": table.most,
                "table connects": len(table.connects),
                "takeovers logged": broker.logtext().count("already connected, closing old"),
                "wills (offline) seen": len(wills)}
    finally:
        for p in pubs:
            p.disconnect()
            p.loop_stop()
        table.close()
        broker.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("one", "same-user", "account", "slash"), default="one")
    ap.add_argument("--flood", type=positive, default=3000)
    ap.add_argument("--window", type=int_range(1, 65535), default=1000)
    ap.add_argument("--rate", type=int_range(0, 100000), default=0,
                    help="acknowledgements a second (0: none: the table held still)")
    ap.add_argument("--runs", type=positive, default=1)
    a = parse(ap)
    for _ in range(a.runs):
        print(json.dumps(run(a.mode, a.flood, a.window, a.rate)), flush=True)


if __name__ == "__main__":
    main()
