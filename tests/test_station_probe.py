"""The station core's loopback probe of its commands path (dealer_station/station_probe.py), over
the pure core alone: no broker, no thread, no clock but the one the test hands in.

A table whose broker ACL lets it subscribe to `commands` but not read it is deaf (Mosquitto 2.0
grants the SUBSCRIBE and drops every message). The station publishes a probe with a nonce of its
own on `commands` and expects it back by a deadline: the `commands` device says `fault` ("commands
not delivered: broker ACL?") iff the last probe that ended got no echo by its deadline. The
property drives every interleaving of connect, disconnect, echoes (in time, late, old, foreign),
time and the loop's timer against a model kept by the test."""
import json

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from controller import get_profile
from dealer_station.station import Settings, Station
from dealer_station.station_types import (AckCommand, BrokerDown, BrokerUp, Clock, Command, Log, Probe,
                                          ProbeRefused, Reply, Status, Timer, TimerDue)

TIMEOUT, INTERVAL = 5.0, 60.0


def station(seed="s33d"):
    return Station(Settings("t1", get_profile("luxury21"), "test", probe_timeout_s=TIMEOUT,
                            probe_interval_s=INTERVAL), probe_seed=seed)


def at(mono):
    return Clock(1e9 + mono, mono)


def probes(effects):
    return [e.payload for e in effects if isinstance(e, Probe)]


def commands_state(s):
    return s.devices["commands"]["state"]


def test_a_probe_on_connect_and_its_echo_in_time_says_ok():
    s = station()
    [p] = probes(s.step(BrokerUp(False), at(100.0)))
    assert json.loads(p)["type"] == "probe" and json.loads(p)["nonce"].startswith("s33d-")
    assert commands_state(s) == "connecting"
    out = s.step(Command(p, mid=7), at(104.9))
    assert AckCommand(7, 1) in out                      # acknowledged, as any delivered message
    assert not [e for e in out if isinstance(e, Reply)]  # no command: no reply, nothing journaled
    assert commands_state(s) == "ok"
    assert any(isinstance(e, Status) and e.doc["devices"]["commands"] == {"state": "ok"}
               for e in out)
    # probed again after the interval, while connected
    assert out[-1] == Timer(104.9 + INTERVAL)
    assert probes(s.step(TimerDue(), at(104.9 + INTERVAL)))


def test_no_echo_by_the_deadline_says_deaf_and_names_the_acl_and_a_late_echo_does_not_clear_it():
    s = station()
    [p] = probes(s.step(BrokerUp(False), at(100.0)))
    out = s.step(TimerDue(), at(105.001))
    d = s.devices["commands"]
    assert d["state"] == "fault" and d["reason"].startswith("commands not delivered: broker ACL?")
    assert "dealer-station/v1/t1/commands" in d["reason"]
    assert any(isinstance(e, Status) and e.doc["devices"]["commands"] == d for e in out)
    out = s.step(Command(p, mid=8), at(106.0))          # late: ours, swallowed, changes nothing
    assert AckCommand(8, 1) in out and commands_state(s) == "fault"
    # retried on the timer; its echo in time clears the alarm
    [p2] = probes(s.step(TimerDue(), at(105.001 + INTERVAL)))
    assert p2 != p
    s.step(Command(p2), at(106.0 + INTERVAL))
    assert commands_state(s) == "ok"


def test_a_reconnect_keeps_the_alarm_until_an_echo_and_abandons_the_probe_in_flight():
    s = station()
    s.step(BrokerUp(False), at(0.0))
    s.step(TimerDue(), at(6.0))
    assert commands_state(s) == "fault"
    [p] = probes(s.step(BrokerUp(True), at(10.0)))
    s.step(BrokerDown("connection lost"), at(11.0))
    assert s.step(TimerDue(), at(20.0))[-1] == Timer(None)  # down: no deadline, no probe
    assert commands_state(s) == "fault"
    s.step(Command(p), at(21.0))                         # the abandoned probe: changes nothing
    assert commands_state(s) == "fault"
    [p2] = probes(s.step(BrokerUp(True), at(30.0)))
    s.step(Command(p2), at(30.01))
    assert commands_state(s) == "ok"


