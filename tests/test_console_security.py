"""The console's security, over real HTTP to the real server (a real Hub; the daemon's loop
played by a thread answering the queued commands): passwords hashed, sessions expire, CSRF
tokens on actions, failed logins throttled, roles enforced, strict [console] configuration."""
import http.client
import json
import queue
import threading

import pytest

from dealer_station.archive import ArchiveError
from dealer_station.config import check_config
from dealer_station.export import round_text
from dealer_station.console.auth import (Account, LoginLimiter, Sessions, hash_password,
                                         hash_problem, verify_password)
from dealer_station.console.hub import Hub
from dealer_station.console.server import Console


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


CFG = {"bind": "127.0.0.1", "port": 0, "tls_cert": None, "tls_key": None,
       "open_dealer_view": True, "session_idle_s": 600.0, "session_max_s": 3600.0,
       "login_failures": 3, "login_window_s": 60.0, "login_lockout_s": 120.0, "max_streams": 4}


ROUNDS = {1: {"format": "dealer-station-round", "table": "t1", "round": 1, "finished": True,
             "inputs": [{"n": 1, "body": {"type": "card", "card": "Qh"}}]},
          2: {"format": "dealer-station-round", "table": "t1", "round": 2, "finished": False}}


def fake_export(n):
    """export_round's stand-in (the real one on a real journal: test_console_browser.py)."""
    if n not in ROUNDS:
        raise ArchiveError(f"round {n} is not in this journal (archived, or not played yet)")
    return ROUNDS[n]


@pytest.fixture
def console():
    clock = Clock()
    accounts = [Account("anna", "supervisor", hash_password("anna-pw", n=1024)),
                Account("dan", "dealer", hash_password("dan-pw", n=1024))]
    hub = Hub("t1", "luxury21")
    q = queue.Queue()
    c = Console({**CFG, "accounts": accounts}, hub,
                lambda p, corr, account: q.put((p, corr, account)), clock=clock,
                export=fake_export)

    def loop():          # the daemon's loop: every command it is handed is accepted
        while True:
            item = q.get()
            if item is None:
                return
            payload, corr, account = item
            assert json.loads(payload)["by"] == account     # the console vouches for its login
            c.received.append(json.loads(payload))
            c.reply(corr, {"type": "reply", "id": json.loads(payload)["id"], "status": "accepted"})
    c.received = []
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    c.port = c.serve()
    c.clock = clock
    yield c
    q.put(None)
    c.close()


def request(c, method, path, body=None, cookie=None, csrf=None, origin=None):
    conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=5)
    headers = {"Content-Type": "application/json"}
    if cookie:
        headers["Cookie"] = cookie
    if csrf:
        headers["X-CSRF-Token"] = csrf
    if origin:
        headers["Origin"] = origin
    conn.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    try:
        data = json.loads(data)
    except ValueError:
        pass
    return r.status, data, r.headers


def login(c, name, password):
    status, data, headers = request(c, "POST", "/api/login", {"name": name, "password": password})
    cookie = (headers.get("Set-Cookie") or "").split(";")[0]
    return status, data, cookie


def test_passwords_are_salted_scrypt_hashes():
    a, b = hash_password("s3cret", n=1024), hash_password("s3cret", n=1024)
    assert a != b and "s3cret" not in a and a.startswith("scrypt$1024$8$1$")
    assert verify_password("s3cret", a) and verify_password("s3cret", b)
    assert not verify_password("s3cret ", a) and not verify_password("", a)
    assert hash_problem(a) is None
    for bad in ("s3cret", "scrypt$1000$8$1$AAAA$AAAA", "md5$x", "scrypt$1024$8$1$!!$??"):
        assert hash_problem(bad) and not verify_password("s3cret", bad)


