"""The table console's costs on a simulated table (table-sim's daemon) and Debian's headless
Chromium:

- event to paint: from the moment the daemon's loop took an input (the clock stamped on the
  view) to the browser's paint of the view it caused (a rAF, then the next task), over every view
  five dealer pages received, p50/p99/max in ms (same machine, same clock);
- the daemon's extra CPU and memory with five pages open: the same rounds played with the
  console off, then on with five pages, CPU seconds per round and resident memory (VmRSS).

    .venv/bin/python bench/bench_console.py [--rounds 30] [--profile luxury21] [--speed 4]
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from console_rig import TableRun, launch  # noqa: E402


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(profile, rounds, speed, pages, browser=None):
    t = TableRun(profile, rounds, speed=speed, seed=7).start()
    if not pages:
        t.h.console = None      # (the harness wrote its config already: console on, no page)
    opened = []
    try:
        for _ in range(pages):
            p = browser.new_context(viewport={"width": 1920, "height": 1080},
                                    bypass_csp=True).new_page()
            p.goto(f"{t.url}/dealer")
            p.wait_for_selector("#conn.ok")
            opened.append(p)
        pid = t.h.daemon.pid
        c0 = cpu_s(pid)
        t.play()
        t.wait_done(timeout=1200)
        cpu = cpu_s(pid) - c0
        rss = t.h.daemon_rss_mb()
        lat = []
        for p in opened:
            # the first view is the one found on connecting: its event is older than the page
            lat += [paint - at for _, at, paint in p.evaluate("window.__paints")[1:]]
            p.context.close()
        return {"cpu_s_per_round": round(cpu / rounds, 4), "rss_mb": rss, "latencies": lat}
    finally:
        t.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--profile", default="luxury21")
    ap.add_argument("--speed", type=float, default=4.0)
    ap.add_argument("--pages", type=int, default=5)
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright
    load = [os.getloadavg()[0]]       # the machine's load: the figures mean little without it
    with sync_playwright() as pw:
        browser = launch(pw)
        base = run(a.profile, a.rounds, a.speed, 0)
        on = run(a.profile, a.rounds, a.speed, a.pages, browser)
        browser.close()
    load.append(os.getloadavg()[0])
    lat = sorted(on.pop("latencies"))
    q = statistics.quantiles(lat, n=100) if len(lat) > 1 else lat * 99
    out = {"profile": a.profile, "rounds": a.rounds, "pages": a.pages, "views_painted": len(lat),
           "paint_ms": {"p50": round(q[49], 1), "p99": round(q[98], 1), "max": round(lat[-1], 1)},
           "daemon_no_page": base, "daemon_with_pages": on,
           "extra_cpu_s_per_round": round(on["cpu_s_per_round"] - base["cpu_s_per_round"], 4),
           "extra_rss_mb": round((on["rss_mb"] or 0) - (base["rss_mb"] or 0), 1),
           "target_p99_ms": 50, "cores": os.cpu_count(),
           "load_average_1min": {"start": round(load[0], 1), "end": round(load[1], 1)}}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