def test_a_betting_systems_probe_or_a_forged_nonce_is_a_command_and_confirms_nothing():
    s = station()
    [p] = probes(s.step(BrokerUp(False), at(0.0)))
    for foreign in (b'{"type":"probe","nonce":"s33d-2"}',      # guessed next nonce
                    b'{"type":"probe","nonce":"0-1"}',         # another process' first
                    json.dumps({"type": "probe", "nonce": json.loads(p)["nonce"],
                                "id": "bs-1"}).encode(),       # ours, other bytes
                    b'{"type": "resend", "from": 9007199254740991, "id": "bridge-check-1f"}'):
        out = s.step(Command(foreign, mid=3), at(1.0))
        assert [e for e in out if isinstance(e, Reply)], foreign      # answered as a command
        assert commands_state(s) == "connecting"
    # our own probe on a staff login's topic is no echo of the commands topic either
    out = s.step(Command(p, user="d-anna"), at(1.0))
    assert [e for e in out if isinstance(e, Reply)] and commands_state(s) == "connecting"
    s.step(TimerDue(), at(5.01))
    assert commands_state(s) == "fault"


def test_the_fault_names_why_the_last_probe_failed_not_an_earlier_refusal():
    """The cold trial: the ACL without its `write` line (the probe refused: "Not authorized"),
    then with it but without the `read` line (the probe taken, never delivered): the fault went
    on saying "the broker refused the table's probe ... Not authorized", pointing at the line
    already added. Each verdict says why its own probe failed; said once per change."""
    s = station()
    s.step(BrokerUp(False), at(0.0))
    s.step(ProbeRefused("Not authorized"), at(0.01))
    out = s.step(TimerDue(), at(TIMEOUT + 0.01))
    d = s.devices["commands"]
    assert d["state"] == "fault" and "refused the table's probe" in d["reason"], d
    assert [e for e in out if isinstance(e, Log) and e.level == "error"]
    # the next probe refused again: the same fault, not said again
    t = TIMEOUT + 0.01 + INTERVAL
    assert probes(s.step(TimerDue(), at(t)))
    s.step(ProbeRefused("Not authorized"), at(t + 0.01))
    out = s.step(TimerDue(), at(t + TIMEOUT + 0.01))
    assert s.devices["commands"] == d and not [e for e in out if isinstance(e, Log)]
    # the write line added, the read line missing: taken by the broker, never delivered
    t += TIMEOUT + 0.01 + INTERVAL
    assert probes(s.step(TimerDue(), at(t)))
    out = s.step(TimerDue(), at(t + TIMEOUT + 0.01))
    d = s.devices["commands"]
    assert d["state"] == "fault" and "did not come back within" in d["reason"], d
    assert "refused" not in d["reason"]
    assert len([e for e in out if isinstance(e, Log) and e.level == "error"]) == 1


def test_a_probe_late_behind_other_commands_says_delayed_not_the_acl():
    """The cold trial: 20,000 commands flooded on `commands`; the loop (now serving its timers
    between batches) expired the probe queued behind them and said "commands not delivered:
    broker ACL?". Messages the topic delivered while the probe waited prove the table reads it:
    still a fault (commands wait longer than probe_timeout_s), with the cause it has."""
    s = station()
    [p] = probes(s.step(BrokerUp(False), at(0.0)))
    for k in range(3):
        s.step(Command(b'{"type":"nope","id":"f%d"}' % k, mid=3), at(1.0 + k))
    s.step(TimerDue(), at(TIMEOUT + 0.01))
    d = s.devices["commands"]
    assert d["state"] == "fault" and d["reason"].startswith("commands delayed") and "ACL?" not in d["reason"]
    assert "behind 3 other message(s)" in d["reason"]
    # the next probe alone on the topic, and no echo: the ACL again
    [p2] = probes(s.step(TimerDue(), at(TIMEOUT + 0.01 + INTERVAL)))
    s.step(Command(p, mid=4), at(TIMEOUT + 1 + INTERVAL))     # an old probe of ours: no evidence
    s.step(TimerDue(), at(2 * TIMEOUT + 0.02 + INTERVAL))
    assert s.devices["commands"]["reason"].startswith("commands not delivered: broker ACL?")