def test_sessions_expire_when_idle_and_after_their_maximum_age():
    clock = Clock()
    s = Sessions(idle_s=60, max_s=300, clock=clock)
    a = s.create("anna", "supervisor")
    clock.t += 59
    assert s.get(a.token) == a
    clock.t += 61                                  # idle too long
    assert s.get(a.token) is None
    b = s.create("anna", "supervisor")
    for _ in range(6):                             # active, but past the maximum age at last
        clock.t += 55
        alive = s.get(b.token)
    assert alive is None and s.get("made-up") is None


def test_a_session_cookie_stops_working_once_expired(console):
    status, data, cookie = login(console, "anna", "anna-pw")
    assert status == 200 and data["role"] == "supervisor" and "HttpOnly" in "".join(
        request(console, "POST", "/api/login", {"name": "anna", "password": "anna-pw"})[2]
        .get_all("Set-Cookie"))
    assert request(console, "GET", "/api/session", cookie=cookie)[0] == 200
    console.clock.t += CFG["session_idle_s"] + 1
    assert request(console, "GET", "/api/session", cookie=cookie)[0] == 401
    status, _, _ = request(console, "POST", "/api/command", {"type": "resume", "reason": "x"},
                           cookie=cookie, csrf=data["csrf"])
    assert status == 401 and console.received == []


def test_actions_need_the_sessions_csrf_token_and_our_origin(console):
    _, data, cookie = login(console, "anna", "anna-pw")
    cmd = {"type": "void_round", "reason": "dealer dropped a card"}
    assert request(console, "POST", "/api/command", cmd, cookie=cookie)[0] == 403
    assert request(console, "POST", "/api/command", cmd, cookie=cookie, csrf="forged")[0] == 403
    _, other, _ = login(console, "dan", "dan-pw")        # another session's token
    assert request(console, "POST", "/api/command", cmd, cookie=cookie, csrf=other["csrf"])[0] == 403
    assert request(console, "POST", "/api/command", cmd, cookie=cookie, csrf=data["csrf"],
                   origin="http://evil.example")[0] == 403
    assert console.received == []
    status, reply, _ = request(console, "POST", "/api/command", cmd, cookie=cookie, csrf=data["csrf"])
    assert status == 200 and reply["status"] == "accepted"
    sent, = console.received
    assert sent["type"] == "void_round" and sent["by"] == "anna" and sent["reason"] == cmd["reason"]


def test_failed_logins_are_throttled_even_for_the_right_password(console):
    for _ in range(CFG["login_failures"]):
        assert login(console, "anna", "guess")[0] == 401
    status, data, headers = request(console, "POST", "/api/login", {"name": "anna", "password": "anna-pw"})
    assert status == 429 and int(headers["Retry-After"]) > 0
    # the address is locked too: another name from it waits as well
    assert login(console, "dan", "dan-pw")[0] == 429
    console.clock.t += CFG["login_lockout_s"] + 1
    assert login(console, "anna", "anna-pw")[0] == 200


def test_the_limiter_forgets_failures_outside_its_window():
    clock = Clock()
    lim = LoginLimiter(3, 60, 100, clock)
    lim.failed("k")
    lim.failed("k")
    clock.t += 61
    lim.failed("k")
    assert lim.blocked("k") == 0
    lim.failed("k")
    lim.failed("k")
    assert lim.blocked("k") == 100


