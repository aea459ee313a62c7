"""Engine throughput: rounds per second through `controller.step`, on one core.

Inputs are recorded first (whole shoes dealt by autoplay from seeded shuffles, every seat in play,
hit below 17), then replayed through the engine alone, and again with JSON decoding of every input
and encoding of every output. Targets (issue 2): 2,000 seven-seat luxury21 rounds/s and 20,000
punto banco rounds/s on one core.
"""
import argparse
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from controller import get_profile, new_table, step  # noqa: E402
from controller.autoplay import hit_below_17, play_shoe  # noqa: E402
from controller.cards import CARDS  # noqa: E402

TARGETS = {"luxury21": 2000, "punto_banco": 20000}


def record(profile, shoes, seed):
    rng = random.Random(seed)
    events, rounds = [], 0
    for _ in range(shoes):
        cards = list(CARDS) * profile.decks
        rng.shuffle(cards)
        for ev, out in play_shoe(profile, cards, hit_below_17):
            events.append(ev)
            rounds += sum(o["type"] == "round_result" for o in out)
    return events, rounds


def run_plain(profile, events):
    t = new_table(profile)
    t0 = time.perf_counter()
    for ev in events:
        t, out = step(t, ev)
    return time.perf_counter() - t0


def run_json(profile, lines):
    t = new_table(profile)
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    loads = json.loads
    t0 = time.perf_counter()
    for line in lines:
        t, out = step(t, loads(line))
        for o in out:
            dumps(o)
    return time.perf_counter() - t0


def best(fn, *args, repeat=3):
    return min(fn(*args) for _ in range(repeat))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shoes", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    from cli_args import parse       # bench/: strict by hand; scripts/bench passes all the same
    args = parse(ap)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    report = {}
    for name in ("luxury21", "punto_banco"):
        p = get_profile(name)
        events, rounds = record(p, args.shoes, args.seed)
        lines = [json.dumps(e) for e in events]
        plain = best(run_plain, p, events)
        with_json = best(run_json, p, lines)
        report[name] = {"rounds": rounds, "inputs": len(events),
                        "rounds_per_s": round(rounds / plain),
                        "rounds_per_s_json": round(rounds / with_json),
                        "inputs_per_s": round(len(events) / plain),
                        "target_rounds_per_s": TARGETS[name]}
    if args.json:
        print(json.dumps({"bench": "engine", **report}))
        return
    print("engine throughput, one core (best of 3)")
    for name, r in report.items():
        seats = " (7 seats)" if name == "luxury21" else ""
        ok = "meets" if r["rounds_per_s"] >= r["target_rounds_per_s"] else "BELOW"
        print(f"  {name}{seats}: {r['rounds_per_s']:,} rounds/s engine only, "
              f"{r['rounds_per_s_json']:,} rounds/s with JSON in and out "
              f"({r['rounds']:,} rounds, {r['inputs']:,} inputs; target {r['target_rounds_per_s']:,}: {ok})")


if __name__ == "__main__":
    main()
