"""A Prometheus text endpoint on localhost. The main loop publishes a fresh snapshot of its
figures (one dict assignment); the HTTP thread only reads the latest snapshot."""
import http.server
import threading


class Metrics:
    def __init__(self):
        self.counters = {}
        self.snapshot = {}

    def inc(self, name, labels=(), by=1):
        key = (name, tuple(labels))
        self.counters[key] = self.counters.get(key, 0) + by

    def publish(self, gauges):
        """Called by the main loop: counters plus the current gauges, as one new dict."""
        snap = dict(self.counters)
        snap.update(gauges)
        self.snapshot = snap

    def render(self):
        lines = []
        seen = set()
        for (name, labels), value in sorted(self.snapshot.items()):
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
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                body = metrics.render().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((bind, port), Handler)
        threading.Thread(target=self.server.serve_forever, name="metrics", daemon=True).start()
        return self.server.server_address[1]

    def close(self):
        if getattr(self, "server", None):
            self.server.shutdown()
            self.server.server_close()
