"""A card dealt amid a flood of malformed commands: how late is it journaled and published?

The cold trial's set-up, through the real daemon: the shipped Mosquitto configuration and ACL
(tests/broker_rig.py, its log at errors only), the virtual shoe on a pty, `dealer-station run`.
The table's shoe is loaded and burned and a round's betting closed (seat 1); then `--logins`
staff logins (m0, m1, ...) each publish their share of `--flood` `{"type":"bogus"}` commands at
`--qos` on their own commands/<login> as fast as paho sends, and the dealer deals the round's 4
cards `--gap` s apart, the first 0.5 s into the flood; the betting system then sends the seat's
decision on `commands`. Reported: each card's deal-to-journal and deal-to-publish (the client's
receipt of its event) latency, the flood replies that came after each card's event, the
decision's reply latency, the flood's replies by code, the daemon's peak RSS (VmHWM).
`--light N`: a light login (l0) also sends N commands at once (QoS 0: at QoS 1 the broker hands
them over a window at a time, none waits beyond its lane), 0.5 s into the flood;
beyond its lane's 32 they are refused busy: reported, when its first and last `busy` answers
came and its replies by code (the busy lane's fairness across senders, lows39).

`--behind`: the betting system's decision published right BEHIND the flood (the 4 cards dealt
first, then the flood, the decision once the broker has acknowledged the flood's last command to
its sender): reported, its reply's delay and how many of the flood were answered before it
(session40: a QoS 1 flood longer than the table's Receive Maximum held it at the broker).

`--root DIR` runs the daemon from another checkout (the code measured before a change).
"""
import argparse
import json
import os
import re
import sqlite3
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, ".."))

import paho.mqtt.client as mqtt  # noqa: E402

import mqtt_rig  # noqa: E402
from cli_args import checkout, parse, positive  # noqa: E402
from broker_rig import ShippedBroker, make_pki  # noqa: E402
from drivers.virtual_shoe import VirtualShoe  # noqa: E402
from mqtt_rig import Client, DaemonProc, wait_for, workdir  # noqa: E402
from table_driver import TableDriver  # noqa: E402

BASE = "dealer-station/v1/t1"


def flooder(port, login, n, qos, done):
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=login, protocol=mqtt.MQTTv5)
    c.username_pw_set(login, "pw")
    c.max_inflight_messages_set(1000)
    c.connect("127.0.0.1", port)
    c.loop_start()
    last = None
    for _ in range(n):
        last = c.publish(f"{BASE}/commands/{login}", b'{"type":"bogus"}', qos=qos)
    if last is not None:
        last.wait_for_publish(120)
    done.append(time.monotonic())
    return c


def light_burst(port, n):
    """l0's n commands at once, QoS 0; returns (its client, when they were all handed to paho)."""
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="l0", protocol=mqtt.MQTTv5)
    c.username_pw_set("l0", "pw")
    c.max_inflight_messages_set(1000)
    c.connect("127.0.0.1", port)
    c.loop_start()
    for k in range(n):
        c.publish(f"{BASE}/commands/l0", json.dumps({"type": "resume", "id": f"l0-{k}"}), qos=0)
    return c, time.monotonic()