def test_two_processes_make_different_nonces():
    a, b = station("aa"), station("bb")
    assert probes(a.step(BrokerUp(False), at(0.0))) != probes(b.step(BrokerUp(False), at(0.0)))


FOREIGN = st.sampled_from([b'{"type":"probe","nonce":"s33d-0"}', b'{"type":"probe"}', b"probe",
                           b'{"type":"probe","nonce":"0-1"}', b'{"type":"pause","id":"p1"}'])


class ProbeLoop(RuleBasedStateMachine):
    """The daemon's loop around a pure station (one deadline: the last Timer effect) and a model
    of every probe it sent: open, ok (echo by its deadline), deaf (none by it) or abandoned (the
    link went down first). The alarm must be on iff the last probe that ended ended deaf."""

    def __init__(self):
        super().__init__()
        self.st = station()
        self.mono = 1000.0
        self.deadline = None
        self.connected = False
        self.sent = []            # [payload, deadline, state, other messages while open]
        self.ended = []           # states of the probes that ended, in order

    def step(self, event):
        effects = self.st.step(event, at(self.mono), {})
        for e in effects:
            if isinstance(e, Timer):
                self.deadline = e.deadline
        new = probes(effects)
        assert len(new) <= 1 and (not new or self.connected), "a probe only while connected"
        for p in new:
            assert all(s[2] != "open" for s in self.sent), "one probe at a time"
            assert p not in [s[0] for s in self.sent], "every probe its own nonce"
            self.sent.append([p, self.mono + TIMEOUT, "open", 0])
        return effects

    def _end(self, probe, state):
        probe[2] = state
        self.ended.append((state, probe[3]))

    @precondition(lambda self: not self.connected)
    @rule()
    def connect(self):
        self.connected = True
        assert probes(self.step(BrokerUp(False))), "every connect probes"

    @precondition(lambda self: self.connected)
    @rule()
    def disconnect(self):
        self.connected = False
        for p in self.sent:
            if p[2] == "open":
                p[2] = "abandoned"
        self.step(BrokerDown("connection lost"))

    @precondition(lambda self: self.sent)
    @rule(which=st.integers(min_value=1, max_value=4))
    def echo(self, which):
        """One of our probes comes back now (the newest, or an older one)."""
        p = self.sent[-min(which, len(self.sent))]
        if p[2] == "open":
            self._end(p, "ok" if self.mono <= p[1] else "deaf")
        out = self.step(Command(p[0], mid=1))
        assert AckCommand(1, 1) in out and not [e for e in out if isinstance(e, Reply)]

    @rule(payload=FOREIGN)
    def foreign(self, payload):
        for p in self.sent:
            if p[2] == "open" and self.mono <= p[1]:
                p[3] += 1
        out = self.step(Command(payload, mid=2))
        assert [e for e in out if isinstance(e, Reply)], "a foreign message is a command"

    @rule(dt=st.floats(min_value=0.0, max_value=2 * INTERVAL))
    def time_passes(self, dt):
        """Time passes; the loop wakes the station if its deadline came."""
        self.mono += dt
        self._wake()

    @precondition(lambda self: any(p[2] == "open" for p in self.sent))
    @rule(after=st.sampled_from([0.0, 1e-9, 1e-3]))
    def to_the_deadline(self, after):
        """Exactly at (or just after) the open probe's deadline: an echo then still counts."""
        self.mono = max(self.mono, next(p[1] for p in self.sent if p[2] == "open") + after)
        self._wake()

    def _wake(self):
        if self.deadline is not None and self.mono >= self.deadline:
            for p in self.sent:
                if p[2] == "open" and self.mono > p[1]:
                    self._end(p, "deaf")
            self.deadline = None
            self.step(TimerDue())

    @invariant()
    def alarm_iff_the_last_probe_ended_without_its_echo(self):
        last = self.ended[-1] if self.ended else (None, 0)
        want = {None: "connecting", "ok": "ok", "deaf": "fault"}[last[0]]
        assert commands_state(self.st) == want, (self.sent, self.ended)
        if want == "fault":       # the cause: other messages came meanwhile, or none did
            delayed = self.st.devices["commands"]["reason"].startswith("commands delayed")
            assert delayed == (last[1] > 0), (self.sent, self.ended)

    @invariant()
    def the_loop_is_woken_while_connected(self):
        if self.connected:
            assert self.deadline is not None and self.deadline <= self.mono + INTERVAL + TIMEOUT


