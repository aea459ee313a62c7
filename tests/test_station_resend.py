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
from dealer_station import station_resend
from dealer_station.station_types import (Audit, BrokerUp, Clock, Command, Publish, Published, Reply,
                                          ResendPage, ResendRows)
from drivers.events import CardRead
from test_station import Rig


class ResendMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="ds-resend-")
        self.ids = 0
        self.handed = []        # seqs handed to the broker, not yet acknowledged, in order
        self.starts = {}        # resend id -> its from
        self.wants = {}         # resend id -> the events its first reply covered

    def clock(self):
        return Clock(1e9, 0.0)

    def step(self, ev):
        st = self.rig.st
        effects = self.rig.carry(st.step(ev, self.clock(), self.rig.reads(ev)), pages=False)
        self.handed += [e.seq for e in effects if isinstance(e, Publish)]
        self.reads += [e for e in effects if isinstance(e, ResendPage)]
        return effects

    @rule()
    def a_page_read(self):
        """The loop reads the page asked for and queues it back (behind what came meanwhile)."""
        if self.reads:
            e = self.reads.pop(0)
            self.step(ResendRows(e.lo, e.hi, self.rig.j.outbox_from(e.lo, e.hi - e.lo + 1)))

    @rule(card=st.sampled_from(["2c", "Kd"]))
    def a_card_meanwhile(self, card):
        """A card between two pages: a new event, queued behind the resent ones."""
        self.shoe_seq += 1
        self.step(CardRead(card, seq=self.shoe_seq))
        self.top = self.rig.st.next_seq - 1

    @initialize(window=st.sampled_from([1, 3, 100]), cards=st.integers(0, 6),
                page=st.sampled_from([1, 3, 500]))
    def begin(self, window, cards, page):
        self.page = station_resend.PAGE
        station_resend.PAGE = page      # pages of 1 or 3 events: a resend read over many turns
        self.rig = Rig(os.path.join(self.dir, "j.sqlite"), get_profile("luxury21"))
        self.reads = []                 # pages asked for, read by the loop later (its queue)
        self.rig.st.s.inflight = window       # the trial's broker took 100 at once
        self.rig.recover(self.clock())
        self.step(BrokerUp(False))
        self.step(Command(b'{"id":"load","type":"shoe_loaded"}'))
        for i in range(cards):
            self.step(CardRead("2c", seq=i + 1))
        self.shoe_seq = cards
        self.top = self.rig.st.next_seq - 1

    def teardown(self):
        if hasattr(self, "page"):
            station_resend.PAGE = self.page
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
        # a repeat is answered with the first reply's range (cards may have come since)
        want = self.wants.get(self.ids) if repeat else None
        if want is None:
            want = self.wants[self.ids] = list(range(start, self.top + 1))
        assert r["seq"] == ([want[0], want[-1]] if want else None)
        if r["status"] == "accepted":
            assert set(want) <= self.on_way() | self.wanted(), \
                "an event asked for is neither queued, in flight nor to be read"

    def on_way(self):
        st = self.rig.st
        return {s for s, _ in st.pending} | st.inflight | st.resend.seqs()

    def wanted(self):
        return {s for lo, hi in self.rig.st.resend.wanted for s in range(lo, hi + 1)}

    @rule(data=st.data())
    def broker_acknowledges(self, data):
        if self.handed:
            seq = self.handed.pop(data.draw(st.integers(0, len(self.handed) - 1)))
            self.step(Published(seq))

    @invariant()
    def each_event_is_on_its_way_at_most_once(self):
        if hasattr(self, "rig"):
            st = self.rig.st
            queued = [s for s, _ in st.pending] + [s for s, _ in st.resend.ahead]
            assert len(queued) == len(set(queued)), "an event queued twice"
            assert not set(queued) & st.inflight, "an event in flight queued again"
            assert not self.wanted() & self.on_way(), "an event on its way wanted again"
            # a page asked for is one the station still wants, and one at a time
            assert len(self.reads) <= 1
            assert all({*range(e.lo, e.hi + 1)} <= self.wanted() for e in self.reads)


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


