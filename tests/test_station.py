"""The station core (dealer_station/station.py): the daemon's rules without a broker or a process.

A Hypothesis state machine drives a station over a real journal (SQLite in a temporary folder)
with commands (good, repeated, malformed), shoe frames, PUBACKs, broker outages, timers, resends
and crashes with recovery, and checks the rules after every step: the journal comes first, the
shoe and the broker are acknowledged after it, a repeated command is applied once, the outbox is
published in order within its window and nothing is lost, timers survive a restart, a round left
too long is voided at recovery. Time passes as the daemon's loop lives it: each `Timer` deadline
is served with a `TimerDue` at that moment.

The outage rule, modelled: the table's last proof of life is its last journaled input or its
last `alive_at` stamp (station_alive.py). A stamp says the time it is written, only while a round
is open and never in the first interval after a recovery (a crash loop proves nothing); while a
round is open the proof is never older than that interval once the table has run one; and a
recovery voids an open round iff the time since the proof is past the limit."""
import json
import os
import random
import shutil
import tempfile

from hypothesis import HealthCheck, event, settings
from hypothesis import event as hypothesis_event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from controller import get_profile
from controller.blackjack import allowed
from controller.cards import CARDS
from dealer_station.journal import Journal
from dealer_station.station import Settings, Station
from dealer_station.station_alive import every
from dealer_station.station_types import (AckCommand, AckShoe, BrokerDown, BrokerUp, Clock,
                                          Command, Log, MarkSent, Publish, Published,
                                          Record, Refuse, Reply, ResendPage, ResendRows, SetMeta,
                                          Status, Timer, TimerDue)
from drivers.events import CardRead, DeviceState, ShoeHello, ShoeStatus

WINDOW = 3
DECISION_S = 10.0
OUTAGE_S = 120.0
ALIVE_S = every(OUTAGE_S)       # the stamps' interval: 5 s


class Rig:
    """A station and the shell's journal side, as the daemon carries effects out."""

    def __init__(self, path, profile):
        self.path = path
        self.profile = profile
        self.settings = Settings("t1", profile, "test", decision_s=DECISION_S, insurance_s=5.0,
                                 void_after_outage_s=OUTAGE_S, inflight=WINDOW, shoe_acks=True)
        self.open()

    def open(self):
        self.j = Journal(self.path, "t1", self.profile.name)
        self.j.db.execute("PRAGMA synchronous=OFF")
        self.st = Station(self.settings)
        self.n0, _ = self.st.restore(self.j.checkpoints(), self.j.last_input()[0] + 1,
                                     self.j.next_seq, self.j.get_meta("shoe_base"),
                                     self.j.last_shoe_seq(),
                                     shoe_pos=self.j.get_meta("shoe_pos"),
                                     alive_at=self.j.get_meta("alive_at"),
                                     clock_base=self.j.get_meta("clock_base"))

    def recover(self, clock):
        return self.carry(self.st.replay(self.j.inputs_after(self.n0), self.j.unsent(), clock,
                                         self.n0))

    def step(self, ev, clock):
        return self.carry(self.st.step(ev, clock, self.reads(ev)))

    def reads(self, ev):
        wanted = self.st.reads(ev)
        reads = {}
        if "command_reply" in wanted:
            reads["command_reply"] = self.j.command_reply(*wanted["command_reply"])
        if "outbox_at" in wanted:
            rows = self.j.outbox_from(wanted["outbox_at"], limit=1)
            reads["outbox_row"] = rows[0] if rows else None
        return reads

    def carry(self, effects, pages=True):
        for e in effects:          # a page read comes back at once (the daemon queues it)
            if isinstance(e, ResendPage) and pages:
                effects += self.st.step(ResendRows(e.lo, e.hi, self.j.outbox_from(
                    e.lo, e.hi - e.lo + 1)), None)
            elif isinstance(e, Record):
                self.j.write(e)
            elif isinstance(e, Refuse):
                self.j.refuse(e)
            elif isinstance(e, MarkSent):
                self.j.mark_sent([e.seq])
            elif isinstance(e, SetMeta):
                self.j.set_meta(e.key, e.value)
        return effects


def first(effects, kind):
    return next((i for i, e in enumerate(effects) if isinstance(e, kind)), None)


class StationMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="ds-station-")
        self.wall, self.mono = 1_800_000_000.0, 1000.0
        self.ids = 0
        # (id, payload, first reply, the restart it was counted in or None): a rejection beyond
        # the flood budget is counted, not journaled (station_refusals.py)
        self.sent_commands = []
        self.restarts = 0
        self.published = set()      # seqs the broker has received at least once
        self.in_broker = []         # seqs handed to the broker, not yet acknowledged
        self.shoe_seq = 0
        self.shoe_acked = 0
        self.timer = None
        self.proof = None           # wall time of the last proof of life journaled
        self.up_since = self.mono   # monotonic time of the last recovery

    def clock(self):
        return Clock(self.wall, self.mono, synced=True, boot="b1")   # every restart in one boot

    @initialize(profile=st.sampled_from(["luxury21", "punto_banco"]), seed=st.integers(0, 99))
    def start(self, profile, seed):
        self.profile = get_profile(profile)
        self.cards = list(CARDS) * self.profile.decks
        random.Random(seed).shuffle(self.cards)
        self.rig = Rig(os.path.join(self.dir, "journal.sqlite"), self.profile)
        self.after(self.rig.recover(self.clock()))
        self.after(self.rig.step(ShoeHello("VS", "1", "S1", 1, 0), self.clock()))
        self.after(self.rig.step(BrokerUp(False), self.clock()))

    def teardown(self):
        if hasattr(self, "rig"):
            self.rig.j.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- what every step's effects must obey ----------------------------------------------------

    def after(self, effects, event=None):
        rec = first(effects, Record)
        for i, e in enumerate(effects):
            if isinstance(e, (Publish, AckShoe, AckCommand, Reply)) and rec is not None:
                assert i > rec, f"{type(e).__name__} before the journal record"
            if isinstance(e, AckShoe):
                assert any(isinstance(r, Record) and r.shoe_seq == e.seq for r in effects[:i]), \
                    "the shoe acknowledged for a frame not journaled in this step"
                self.shoe_acked = max(self.shoe_acked, e.seq)
            if isinstance(e, Publish):
                self.in_broker.append(e.seq)
                self.published.add(e.seq)
            if isinstance(e, Timer):
                self.timer = e.deadline
            if isinstance(e, Record):
                assert e.at == self.wall
                self.proof = self.wall
            if isinstance(e, SetMeta) and e.key == "alive_at":
                # the time it is written, while a round is open, once the table ran an interval
                wall, n = e.value.split()[:2]   # when, after which input
                assert float(wall) == round(self.wall, 3) and not e.sync
                assert int(n) == self.rig.st.next_n - 1
                assert self.rig.st.table.round is not None
                assert self.mono >= self.up_since + ALIVE_S - 1e-6, "a stamp before it ran"
                hypothesis_event("an alive_at stamp")   # (`event` is the parameter here)
                self.proof = float(wall)
        if isinstance(event, Command):
            assert sum(isinstance(e, Reply) for e in effects) == 1
            ack = first(effects, AckCommand)
            assert ack is not None and ack > first(effects, Reply), "PUBACK after the reply"
            # (a resend's next page, ResendPage, is a read the loop queues back: the rig's carry
            # folds its turn in here; a range with a hole in it, events on their way, has two)
            assert all(isinstance(e, (Publish, ResendPage)) for e in effects[ack + 1:]), \
                "after the PUBACK only the events it caused go out"
        return effects

    def command(self, cmd, cid=None):
        if cid is None:
            self.ids += 1
            cid = f"c{self.ids}"
        payload = json.dumps({**cmd, "id": cid}).encode()
        ev = Command(payload, None, None, self.ids, 1)
        effects = self.after(self.rig.step(ev, self.clock()), ev)
        reply = next(e.payload for e in effects if isinstance(e, Reply))
        self.sent_commands.append((cid, payload, reply, self._counted(reply, effects)))
        return reply, effects

    def _counted(self, reply, effects):
        """The restart a rejection was counted in (no Record: station_refusals.py), or None."""
        counted = any(isinstance(e, Refuse) and e.counted is not None for e in effects)
        return self.restarts if counted and reply.get("code") != "malformed" else None

    # -- rules ----------------------------------------------------------------------------------

    @rule()
    def load_shoe(self):
        self.command({"type": "shoe_loaded"})

    @rule(k=st.integers(1, 7))
    def close_betting(self, k):
        if self.profile.game == "baccarat":
            self.command({"type": "betting_closed"})
        else:
            self.command({"type": "betting_closed", "seats": list(range(1, k + 1))})

    @precondition(lambda self: hasattr(self, "cards") and self.shoe_seq < len(self.cards))
    @rule()
    def deal(self):
        self.shoe_seq += 1
        card = self.cards[self.shoe_seq - 1]
        effects = self.after(self.rig.step(CardRead(card, seq=self.shoe_seq), self.clock()))
        assert any(isinstance(e, AckShoe) and e.seq == self.shoe_seq for e in effects)

    @precondition(lambda self: hasattr(self, "cards"))
    @rule(k=st.integers(5, 60))
    def play_on(self, k):
        """What a dealer and a betting system do next, `k` times: load a shoe, close betting,
        deal the awaited card (so the machine reaches decisions, timers and results)."""
        for _ in range(k):
            t, e = self.rig.st.table, self.rig.st.expectation()
            if t.paused:
                self.command({"type": "resume"})
            elif e is not None and e[0] == "card" and self.shoe_seq < len(self.cards):
                self.deal()
            elif e is None and t.phase in ("no_shoe", "shuffle_due"):
                self.command({"type": "shoe_loaded"})
            elif e is None and t.phase == "ready":
                self.close_betting(3)
            else:
                return

    @rule(pick=st.randoms(use_true_random=False))
    def decide(self, pick):
        e = self.rig.st.expectation()
        if e is not None and e[0] == "decision":
            rnd = self.rig.st.table.round
            s = rnd.seats[rnd.cur_s]
            action = pick.choice(allowed(rnd, s, s.hands[e[2]]))
            event("a player decided")
            self.command({"type": "decision", "seat": e[1], "hand": e[2], "action": action})
        elif e is not None and e[0] == "insurance":
            self.command({"type": "insurance_closed"})
        else:
            reply, _ = self.command({"type": "decision", "seat": 1, "hand": 0, "action": "hit"})
            assert reply["status"] == "rejected"

    @rule(which=st.sampled_from(["pause", "resume", "void_round"]))
    def pit_boss(self, which):
        cmd = {"type": which}
        if which != "resume":
            cmd["reason"] = "test"
        self.command(cmd)

    @precondition(lambda self: self.sent_commands)
    @rule(pick=st.randoms(use_true_random=False))
    def repeat_a_command(self, pick):
        i = pick.randrange(len(self.sent_commands))
        cid, payload, original, counted = self.sent_commands[i]
        inputs = self.rig.j.last_input()[0]
        queued = len(self.rig.st.pending)
        ev = Command(payload, None, None, 0, 1)
        effects = self.after(self.rig.step(ev, self.clock()), ev)
        reply = next(e.payload for e in effects if isinstance(e, Reply))
        if counted is not None and counted != self.restarts:
            # a counted rejection's id is journaled with its count (counted_ids, ids39): after a
            # restart it is still a duplicate, never judged again (it was, and could be applied)
            event("a counted rejection repeated after a restart")
        assert first(effects, Record) is None and self.rig.j.last_input()[0] == inputs
        if b'"resend"' in payload:
            # a resend is not journaled: its id is remembered in memory (the same id again
            # republishes nothing), forgotten by a restart (then it resends again)
            if reply["status"] == "duplicate":
                assert reply["original"] == "accepted" and len(self.rig.st.pending) <= queued
            else:
                assert reply["status"] == "accepted"
        elif original["status"] in ("accepted", "rejected") and original.get("code") != "malformed":
            event("a command repeated")
            assert reply["status"] == "duplicate" and reply["original"] == original["status"]
            assert reply.get("seq") == original.get("seq")

    @rule(payload=st.binary(max_size=60) | st.just(b"[" * 3000) | st.just(b'{"id":"\\ud800"}'))
    def malformed(self, payload):
        ev = Command(payload, None, None, 0, 1)
        effects = self.after(self.rig.step(ev, self.clock()), ev)
        if first(effects, Record) is None:
            assert first(effects, Refuse) is not None or next(
                e.payload for e in effects if isinstance(e, Reply))["status"] != "rejected"

    @precondition(lambda self: self.in_broker)
    @rule(pick=st.randoms(use_true_random=False))
    def puback(self, pick):
        seq = pick.choice(self.in_broker)
        self.in_broker.remove(seq)
        self.after(self.rig.step(Published(seq), self.clock()))

    @rule()
    def broker_outage(self):
        # paho keeps what is in flight and sends it again on reconnect: in_broker stays
        self.after(self.rig.step(BrokerDown("keepalive timeout"), self.clock()))
        self.after(self.rig.step(BrokerUp(True), self.clock()))

    @rule(seconds=st.floats(0.1, 30.0))
    def time_passes(self, seconds):
        end = self.mono + seconds
        for _ in range(1000):         # the loop wakes at each deadline on the way
            if self.timer is None or self.timer > end:
                break
            self.wall += max(0.0, self.timer - self.mono)
            self.mono = max(self.mono, self.timer)     # exactly: mono + gap may fall short
            self.timer = None
            self.timer_due()
        else:
            raise AssertionError("the station's deadlines do not move on")
        self.wall += end - self.mono
        self.mono = end
        if self.rig.st.table.round is not None and self.mono >= self.up_since + ALIVE_S + 1e-6:
            # the table says it is alive at least once an interval while a round waits
            assert self.proof is not None and self.wall - self.proof <= ALIVE_S + 1e-6, \
                f"last proof of life {self.wall - self.proof:.1f} s ago"

    def timer_due(self):
        before = self.rig.st.expectation()
        effects = self.after(self.rig.step(TimerDue(), self.clock()))
        rec = [e for e in effects if isinstance(e, Record)]
        assert len(rec) <= 1
        if rec:
            event("a timer fired")
            assert rec[0].origin == "timer" and before is not None
            assert rec[0].body["type"] in ("decision_timeout", "insurance_closed")

    @precondition(lambda self: hasattr(self, "rig") and self.rig.st.timer is not None)
    @rule(down=st.sampled_from([None, 1.0, 30.0]))
    def nobody_decides(self, down):
        """A player who never answers: the timer fires (maybe after a restart in between)."""
        if down is not None:
            self.crash_and_recover(down)
        self.time_passes(DECISION_S + 0.5)

    @rule(start=st.integers(1, 40))
    def resend(self, start):
        reply, _ = self.command({"type": "resend", "from": start})
        assert reply["status"] == "accepted"

    @rule(down=st.sampled_from([1.0, 30.0, 100.0, 118.0, 500.0]))
    def crash_and_recover(self, down):
        st0 = self.rig.st
        snap, exp, timer = st0.status()["snapshot"], st0.expectation(), st0.timer
        next_seq, round_on = st0.next_seq, st0.table.round is not None
        resume = st0.shoe_resume()
        self.rig.j.close()
        self.wall += down
        self.mono += down
        self.in_broker = []
        self.timer = None              # the process's deadline went with it
        self.rig.open()
        self.restarts += 1
        assert self.rig.st.shoe_resume() == resume, "the shoe resumes where we were"
        ran = self.mono - down - self.up_since >= ALIVE_S    # up an interval before the crash
        self.up_since = self.mono
        outage = self.wall - self.proof if self.proof is not None else 0.0
        effects = self.after(self.rig.recover(self.clock()))
        st1 = self.rig.st
        voids = [e for e in effects if isinstance(e, Record) and e.origin == "recovery"]
        # the rule in words: the time down decides, give or take one stamp's interval
        assert not (round_on and ran and down + ALIVE_S < OUTAGE_S and voids), "quiet time voided"
        assert not (round_on and down > OUTAGE_S and not voids)
        if round_on and abs(outage - OUTAGE_S) < 1e-6:
            return      # on the limit to the float's last bit: either is the rule
        if round_on and outage > OUTAGE_S:
            event("a round voided after an outage")
            if down <= OUTAGE_S:
                event("voided: down a while, and down before without running an interval")
            assert len(voids) == 1 and voids[0].body["type"] == "void_round"
            assert f"down for {outage:.0f} s" in voids[0].body["reason"]
        else:
            assert not voids
            assert st1.status()["snapshot"] == snap and st1.expectation() == exp
            assert st1.next_seq == next_seq
            if timer is not None:
                event("a timer re-armed by recovery")
                assert st1.timer is not None and st1.timer[1] == timer[1]
                assert abs(st1.timer[0] - timer[0]) < 1e-6
        unsent = {s for s, _ in self.rig.j.unsent()}
        assert unsent == {s for s, _ in st1.pending} | st1.inflight
        self.after(self.rig.step(BrokerUp(True), self.clock()))

    @rule(device=st.sampled_from(["shoe", "camera"]),
          state=st.sampled_from(["connected", "disconnected", "fault", "ok"]))
    def device_health(self, device, state):
        effects = self.after(self.rig.step(DeviceState(device, state, {"reason": "test"}),
                                           self.clock()))
        status = next(e.doc for e in effects if isinstance(e, Status))
        assert status["devices"][device]["state"] == state

    @rule(jam=st.booleans())
    def shoe_reports(self, jam):
        self.after(self.rig.step(ShoeStatus(None, "closed", jam, "ok", "ok", "locked"),
                                 self.clock()))

    @invariant()
    def the_engine_knows_which_required_devices_are_down(self):
        """A device fault reaches the engine as an input (journaled), its return too; a round
        never goes on, nor does betting close, with the shoe down."""
        if not hasattr(self, "rig"):
            return
        st0 = self.rig.st
        down = {d for d, h in st0.health.items() if h and d in st0.required()}
        assert {d for d, _ in st0.table.faults} >= down
        if down and st0.table.round is not None:
            assert st0.table.paused

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def the_outbox_is_contiguous_and_within_its_window(self):
        if not hasattr(self, "rig"):
            return
        st0, j = self.rig.st, self.rig.j
        n = j.db.execute("SELECT COUNT(*), MAX(seq) FROM outbox").fetchone()
        assert n[0] == (n[1] or 0) and st0.next_seq == (n[1] or 0) + 1
        assert len(st0.inflight) <= WINDOW
        assert self.published <= set(range(1, st0.next_seq))

    def drain(self):
        """Acknowledge everything until nothing is left: every event reached the broker."""
        for _ in range(10_000):
            if not self.in_broker:
                self.after(self.rig.step(BrokerUp(True), self.clock()))
                if not self.in_broker:
                    break
            self.after(self.rig.step(Published(self.in_broker.pop(0)), self.clock()))
        return self.rig.st.next_seq

    @invariant()
    def no_log_names_a_card_input(self):
        pass   # card inputs are never logged: checked in test_a_card_input_is_never_logged