def run(flood, logins, qos, gap, root=None, light=0, behind=False):
    if root:
        mqtt_rig.ROOT = root
    d = workdir()
    users = {"t1": "pw-t1", "betting-system": "pw-bs", "l0": "pw",
             **{f"m{i}": "pw" for i in range(logins)}}
    broker = ShippedBroker(d, users, make_pki(os.path.join(d, "pki")))
    text = open(broker.conf).read().replace("log_type all", "log_type error")
    open(broker.conf, "w").write(text)
    broker.start()
    shoe = VirtualShoe(decks=8, seed=4, heartbeat=0.2)
    shoe.start()
    pw = os.path.join(d, "pw-t1")
    open(pw, "w").write("pw-t1\n")
    daemon = DaemonProc(d, broker.port, shoe.path)
    text = open(daemon.config).read().replace(
        "[broker]\n", f'[broker]\nusername = "t1"\npassword_file = "{pw}"\n')
    open(daemon.config, "w").write(text)
    daemon.start()
    c = Client(broker.port, user=("betting-system", "pw-bs"), name="betting-system")
    got = []                       # (monotonic, topic, payload) of every message

    def on_message(cl, u, msg, inner=c.c.on_message):
        got.append((time.monotonic(), msg.topic, msg.payload))
        inner(cl, u, msg)
    c.c.on_message = on_message
    flooders = []
    try:
        c.wait_online()
        assert c.command({"type": "shoe_loaded"})["status"] == "accepted"
        drv = TableDriver(c, shoe, "blackjack", seed=8)
        drv.play(lambda x: x.phase == "ready", timeout=60)
        assert c.command({"type": "betting_closed", "seats": [1]})["status"] == "accepted"
        done = []
        per = [flood // logins + (i < flood % logins) for i in range(logins)]
        threads = [threading.Thread(target=lambda i=i: flooders.append(
            flooder(broker.port, f"m{i}", per[i], qos, done))) for i in range(logins)]
        deals = []
        if behind:      # the decision's cards first: the decision is then sent behind the flood
            for _ in range(4):
                deals.append((time.monotonic(), time.time(), shoe.deal()))
                time.sleep(gap)
            wait_for(lambda: any(m.get("type") == "awaiting_decision" for m in c.in_order()),
                     30, "seat 1's decision awaited")
        t0 = time.monotonic()
        for t in threads:
            t.start()
        if behind:
            for t in threads:
                t.join()
        else:
            time.sleep(0.5)
        light_at = None
        if light:
            lc, light_at = light_burst(broker.port, light)
            flooders.append(lc)
        for _ in range(0 if behind else 4):
            deals.append((time.monotonic(), time.time(), shoe.deal()))
            time.sleep(gap)
        sent_at = time.monotonic()
        cid = c.command({"type": "decision", "seat": 1, "hand": 0, "action": "stand"}, wait=False)
        for t in threads:
            t.join()
        wait_for(lambda: cid in c.replies, 300, "the decision's reply")
        wait_for(lambda: sum(tp.endswith("/replies") for _, tp, _ in list(got)) >= flood + 1
                 if qos else True, 300, "a reply to every flood command")
        with open(f"/proc/{daemon.proc.pid}/status") as f:
            hwm = [ln.split()[1] for ln in f if ln.startswith("VmHWM")][0]
        db = sqlite3.connect(daemon.journal)
        cards = db.execute("SELECT n, at FROM inputs WHERE origin = 'shoe' AND body LIKE "
                           "'%\"card\"%' ORDER BY n DESC LIMIT 4").fetchall()[::-1]
        rows = []
        for (mono, wall, card), (n, at) in zip(deals, cards):
            seqs = [s for (s,) in db.execute("SELECT seq FROM outbox WHERE input_n = ?", (n,))]
            first = min((t for t, tp, p in got if tp.endswith("/events")
                         and json.loads(p)["seq"] in seqs), default=None)
            after = sum(1 for t, tp, p in got if tp.endswith("/replies") and cid.encode() not in p
                        and first is not None and t > first)
            rows.append((round(at - wall, 2), round(first - mono, 2) if first else None, after))
        db.close()
        codes = {}
        for _, tp, p in got:
            if tp.endswith("/replies"):
                m = json.loads(p)
                codes[m.get("code") or m.get("status")] = codes.get(m.get("code")
                                                                    or m.get("status"), 0) + 1
        reply_at = min(t for t, tp, p in got if tp.endswith("/replies") and cid.encode() in p)
        ahead = sum(1 for t, tp, p in got if tp.endswith("/replies") and t < reply_at
                    and t >= t0 and cid.encode() not in p)
        extra = {}
        if light:
            wait_for(lambda: sum(b'"l0-' in p for _, tp, p in list(got)
                                 if tp.endswith("/replies")) >= light, 300, "l0's replies")
            mine = [(t, json.loads(p)) for t, tp, p in got
                    if tp.endswith("/replies") and b'"l0-' in p]
            busy_at = [t - light_at for t, m in mine if m.get("code") == "busy"]
            by = {}
            for _, m in mine:
                by[m.get("code") or m["status"]] = by.get(m.get("code") or m["status"], 0) + 1
            lane_at = [t - light_at for t, m in mine if m.get("code") != "busy"]
            extra = {"light": light, "light replies": by,
                     "light lane first_s": round(min(lane_at), 2) if lane_at else None,
                     "light busy first_s": round(min(busy_at), 2) if busy_at else None,
                     "light busy last_s": round(max(busy_at), 2) if busy_at else None,
                     "light last reply_s": round(max(t for t, _ in mine) - light_at, 2)}
        daemon.stop()        # its last words: the QoS 0 commands it dropped, said once they stop
        said = open(os.path.join(d, "daemon.log")).read()
        extra["daemon said dropped"] = sum(map(int, re.findall(r"dropped (\d+) QoS 0", said)))
        return {**extra,"flood": flood, "logins": logins, "qos": qos,
                "publish_s": round(max(done) - t0, 2),
                "cards (journal_s, publish_s, flood replies after)": rows,
                "decision reply_s": round(reply_at - sent_at, 2),
                "decision": c.replies[cid].get("code") or c.replies[cid].get("status"),
                "flood replies before the decision's": ahead,
                "replies": codes, "daemon VmHWM kB": int(hwm),
                "last reply_s": round(max(t for t, tp, _ in got if tp.endswith("/replies")) - t0,
                                      2)}
    finally:
        for f in flooders:
            f.disconnect()
            f.loop_stop()
        c.close()
        daemon.stop()
        shoe.close()
        broker.stop()


def _gap(text):
    """Seconds between the cards dealt: a number over 0 and at most 60."""
    try:
        g = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}")
    if not 0 < g <= 60:
        raise argparse.ArgumentTypeError(f"expected seconds over 0 and at most 60, got {text}")
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flood", type=positive, default=20000)
    ap.add_argument("--logins", type=positive, default=1)
    ap.add_argument("--qos", type=int, default=1, choices=(0, 1))
    ap.add_argument("--gap", type=_gap, default=3.0)
    ap.add_argument("--root", type=checkout, default=None,
                    help="another checkout to run the daemon from")
    ap.add_argument("--light", type=positive, default=None,
                    help="a light login's burst of this many commands during the flood")
    ap.add_argument("--behind", action="store_true",
                    help="the decision sent behind the whole flood, its cards dealt before it")
    a = parse(ap)   # strict by hand, lenient under scripts/bench (cli_args.py)
    print(json.dumps(run(a.flood, a.logins, a.qos, a.gap, a.root, a.light or 0, a.behind)))


if __name__ == "__main__":
    main()
