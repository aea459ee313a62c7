"""The station core's broker rules (dealer_station/station_broker.py), over the pure core alone:
no broker, no journal, no thread, no clock but the one the test hands in.

1. A status is published only while the broker is connected, and the one published on every
   connect is the state then (nothing stale, nothing queued while away); the console is told of
   every change either way.
2. The CONNACK watch: a CONNECT left unanswered `connack_timeout_s` is said once, on the loop's
   own timer (the test plays the loop: it wakes the station at the last `Timer` deadline), its
   end is not said again, and a refusal is said once per cause in a row."""
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from controller import get_profile
from dealer_station.station import Settings, Station
from dealer_station.station_types import (BrokerConnecting, BrokerDown, BrokerUp, Clock,
                                          LocalInput, Log, Refresh, Status, Timer, TimerDue, Why)
from drivers.events import DeviceState, PanelPress, ShoeHello, ShoeStatus

WHERE = "10.0.0.9:1883"
CONNACK_S = 2.0
SILENCE = (f"broker not answering: {WHERE} did not answer CONNECT within 2 s: not an MQTT broker? "
           f"(check broker.host and broker.port)")
# ... once this broker has accepted the station: a hung broker, not a wrong port (cold trial)
SILENCE_AFTER = (f"broker not answering: {WHERE} did not answer CONNECT within 2 s (it accepted this "
                 f"station before: the broker overloaded, paused or hung?)")


# what the link reports (mqtt_link.py), text and kind; two TLS drops whose TLS text differs
TLS_DROP = ("the broker at 10.0.0.9:1883 dropped the connection before accepting it: {} "
            "(broker.cert_file/key_file: does the broker require a client certificate?)")
REFUSALS = [("Not authorized", Why.CONNACK),
            ("cannot connect to 10.0.0.9:1883: refused", Why.CONNECT_FAILED),
            ("10.0.0.9:1883 closed the connection before answering CONNECT", Why.NOT_MQTT),
            (TLS_DROP.format("[SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert certificate "
                             "required"), Why.TLS_DROPPED),
            (TLS_DROP.format("EOF occurred in violation of protocol"), Why.TLS_DROPPED)]


def station(profile="luxury21"):
    return Station(Settings("t1", get_profile(profile), "test", decision_s=10.0, insurance_s=5.0,
                            broker=WHERE, connack_timeout_s=CONNACK_S))


def broker_lines(effects):
    return [e.text for e in effects if isinstance(e, Log) and e.text.startswith("broker ")]


