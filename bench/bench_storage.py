"""What the journal writes to the Pi's storage (issue #23): bytes written per round, commits
(each one an fsync of the WAL under synchronous=FULL) per round, and journal growth per round and
per gaming day (60 rounds an hour, 20 hours).

The daemon's own journal code, in this process, on rounds played by the engine's autoplay; every
output is acknowledged by the "broker" in one batch per input, as the loop marks them. Bytes from
/proc/self/io (write_bytes: what reached the block layer, after fsync). With strace on the machine
it also counts the fsync/fdatasync calls (`--strace`).
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from controller import get_profile  # noqa: E402
from controller.autoplay import hit_below_17, play_shoe  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from dealer_station.config import check_config  # noqa: E402
from dealer_station.daemon import Daemon  # noqa: E402

DAY = 60 * 20


def write_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0


def daemon(path, profile):
    cfg, errors = check_config({"table": {"id": "bench", "profile": profile},
                                "shoe": {"protocol": "none"}, "metrics": {"enabled": False},
                                "paths": {"journal": path}})
    assert not errors, errors
    d = Daemon(cfg)
    d.recover()
    return d


def inputs(profile, rounds, seed):
    p = get_profile(profile)
    if p.game == "roulette":
        rng = random.Random(seed)
        for _ in range(rounds):
            yield {"type": "betting_closed"}
            yield {"type": "winning_number", "number": rng.randrange(37)}
        return
    played = 0
    shoe = 0
    while played < rounds:
        cards = list(CARDS) * p.decks
        random.Random(seed + shoe).shuffle(cards)
        shoe += 1
        for ev, out in play_shoe(p, cards, hit_below_17, max_rounds=rounds - played):
            yield ev
            played += sum(o["type"] in ("round_result", "round_voided") for o in out)


def measure(profile, rounds, seed=1):
    work = tempfile.mkdtemp(prefix="ds-bench-io-")
    path = os.path.join(work, "journal.sqlite")
    d = daemon(path, profile)
    commits = 0
    w0 = write_bytes()
    now = 0.0
    for ev in inputs(profile, rounds, seed):
        messages, _ = d.process(ev, "bench")
        commits += 1
        # the broker acknowledges each input's events; inputs come about a second apart at a
        # live table (a luxury21 round: some 68 inputs in a minute or so)
        now += 1.0
        d.journal.mark_sent([s for s, _ in messages], now=now)
    d.journal.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")   # the growth, not the WAL's size
    size = sum(os.path.getsize(os.path.join(work, f)) for f in os.listdir(work))
    d.journal.close()
    written = write_bytes() - w0
    return {"profile": profile, "rounds": rounds, "bytes_per_round": round(written / rounds),
            "inputs_per_round": round(commits / rounds, 1),
            "journal_bytes_per_round": round(size / rounds),
            "journal_mb_per_day": round(size / rounds * DAY / 2 ** 20, 1)}


def fsyncs(profile, rounds):
    """fsync + fdatasync calls per round, counted by strace on a child run of this benchmark."""
    try:
        p = subprocess.run(["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", sys.executable,
                            __file__, "--profiles", profile, "--rounds", str(rounds), "--json"],
                           capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return None
    n = sum(int(line.split()[3]) for line in p.stderr.splitlines()
            if line.strip().endswith(("fsync", "fdatasync")) and len(line.split()) >= 5)
    return round(n / rounds, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--profiles", default="luxury21,punto_banco,roulette")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--strace", action="store_true", help="also count fsync calls (needs strace)")
    ap.add_argument("--json", action="store_true")
    a, _ = ap.parse_known_args()
    rows = []
    for profile in a.profiles.split(","):
        r = measure(profile, a.rounds)
        if a.strace:
            r["fsyncs_per_round"] = fsyncs(profile, a.rounds)
        rows.append(r)
    if a.json:
        print(json.dumps(rows))
        return
    for r in rows:
        extra = f", {r['fsyncs_per_round']} fsyncs" if "fsyncs_per_round" in r else ""
        ok = " (target <= 200 KB: " + ("meets)" if r["bytes_per_round"] <= 200_000 else "ABOVE)") \
            if r["profile"] == "luxury21" else ""
        print(f"storage: {r['profile']}, {r['rounds']} rounds: {r['bytes_per_round'] / 1000:.1f} KB "
              f"written per round{ok}, {r['inputs_per_round']} inputs (one synced commit each){extra}; journal grows "
              f"{r['journal_bytes_per_round'] / 1000:.1f} KB per round, "
              f"{r['journal_mb_per_day']} MB per 1,200-round day")


if __name__ == "__main__":
    main()
