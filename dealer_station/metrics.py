"""A Prometheus text endpoint on localhost, and /healthz. The main loop publishes a fresh
snapshot of its figures and its health (one tuple assignment); the HTTP thread only reads the
latest snapshot. Names ending in _total are counters, the rest gauges."""
import http.server
import json
import threading
import time

from drivers.section import Key, Section

CONFIG = Section("metrics", {
    "enabled": Key(bool, True),
    "bind": Key(str, "127.0.0.1"),
    "port": Key(int, 9464, lo=0, hi=65535),
})

STALE_S = 10.0     # a snapshot older than this: the main loop is stuck


class Metrics:
    def __init__(self, info=None):
        self.counters = {}
        self.snapshot = {}
        self.health = ("starting", time.monotonic())   # (why it is unhealthy or None, when)
        self.started = time.time()
        self.info = info or {}                   # build_info labels: version, table, profile
        self.status = None                       # the table's status document, for /status

    def inc(self, name, labels=(), by=1):
        key = (name, tuple(labels))
        self.counters[key] = self.counters.get(key, 0) + by

    def publish(self, gauges, unhealthy=None, status=None):
        """Called by the main loop: counters plus the current gauges, as one new dict, why the
        table is not healthy (None when it is), and its status document."""
        snap = dict(self.counters)
        snap.update(gauges)
        self.snapshot = snap
        # as text, now: the document shares dicts with the loop's state, which go on changing
        self.status = json.dumps(status) if status is not None else None
        self.health = (unhealthy, time.monotonic())

    def healthz(self):
        """(HTTP status, body): 200 ok, or 503 with the reason."""
        reason, at = self.health
        if time.monotonic() - at > STALE_S:
            reason = f"the main loop has not reported for {time.monotonic() - at:.0f} s"
        return (503, f"unhealthy: {reason}\n") if reason else (200, "ok\n")

    def render(self):
        lines = []
        seen = set()
        snap = dict(self.snapshot)
        snap[("build_info", tuple(sorted(self.info.items())))] = 1
        snap[("start_time_seconds", ())] = round(self.started, 3)
        snap[("uptime_seconds", ())] = round(time.time() - self.started, 1)
        for (name, labels), value in sorted(snap.items()):
            if name not in seen:
                seen.add(name)
                kind = "counter" if name.endswith("_total") else "gauge"
                lines.append(f"# TYPE dealer_station_{name} {kind}")
            lab = ",".join(f'{k}="{v}"' for k, v in labels)
            lines.append(f"dealer_station_{name}{{{lab}}} {value}" if lab
                         else f"dealer_station_{name} {value}")
        return "\n".join(lines) + "\n"

    def serve(self, bind, port):
        metrics = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/metrics":
                    code, text = 200, metrics.render()
                elif self.path == "/healthz":
                    code, text = metrics.healthz()
                elif self.path == "/status":
                    code, text = metrics.healthz()
                    text = json.dumps({**json.loads(metrics.status or "{}"), "healthy": code == 200,
                                       "health": text.strip(), "uptime_s":
                                       round(time.time() - metrics.started, 1)})
                    code = 200
                else:
                    self.send_error(404)
                    return
                body = text.encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_HEAD = do_GET        # the same answer without its body (a health check's HEAD)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((bind, port), Handler)
        threading.Thread(target=self.server.serve_forever, name="metrics", daemon=True).start()
        return self.server.server_address[1]

    def close(self):
        if getattr(self, "server", None):
            self.server.shutdown()
            self.server.server_close()