class Loop(RuleBasedStateMachine):
    """The daemon's loop around a pure station: carries out Timer (one deadline) and keeps what
    the broker holds retained (the last Status published)."""

    def __init__(self):
        super().__init__()
        self.st = station()
        self.mono = 1000.0
        self.deadline = None        # the loop's one wake-up (the last Timer effect)
        self.retained = None        # the status the broker holds (retained)
        self.said = []              # the broker lines logged, in order
        self.sent_at = None         # CONNECT in flight since (None: answered, or none sent)
        self.silence_due = False    # it went unanswered past the timeout: the silence is owed
        self.silence = SILENCE      # what the silence is said as (SILENCE_AFTER once accepted)
        self.causes = {}            # a refusal line said -> its cause

    def connected(self):
        return self.st.devices["broker"].get("state") == "connected"

    def step(self, event):
        was = self.connected()
        effects = self.st.step(event, Clock(1e9 + self.mono, self.mono), {})
        for e in effects:
            if isinstance(e, Timer):
                self.deadline = e.deadline
        statuses = [e.doc for e in effects if isinstance(e, Status)]
        if statuses:
            # made only while connected, and it says so (it travels through the broker)
            assert self.connected()
            assert all(d["devices"]["broker"]["state"] == "connected" for d in statuses)
            assert any(isinstance(e, Refresh) for e in effects)
            self.retained = statuses[-1]
        if not was and not self.connected():
            assert not statuses, "a status made while the broker is away"
        self.said += broker_lines(effects)
        return effects

    # -- the link ----------------------------------------------------------------------------

    @rule()
    def connect_sent(self):
        self.step(BrokerConnecting())
        self.sent_at, self.silence_due = self.mono, False

    @rule(session=st.booleans())
    def connack(self, session):
        effects = self.step(BrokerUp(session))
        self.sent_at, self.silence = None, SILENCE_AFTER
        # the birth: the state now, whatever changed while the broker was away
        assert self.retained == self.st.status()
        assert broker_lines(effects) == [f"broker connected (session present: {session})"]

    @rule(reason=st.sampled_from(["keepalive timeout", "Unspecified error"]))
    def disconnected(self, reason):
        effects = self.step(BrokerDown(reason))
        self.sent_at = None
        assert broker_lines(effects) == [f"broker disconnected: {reason}"]

    @rule(end=st.sampled_from(REFUSALS), unanswered=st.booleans())
    def refused(self, end, unanswered):
        reason, kind = end
        unanswered = unanswered and self.sent_at is not None
        silenced = unanswered and self.silence_due and self.said[-1:] == [self.silence]
        before = list(self.said)
        effects = self.step(BrokerDown(reason, refused=True, unanswered=unanswered, kind=kind))
        self.sent_at = None
        lines = broker_lines(effects)
        # one cause: the same kind and text, or any TLS drop before CONNACK whatever its text
        cause = kind if kind == Why.TLS_DROPPED else end
        if silenced or (before and self.causes.get(before[-1]) == cause):
            assert lines == [], "said twice"
        else:
            assert lines == [f"broker refused: {reason}"]
            self.causes[lines[0]] = cause

    @rule(seconds=st.sampled_from([0.3, 1.0, 1.99, 2.0, 5.0]))
    def time_passes(self, seconds):
        """The loop sleeps until its deadline or the next item: wakes the station when due."""
        self.mono += seconds
        if self.sent_at is not None and self.mono >= self.sent_at + CONNACK_S:
            self.silence_due = True
        if self.deadline is not None and self.mono >= self.deadline:
            self.deadline = None
            self.step(TimerDue())

    # -- what changes the status ---------------------------------------------------------------

    @rule(device=st.sampled_from(["shoe", "camera"]),
          state=st.sampled_from(["connected", "disconnected", "fault", "ok"]))
    def device(self, device, state):
        effects = self.step(DeviceState(device, state, {"reason": "test"}))
        assert any(isinstance(e, Refresh) for e in effects), "the console not told"

    @rule(armed=st.booleans())
    def pit_boss_key(self, armed):
        self.step(PanelPress("key", armed))

    @rule(jam=st.booleans())
    def shoe_reports(self, jam):
        self.step(ShoeStatus(None, "closed", jam, "ok", "ok", "locked"))

    @rule()
    def shoe_hello(self):
        self.step(ShoeHello("VS", "1", "S1", 1, 0))

    @rule(body=st.sampled_from([{"type": "shoe_loaded"}, {"type": "pause", "reason": "test"},
                                {"type": "resume"}]))
    def staff(self, body):
        self.step(LocalInput(body, "test"))

    # -- after every step ------------------------------------------------------------------------

    @invariant()
    def an_unanswered_connect_is_said(self):
        """Once its deadline passed, the silence is what the station says of the broker."""
        if self.silence_due and self.sent_at is not None:
            assert self.said[-1:] == [self.silence], self.said[-3:]
            assert self.st.devices["broker"]["state"] == "disconnected"

    @invariant()
    def the_watch_wakes_the_loop_in_time(self):
        if self.sent_at is not None and not self.silence_due:
            assert self.deadline is not None and self.deadline <= self.sent_at + CONNACK_S

    @invariant()
    def each_cause_once_in_a_row(self):
        refusals = [(a, b) for a, b in zip(self.said, self.said[1:])
                    if a == b or self.causes.get(a, a) == self.causes.get(b, b)]
        assert not any(a.startswith(("broker refused", "broker not answering"))
                       for a, _ in refusals), self.said


TestBrokerRules = Loop.TestCase
TestBrokerRules.settings = settings(max_examples=300, stateful_step_count=40, deadline=None,
                                    suppress_health_check=[HealthCheck.too_slow])


# -- replayed cases --------------------------------------------------------------------------

def test_a_status_made_while_the_broker_is_away_is_not_published_and_the_birth_carries_it():
    """The shoe's HELLO and a device change before the first connect: no Status then (paho
    would queue it and deliver it ahead of the birth); the birth on connect says both."""
    s = station()
    c = Clock(1e9, 0.0)
    away = s.step(ShoeHello("VS", "1", "S1", 7, 0), c) + s.step(
        DeviceState("shoe", "connected", {}), c)
    assert not [e for e in away if isinstance(e, Status)]
    assert any(isinstance(e, Refresh) for e in away)          # the console still sees it
    birth = [e.doc for e in s.step(BrokerUp(False), c) if isinstance(e, Status)]
    assert len(birth) == 1 and birth[0]["devices"]["broker"]["state"] == "connected"
    assert birth[0]["devices"]["shoe"]["state"] == "connected"
    assert birth[0]["devices"]["shoe"]["model"] == "VS"