def test_an_input_queued_among_a_flood_of_resends_waits_for_one_page_not_for_the_flood(
        tmp_path, monkeypatch):
    """The cold trial's measure: `resend from: 1` read up to 10,000 journal rows on the loop's
    thread before it was answered (~28 ms each), so 100 resends with new ids held a card or a
    decision queued among them for seconds (bench/bench_resend.py). The real daemon's loop, its
    journal read counted: an input queued behind 20 resends is journaled after one page of rows
    at most; every resend is answered with its whole range; each event is republished once, in
    order."""
    from dealer_station.config import check_config
    from dealer_station.daemon import Daemon
    from dealer_station.station_types import LocalInput
    monkeypatch.setattr(station_resend, "PAGE", 50)
    cfg, errors = check_config({"table": {"id": "t1", "profile": "luxury21"},
                                "shoe": {"protocol": "none"}, "metrics": {"enabled": False},
                                "paths": {"journal": str(tmp_path / "j.sqlite")}})
    assert not errors, errors
    d = Daemon(cfg)
    published, replies = [], []
    d.link.publish_event = lambda message: published.append(json.loads(message)["seq"]) or len(
        published)                                           # its mid: the puback names it
    d.link.reply = lambda payload, *a: replies.append(payload)
    d.link.ack = lambda *a: None
    try:
        d.recover()
        d.station.devices["broker"] = {"state": "connected"}
        for _ in range(300):                                 # 300 events (rejected: no shoe)
            d.process({"type": "resume"}, "test")
        for mid in range(1, 301):                            # the broker acknowledges them all
            d.handle(("mqtt", "puback", mid))
        top = d.station.next_seq - 1
        assert top == 300 and not d.station.pending
        read, at_pause = [], []
        real_read, real_write = d.journal.outbox_from, d.journal.write
        d.journal.outbox_from = lambda *a, **k: read.append(len(rows := real_read(*a, **k))) or rows
        d.journal.write = lambda e: (at_pause.append((sum(read), len(replies)))
                                     if e.body["type"] == "pause" else None, real_write(e))
        mark = len(published)
        for i in range(40):
            if i == 20:
                d.q.put(LocalInput({"type": "pause", "reason": "test"}, "test"))
            d.q.put(Command(json.dumps({"type": "resend", "id": f"r{i}", "from": 1}).encode()))
        acked = mark
        while not d.q.empty() or d.station.inflight:
            d.run_once(0)
            while acked < len(published):                    # acknowledged as they go out
                acked += 1
                d.handle(("mqtt", "puback", acked))
    finally:
        d.close()
    # before: 20 resends x 300 rows read ahead of the pause (up to 10,000 each); the pause
    # (another source: its own lane, loop_queue.py) waits for at most one turn of the resends'
    # lane and one page, and the resends answered after it include its events
    assert at_pause and at_pause[0][0] <= 20 + 50 and at_pause[0][1] <= 1, at_pause
    last = d.station.next_seq - 1                             # the pause's own events after 300
    first = at_pause[0][1]
    assert [(r["status"], r["seq"]) for r in replies] == (
        [("accepted", [1, 300])] * first + [("accepted", [1, last])] * (40 - first)), replies
    resent = [s for s in published[mark:] if s <= top]
    assert resent == list(range(1, top + 1)), "each event once more, in order"


def test_a_resend_and_a_command_share_one_id_space(tmp_path):
    """Cold trial (cold37): a `resend` reusing a journaled command's id was run, and a command
    reusing a resend's id was applied; ids are unique per command whatever its type
    (docs/protocol.md), so either reuse is answered as the duplicate it is and does nothing."""
    r = Rig(str(tmp_path / "j.sqlite"), get_profile("luxury21"))
    c = Clock(1e9, 0.0)
    r.recover(c)
    r.step(BrokerUp(False), c)

    def send(payload):
        effects = r.step(Command(json.dumps(payload).encode()), c)
        return ([e.payload for e in effects if isinstance(e, Reply)],
                [e.seq for e in effects if isinstance(e, Publish)])

    (load,), _ = send({"id": "a", "type": "shoe_loaded"})
    assert load["status"] == "accepted"
    (dup,), resent = send({"id": "a", "type": "resend", "from": 1})
    assert (dup["status"], dup["original"], resent) == ("duplicate", "accepted", [])
    (rs,), _ = send({"id": "r", "type": "resend", "from": 1})
    assert rs["status"] == "accepted"
    top = r.st.next_seq
    (dup,), published = send({"id": "r", "type": "shoe_loaded"})
    assert (dup["status"], dup["original"], published, r.st.next_seq) == ("duplicate", "accepted", [], top)


def test_a_resend_from_a_login_the_staff_does_not_name_is_refused_and_republishes_nothing(
        tmp_path):
    """Cold trial (cold40): a login not in [staff] (any broker login may write its own
    `commands/<login>` on every table, another table's included) had the table publish up to
    10,000 events again per `resend`; it is refused `unknown_staff` as any of its commands,
    audited. The betting system on `commands` and a staff login still resend."""
    from controller.rights import Staff
    r = Rig(str(tmp_path / "j.sqlite"), get_profile("luxury21"))
    r.settings.staff = Staff({"d-anna": "dealer", "pit-console": "system"})
    r.j.db.close()
    r.j.lock.release()
    r.open()                                # a station with the [staff] above
    c = Clock(1e9, 0.0)
    r.recover(c)
    r.step(BrokerUp(False), c)
    def send(payload, user=None):
        effects = r.step(Command(json.dumps(payload).encode(), user=user), c)
        send.audit = [e.entry for e in effects if isinstance(e, Audit)]
        return ([e.payload for e in effects if isinstance(e, Reply)],
                [e.seq for e in effects if isinstance(e, Publish)])

    (load,), published = send({"id": "a", "type": "shoe_loaded"})
    assert load["status"] == "accepted" and published == [1, 2]
    for seq in published:
        r.step(Published(seq), c)           # acknowledged: a resend publishes them again
    (rs,), resent = send({"id": "r1", "type": "resend", "from": 1}, user="t2")
    assert (rs["status"], rs["code"], resent) == ("rejected", "unknown_staff", [])
    (entry,) = [json.loads(text) for text, _ in send.audit]
    assert (entry["who"], entry["action"], entry["result"]) == ("t2", "resend",
                                                                "rejected:unknown_staff")
    for user, cid in ((None, "r2"), ("d-anna", "r3"), ("pit-console", "r4")):
        (rs,), resent = send({"id": cid, "type": "resend", "from": 1}, user=user)
        assert rs["status"] == "accepted" and rs["seq"] == [1, 2] and resent == [1, 2], (user, rs)
        for seq in resent:
            r.step(Published(seq), c)