ProbeLoop.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None,
                                       suppress_health_check=[HealthCheck.too_slow])
TestProbeLoop = ProbeLoop.TestCase


def test_a_probe_late_behind_a_flood_on_login_topics_says_delayed_not_the_acl():
    """The cold trial: 50,000 malformed commands on 20 logins' `commands/<login>` (none on
    `commands`) held the probe's echo behind them in the loop's queue; it expired as "commands not
    delivered: broker ACL?" (ERROR in the log, /healthz unhealthy with the ACL as the cause), since
    only messages on `commands` itself were counted as the tree delivering."""
    s = station()
    probes(s.step(BrokerUp(False), at(0.0)))
    for k in range(3):
        s.step(Command(b'{"type":"nope","id":"f%d"}' % k, mid=3, user=f"d-{k}"), at(1.0 + k))
    s.step(TimerDue(), at(TIMEOUT + 0.01))
    d = s.devices["commands"]
    assert d["state"] == "fault" and d["reason"].startswith("commands delayed"), d
    assert "behind 3 other message(s)" in d["reason"] and "ACL?" not in d["reason"]


def test_a_probe_late_behind_commands_refused_busy_on_commands_says_delayed_not_the_acl():
    """Commands beyond the shared `commands` topic's lane are refused busy (station_busy.py)
    without a step, so the probe's watch did not hear of them (only commands/<login>'s were
    counted there): a probe that expired behind a flood answered busy said "broker ACL?"."""
    from dealer_station.station_busy import busy
    s = station()
    probes(s.step(BrokerUp(False), at(0.0)))
    for k in range(3):
        busy(s, Command(b'{"type":"nope","id":"f%d"}' % k, mid=3), at(1.0 + k), 32)
    s.step(TimerDue(), at(TIMEOUT + 0.01))
    d = s.devices["commands"]
    assert d["state"] == "fault" and d["reason"].startswith("commands delayed"), d
    assert "behind 3 other message(s)" in d["reason"] and "ACL?" not in d["reason"]


def test_an_echo_received_before_the_deadline_but_handled_after_it_says_ok():
    """cold39: after a kill -9 the restarted table's loop, behind a backlog of redelivered
    commands, handled its probe's echo (queued in time) after the deadline and said "commands
    not delivered: broker ACL?" in 5 of 6 runs. The echo is judged by when it was received (the
    queue's stamp: Clock.received), as the timers judge a decision; one received late still is
    not."""
    s = station()
    [p] = probes(s.step(BrokerUp(False), at(0.0)))
    # received at 3 s, handled at 9 s (4 s after the deadline): the loop was behind, not the ACL
    s.step(Command(p, mid=5), Clock(1e9 + 9.0, 9.0, received=1e9 + 3.0))
    s.step(TimerDue(), at(9.0))
    assert s.devices["commands"] == {"state": "ok"}
    # the next probe's echo received after its deadline (and handled later still): deaf
    [p2] = probes(s.step(TimerDue(), at(9.0 + INTERVAL)))
    s.step(Command(p2, mid=6), Clock(1e9 + 20 + INTERVAL, 20 + INTERVAL,
                                     received=1e9 + 15 + INTERVAL))
    s.step(TimerDue(), at(20 + INTERVAL))
    assert s.devices["commands"]["reason"].startswith("commands not delivered: broker ACL?")
