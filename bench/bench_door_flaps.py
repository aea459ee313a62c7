"""The cold trial's door: N door reports from the virtual shoe, `--gap` ms apart, mid-round,
into the real driver and daemon (in process, a private Mosquitto). Prints the events the table
published for them (device_fault, device_restored, round_paused, round_resumed) and the final
door state the table holds. Without a debounce every report was an event.

    .venv/bin/python bench/bench_door_flaps.py --flaps 200 --gap 10
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from dealer_station.config import check_config  # noqa: E402
from dealer_station.daemon import Daemon  # noqa: E402
from dealer_station.sim.broker import Broker  # noqa: E402
from drivers.virtual_shoe import VirtualShoe  # noqa: E402

KINDS = ("device_fault", "device_restored", "round_paused", "round_resumed")


def run(flaps, gap, end_open):
    work = tempfile.mkdtemp(prefix="door-flaps-")
    b = Broker(work)
    b.start()
    shoe = VirtualShoe(decks=8, seed=9, heartbeat=0.2)
    shoe.start()
    cfg, errors = check_config({
        "table": {"id": "flaps", "profile": "luxury21"}, "shoe": {"url": shoe.path},
        "broker": {"port": b.port}, "paths": {"journal": os.path.join(work, "j.sqlite")},
        "metrics": {"enabled": False}})
    assert not errors, errors
    d = Daemon(cfg)
    d.start()

    def outputs():
        return [json.loads(r[0]) for r in d.journal.db.execute("SELECT body FROM outbox")]

    def step_for(seconds, until=lambda: False):
        end = time.monotonic() + seconds
        while time.monotonic() < end and not until():
            d.run_once(0.01)
    try:
        step_for(5, lambda: d.devices.get("shoe", {}).get("model"))
        d.process({"type": "shoe_loaded"}, "bench")
        while d.station.table.phase == "burn":
            n = len(outputs())
            shoe.deal()
            step_for(5, lambda: len(outputs()) > n)
        d.process({"type": "betting_closed", "seats": [1]}, "bench")
        before = len(outputs())
        t0 = time.monotonic()
        for i in range(flaps):
            # alternate open/closed; the last one is open when end_open, else closed
            is_open = (i % 2 == 0) if (flaps % 2 == 1) == end_open else (i % 2 == 1)
            shoe.status(door="open" if is_open else "closed")
            step_for(max(0.0, t0 + (i + 1) * gap / 1000 - time.monotonic()))
        step_for(1.0)      # let the last report settle and reach the table
        got = [o["type"] for o in outputs()[before:] if o["type"] in KINDS]
        door = d.devices["shoe"].get("report", {}).get("door")
        return {"flaps": flaps, "gap_ms": gap, "last_report": "open" if end_open else "closed",
                "events": len(got), "by_kind": {k: got.count(k) for k in KINDS if k in got},
                "door_held": door, "paused": bool(d.station.table.paused)}
    finally:
        d.close()
        shoe.close()
        b.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flaps", type=int, default=200)
    ap.add_argument("--gap", type=float, default=10.0, help="ms between reports")
    a = ap.parse_args()
    for end_open in (True, False):
        print(json.dumps(run(a.flaps, a.gap, end_open)), flush=True)


if __name__ == "__main__":
    main()