class Drained(StationMachine):
    def teardown(self):
        if hasattr(self, "rig"):
            next_seq = self.drain()
            assert self.published == set(range(1, next_seq)), "an event never reached the broker"
            assert not self.rig.st.pending
        super().teardown()


TestStation = Drained.TestCase
TestStation.settings = settings(max_examples=100, stateful_step_count=50, deadline=None,
                                suppress_health_check=[HealthCheck.too_slow])


def _rig(tmp_path, **kw):
    r = Rig(str(tmp_path / "j.sqlite"), get_profile("luxury21"))
    r.recover(Clock(1e9, 0.0))
    return r


def test_a_resend_sent_again_with_its_id_republishes_nothing(tmp_path):
    """A betting system sends an unanswered command again with the same id; after an outage
    every copy arrives at once. Only the first resend of an id queues the events again."""
    r = _rig(tmp_path)
    c = Clock(1e9, 0.0)
    r.step(Command(b'{"id":"a","type":"shoe_loaded"}'), c)
    assert r.st.next_seq > 1
    r.st.pending.clear()              # as if the broker had taken everything
    cmd = b'{"id":"r1","type":"resend","from":1}'
    first_reply = next(e.payload for e in r.step(Command(cmd), c) if isinstance(e, Reply))
    assert first_reply["status"] == "accepted" and first_reply["seq"][0] == 1
    queued = len(r.st.pending) + len(r.st.inflight)
    assert queued >= 1
    again = next(e.payload for e in r.step(Command(cmd), c) if isinstance(e, Reply))
    assert again == {**first_reply, "status": "duplicate", "original": "accepted"}
    assert len(r.st.pending) + len(r.st.inflight) == queued
    other = next(e.payload for e in r.step(Command(b'{"id":"r2","type":"resend","from":1}'), c)
                 if isinstance(e, Reply))
    assert other["status"] == "accepted"