def test_a_dealer_account_cannot_resolve_an_irregularity(console):
    _, data, cookie = login(console, "dan", "dan-pw")
    for cmd in ({"type": "resume", "reason": "x"}, {"type": "void_round", "reason": "x"},
                {"type": "manual_card", "card": "Qh", "reason": "x"},
                {"type": "manual_number", "number": 17, "reason": "x"},
                {"type": "correct_result", "round": 1, "seq": 9, "void": True, "reason": "x"},
                {"type": "supervisor_decision", "decision": "continue", "reason": "x"}):
        status, reply, _ = request(console, "POST", "/api/command", cmd, cookie=cookie, csrf=data["csrf"])
        assert status == 403 and reply["code"] == "not_authorized", cmd
        assert "needs a supervisor" in reply["reason"]
    for path in ("/api/metrics", "/api/export?round=1", "/api/camera.jpg"):
        assert request(console, "GET", path, cookie=cookie)[0] == 403
    assert console.received == []
    # the staff's own part: pause, report a dealer error, declare a no-spin (RULES.md: "the
    # dealer or supervisor can also declare a no-spin")
    for cmd in ({"type": "pause", "reason": "pit boss please"},
                {"type": "dealer_error", "error": "misdeal"},
                {"type": "no_spin", "reason": "the ball left the wheel"}):
        status, _, _ = request(console, "POST", "/api/command", cmd, cookie=cookie, csrf=data["csrf"])
        assert status == 200 and console.received[-1] == {**cmd, "id": console.received[-1]["id"],
                                                          "by": "dan"}
    _, me, _ = request(console, "GET", "/api/session", cookie=cookie)
    assert sorted(me["actions"]) == ["dealer_error", "no_spin", "pause"]


def test_the_consoles_rights_are_the_tables_one_table():
    """Who may send what from a page, and what needs a reason, are read from controller/rights.py
    (at its strictest: after an irregularity) and the engine's input schemas, not kept twice."""
    from controller import rights
    from dealer_station.console import actions
    for kind in actions.ACTIONS:
        right = rights.required(kind, True)
        for role in ("dealer", "supervisor"):
            assert (kind in actions.RIGHTS[role]) == (role in right.roles)
        if right.override:
            assert kind in actions.NEEDS_REASON
    assert actions.ACTIONS["manual_number"] == ("number", "reason")
    assert actions.ACTIONS["correct_result"] == ("round", "seq", "reason", "number", "void")
    assert actions.ACTIONS["supervisor_decision"] == ("decision", "reason")
    assert actions.ACTIONS["manual_card"] == ("card", "reason")     # source: always manual


def test_the_new_procedures_reach_the_table_with_by_and_reason(console):
    _, data, cookie = login(console, "anna", "anna-pw")
    sent = [{"type": "manual_number", "number": 17, "reason": "the wheel's reading was lost"},
            {"type": "correct_result", "round": 4, "seq": 88, "number": 5, "reason": "misread"},
            {"type": "correct_result", "round": 4, "seq": 88, "void": True, "reason": "misread"},
            {"type": "supervisor_decision", "decision": "replace", "reason": "card to seat 2"},
            {"type": "no_spin", "reason": "ball turned with the wheel"}]
    for cmd in sent:
        status, reply, _ = request(console, "POST", "/api/command", cmd, cookie=cookie, csrf=data["csrf"])
        assert status == 200 and reply["status"] == "accepted"
    assert [{k: v for k, v in c.items() if k != "id"} for c in console.received] == [
        {**c, "by": "anna"} for c in sent]
    for bad in ({"type": "manual_number", "number": 17},                     # no reason
                {"type": "supervisor_decision", "decision": "continue", "reason": " "},
                {"type": "manual_number", "number": 17, "reason": "x", "spin": 3},  # not its field
                {"type": "correct_result", "round": 4, "seq": 88, "void": True, "reason": "x",
                 "by": "someone else"}):
        status, reply, _ = request(console, "POST", "/api/command", bad, cookie=cookie, csrf=data["csrf"])
        assert status == 400, bad
    assert len(console.received) == len(sent)


def test_actions_are_checked_before_they_reach_the_table(console):
    _, data, cookie = login(console, "anna", "anna-pw")
    for cmd in ({"type": "resume"}, {"type": "shoe_loaded", "reason": "x"},
                {"type": "resume", "reason": "x", "seat": 1}, {"type": "void_round", "reason": "  "}):
        assert request(console, "POST", "/api/command", cmd, cookie=cookie, csrf=data["csrf"])[0] == 400
    assert console.received == []


