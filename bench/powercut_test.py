"""The power-cut test (issue #23): what a power cut leaves on the card keeps every card and every
message the table acknowledged. A command, not a test (it needs gcc):

    .venv/bin/python bench/powercut_test.py --cuts 20 [--seed 1] [--json]

The real daemon runs with an LD_PRELOAD shim (bench/synclog.c) that logs every write and sync
it makes to its journal. A table plays (the virtual shoe on a pty, a real Mosquitto, the tests'
table driver) and the daemon is SIGKILLed at a random moment. The journal is then rebuilt as a
power cut would leave it: each file as of its last fdatasync, every later write lost. Checked on
that image: SQLite's integrity check; every shoe frame the shoe saw acknowledged is journaled;
every command the betting system got a reply to is journaled; every event the subscriber
received is in the outbox, identical; and a daemon started on it recovers with no mismatch.
"""
import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from mqtt_rig import ROOT, Broker, Client, DaemonProc, workdir  # noqa: E402
from table_driver import TableDriver  # noqa: E402

from drivers.virtual_shoe import VirtualShoe  # noqa: E402


def build_shim(out):
    so = os.path.join(out, "synclog.so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", so, os.path.join(HERE, "synclog.c"),
                    "-ldl", "-lpthread"], check=True)
    return so


def read_log(path):
    """Yield (kind, file name, offset, data) from the shim's log."""
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        kind = chr(data[i])
        j = data.index(b"\0", i + 1)
        name = data[i + 1:j].decode()
        i = j + 1
        off = length = 0
        payload = b""
        if kind in "WT":
            off = int.from_bytes(data[i:i + 8], "little", signed=True)
            i += 8
        if kind == "W":
            length = int.from_bytes(data[i:i + 8], "little", signed=True)
            i += 8
            payload = data[i:i + length]
            if len(payload) < length:
                return            # the kill cut the log inside a record: that write is lost
            i += length
        yield kind, name, off, payload


def power_cut_image(log, out_dir):
    """Each journal file as of its last sync (unsynced writes and truncations dropped)."""
    durable, pending = {}, {}
    for kind, name, off, data in read_log(log):
        if kind == "S":
            img = durable.setdefault(name, bytearray())
            for k, o, d in pending.pop(name, []):
                if k == "W":
                    if len(img) < o:
                        img.extend(b"\0" * (o - len(img)))
                    img[o:o + len(d)] = d
                else:
                    del img[o:]
        else:
            pending.setdefault(name, []).append((kind, off, data))
    paths = {}
    for name, img in durable.items():
        p = os.path.join(out_dir, os.path.basename(name))
        with open(p, "wb") as f:
            f.write(img)
        paths[os.path.basename(name)] = p
    return paths


def one_cut(so, seed, profile="luxury21"):
    d = workdir()
    broker = Broker(d)
    broker.start()
    shoe = VirtualShoe(heartbeat=0.2, decks=8, seed=seed, cut_from_back=208)
    shoe.start()
    c = Client(broker.port)
    daemon = DaemonProc(d, broker.port, shoe.path, profile=profile)
    log = os.path.join(d, "synclog.bin")
    env = {**os.environ, "LD_PRELOAD": so, "SYNCLOG": log}
    daemon.proc = subprocess.Popen([sys.executable, "-m", "dealer_station.cli", "run", "--config",
                                    daemon.config], cwd=ROOT, stdout=daemon.log,
                                   stderr=daemon.log, env=env)
    rng = random.Random(seed)
    try:
        c.wait_online(timeout=30)
        c.command({"type": "shoe_loaded", "id": "load"})
        drv = TableDriver(c, shoe, "blackjack", seed=seed)
        at = rng.randint(20, 400)
        try:
            drv.play(lambda x: x.events >= at, timeout=120)
        except TimeoutError:
            pass
        time.sleep(rng.random() * 0.05)      # a moment anywhere in the loop's work
        daemon.proc.send_signal(signal.SIGKILL)
        daemon.proc.wait()
        acked = [int(f.fields[0]) for f in list(shoe.received) if f.kind == "ACK"]
        replied = [i for i, r in dict(c.replies).items() if r.get("status") in ("accepted",
                                                                                  "rejected")]
        events = dict(c.events)
        img_dir = tempfile.mkdtemp(prefix="ds-powercut-")
        files = power_cut_image(log, img_dir)
        db_path = os.path.join(img_dir, "journal.sqlite")
        try:
            db = sqlite3.connect(db_path)
            ok = db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            shoe_max = db.execute("SELECT MAX(shoe_seq) FROM inputs").fetchone()[0] or 0
            ids = {r[0] for r in db.execute("SELECT id FROM commands")}
            outbox = dict(db.execute("SELECT seq, body FROM outbox"))
            db.close()
        except sqlite3.Error:         # nothing usable survived: everything is lost
            ok, shoe_max, ids, outbox = False, 0, set(), {}
        lost_cards = max(acked, default=0) > shoe_max
        lost_commands = [i for i in replied if i not in ids and not i.startswith("rs")]
        lost_events = [s for s, m in events.items()
                       if s not in outbox or json.loads(outbox[s]) != m]
        # and a daemon recovers from that image
        d2 = DaemonProc(img_dir, broker.port, shoe.path, profile=profile)
        d2.journal = db_path
        p = subprocess.run([sys.executable, "-c",
                            "import sys, json; from dealer_station.config import read_config;"
                            "from dealer_station.daemon import Daemon;"
                            "d = Daemon(read_config(sys.argv[1])); r = d.recover();"
                            "print(json.dumps(r)); d.journal.close()", d2.config],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        rec = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None
        return {"seed": seed, "events_seen": len(events), "shoe_acked": max(acked, default=0),
                "journaled_shoe": shoe_max, "files": sorted(files), "integrity_ok": ok,
                "lost_cards": lost_cards, "lost_commands": len(lost_commands),
                "lost_events": len(lost_events),
                "recovered": rec is not None and rec["mismatches"] == 0}
    finally:
        c.close()
        daemon.stop()
        shoe.close()
        broker.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cuts", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    so = build_shim(tempfile.mkdtemp(prefix="ds-synclog-"))
    t0 = time.monotonic()
    rows = []
    for k in range(a.cuts):
        rows.append(one_cut(so, a.seed + k))
        if not a.json:
            print(json.dumps(rows[-1]), flush=True)
    bad = [r for r in rows if not r["integrity_ok"] or r["lost_cards"] or r["lost_commands"]
           or r["lost_events"] or not r["recovered"]]
    total = {"cuts": len(rows), "failed": len(bad), "minutes": round((time.monotonic() - t0) / 60, 1)}
    if a.json:
        print(json.dumps({"cuts": rows, "total": total}))
    else:
        print(f"power-cut test: {total['cuts']} cuts in {total['minutes']} min: {total['failed']} lost "
              f"an acknowledged card, command or event, or did not recover: "
              f"{'ok' if not bad else 'FAILED'}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
