"""What the daemon writes to the Pi's storage (issue #23): bytes written per round, synced
commits and fsyncs per round, and journal growth per round and per gaming day (60 rounds an
hour, 20 hours).

1. The whole daemon: table-sim runs the real daemon (speed 0, seed 3) for each profile, with and
   without the camera, and reads the daemon's /proc/PID/io write_bytes (the journal, its WAL and
   its checkpoints into the database, and the daemon's log file) per round resulted.
2. The journal alone: its code in this process, on rounds played by the engine's autoplay (all
   seven seats at blackjack), every output acknowledged as the loop marks them, inputs a second
   apart; /proc/self/io; with strace on the machine (Debian's strace) it also counts the
   fsync/fdatasync calls.
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
                            __file__, "--profiles", profile, "--rounds", str(rounds), "--json",
                            "--journal-only", "--no-strace"],
                           capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return None
    n = sum(int(line.split()[3]) for line in p.stderr.splitlines()
            if line.strip().endswith(("fsync", "fdatasync")) and len(line.split()) >= 5)
    return round(n / rounds, 1)


def through_table_sim(profile, rounds, camera):
    """The daemon's write_bytes per round, from a table-sim report."""
    out = os.path.join(tempfile.mkdtemp(prefix="ds-bench-io-"), "report.json")
    cmd = [sys.executable, "-m", "dealer_station.sim_cli", "--profile", profile, "--rounds",
           str(rounds), "--seed", "3", "--speed", "0", "--plain", "--report", out]
    if not camera:
        cmd.append("--no-camera")
    p = subprocess.run(cmd, cwd=os.path.join(HERE, ".."), capture_output=True, text=True,
                       timeout=60 + 10 * rounds)
    if p.returncode != 0:
        return None
    with open(out) as f:
        return json.load(f).get("daemon_written_bytes_per_round")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--profiles", default="luxury21,punto_banco,roulette")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--sim-rounds", type=int, default=40, help="rounds of each table-sim run")
    ap.add_argument("--journal-only", action="store_true", help="skip the table-sim runs")
    ap.add_argument("--no-strace", dest="strace", action="store_false",
                    help="do not count fsync calls (counted with strace, where the machine has it)")
    ap.add_argument("--json", action="store_true")
    from cli_args import parse       # bench/: strict by hand; scripts/bench passes all the same
    a = parse(ap)
    import shutil
    a.strace = a.strace and shutil.which("strace") is not None
    rows = []
    for profile in a.profiles.split(","):
        r = measure(profile, a.rounds)
        if not a.journal_only:
            r["daemon_bytes_per_round"] = through_table_sim(profile, a.sim_rounds, camera=False)
            r["daemon_bytes_per_round_camera"] = through_table_sim(profile, a.sim_rounds,
                                                                   camera=True)
        if a.strace:
            r["fsyncs_per_round"] = fsyncs(profile, a.rounds)
        rows.append(r)
    if a.json:
        print(json.dumps(rows))
        return
    for r in rows if not a.journal_only else ():
        d, dc = r["daemon_bytes_per_round"], r["daemon_bytes_per_round_camera"]
        ok = " (target <= 200 KB: " + ("meets)" if d is not None and d <= 200_000 else "ABOVE)") \
            if r["profile"] == "luxury21" else ""
        show = (lambda v: "failed" if v is None else f"{v / 1000:.1f} KB")
        print(f"storage: {r['profile']}, the daemon under table-sim ({a.sim_rounds} rounds, seed 3): "
              f"{show(d)} written per round{ok}, {show(dc)} with the camera")
    for r in rows:
        extra = f", {r['fsyncs_per_round']} fsyncs" if "fsyncs_per_round" in r else ""
        print(f"storage: {r['profile']}, the journal alone, {r['rounds']} rounds: "
              f"{r['bytes_per_round'] / 1000:.1f} KB written per round, {r['inputs_per_round']} inputs (one synced commit each){extra}; journal grows "
              f"{r['journal_bytes_per_round'] / 1000:.1f} KB per round, "
              f"{r['journal_mb_per_day']} MB per 1,200-round day")


if __name__ == "__main__":
    main()