def test_a_resend_with_a_field_it_does_not_take_is_refused_like_any_command(tmp_path):
    """docs/protocol.md: a field the input's schema does not list is an error. A resend took any
    field silently (a client's typo, `"form": 5`, beside `from`, republished from `from`)."""
    r = _rig(tmp_path)
    c = Clock(1e9, 0.0)
    r.step(Command(b'{"id":"a","type":"shoe_loaded"}'), c)
    r.st.pending.clear()
    reply = next(e.payload for e in r.step(Command(b'{"id":"r1","type":"resend","from":1,'
                                                   b'"form":5}'), c) if isinstance(e, Reply))
    assert reply["status"] == "rejected" and reply["code"] == "malformed"
    assert reply["reason"] == "resend.form: unknown field" and not r.st.pending
    ok = next(e.payload for e in r.step(Command(b'{"id":"r2","type":"resend","from":1,'
                                                b'"by":"pit"}'), c) if isinstance(e, Reply))
    assert ok["status"] == "accepted"


def test_a_card_input_is_never_logged(tmp_path):
    r = _rig(tmp_path)
    c = Clock(1e9, 0.0)
    r.step(Command(b'{"id":"a","type":"shoe_loaded"}'), c)
    effects = r.step(CardRead("Qh", seq=1), c)
    assert not any(isinstance(e, Log) and "Qh" in e.text for e in effects)
    assert not any(isinstance(e, Log) and "input card" in e.text for e in effects)


