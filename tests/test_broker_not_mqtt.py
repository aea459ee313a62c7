"""broker.port pointed at a server that is not an MQTT broker: the daemon says so early and once
(a silent server: paho alone said nothing for keepalive_s, then "Keep alive timeout"; a server
answering garbage: "Unspecified error" on every retry). The daemon runs in this process and the
test steps its loop: the link reports what paho saw, the station core's CONNACK watch (on the
loop's own timer: no second thread) decides what is said (tests/test_station_broker.py)."""
import logging
import queue
import socket
import threading
import time

import pytest

from dealer_station.config import check_config
from dealer_station.daemon import Daemon
from dealer_station.mqtt_link import CONFIG, MqttLink
from dealer_station.station_types import Why


class Server:
    """A TCP server on a free port that is not a broker: `silent` reads and says nothing (or an
    ssh banner), `http` answers the CONNECT with an HTTP error and closes; `hang` is a broker
    that accepts the first connection, then stops answering (paused)."""

    def __init__(self, mode):
        self.mode = mode
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            if self.mode == "hang" and not self.accepted:
                c.recv(1000)                          # the CONNECT: accepted (v5 CONNACK, rc 0)
                c.sendall(b"\x20\x03\x00\x00\x00")     # then silence, as a paused broker
            elif self.mode == "reset":                 # reads a little, closes with the rest
                c.recv(1)                             # unread: a reset, as a TLS-only listener
                c.close()
            elif self.mode == "ssh":
                c.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
            elif self.mode == "http":
                c.recv(1000)
                c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                c.close()
            self.accepted += 1

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def daemon(tmp_path, caplog):
    """make(mode) -> (daemon, server, lines): a daemon with no shoe whose broker.port is a
    `Server(mode)`; lines() the broker lines logged so far."""
    made = []
    caplog.set_level(logging.INFO, logger="dealer-station")

    def make(mode):
        server = Server(mode)
        cfg, errors = check_config({
            "table": {"id": "bj-01", "profile": "luxury21"}, "shoe": {"protocol": "none"},
            "broker": {"port": server.port, "connack_timeout_s": 1, "keepalive_s": 60,
                       "reconnect_max_s": 1},
            "paths": {"journal": str(tmp_path / f"{mode}.sqlite")}, "metrics": {"enabled": False}})
        assert not errors, errors
        if mode == "hang":
            # below the key's range: a paused broker found fast; still above connack_timeout_s
            # by 2 s, as the config requires (at 1 s paho's own CONNECT timeout came first
            # under load and the cause was said as a closed connection)
            cfg["broker"]["keepalive_s"] = 3
        d = Daemon(cfg)
        d.start()
        made.append((d, server))

        def lines():
            return [r.getMessage() for r in caplog.records if r.getMessage().startswith("broker ")]
        return d, server, lines
    yield make
    for d, server in made:
        d.close()
        server.close()


def step_until(d, pred, timeout, what):
    """Steps the daemon's loop in this thread until `pred()` (a ceiling, not a wait)."""
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise TimeoutError(f"waited {timeout:g} s for {what}")
        d.run_once(0.05)
    return pred()


@pytest.mark.parametrize("mode", ["silent", "ssh"])
def test_a_server_that_never_answers_connect_is_said_within_the_connack_timeout(daemon, mode):
    d, server, lines = daemon(mode)
    # keepalive 60 s: before, nothing at all was said for a minute
    got = step_until(d, lines, 4, "a word on the link")
    assert got[0].startswith("broker not answering: "), got    # it never answered: no refusal
    assert f"127.0.0.1:{server.port} did not answer CONNECT within 1 s" in got[0]
    assert "not an MQTT broker" in got[0]
    assert d.devices["broker"]["state"] == "disconnected"
    assert "did not answer CONNECT" in d.unhealthy()


@pytest.mark.parametrize("mode", ["http", "reset"])
def test_a_server_answering_not_mqtt_is_said_once_not_on_every_retry(daemon, mode):
    """`reset`: the cold trial's TLS-only Mosquitto listener given plain MQTT (the docs' own
    example) was "the broker ... dropped the connection before accepting it: ... Connection reset
    by peer", the line for a TLS broker refusing a client, with no word of a wrong port."""
    d, server, lines = daemon(mode)
    # the fourth attempt comes after the third's disconnect was handled: three said, or one
    step_until(d, lambda: server.accepted >= 4, 10, "four connection attempts")
    d.run_once(0)                 # the items paho queued before the fourth attempt
    said = lines()
    assert len(said) == 1 and said[0].startswith("broker refused: "), said
    assert f"127.0.0.1:{server.port} closed the connection before answering CONNECT" in said[0]
    assert "not an MQTT broker" in said[0]


