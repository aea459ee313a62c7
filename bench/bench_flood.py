"""A flood of well-formed commands the table refuses, through the real daemon and Mosquitto.

The daemon (`dealer-station run`, `[staff]`: d-anna a dealer, s-carol a supervisor, bs the
betting system) behind a private Mosquitto with a virtual shoe; one client floods `--commands`
QoS-1 commands: half from `bs` (a `decision` with no round under way: the engine rejects it), half
from `d-anna` (a `void_round`, which a dealer may not give: the staff rights refuse it). Once the
flood is half sent, the same client sends a supervisor's (s-carol's) `pause`: how long it waited
for its reply, queued behind half the flood, is the loop's latency for a real staff command.
Reports the journal's growth (bytes with its WAL, rows per table), the daemon's CPU time and
bytes written to storage during the flood (less bent by a busy machine than wall time), and that
every command was answered.
"""
import argparse
import json
import os
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from cli_args import int_range, parse, positive  # noqa: E402
from dealer_station.station_settings import COMMANDS  # noqa: E402
from drivers.virtual_shoe import VirtualShoe  # noqa: E402
from mqtt_rig import Broker, Client, DaemonProc, wait_for, workdir  # noqa: E402

STAFF = '\n[staff]\ndealer = ["d-anna"]\nsupervisor = ["s-carol"]\nsystem = ["bs"]\n'
TABLES = ("inputs", "outbox", "commands", "audit", "refused", "refused_counts", "counted_ids")


def rows(path):
    db = sqlite3.connect(path, timeout=30)
    try:
        have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] if t in have else None
                for t in TABLES}
    finally:
        db.close()


def usage(pid):
    """(CPU seconds, bytes written to storage) of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/io") as f:
        io = dict(line.split(": ") for line in f.read().splitlines())
    return cpu, int(io["write_bytes"])


def size(path):
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def flood(n, keep):
    d = workdir()
    broker = Broker(d)
    broker.start()
    shoe = VirtualShoe(heartbeat=0.2, decks=8, seed=3)
    shoe.start()
    extra = STAFF + (f"\n[commands]\nrefused_keep = {keep}\n" if keep else "")
    daemon = DaemonProc(d, broker.port, shoe.path, extra_config=extra)
    daemon.start()
    c = Client(broker.port)
    try:
        c.wait_online()
        before, bytes0 = rows(daemon.journal), size(daemon.journal)
        cpu0, wrote0 = usage(daemon.proc.pid)
        t0, ids = time.monotonic(), [f"f{i}" for i in range(n)]
        for i in range(n):
            if i == n // 2:       # a supervisor's pause queued among them, in the middle
                p0 = time.monotonic()
                c.c.publish(f"{c.base}/commands/s-carol",
                            json.dumps({"id": "the-pause", "type": "pause", "reason": "bench"}),
                            qos=1)
            who, cmd = (("bs", {"type": "decision", "seat": 1, "hand": 0, "action": "hit"})
                        if i % 2 == 0 else ("d-anna", {"type": "void_round", "reason": "misdeal"}))
            c.c.publish(f"{c.base}/commands/{who}", json.dumps({"id": f"f{i}", **cmd}), qos=1)
        sent_s = time.monotonic() - t0
        wait_for(lambda: "the-pause" in c.replies, 900, "the pause's reply")
        pause_s = time.monotonic() - p0
        # every reply but the pause's (a count, cheap to poll: summing over 20,000 ids every
        # 20 ms took a core from the daemon and the broker)
        replies = lambda: len(c.replies) - 1   # noqa: E731
        wait_for(lambda: replies() >= n, 900, "a reply to every command")
        flood_s = time.monotonic() - t0
        cpu, wrote = usage(daemon.proc.pid)
        status = c.replies["the-pause"]["status"]
        codes = {}
        for i in ids:
            code = c.replies[i].get("code")
            codes[code] = codes.get(code, 0) + 1
        daemon.stop()
        after = rows(daemon.journal)
        grew = {t: (after[t] or 0) - (before[t] or 0) for t in TABLES}
        counted = None
        if after["refused_counts"]:
            db = sqlite3.connect(daemon.journal)
            counted = db.execute("SELECT SUM(count) FROM refused_counts").fetchone()[0]
            db.close()
        return {"commands": n, "answered": sum(i in c.replies for i in ids), "codes": codes,
                "sent_s": round(sent_s, 2), "flood_s": round(flood_s, 2),
                "daemon_cpu_s": round(cpu - cpu0, 2), "daemon_wrote_bytes": wrote - wrote0,
                "pause_waited_s": round(pause_s, 3), "pause": status,
                "journal_bytes_grew": size(daemon.journal) - bytes0, "rows_grew": grew,
                "counted": counted}
    finally:
        c.close()
        daemon.stop()
        shoe.close()
        broker.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commands", type=positive, default=20000)
    keep = COMMANDS.keys["refused_keep"]      # the daemon's own range for it
    ap.add_argument("--keep", type=int_range(keep.lo, keep.hi), default=None,
                    help="[commands] refused_keep")
    a = parse(ap)
    print(json.dumps({"bench": "flood", **flood(a.commands, a.keep)}))


if __name__ == "__main__":
    main()
