"""`resend` coalesced (docs/protocol.md, "Commands"): the cold trial's 20 `resend from=1` with
different ids republished the table's 63 events 20 times (1,260; with a real journal up to
10,000 each). An event already on its way to the broker, queued or in flight, is not queued
again; every command is still answered, with the range it covers."""
import json
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from controller.profiles import get_profile
from dealer_station.station_types import BrokerUp, Clock, Command, Publish, Published, Reply
from drivers.events import CardRead
from test_station import Rig


class ResendMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="ds-resend-")
        self.ids = 0
        self.handed = []        # seqs handed to the broker, not yet acknowledged, in order
        self.starts = {}        # resend id -> its from

    def clock(self):
        return Clock(1e9, 0.0)

    def step(self, ev):
        effects = self.rig.step(ev, self.clock())
        self.handed += [e.seq for e in effects if isinstance(e, Publish)]
        return effects

    @initialize(window=st.sampled_from([1, 3, 100]), cards=st.integers(0, 6))
    def begin(self, window, cards):
        self.rig = Rig(os.path.join(self.dir, "j.sqlite"), get_profile("luxury21"))
        self.rig.st.s.inflight = window       # the trial's broker took 100 at once
        self.rig.recover(self.clock())
        self.step(BrokerUp(False))
        self.step(Command(b'{"id":"load","type":"shoe_loaded"}'))
        for i in range(cards):
            self.step(CardRead("2c", seq=i + 1))
        self.top = self.rig.st.next_seq - 1

    def teardown(self):
        if hasattr(self, "rig"):
            self.rig.j.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(start=st.integers(1, 40), repeat=st.booleans())
    def resend(self, start, repeat):
        """A consumer's resend: a new id, or (after an outage) an id sent before."""
        if repeat and self.ids:
            start = self.starts[self.ids]      # the same command again: same id, same fields
        else:
            self.ids += 1
            self.starts[self.ids] = start
        payload = json.dumps({"type": "resend", "id": f"r{self.ids}", "from": start}).encode()
        effects = self.step(Command(payload, None, None, self.ids, 1))
        replies = [e.payload for e in effects if isinstance(e, Reply)]
        assert len(replies) == 1, "every command is answered, once"
        r = replies[0]
        assert r["status"] in ("accepted", "duplicate")
        want = list(range(start, self.top + 1))
        assert r["seq"] == ([want[0], want[-1]] if want else None)
        if r["status"] == "accepted":
            on_way = {s for s, _ in self.rig.st.pending} | self.rig.st.inflight
            assert set(want) <= on_way, "an event asked for is neither queued nor in flight"

    @rule(data=st.data())
    def broker_acknowledges(self, data):
        if self.handed:
            seq = self.handed.pop(data.draw(st.integers(0, len(self.handed) - 1)))
            self.step(Published(seq))

    @invariant()
    def each_event_is_on_its_way_at_most_once(self):
        if hasattr(self, "rig"):
            queued = [s for s, _ in self.rig.st.pending]
            assert len(queued) == len(set(queued)), "an event queued twice"
            assert not set(queued) & self.rig.st.inflight, "an event in flight queued again"


TestResend = ResendMachine.TestCase
TestResend.settings = settings(max_examples=80, stateful_step_count=30, deadline=None,
                               suppress_health_check=[HealthCheck.too_slow])


def test_twenty_resends_of_one_gap_at_once_republish_it_once(tmp_path):
    """The cold trial's case, replayed: 20 `resend from=1` with different ids, the broker
    taking everything at once (window 100): each event goes out once more, not 20 times."""
    r = Rig(str(tmp_path / "j.sqlite"), get_profile("luxury21"))
    r.st.s.inflight = 100
    c = Clock(1e9, 0.0)
    r.recover(c)
    first = []
    for ev in [BrokerUp(False), Command(b'{"id":"a","type":"shoe_loaded"}')] + [
            CardRead("2c", seq=i) for i in range(1, 7)]:
        first += [e.seq for e in r.step(ev, c) if isinstance(e, Publish)]
    for s in first:
        r.step(Published(s), c)
    assert not r.st.pending and not r.st.inflight
    top = r.st.next_seq - 1
    published, replies = [], []
    for i in range(20):
        effects = r.step(Command(json.dumps({"type": "resend", "id": f"x{i}", "from": 1}).encode()), c)
        published += [e.seq for e in effects if isinstance(e, Publish)]
        replies += [e.payload for e in effects if isinstance(e, Reply)]
    assert sorted(published) == list(range(1, top + 1))
    assert [x["status"] for x in replies] == ["accepted"] * 20
    assert [x["coalesced"] for x in replies] == [0] + [top] * 19
    assert all(x["seq"] == [1, top] for x in replies)
