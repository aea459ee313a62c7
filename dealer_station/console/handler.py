"""The console's HTTP request handler (a part of server.py): the pages, the event stream (SSE),
the supervisor's API (metrics, the camera's frame, a round's export), login and logout, and a
command passed on to `Console.command`. Each request is checked here (session cookie, CSRF
token, same origin, body size) before the console is asked anything."""
import http.server
import json
import os
import secrets
import sqlite3
import ssl
import urllib.parse

from .actions import ACTIONS, NEEDS_REASON, RIGHTS

STATIC = os.path.join(os.path.dirname(__file__), "static")
TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
         ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
PAGES = {"/dealer": "dealer.html", "/pit": "pit.html", "/login": "login.html"}
MAX_BODY = 4096
KEEPALIVE_S = 15.0
COOKIE = "ds_session"
HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data: blob:; "
                                      "frame-ancestors 'none'; form-action 'self'",
           "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
           "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


def _handler(console):
    cfg = console.cfg
    secure = bool(cfg["tls_cert"])

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "dealer-station-console"
        sys_version = ""

        def log_message(self, *args):
            pass

        # -- helpers ---------------------------------------------------------------------------

        def _send(self, code, body=b"", ctype="application/json", headers=()):
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            self.send_response(code)
            for k, v in HEADERS.items():
                self.send_header(k, v)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _session(self):
            raw = self.headers.get("Cookie") or ""
            token = None
            for part in raw.split(";"):
                k, _, v = part.strip().partition("=")
                if k == COOKIE:
                    token = v
            with console.lock:
                return console.sessions.get(token)

        def _json_body(self):
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
                return None, "send application/json"
            try:
                n = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                return None, "bad Content-Length"
            if not 0 < n <= MAX_BODY:
                return None, f"a body of 1-{MAX_BODY} bytes"
            try:
                return json.loads(self.rfile.read(n)), None
            except (ValueError, UnicodeDecodeError):
                return None, "not JSON"

        def _same_origin(self):
            """A browser names the page that sent a POST; it must be one of ours."""
            origin = self.headers.get("Origin")
            if origin is None:
                return True
            return urllib.parse.urlsplit(origin).netloc == self.headers.get("Host")

        def _file(self, name):
            path = os.path.join(STATIC, name)
            with open(path, "rb") as f:
                self._send(200, f.read(), TYPES[os.path.splitext(name)[1]])

        # -- GET -------------------------------------------------------------------------------

        def do_HEAD(self):
            # what GET answers, without the body (`curl -I`, a load balancer's health check)
            self.do_GET()

        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            s = self._session()
            if path == "/":
                return self._send(302, "", "text/plain", [("Location", "/dealer")])
            if path == "/login":
                return self._file("login.html")
            if path.startswith("/static/"):
                name = path[len("/static/"):]
                if name in STATIC_FILES:
                    return self._file(name)
                return self._send(404, {"error": "no such file"})
            if path == "/dealer":
                if s is None and not cfg["open_dealer_view"]:
                    return self._send(302, "", "text/plain", [("Location", "/login?next=/dealer")])
                return self._file("dealer.html")
            if path == "/pit":
                if s is None:
                    return self._send(302, "", "text/plain", [("Location", "/login?next=/pit")])
                return self._file("pit.html")     # a dealer sees it refuse: the API says 403
            if path == "/stream":
                if s is None and not cfg["open_dealer_view"]:
                    return self._send(401, {"error": "log in"})
                return self._stream(s is not None)
            if path == "/api/session":
                if s is None:
                    return self._send(401, {"error": "log in"})
                return self._send(200, {"account": s.account, "role": s.role, "csrf": s.csrf,
                                        "actions": {k: {"fields": ACTIONS[k],
                                                        "reason": k in NEEDS_REASON}
                                                    for k in ACTIONS if k in RIGHTS[s.role]}})
            if path in ("/api/metrics", "/api/camera.jpg", "/api/export"):
                if s is None:
                    return self._send(401, {"error": "log in"})
                if s.role != "supervisor":
                    return self._send(403, {"error": "supervisors only"})
                if path == "/api/export":
                    return self._export(urllib.parse.urlsplit(self.path).query)
                return self._metrics() if path == "/api/metrics" else self._camera()
            return self._send(404, {"error": "not found"})

        def _stream(self, logged_in):
            # pages without an account (the open dealer view) get at most half the streams, so
            # anyone who can reach the console cannot shut the pit boss's page out
            with console.lock:
                anon_cap = max(1, cfg["max_streams"] // 2)
                if console.streams >= cfg["max_streams"] or (
                        not logged_in and console.anon_streams >= anon_cap):
                    return self._send(503, {"error": "too many open pages"})
                # HEAD: the headers only, no stream held, so no place taken (a place given back
                # after the answer raced the client's next request: a HEAD loop saw 503 in CI)
                head = self.command == "HEAD"
                if not head:
                    console.streams += 1
                    console.anon_streams += not logged_in
            if head:
                try:
                    return self._stream_headers()
                except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                    return
            try:
                self._stream_headers()
                version = 0
                self.wfile.write(b"retry: 1000\n\n")
                while not console.hub.closed:
                    version, text = console.hub.wait(version, KEEPALIVE_S)
                    if text is None:
                        self.wfile.write(b"event: ping\ndata: {}\n\n")
                    else:
                        self.wfile.write(f"id: {version}\nevent: view\ndata: {text}\n\n".encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                pass
            finally:
                with console.lock:
                    console.streams -= 1
                    console.anon_streams -= not logged_in

        def _stream_headers(self):
            self.send_response(200)
            for k, v in HEADERS.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True

        def _metrics(self):
            m = console.metrics
            figures = {}
            if m is not None:
                for (name, labels), v in sorted(dict(m.snapshot).items()):
                    lab = ",".join(f"{k}={v}" for k, v in labels)
                    figures[f"{name}{{{lab}}}" if lab else name] = v
            return self._send(200, {"figures": figures})

        def _camera(self):
            from .camera_frame import jpeg
            data = jpeg(console.camera)
            if data is None:
                return self._send(404, {"error": "no camera frame"})
            return self._send(200, data, "image/jpeg")

        def _export(self, query):
            """A round's export, as `dealer-station export --round N` writes it (the same code,
            on a read-only connection to the journal), as a download."""
            from ..export import ArchiveError, round_text
            q = urllib.parse.parse_qs(query)
            n = (q.get("round") or [""])[0]
            if not n.isdecimal() or not 0 < int(n) < 2 ** 53:      # "²" isdigit, not int()
                return self._send(400, {"error": "round: a round number"})
            if console.export is None:
                return self._send(404, {"error": "this console has no journal to export from"})
            try:
                doc = console.export(int(n))
            except (ArchiveError, sqlite3.Error) as e:
                return self._send(404, {"error": str(e)})
            if not doc["finished"]:      # its inputs name the hole card before the reveal
                return self._send(409, {"error": f"round {n} is not over: export it once ended"})
            table = "".join(c if c.isalnum() or c in "-_." else "_" for c in str(doc["table"]))
            name = f"{table}-round-{doc['round']}.json"
            return self._send(200, round_text(doc), "application/json", [
                ("Content-Disposition", f'attachment; filename="{name}"')])

        # -- POST ------------------------------------------------------------------------------

        def do_POST(self):
            path = urllib.parse.urlsplit(self.path).path
            if not self._same_origin():
                return self._send(403, {"error": "cross-origin request refused"})
            body, err = self._json_body()
            if err:
                return self._send(400, {"error": err})
            if path == "/api/login":
                return self._login(body)
            s = self._session()
            if s is None:
                return self._send(401, {"error": "log in (the session may have expired)"})
            # CSRF: the token the page got from /api/session, which another site cannot read
            token = self.headers.get("X-CSRF-Token") or ""
            if not secrets.compare_digest(token.encode(), s.csrf.encode()):
                return self._send(403, {"error": "missing or wrong CSRF token"})
            if path == "/api/logout":
                with console.lock:
                    console.sessions.drop(s.token)
                return self._send(200, {"ok": True}, headers=[
                    ("Set-Cookie", f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")])
            if path == "/api/command":
                code, reply = console.command(s, body)
                return self._send(code, reply)
            return self._send(404, {"error": "not found"})

        def _login(self, body):
            name = body.get("name") if isinstance(body, dict) else None
            password = body.get("password") if isinstance(body, dict) else None
            if not isinstance(name, str) or not isinstance(password, str) or len(password) > 1024:
                return self._send(400, {"error": "name and password"})
            keys = (f"addr:{self.client_address[0]}", f"name:{name[:64]}")
            with console.lock:
                wait = console.limiter.blocked(*keys)
            if wait:
                return self._send(429, {"error": f"too many failed logins: try again in "
                                                 f"{wait:.0f} s"},
                                  headers=[("Retry-After", str(int(wait) + 1))])
            account = console.accounts.check(name, password)
            with console.lock:
                if account is None:
                    console.limiter.failed(*keys)
                    s = None
                else:
                    console.limiter.succeeded(*keys)
                    s = console.sessions.create(account.name, account.role)
            if s is None:
                if console.log:
                    console.log.warning("console: failed login for %r from %s", name[:64],
                                        self.client_address[0])
                return self._send(401, {"error": "wrong name or password"})
            cookie = f"{COOKIE}={s.token}; Path=/; HttpOnly; SameSite=Strict" + (
                "; Secure" if secure else "")
            return self._send(200, {"account": s.account, "role": s.role, "csrf": s.csrf},
                              headers=[("Set-Cookie", cookie)])

    return Handler


STATIC_FILES = ("console.css", "common.js", "dealer.js", "pit.js", "login.js")
