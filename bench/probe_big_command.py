"""One oversized command published to a table's `commands` by an authorised client: the daemon's
resident memory (peak and after), whether the command reached it, what its sender saw, and how
long the next valid command took to be answered. With `--limit N` the broker runs with
`max_packet_size N` (as docs/mosquitto/mosquitto.conf ships it); with `--limit 0`, none (before
packet41). Not a bench of scripts/bench: a 200 MB command costs the machine its memory.

    .venv/bin/python bench/probe_big_command.py --mb 200 --limit 0
    .venv/bin/python bench/probe_big_command.py --mb 200 --mb 2            # as shipped
    .venv/bin/python bench/probe_big_command.py --flood 1000              # commands just under it
"""
import argparse
import json
import os
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "bench")]

import paho.mqtt.client as mqtt  # noqa: E402

from cli_args import parse  # noqa: E402
from drivers.virtual_shoe import VirtualShoe  # noqa: E402
from dealer_station.sim.broker import MAX_PACKET_SIZE  # noqa: E402
from mqtt_rig import Broker, Client, DaemonProc, wait_for, workdir  # noqa: E402


def kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Peak(threading.Thread):
    """The daemon's VmRSS, sampled every 10 ms (VmHWM alone holds the start's peak too)."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self):
        while not self.stop.wait(0.01):
            try:
                self.peak = max(self.peak, kb(self.pid, "VmRSS"))
            except OSError:
                return


def one(mb, limit, wait_s):
    d = workdir()
    broker = Broker(d, max_packet_size=limit)
    broker.start()
    shoe = VirtualShoe(decks=8, seed=3, heartbeat=0.2)
    shoe.start()
    daemon = DaemonProc(d, broker.port, shoe.path)
    daemon.start()
    bs = Client(broker.port)
    try:
        bs.wait_online()
        bs.command({"type": "pause", "reason": "warm-up"})
        bs.command({"type": "resume"})
        time.sleep(1)
        pid = daemon.proc.pid
        before = kb(pid, "VmRSS")
        peak = Peak(pid)
        peak.start()
        seen = []
        sender = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="big-sender",
                             protocol=mqtt.MQTTv5)
        sender.on_disconnect = lambda c, u, f, rc, p: seen.append(str(rc))
        sender.connect("127.0.0.1", broker.port)
        sender.loop_start()
        filler = mb * 2 ** 20
        payload = b'{"id": "big", "type": "pause", "reason": "' + b"x" * filler + b'"}'
        t0 = time.monotonic()
        sender.publish(f"{bs.base}/commands", payload, qos=1)
        del payload
        try:
            # refused as larger than 4096 bytes, its id is not read: answered with "id": null
            wait_for(lambda: None in bs.replies or len(seen) >= 2, wait_s, "the big command")
        except TimeoutError:
            pass
        sender.loop_stop()
        sender.disconnect()
        reached = None in bs.replies
        t1 = time.monotonic()
        reply = bs.command({"type": "pause", "reason": "after"}, timeout=120)
        next_s = time.monotonic() - t1
        time.sleep(1)
        peak.stop.set()
        peak.join()
        return {"mb": mb, "limit": limit, "rss_before_mb": round(before / 1024, 1),
                "rss_peak_mb": round(peak.peak / 1024, 1),
                "rss_after_mb": round(kb(pid, "VmRSS") / 1024, 1),
                "reached_daemon": reached,
                "reply": bs.replies.get(None, {}).get("reason"),
                "sender_saw": seen[:2], "big_s": round(t1 - t0, 2),
                "next_command": reply["status"], "next_command_s": round(next_s, 3),
                "broker_hwm_mb": round(kb(broker.proc.pid, "VmHWM") / 1024, 1)}
    finally:
        bs.close()
        daemon.stop()
        broker.stop()
        shoe.close()


def flood(n, limit, wait_s):
    """`n` commands each just under the limit (too large for the table: refused, id null), QoS 1
    from one login: what the table holds at once is its Receive Maximum's window of them."""
    d = workdir()
    broker = Broker(d, max_packet_size=limit)
    broker.start()
    shoe = VirtualShoe(decks=8, seed=3, heartbeat=0.2)
    shoe.start()
    daemon = DaemonProc(d, broker.port, shoe.path)
    daemon.start()
    bs = Client(broker.port)
    try:
        bs.wait_online()
        bs.command({"type": "pause", "reason": "warm-up"})
        time.sleep(1)
        pid = daemon.proc.pid
        before = kb(pid, "VmRSS")
        peak = Peak(pid)
        peak.start()
        sender = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="flood-sender",
                             protocol=mqtt.MQTTv5)
        sender.max_inflight_messages_set(0)
        sender.connect("127.0.0.1", broker.port)
        sender.loop_start()
        body = b"x" * (limit - 400)
        t0 = time.monotonic()
        infos = [sender.publish(f"{bs.base}/commands", b'{"id": "f%d", "type": "pause", "reason": "'
                                % i + body + b'"}', qos=1) for i in range(n)]
        for i in infos:
            i.wait_for_publish(wait_s)
        sent_s = time.monotonic() - t0
        t1 = time.monotonic()
        reply = bs.command({"type": "resume"}, timeout=wait_s)
        next_s = time.monotonic() - t1
        time.sleep(2)
        sender.loop_stop()
        sender.disconnect()
        peak.stop.set()
        peak.join()
        return {"flood": n, "each_kb": round(len(body) / 1024, 1), "limit": limit,
                "rss_before_mb": round(before / 1024, 1), "rss_peak_mb": round(peak.peak / 1024, 1),
                "rss_after_mb": round(kb(pid, "VmRSS") / 1024, 1), "flood_sent_s": round(sent_s, 2),
                "next_command": reply["status"], "next_command_s": round(next_s, 3)}
    finally:
        bs.close()
        daemon.stop()
        broker.stop()
        shoe.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, action="append", help="the command's size in MiB (repeat)")
    ap.add_argument("--limit", type=int, default=MAX_PACKET_SIZE,
                    help="the broker's max_packet_size in bytes (0: none)")
    ap.add_argument("--wait", type=float, default=120.0,
                    help="seconds to wait for the big command's fate")
    ap.add_argument("--flood", type=int, default=0,
                    help="instead: this many commands each just under --limit, QoS 1, at once")
    a = parse(ap, argv)
    if a.flood:
        print(json.dumps(flood(a.flood, a.limit, a.wait)), flush=True)
        return
    for mb in a.mb or [200, 2]:
        print(json.dumps(one(mb, a.limit, a.wait)), flush=True)


if __name__ == "__main__":
    main()
