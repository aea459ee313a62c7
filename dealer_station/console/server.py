"""The console's web server: the standard library's ThreadingHTTPServer and Server-Sent Events.

Why no framework: a Pi runs this beside the table's loop; the console serves a few pages to a
few screens, pushes one small JSON document per table change, and takes a handful of commands.
http.server + SSE needs no dependency, no event loop of its own and no build step; each open
page holds one thread blocked on the hub's condition (a few KB of stack in use).

The server never touches the table: it reads the hub's latest view, and a command goes on the
daemon's queue as the same bytes an MQTT command would be, answered through `reply()`.

The HTTP side, each request's checks and routes, is handler.py's; this module keeps the console
itself: its accounts, sessions and login limiter, the commands it passes to the daemon's loop and
their replies, and the server's start and stop.
"""
import http.server
import json
import secrets
import ssl
import threading
import time

from controller import rights

from .actions import check
from .auth import Accounts, LoginLimiter, Sessions
from .handler import (COOKIE, HEADERS, KEEPALIVE_S, MAX_BODY, PAGES, STATIC,  # noqa: F401
                      STATIC_FILES, TYPES, _handler)

REPLY_WAIT_S = 5.0


class Console:
    def __init__(self, cfg, hub, submit, metrics=None, camera=None, log=None,
                 clock=time.monotonic, export=None):
        """cfg: the [console] section (accounts as auth.Account); submit(payload bytes,
        correlation bytes, account) queues a command on the daemon's loop; export(round number)
        is a round's export document (export.export_round on the journal, read-only)."""
        self.cfg = cfg
        self.hub = hub
        self.submit = submit
        self.metrics = metrics
        self.camera = camera
        self.log = log
        self.accounts = Accounts(cfg["accounts"])
        # the console's accounts as staff: rights.decide judges them as it judges an MQTT login
        self.staff = rights.Staff({a.name: a.role for a in cfg["accounts"]}, require_login=False)
        self.export = export
        self.sessions = Sessions(cfg["session_idle_s"], cfg["session_max_s"], clock)
        self.limiter = LoginLimiter(cfg["login_failures"], cfg["login_window_s"],
                                    cfg["login_lockout_s"], clock)
        self.lock = threading.Lock()      # sessions and limiter: touched by every web thread
        self.waiting = {}                 # correlation -> [Event, reply]
        self.streams = 0
        self.anon_streams = 0
        self.server = None

    # -- from the loop thread ------------------------------------------------------------------

    def owns(self, correlation):
        return isinstance(correlation, bytes) and correlation.startswith(b"console:")

    def reply(self, correlation, payload):
        w = self.waiting.get(correlation)
        if w is not None:
            w[1] = payload
            w[0].set()

    # -- commands ------------------------------------------------------------------------------

    def command(self, session, body):
        """(HTTP status, reply dict) for an action sent from a page."""
        refused = check(self.staff, session.account, body)
        if refused:
            return refused
        kind, reason = body["type"], body.get("reason")
        cmd = {"id": f"console-{secrets.token_hex(8)}", **body, "by": session.account}
        corr = b"console:" + cmd["id"].encode()
        w = [threading.Event(), None]
        self.waiting[corr] = w
        try:
            self.submit(json.dumps(cmd).encode(), corr, session.account)
            if not w[0].wait(REPLY_WAIT_S):
                return 504, {"status": "rejected", "code": "timeout",
                             "reason": "the table did not answer (is the daemon's loop running?)"}
        finally:
            self.waiting.pop(corr, None)
        r = w[1]
        self.hub.action(session.account, session.role, cmd, r)
        if self.log:
            self.log.info("console: %s (%s) sent %s (%s): %s", session.account, session.role,
                          kind, reason, r.get("status"))
        return (200 if r.get("status") == "accepted" else 409), r

    # -- serving -------------------------------------------------------------------------------

    def serve(self):
        c = self.cfg
        self.server = http.server.ThreadingHTTPServer((c["bind"], c["port"]), _handler(self))
        self.server.daemon_threads = True
        if c["tls_cert"]:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.load_cert_chain(c["tls_cert"], c["tls_key"])
            # the handshake on the connection's own thread, not in accept(): a client that
            # connects and says nothing would otherwise hold up every other page
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True,
                                                 do_handshake_on_connect=False)
        threading.Thread(target=self.server.serve_forever, name="console", daemon=True).start()
        return self.server.server_address[1]

    def close(self):
        self.hub.close()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