def test_a_malformed_command_is_refused_kept_and_acknowledged(tmp_path):
    r = _rig(tmp_path)
    effects = r.step(Command(b"[" * 3000, None, None, 7, 1), Clock(1e9, 0.0))
    assert [type(e) for e in effects] == [Refuse, type(effects[1]), Reply, AckCommand]
    assert effects[-1] == AckCommand(7, 1)
    assert r.j.db.execute("SELECT COUNT(*) FROM refused").fetchone()[0] == 1
    assert r.j.last_input()[0] == 0


def test_the_shoe_is_acknowledged_only_after_its_frame_is_journaled(tmp_path):
    r = _rig(tmp_path)
    c = Clock(1e9, 0.0)
    r.step(Command(b'{"id":"a","type":"shoe_loaded"}'), c)
    effects = r.step(CardRead("5h", seq=41), c)
    assert first(effects, Record) < first(effects, AckShoe)
    assert r.j.last_shoe_seq()[1] == 41


def test_a_timer_fires_only_if_the_table_still_waits_for_the_same_thing(tmp_path):
    r = _rig(tmp_path)
    c = Clock(1e9, 0.0)
    r.step(Command(b'{"id":"a","type":"shoe_loaded"}'), c)
    deck = ["5h", "9c", "Kd", "3s", "8h", "2d", "7c"]
    i = 0
    while r.st.expectation() is not None and r.st.expectation()[1] == "burn":
        i += 1
        r.step(CardRead("2c", seq=i), c)
    r.step(Command(b'{"id":"b","type":"betting_closed","seats":[1]}'), c)
    for card in deck:
        if r.st.expectation() is None or r.st.expectation()[0] != "card":
            break
        i += 1
        r.step(CardRead(card, seq=i), c)
    e = r.st.expectation()
    assert e[0] == "decision" and r.st.timer is not None
    deadline = r.st.timer[0]
    # the player decides in time: the timer is cancelled, a late TimerDue does nothing
    r.step(Command(json.dumps({"id": "d", "type": "decision", "seat": 1, "hand": 0,
                               "action": "stand"}).encode()), c)
    effects = r.step(TimerDue(), Clock(1e9 + 60, deadline + 1))
    assert first(effects, Record) is None