def test_the_link_keeps_no_timer_thread_of_its_own():
    """The CONNACK watch was a threading.Timer whose callback and paho's thread both wrote the
    link's state without the lock. The link now only reports, in paho's thread (called here as
    paho would), and the loop's own timer watches (tests/test_station_broker.py)."""
    cfg = {k: v.default for k, v in CONFIG.keys.items()}
    q = queue.SimpleQueue()
    lk = MqttLink(cfg, "bj-01", q.put, {"state": "offline"})
    before = threading.active_count()
    lk._connect_sent()
    assert threading.active_count() == before
    lk._on_disconnect(lk.client, None, None, "Unspecified error", None)
    lk._connect_sent()
    got = [q.get_nowait() for _ in range(q.qsize())]
    assert got[0] == ("mqtt", "connect_sent") and got[2] == ("mqtt", "connect_sent")
    assert got[1][:2] == ("mqtt", "refused") and got[1][3] is True   # ended an unanswered CONNECT
    assert got[1][4] == Why.NOT_MQTT             # its kind, what the station groups causes by
    assert "closed the connection before answering CONNECT (Unspecified error)" in got[1][2]
    assert threading.active_count() == before


def test_a_broker_that_stops_answering_is_one_disconnect_not_two(daemon):
    """The cold trial's case: a real Mosquitto paused (kill -STOP) after the daemon connected.
    paho 2.2's loop_misc calls on_disconnect twice for one keepalive timeout (once in
    _check_keepalive, once for the PINGREQ unanswered), and the daemon logged "broker
    disconnected: Keep alive timeout" twice. The broker here answers the first CONNECT, then
    nothing (no PINGRESP, no second CONNACK)."""
    d, server, lines = daemon("hang")
    step_until(d, lambda: any("did not answer CONNECT" in x for x in lines()), 20,
               "the second CONNECT unanswered")
    d.run_once(0)
    said = [x.split(":")[0].split(" (")[0] for x in lines()]
    # it never answered the second CONNECT: "not answering", not "refused" (the next cold trial)
    assert said == ["broker connected", "broker disconnected", "broker not answering"], lines()
    # it spoke MQTT to this station before: not "not an MQTT broker?" (the cold trial)
    assert "not an MQTT broker" not in lines()[-1] and "accepted this station before" in lines()[-1]


@pytest.mark.parametrize("mode", ["silent", "none"])
def test_close_of_a_daemon_the_broker_never_accepted_does_not_wait_for_offline(tmp_path, mode):
    """The cold trial: `Daemon.close()` waited 2 s for its "offline" status when the broker had
    never accepted it (a server that never answers CONNECT, or nothing listening): no broker had
    its status, and none would acknowledge the last one. Asserted by what the link did (its
    record of the status, the publishes it made), not by a clock."""
    server = Server("silent")
    port = server.port
    if mode == "none":
        server.close()                      # nothing listens there now
    cfg, errors = check_config({
        "table": {"id": "bj-01", "profile": "luxury21"}, "shoe": {"protocol": "none"},
        "broker": {"port": port, "connack_timeout_s": 1, "keepalive_s": 60, "reconnect_max_s": 1},
        "paths": {"journal": str(tmp_path / "j.sqlite")}, "metrics": {"enabled": False}})
    assert not errors, errors
    d = Daemon(cfg)
    d.start()
    published = []
    real = d.link.client.publish
    d.link.client.publish = lambda *a, **k: published.append(a[0]) or real(*a, **k)
    try:
        # the link has tried (CONNECT sent, or the connection refused) and said so
        step_until(d, lambda: d.devices["broker"]["state"] == "disconnected", 5, "the refusal")
    finally:
        d.close()
        server.close()
    assert d.link.last_status == "not sent: not connected"
    assert published == []                  # no "offline" queued behind a connection never made


def test_a_restart_while_the_broker_hangs_does_not_call_it_not_a_broker(tmp_path, caplog):
    """The cold trial: Mosquitto paused (kill -STOP) after the table had used it, the daemon
    restarted meanwhile: the new process said "not an MQTT broker? (check broker.host and
    broker.port)" of the broker it had used all along (only a CONNACK seen by this process
    counted). The journal keeps the broker that accepted the station (meta broker_answered)."""
    caplog.set_level(logging.INFO, logger="dealer-station")
    server = Server("hang")              # answers the first CONNECT only, then nothing
    cfg, errors = check_config({
        "table": {"id": "bj-01", "profile": "luxury21"}, "shoe": {"protocol": "none"},
        "broker": {"port": server.port, "connack_timeout_s": 1, "keepalive_s": 60,
                   "reconnect_max_s": 1},
        "paths": {"journal": str(tmp_path / "j.sqlite")}, "metrics": {"enabled": False}})
    assert not errors, errors

    def lines():
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("broker ")]
    try:
        d = Daemon(cfg)
        d.start()
        try:
            step_until(d, lambda: d.devices["broker"]["state"] == "connected", 10, "the CONNACK")
        finally:
            d.close()
        caplog.clear()
        d = Daemon(cfg)                  # the same journal, the broker now hung
        d.start()
        try:
            step_until(d, lines, 4, "a word on the link")
        finally:
            d.close()
        said = lines()
        assert said[0].startswith(f"broker not answering: 127.0.0.1:{server.port} did not answer "
                                  f"CONNECT within 1 s"), said
        assert "not an MQTT broker" not in said[0] and "accepted this station before" in said[0]
    finally:
        server.close()