def test_pages_need_a_login_where_they_should(console):
    assert request(console, "GET", "/dealer")[0] == 200          # open_dealer_view
    status, _, headers = request(console, "GET", "/pit")
    assert status == 302 and headers["Location"].startswith("/login")
    assert request(console, "GET", "/api/metrics")[0] == 401
    assert request(console, "GET", "/static/../server.py")[0] == 404
    _, _, headers = request(console, "GET", "/dealer")
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]


def test_head_answers_as_get_without_a_body(console):
    """`curl -I` and a load balancer's health check send HEAD: the same status and headers as
    GET, no body, and on /stream no stream held open (it would count against max_streams)."""
    for path in ("/dealer", "/login", "/pit", "/api/metrics", "/nothing"):
        g_status, g_body, g_headers = request(console, "GET", path)
        h_status, h_body, h_headers = request(console, "HEAD", path)
        assert (h_status, h_headers["Content-Type"]) == (g_status, g_headers["Content-Type"]), path
        assert h_headers["Content-Length"] == g_headers["Content-Length"] and h_body == b"", path
    for _ in range(CFG["max_streams"] + 1):     # more than the cap: each HEAD gives its place back
        status, body, headers = request(console, "HEAD", "/stream")
        assert status == 200 and headers["Content-Type"] == "text/event-stream" and body == b""


def test_console_configuration_is_strict():
    h = hash_password("pw", n=1024)
    base = {"table": {"id": "t1", "profile": "luxury21"}, "shoe": {"url": "/dev/null"}}
    cfg, errors = check_config({**base, "console": {"enabled": True, "accounts": [
        {"name": "anna", "role": "supervisor", "password_hash": h}]}})
    assert errors == [] and cfg["console"]["accounts"] == [Account("anna", "supervisor", h)]
    _, errors = check_config({**base, "console": {"enabled": True, "port": 70000, "colour": 1,
                                                  "tls_cert": "c.pem", "accounts": [
        {"name": "anna", "role": "boss", "password_hash": "hunter2"},
        {"name": "anna", "role": "dealer", "password_hash": h, "pin": 1}]}})
    text = "\n".join(errors)
    for expected in ("console.port: must be 0-65535", "console.colour: unknown key",
                     "console.tls_key: TLS needs both", "console.accounts[0].role: must be one of",
                     "console.accounts[0].password_hash: expected scrypt",
                     "console.accounts[1].name: 'anna' is given twice",
                     "console.accounts[1].pin: unknown key"):
        assert expected in text
    assert "hunter2" not in text


def test_with_staff_rights_each_console_account_has_the_same_role_in_staff():
    """The console hands the daemon its logged-in account as the login (as the broker's ACL does
    for commands/<login>); the station then applies [staff]: the two must agree."""
    h = hash_password("pw", n=1024)
    base = {"table": {"id": "t1", "profile": "luxury21"}, "shoe": {"url": "/dev/null"},
            "console": {"enabled": True, "accounts": [
                {"name": "anna", "role": "supervisor", "password_hash": h},
                {"name": "dan", "role": "dealer", "password_hash": h}]}}
    _, errors = check_config({**base, "staff": {"supervisor": ["anna"], "dealer": ["dan"]}})
    assert errors == []
    _, errors = check_config({**base, "staff": {"supervisor": ["anna", "dan"]}})
    assert errors == ["console.accounts[1].role: 'dan' acts under the table's staff rights: "
                      "list it in [staff] dealer (it is supervisor)"]