# -- device faults reach the engine (RULES.md: a device fault during a round pauses it) ----------

def outs(effects):
    return [json.loads(m) for e in effects if isinstance(e, Record) for _, m in e.messages]


def inputs(effects):
    return [e.body for e in effects if isinstance(e, Record)]


def _dealing(tmp_path):
    """A luxury21 station in round 1, waiting for a card of the initial deal."""
    r = _rig(tmp_path)
    c = Clock(1e9, 0.0)
    r.step(DeviceState("shoe", "connected"), c)
    r.step(Command(b'{"id":"a","type":"shoe_loaded"}'), c)
    i = 0
    while r.st.expectation() is not None and r.st.expectation()[1] == "burn":
        i += 1
        r.step(CardRead("2c", seq=i), c)
    r.step(Command(b'{"id":"b","type":"betting_closed","seats":[1,2]}'), c)
    r.step(CardRead("9h", seq=i + 1), c)
    assert r.st.expectation()[0] == "card"
    return r, c


def test_a_shoe_unplugged_mid_round_pauses_it_and_its_return_resumes_it(tmp_path):
    r, c = _dealing(tmp_path)
    wanted = r.st.expectation()
    effects = r.step(DeviceState("shoe", "disconnected", {"reason": "unplugged"}), c)
    assert [b["type"] for b in inputs(effects)] == ["device_fault"]
    assert inputs(effects)[0]["device"] == "shoe" and "unplugged" in inputs(effects)[0]["reason"]
    kinds = [o["type"] for o in outs(effects)]
    assert kinds == ["device_fault", "irregularity", "round_paused"]
    assert r.st.table.paused == "device_fault"
    # the driver reports the same state again: nothing new is journaled
    assert not inputs(r.step(DeviceState("shoe", "disconnected", {"reason": "x"}), c))
    effects = r.step(DeviceState("shoe", "connected"), c)
    assert [b["type"] for b in inputs(effects)] == ["device_restored"]
    kinds = [o["type"] for o in outs(effects)]
    assert kinds[:2] == ["device_restored", "round_resumed"] and kinds[-1] == "awaiting_card"
    assert r.st.expectation() == wanted and not r.st.table.paused