def test_a_flood_of_queued_items_does_not_hold_the_loop_from_its_watchdog(tmp_path):
    """The cold trial: 20,000 commands flooded on `commands` kept the loop's queue full (each one
    journaled and acknowledged, the broker sends the next at once); one pass of the loop drained
    it for 45 s without a watchdog ping (59 s between two: systemd's WatchdogSec=10 kills the
    table) or a /healthz snapshot. A pass now takes a bounded batch, then reports; the items
    left are taken by the next pass, in order."""
    from dealer_station.station_types import TimerDue
    d = _daemon_without_broker(tmp_path)
    try:
        d.recover()
        backlog = 2000
        for _ in range(backlog):
            d.q.put(TimerDue())             # each handled by the station, cheap and harmless
        reported = []                       # items still queued each time the loop reported
        d.notifier.watchdog = lambda now, healthy: reported.append(d.q.qsize())
        passes = 0
        while d.q.qsize() and passes < backlog:
            d.run_once(0)
            passes += 1
        assert d.q.qsize() == 0, "the backlog was never taken"
        assert passes > 1 and reported[0] > 0, (passes, reported[:3])
    finally:
        d.close()



def test_a_timer_does_not_overtake_items_put_before_its_deadline(tmp_path):
    """The cold trial: a player's decision sent 1.5 s into a 5 s decision timer, queued behind
    20,000 malformed commands from one login; the loop's bounded pass served the timer after 200
    of them, so `decision_timeout` stood the hand and the decision, handled 8 s later, was
    refused `not_awaiting_decision`. Every item put before the deadline goes first (as one long
    pass had it), the timer next, then the items put after it; the loop still reports between
    passes."""
    from dealer_station.daemon import PASS_ITEMS
    from dealer_station.station_types import TimerDue
    d = _daemon_without_broker(tmp_path)
    try:
        d.recover()
        order = []
        d.handle = lambda item: order.append(item)
        d.notifier.watchdog = lambda now, healthy: order.append("report")
        before = 3 * PASS_ITEMS
        for k in range(before):
            d.q.put(("before", k))
        d.timer_at = time.monotonic()        # the deadline: every item above was put before it
        for k in range(PASS_ITEMS):
            d.q.put(("after", k))
        passes = 0
        while (d.q.qsize() or getattr(d, "carried", (None,))[0] is not None) and passes < 100:
            d.run_once(0)
            passes += 1
        items = [x for x in order if x != "report"]
        timer = [i for i, x in enumerate(items) if isinstance(x, TimerDue)]
        assert timer == [before], (timer, len(items))
        assert items[:before] == [("before", k) for k in range(before)]
        assert items[before + 1:] == [("after", k) for k in range(PASS_ITEMS)]
        assert order.index("report") < order.index(items[before]), "no report until the timer"
    finally:
        d.close()


def free_tcp_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _daemon_without_broker(tmp_path):
    """A daemon whose broker port nobody listens on: its loop and journal, no broker."""
    cfg, errors = check_config({
        "table": {"id": "bj-01", "profile": "luxury21"}, "shoe": {"protocol": "none"},
        "broker": {"port": free_tcp_port(), "connack_timeout_s": 1, "keepalive_s": 60,
                   "reconnect_max_s": 1},
        "paths": {"journal": str(tmp_path / "j.sqlite")}, "metrics": {"enabled": False}})
    assert not errors, errors
    return Daemon(cfg)


def test_the_acknowledged_mark_is_written_when_the_table_goes_quiet(tmp_path):
    """The cold trial: a burst of events acknowledged by the broker, then a quiet table; the
    journal's `acked_through` mark (written at most every MARK_EVERY_S, without a sync) waited
    for the next PUBACK, so a kill -9 a minute later republished the whole burst. The loop now
    writes it once the interval has passed, PUBACKs or not."""
    d = _daemon_without_broker(tmp_path)
    try:
        d.recover()
        j = d.journal
        t = time.monotonic() - 2 * j.MARK_EVERY_S
        j.mark_sent([1], now=t)                 # written: the first mark
        j.mark_sent([2, 3], now=t + 0.1)        # too soon after it: held in memory
        assert int(j.get_meta("acked_through")) == 1
        d.run_once(0)                            # no PUBACK now; the interval has passed
        assert int(j.get_meta("acked_through")) == 3
    finally:
        d.close()
