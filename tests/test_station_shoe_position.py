"""Where the shoe resumes after a restart: the last frame the station acknowledged, a card or a
status report (docs/shoe-protocol.md rule 10). The cold trial: 70 STAT frames after the last
card, a restart, and the driver, resumed at the card, met a HELLO more than MAX_GAP ahead and
reported a false misread that paused the table."""
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from controller.profiles import get_profile
from dealer_station.station_types import AckShoe, Clock, SetMeta
from drivers import shoe_protocol as sp
from drivers.events import CardRead, CardUnreadable, ShoeHello, ShoePosition
from test_station import Rig


class ShoePositionMachine(RuleBasedStateMachine):
    """Any interleaving of card frames, status frames, daemon restarts and shoe reboots: the
    resume point is always the last frame delivered, so a restart never meets a jump."""

    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="ds-shoepos-")
        self.wall = 1_800_000_000.0

    def clock(self):
        self.wall += 1.0
        return Clock(self.wall, self.wall - 1_799_000_000.0)

    @initialize(start=st.integers(0, sp.SEQ_MOD - 1))
    def begin(self, start):
        self.rig = Rig(os.path.join(self.dir, "j.sqlite"), get_profile("luxury21"))
        self.rig.recover(self.clock())
        self.boot, self.seq = 1, start        # where the shoe stands: its last frame sent
        self.rig.step(ShoeHello("VS", "1", "S1", self.boot, self.seq), self.clock())

    def teardown(self):
        if hasattr(self, "rig"):
            self.rig.j.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _next(self):
        self.seq = (self.seq + 1) % sp.SEQ_MOD
        return self.seq

    @rule(unreadable=st.booleans())
    def card(self, unreadable):
        s = self._next()
        ev = CardUnreadable("shoe", {"seq": s, "reason": "x"}, seq=s) if unreadable \
            else CardRead("7d", seq=s)
        effects = self.rig.step(ev, self.clock())
        assert AckShoe(s) in effects

    @rule(k=st.integers(1, 100))
    def status_reports(self, k):
        """k STAT frames in a row (a door flapping, status queries): settled or bounced, each
        is delivered as its position, persisted before it is acknowledged."""
        for _ in range(k):
            s = self._next()
            effects = self.rig.step(ShoePosition(s), self.clock())
            metas = [i for i, e in enumerate(effects)
                     if isinstance(e, SetMeta) and e.key == "shoe_pos"]
            assert metas and effects.index(AckShoe(s)) > metas[-1], "acknowledged before kept"

    @rule()
    def restart(self):
        self.rig.j.close()
        self.rig.open()
        self.rig.recover(self.clock())

    @rule(last=st.integers(0, sp.SEQ_MOD - 1))
    def shoe_reboots(self, last):
        self.boot += 1
        self.seq = last
        self.rig.step(ShoeHello("VS", "1", "S1", self.boot, self.seq), self.clock())

    @rule()
    def shoe_says_hello_again(self):
        """A reconnect or an ID: the same boot, where it stands; the baseline stays."""
        self.rig.step(ShoeHello("VS", "1", "S1", self.boot, self.seq), self.clock())

    @invariant()
    def resumes_at_the_last_frame_delivered(self):
        if hasattr(self, "rig"):
            assert self.rig.st.shoe_resume() == (self.boot, self.seq)


TestShoePosition = ShoePositionMachine.TestCase
TestShoePosition.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])