def test_a_jam_holds_the_shoe_down_across_a_reconnect_until_the_shoe_reports_it_cleared(tmp_path):
    r, c = _dealing(tmp_path)
    jam = ShoeStatus(5, "closed", True, "ok", "ok", "locked")
    effects = r.step(jam, c)
    assert [b["type"] for b in inputs(effects)] == ["device_fault"]
    assert "jam" in inputs(effects)[0]["reason"]
    r.step(DeviceState("shoe", "fault", {"reason": "jam"}), c)
    r.step(DeviceState("shoe", "disconnected", {"reason": "unplugged"}), c)
    assert not inputs(r.step(DeviceState("shoe", "connected"), c))   # still jammed
    assert r.st.table.paused == "device_fault"
    effects = r.step(ShoeStatus(6, "closed", False, "ok", "ok", "locked"), c)
    assert [b["type"] for b in inputs(effects)] == ["device_restored"]
    assert not r.st.table.paused
    assert not inputs(r.step(DeviceState("shoe", "ok"), c))


def test_betting_does_not_close_while_the_shoe_is_down_between_rounds(tmp_path):
    r = _rig(tmp_path)
    c = Clock(1e9, 0.0)
    r.step(DeviceState("shoe", "connected"), c)
    r.step(Command(b'{"id":"a","type":"shoe_loaded"}'), c)
    for i in range(1, 12):
        if r.st.expectation() is None or r.st.expectation()[1] != "burn":
            break
        r.step(CardRead("2c", seq=i), c)
    effects = r.step(DeviceState("shoe", "fault", {"reason": "stalled: nothing for 3 s"}), c)
    assert [o["type"] for o in outs(effects)] == ["device_fault"]       # no round: no pause
    effects = r.step(Command(b'{"id":"b","type":"betting_closed","seats":[1]}'), c)
    reply = next(e.payload for e in effects if isinstance(e, Reply))
    assert reply["status"] == "rejected" and reply["code"] == "device_down"
    r.step(DeviceState("shoe", "connected", {"reason": "line alive again"}), c)
    effects = r.step(Command(b'{"id":"c","type":"betting_closed","seats":[1]}'), c)
    assert next(e.payload for e in effects if isinstance(e, Reply))["status"] == "accepted"


def test_the_camera_is_not_a_required_device(tmp_path):
    r, c = _dealing(tmp_path)
    assert not inputs(r.step(DeviceState("camera", "disconnected", {"reason": "x"}), c))
    assert not r.st.table.paused


def test_the_wheels_component_fault_pauses_the_spin_and_its_clearing_ends_it_with_the_number(
        tmp_path):
    from controller import get_profile as gp
    from drivers.events import WheelException, WheelState, WinningNumber
    r = Rig(str(tmp_path / "j.sqlite"), gp("roulette"))
    c = Clock(1e9, 0.0)
    r.recover(c)
    r.step(BrokerUp(False), c)            # a status goes out only while connected
    r.step(DeviceState("wheel", "connected"), c)
    r.step(WheelState(4, "no_more_bets", 1, 0, 17.0, "clockwise"), c)     # betting closes
    assert r.st.table.round is not None
    effects = r.step(WheelException("component_fault", 1, {"code": "12"}), c)
    assert [b["type"] for b in inputs(effects)] == ["device_fault"]
    (status,) = [e.doc for e in effects if isinstance(e, Status)]       # once, not twice
    assert status["devices"]["wheel"]["state"] == "fault" and status["snapshot"]["paused"]
    assert r.st.table.paused == "device_fault"
    assert not any(o["type"] == "round_voided" for o in outs(effects))
    r.step(WheelState(4, "no_more_bets", 1, 4, 17.0, "clockwise"), c)
    effects = r.step(WinningNumber(17, 1, "line"), c)
    assert [o["type"] for o in outs(effects)] == ["number_held"]
    effects = r.step(WheelState(5, "winning_number", 1, 0, 17.0, "clockwise"), c)
    kinds = [o["type"] for o in outs(effects)]
    assert kinds[:2] == ["device_restored", "round_resumed"] and "round_result" in kinds
    assert next(o for o in outs(effects) if o["type"] == "round_result")["number"] == 17


