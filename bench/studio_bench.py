"""The studio benchmark (issue #21; a command, not in CI): N simulated tables, each through its
own edge Mosquitto and bridge, into a 3-node nats-server cluster, for a given time at the
dealer's pace, with the studio faults: a central node killed (back after 30 s), one table's uplink
cut and the whole central tier down (each for --outage seconds). Reports the ledger's messages per
second, the latency from the card read (the daemon's receipt of the shoe's frame) to the central
consumer, p50/p99, and each edge's queue depth (messages held for its bridge) during the outages.

    .venv/bin/python bench/studio_bench.py --tables 12 --minutes 10 --outage 60 [--report FILE]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dealer_station.sim.studio import PROFILES, Studio  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=12)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--outage", type=float, default=60, help="seconds of each outage")
    ap.add_argument("--speed", type=float, default=1.0, help="the dealer's pace (1: 0.25 s an action)")
    ap.add_argument("--profile", default=None, help="one profile for every table (default: a mix)")
    ap.add_argument("--report")
    a = ap.parse_args()
    run_s = a.minutes * 60
    faults = [{"fault": "central_node_kill", "at_s": 0.15 * run_s, "node": 1, "seconds": 30},
              {"fault": "uplink_cut", "at_s": 0.35 * run_s, "table": 1, "seconds": a.outage},
              {"fault": "central_down", "at_s": 0.6 * run_s, "seconds": a.outage}]
    s = Studio(a.tables, 0, faults, profiles=[a.profile] if a.profile else PROFILES, speed=a.speed)
    try:
        s.start()
        stuck = None
        try:
            s.play(duration=run_s)
        except TimeoutError as e:     # a table that never came back: still report the rest
            stuck = str(e)
        r = s.report()
        r["stuck"] = stuck
    finally:
        s.close()
    r["load_average"] = os.getloadavg()
    text = json.dumps(r, indent=1)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0 if r["ok"] and not r["stuck"] else 1


if __name__ == "__main__":
    sys.exit(main())