def test_a_connect_unanswered_is_said_once_at_its_deadline_and_its_end_not_again():
    s = station()
    effects = s.step(BrokerConnecting(), Clock(1e9, 100.0))
    assert Timer(100.0 + CONNACK_S) in effects
    assert broker_lines(s.step(TimerDue(), Clock(1e9, 101.0))) == []        # not yet
    said = s.step(TimerDue(), Clock(1e9, 102.0))
    assert broker_lines(said) == [SILENCE] and Timer(None) in said
    # paho's keepalive ends it a minute later: not said again
    assert broker_lines(s.step(BrokerDown("closed", refused=True, unanswered=True),
                               Clock(1e9, 160.0))) == []
    # the next attempt is as silent: the same cause, not said again
    s.step(BrokerConnecting(), Clock(1e9, 161.0))
    assert broker_lines(s.step(TimerDue(), Clock(1e9, 163.0))) == []
    reason = SILENCE[len("broker not answering: "):]
    assert s.devices["broker"] == {"state": "disconnected", "reason": reason}


def test_the_watch_and_a_decision_timer_share_the_loops_one_deadline():
    """The loop keeps one deadline: the earlier of the two, and the other one after it fired."""
    s = station()
    s.timer = (105.0, ("decision", 1, 0), {"type": "decision_timeout", "seat": 1, "hand": 0})
    assert s.step(BrokerConnecting(), Clock(1e9, 100.0))[-1] == Timer(102.0)
    assert s.step(TimerDue(), Clock(1e9, 102.0))[-1] == Timer(105.0)
    s.step(BrokerConnecting(), Clock(1e9, 104.0))
    assert s.step(TimerDue(), Clock(1e9, 105.0))[-1] == Timer(106.0)
    # connected: the watch has nothing left to wait for; the commands probe sent on connect
    # (station_probe.py) is the one deadline left, its timeout (5 s) after the connect
    assert s.step(BrokerUp(False), Clock(1e9, 105.5))[-1] == Timer(105.5 + 5.0 + 1e-3)


def test_a_connack_refusal_on_every_retry_is_said_with_its_disconnect_each_time():
    """As before the move: paho follows a CONNACK refusal with a disconnect, and both are said
    on each retry (a cause is said once in a row, not once for ever)."""
    s = station()
    c = Clock(1e9, 0.0)
    lines = []
    for _ in range(3):
        s.step(BrokerConnecting(), c)
        lines += broker_lines(s.step(BrokerDown("Not authorized", refused=True), c))
        lines += broker_lines(s.step(BrokerDown("Not authorized"), c))
    assert lines == ["broker refused: Not authorized", "broker disconnected: Not authorized"] * 3


def test_a_hung_broker_is_said_as_not_answering_not_as_refusing():
    """The cold trial: a broker paused (kill -STOP) after it accepted the station was logged at
    ERROR as "broker refused: ... did not answer CONNECT": it never answered, it refused nothing."""
    s = station()
    c = Clock(1e9, 0.0)
    s.step(BrokerConnecting(), c)
    s.step(BrokerUp(False), c)
    s.step(BrokerDown("Keep alive timeout", kind=Why.LOST), Clock(1e9, 20.0))
    s.step(BrokerConnecting(), Clock(1e9, 21.0))
    said = [(e.level, e.text) for e in s.step(TimerDue(), Clock(1e9, 23.0)) if isinstance(e, Log)]
    assert said == [("error", SILENCE_AFTER)], said
    assert not SILENCE_AFTER.startswith("broker refused")


def test_the_causes_are_grouped_by_the_links_kind_not_its_words():
    """A TLS connection dropped before its CONNACK is one cause whatever the TLS layer said, told
    by the link's kind (station_types.Why), not by matching mqtt_link's wording: reworded, two
    drops are still one cause; the same words under another kind are another cause."""
    s = station()
    c = Clock(1e9, 0.0)
    lines = []
    for text in ("tlsv13 alert certificate required", "EOF occurred in violation of protocol",
                 "tlsv13 alert certificate required"):
        s.step(BrokerConnecting(), c)
        lines += broker_lines(s.step(BrokerDown(f"TLS dropped: {text}", True, False,
                                                Why.TLS_DROPPED), c))
    assert lines == ["broker refused: TLS dropped: tlsv13 alert certificate required"], lines
    s.step(BrokerConnecting(), c)
    said = broker_lines(s.step(BrokerDown("TLS dropped: tlsv13 alert certificate required", True,
                                          False, Why.CONNECT_FAILED), c))
    assert said == ["broker refused: TLS dropped: tlsv13 alert certificate required"], said