def test_a_ball_lost_mid_spin_voids_it_and_publishes_the_status_once_with_the_fault(tmp_path):
    """The void's own status came before the wheel's fault was noted, then a second one: one
    status, showing both."""
    from controller import get_profile as gp
    from drivers.events import WheelException, WheelState
    r = Rig(str(tmp_path / "j.sqlite"), gp("roulette"))
    c = Clock(1e9, 0.0)
    r.recover(c)
    r.step(BrokerUp(False), c)            # a status goes out only while connected
    r.step(DeviceState("wheel", "connected"), c)
    r.step(WheelState(4, "no_more_bets", 1, 0, 17.0, "clockwise"), c)
    effects = r.step(WheelException("no_ball", 1, {}), c)
    assert "round_voided" in [o["type"] for o in outs(effects)]
    (status,) = [e.doc for e in effects if isinstance(e, Status)]
    w = status["devices"]["wheel"]
    assert (w["state"], w["reason"]) == ("fault", "no_ball")


def test_two_numbers_for_one_spin_pause_the_table_for_the_supervisor(tmp_path):
    from controller import get_profile as gp
    from drivers.events import WheelException, WheelState, WinningNumber
    r = Rig(str(tmp_path / "j.sqlite"), gp("roulette"))
    c = Clock(1e9, 0.0)
    r.recover(c)
    r.step(DeviceState("wheel", "connected"), c)
    r.step(WheelState(4, "no_more_bets", 7, 0, 17.0, "clockwise"), c)
    r.step(WinningNumber(29, 7, "status"), c)
    effects = r.step(WheelException("number_mismatch", 7, {"first": 29, "then": 23,
                                                           "source": "line"}), c)
    assert inputs(effects)[0] == {"type": "number_mismatch", "first": 29, "then": 23, "spin": 7,
                                  "ts": inputs(effects)[0]["ts"]}
    o = outs(effects)
    assert [m["type"] for m in o] == ["irregularity", "round_paused"]
    assert o[0]["code"] == "number_mismatch" and o[0]["round"] == 1
    assert r.st.table.paused == "number_mismatch"
    # the wheel's next no-more-bets does not close betting on a paused table
    assert not inputs(r.step(WheelState(4, "no_more_bets", 8, 0, 17.0, "clockwise"), c))


def test_a_correction_must_name_the_rounds_published_result(tmp_path):
    """Found by the engine's state machine: the engine cannot see sequence numbers, so a voided
    round could be "corrected". The station looks the named message up in the outbox."""
    from controller import get_profile as gp
    from drivers.events import WheelState, WinningNumber
    r = Rig(str(tmp_path / "j.sqlite"), gp("roulette"))
    c = Clock(1e9, 0.0)
    r.recover(c)
    r.step(DeviceState("wheel", "connected"), c)
    r.step(WheelState(4, "no_more_bets", 7, 0, 17.0, "clockwise"), c)
    result = [m for m in outs(r.step(WinningNumber(29, 7, "status"), c))
              if m["type"] == "round_result"][0]

    def correct(cid, rnd, seq):
        cmd = {"id": cid, "type": "correct_result", "round": rnd, "seq": seq, "number": 30,
               "reason": "wrong number announced", "by": "super"}
        effects = r.step(Command(json.dumps(cmd).encode()), c)
        return [e.payload for e in effects if isinstance(e, Reply)][0], outs(effects)

    reply, _ = correct("c1", 1, result["seq"] - 1)           # not a result
    assert reply["status"] == "rejected" and reply["code"] == "no_such_result"
    reply, _ = correct("c2", 2, result["seq"])               # another round's result
    assert reply["status"] == "rejected" and reply["code"] == "no_such_result"
    reply, _ = correct("c3", 1, 10 ** 6)                     # nothing there
    assert reply["status"] == "rejected" and reply["code"] == "no_such_result"
    assert r.j.db.execute("SELECT COUNT(*) FROM refused").fetchone()[0] == 3
    # the cold trial: a sequence number given as text was "no_such_result", not malformed
    reply, _ = correct("c5", 1, str(result["seq"]))
    assert reply["status"] == "rejected" and reply["code"] == "malformed", reply
    assert "correct_result.seq" in reply["reason"], reply
    reply, o = correct("c4", 1, result["seq"])
    assert reply["status"] == "accepted", reply
    assert [m["type"] for m in o] == ["result_corrected"] and o[0]["corrects"] == result["seq"]