def test_a_supervisor_downloads_a_finished_rounds_export(console):
    assert request(console, "GET", "/api/export?round=1")[0] == 401
    _, _, cookie = login(console, "anna", "anna-pw")
    status, data, headers = request(console, "GET", "/api/export?round=1", cookie=cookie)
    assert status == 200 and data == ROUNDS[1]
    assert headers["Content-Disposition"] == 'attachment; filename="t1-round-1.json"'
    conn = http.client.HTTPConnection("127.0.0.1", console.port, timeout=5)
    conn.request("GET", "/api/export?round=1", headers={"Cookie": cookie})
    assert conn.getresponse().read().decode() == round_text(ROUNDS[1])     # as the CLI writes it
    conn.close()
    # the round under way: its inputs would name the hole card before the reveal
    status, data, _ = request(console, "GET", "/api/export?round=2", cookie=cookie)
    assert status == 409 and "not over" in data["error"]
    status, data, _ = request(console, "GET", "/api/export?round=3", cookie=cookie)
    assert status == 404 and "not in this journal" in data["error"]
    # "%C2%B2" is "²": a digit to str.isdigit, not a number to int() (it was an exception in
    # the web thread: the connection dropped, no answer)
    for bad in ("", "?round=", "?round=-1", "?round=x", "?round=0", "?round=%C2%B2"):
        assert request(console, "GET", f"/api/export{bad}", cookie=cookie)[0] == 400


def test_over_tls_the_console_serves_https_and_its_cookie_is_secure(tmp_path):
    """A throwaway CA and server certificate (openssl, as the studio's brokers use)."""
    import ssl
    from dealer_station.sim.tls import make_ca
    paths = make_ca(str(tmp_path))
    accounts = [Account("anna", "supervisor", hash_password("anna-pw", n=1024))]
    c = Console({**CFG, "accounts": accounts, "tls_cert": paths["cert"], "tls_key": paths["key"]},
                Hub("t1", "luxury21"), lambda *a: None)
    port = c.serve()
    try:
        ctx = ssl.create_default_context(cafile=paths["ca"])      # the certificate is checked

        def https(method, path, body=None, cookie=None):
            conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=ctx)
            headers = {"Content-Type": "application/json", **({"Cookie": cookie} if cookie else {})}
            conn.request(method, path, json.dumps(body) if body is not None else None, headers)
            r = conn.getresponse()
            out = r.status, r.read(), r.headers
            assert conn.sock.version() in ("TLSv1.2", "TLSv1.3")
            conn.close()
            return out
        import socket
        idle = socket.create_connection(("127.0.0.1", port))     # connects, never says hello
        try:          # ...and holds up nobody: the handshake is on the connection's own thread
            status, _, headers = https("POST", "/api/login", {"name": "anna", "password": "anna-pw"})
        finally:
            idle.close()
        cookie = headers["Set-Cookie"]
        assert status == 200 and "; Secure" in cookie and "HttpOnly" in cookie
        status, body, _ = https("GET", "/api/session", cookie=cookie.split(";")[0])
        assert status == 200 and json.loads(body)["account"] == "anna"
        assert https("GET", "/dealer")[0] == 200
        # plain HTTP on the TLS port gets no page
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            conn.request("GET", "/dealer")
            conn.getresponse()
        conn.close()
    finally:
        c.close()


def test_pages_without_an_account_cannot_take_every_stream(console):
    """The open dealer view needs no login: anyone who reaches the console could open pages
    until the pit boss's own page is refused. They get half the streams (max_streams 4: 2)."""
    held = []
    try:
        for _ in range(2):
            conn = http.client.HTTPConnection("127.0.0.1", console.port, timeout=5)
            conn.request("GET", "/stream")
            r = conn.getresponse()
            assert r.status == 200
            held.append(conn)
        assert request(console, "GET", "/stream")[0] == 503        # a third without an account
        _, _, cookie = login(console, "anna", "anna-pw")
        conn = http.client.HTTPConnection("127.0.0.1", console.port, timeout=5)
        conn.request("GET", "/stream", headers={"Cookie": cookie})
        assert conn.getresponse().status == 200                    # the pit boss still gets one
        held.append(conn)
    finally:
        for conn in held:
            conn.close()


def test_the_console_and_the_metrics_cannot_share_a_port():
    base = {"table": {"id": "t1", "profile": "luxury21"}, "shoe": {"url": "/dev/null"}}
    _, errors = check_config({**base, "console": {"enabled": True, "port": 9464}})
    assert errors == ["console.port: 9464 is metrics.port too: one of them would not start"]
