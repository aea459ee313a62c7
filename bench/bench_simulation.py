"""Simulated blackjack hands per second on one core, through the real engine, a `hard` computer
player and the settlement code (what `dealer-station analyze` does on each core).
Target (issue 3): 20,000 hands/s per core."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from controller import get_profile  # noqa: E402
from dealer_station.analyze import _work  # noqa: E402

TARGET = 20000


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=6000)
    ap.add_argument("--json", action="store_true")
    from cli_args import parse       # bench/: strict by hand; scripts/bench passes all the same
    args = parse(ap)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    report = {}
    for name in ("luxury21", "european", "lucky7"):
        p = get_profile(name)
        t0 = time.perf_counter()
        r = _work((p, "hard", 1, 0, args.rounds))
        dt = time.perf_counter() - t0
        hands = r["tallies"]["main"]["units"]
        report[name] = {"hands": hands, "seconds": round(dt, 3), "hands_per_s": round(hands / dt)}
    if args.json:
        print(json.dumps({"bench": "simulation", "target_hands_per_s": TARGET, **report}))
        return
    print("simulated hands per second, one core (engine + hard player + settlement, 7 seats)")
    for name, r in report.items():
        ok = "meets" if r["hands_per_s"] >= TARGET else "below"
        print(f"  {name}: {r['hands_per_s']:,} hands/s ({r['hands']:,} hands in {r['seconds']} s; "
              f"target {TARGET:,}: {ok})")


if __name__ == "__main__":
    main()
