"""A flood of `resend from: 1` against a journal of 10,000 events: what it holds the loop for.

Builds a luxury21 journal with at least 10,000 outbox rows (one shoe played through the daemon's
own `process`, copied shoe after shoe as bench/bench_recovery.py does, every event acknowledged
by the broker), opens a daemon on it (no broker: its publishes are counted, not sent), queues
`--resends` resends from 1, each with a new id, with one staff input (a `pause`, a stand-in for a
card or a decision) in the middle of them, and steps the loop as it runs (`run_once`), the broker
acknowledging every publish at once (`--window` in flight), until all is published. Reports the
loop's time for the flood, the longest single item, how long the pause waited behind the
resends (from the loop's first item to its journal write), and that every event was published
once (coalesced: one republication for all the resends).
"""
import argparse
import itertools
import json
import logging
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from bench_recovery import copy_shoes, daemon, play  # noqa: E402
from cli_args import parse, positive  # noqa: E402
from dealer_station.station_types import Command, LocalInput, Publish  # noqa: E402


def build(path, rows):
    d = daemon(path)
    d.recover()
    play(d, 2026)
    d.journal.close()
    copy_shoes(path, rows)


def flood(path, resends, window):
    d = daemon(path)
    d.recover()
    published = []                  # seqs handed to the broker, in order
    mids = itertools.count(1)
    d.link.publish_event = lambda message: next(mids)
    d.link.reply = lambda *a, **k: None
    d.link.ack = lambda *a, **k: None
    real_do = d.do

    def do(e):
        if type(e) is Publish:
            published.append(e.seq)
        real_do(e)
    d.do = do
    top = d.station.next_seq - 1
    assert not d.station.pending and not d.station.inflight, "the journal left events unsent"
    d.station.devices["broker"] = {"state": "connected"}
    d.station.s.inflight = window
    paused_at = []
    real_write = d.journal.write

    def write(e):
        real_write(e)
        if e.body["type"] == "pause":
            paused_at.append(time.perf_counter())
    d.journal.write = write
    for i in range(resends):
        if i == resends // 2:
            d.q.put(LocalInput({"type": "pause", "reason": "bench"}, "bench"))
        d.q.put(Command(json.dumps({"type": "resend", "id": f"b{i}", "from": 1}).encode()))
    longest = 0.0
    real_handle = d.handle

    def handle(item):
        nonlocal longest
        t = time.perf_counter()
        real_handle(item)
        longest = max(longest, time.perf_counter() - t)
    d.handle = handle
    t0, c0 = time.perf_counter(), time.process_time()
    while not d.q.empty() or d.station.inflight:
        d.run_once(0)
        for mid in list(d.mids):        # the broker acknowledges what it was handed, at once
            real_handle(("mqtt", "puback", mid))
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    d.journal.close()
    resent = [s for s in published if s <= top]
    return {"events": top, "resends": resends, "window": window, "loop_s": round(total, 3),
            "loop_cpu_s": round(cpu, 3), "longest_item_ms": round(longest * 1000, 2),
            "pause_waited_ms": round((paused_at[0] - t0) * 1000, 2),
            # a resend covers at most 10,000 events (docs/protocol.md): 1-10,000 here
            "published_once_each": sorted(resent) == list(range(1, min(top, 10000) + 1)),
            "published": len(resent)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=positive, default=10000, help="outbox rows in the journal")
    ap.add_argument("--resends", type=positive, default=100, help="resends from 1, new ids")
    ap.add_argument("--window", type=positive, default=100,
                    help="events in flight to the broker at once (broker.inflight)")
    ap.add_argument("--json", action="store_true")
    a = parse(ap)
    # the copied shoes replay as other outputs (bench_recovery's copies): not this bench's news
    logging.getLogger("dealer-station").setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory(prefix="ds-bench-resend-") as work:
        path = os.path.join(work, "j.sqlite")
        build(path, a.rows)
        r = {"bench": "resend", **flood(path, a.resends, a.window)}
    if a.json:
        print(json.dumps(r))
    else:
        print(f"resend: {r['resends']} resends from 1 (new ids) over {r['events']:,} events, "
              f"{r['window']} in flight, the broker acknowledging each at once: the "
              f"loop {r['loop_s']} s ({r['loop_cpu_s']} s CPU), longest item "
              f"{r['longest_item_ms']} ms, a pause queued among them waited "
              f"{r['pause_waited_ms']} ms; {r['published']:,} events republished, each once: "
              f"{r['published_once_each']}")


if __name__ == "__main__":
    main()
