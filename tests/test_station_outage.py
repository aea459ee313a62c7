"""The outage rule at recovery (RULES.md: a fault during a round pauses it; not cleared in time,
the round is voided): `void_after_outage_s` counts the time the table was not running, from the
last moment it was known alive (its last journaled input, or the `alive_at` stamp the station
journals while a round waits: dealer_station/station_alive.py), not from the last input.

The station is driven as the daemon's loop drives it: every `Timer` deadline is served with a
`TimerDue` at that moment (Loop.run_for)."""
from controller import get_profile
from dealer_station.station_types import Clock, Command, Record, Timer, TimerDue
from drivers.events import CardRead, ShoeHello
from test_station import Rig

LIMIT = 60.0


class Loop:
    """A station over a real journal, its clock, and the daemon loop's timer."""

    def __init__(self, tmp_path, limit=LIMIT):
        self.rig = Rig(str(tmp_path / "j.sqlite"), get_profile("luxury21"))
        self.rig.settings.void_after_outage_s = limit     # the station's own settings object
        self.wall, self.mono = 1_800_000_000.0, 1000.0
        self.timer = None
        self.voids = []
        self.recover()

    def clock(self):
        return Clock(self.wall, self.mono)

    def carry(self, effects):
        for e in effects:
            if isinstance(e, Timer):
                self.timer = e.deadline
        return effects

    def recover(self):
        self.timer = None
        effects = self.carry(self.rig.recover(self.clock()))
        self.voids += [e for e in effects if isinstance(e, Record) and e.origin == "recovery"]
        return effects

    def step(self, ev):
        return self.carry(self.rig.step(ev, self.clock()))

    def run_for(self, seconds):
        """The loop runs `seconds` with no input: each deadline served when it comes."""
        end = self.mono + seconds
        while self.timer is not None and self.timer <= end:
            self.wall += max(0.0, self.timer - self.mono)
            self.mono = max(self.mono, self.timer)     # exactly: mono + gap may fall short
            self.timer = None
            self.step(TimerDue())
        self.wall += end - self.mono
        self.mono = end

    def crash(self, down):
        """kill -9, down `down` seconds, started again (recovery)."""
        self.rig.j.close()
        self.wall += down
        self.mono += down
        self.rig.open()
        return self.recover()

    def into_a_round(self):
        self.step(ShoeHello("VS", "1", "S1", 1, 0))
        self.step(Command(b'{"id":"a","type":"shoe_loaded"}'))
        i = 0
        while self.rig.st.expectation() is not None and self.rig.st.expectation()[1] == "burn":
            i += 1
            self.step(CardRead("2c", seq=i))
        self.step(Command(b'{"id":"b","type":"betting_closed","seats":[1,2]}'))
        self.step(CardRead("9h", seq=i + 1))
        assert self.rig.st.table.round is not None and self.rig.st.expectation()[0] == "card"


def test_a_second_restart_counts_only_the_time_the_table_was_down(tmp_path):
    """The brief's case: a round interrupted, restarted, alive 90 s with no input, killed, down
    30 s: the table was down 30 s (limit 60), the round goes on. It was voided 'down for 121 s'."""
    t = Loop(tmp_path)
    t.into_a_round()
    t.crash(1.0)
    assert not t.voids
    t.run_for(90.0)
    t.crash(30.0)
    assert not t.voids, t.voids[0].body["reason"]
    assert t.rig.st.table.round is not None


def test_quiet_time_before_the_first_crash_is_not_outage_either(tmp_path):
    """No restart before: the last input 90 s before the kill, down 30 s."""
    t = Loop(tmp_path)
    t.into_a_round()
    t.run_for(90.0)
    t.crash(30.0)
    assert not t.voids


def test_a_long_outage_after_quiet_time_still_voids_and_says_how_long(tmp_path):
    t = Loop(tmp_path)
    t.into_a_round()
    t.run_for(90.0)
    t.crash(61.0)
    assert [v.body["type"] for v in t.voids] == ["void_round"]
    # counted from the last stamp (at most alive_every(60) = 5 s before the kill)
    secs = float(t.voids[0].body["reason"].split("down for ")[1].split(" s")[0])
    assert 61 <= secs <= 61 + 5 + 1


def test_a_crash_loop_is_one_outage(tmp_path):
    """Restarted every few seconds and dying before it has run one stamp's interval: the table
    is not running; the outages add up and the round is voided once past the limit."""
    t = Loop(tmp_path)
    t.into_a_round()
    n = 0
    while not t.voids:
        t.crash(3.0)
        t.run_for(1.0)
        n += 1
        assert n < 40
    assert n * 4 >= LIMIT    # not before the time down and starting reached the limit


def test_a_journal_without_alive_stamps_counts_from_its_last_input(tmp_path):
    """A journal written before alive_at: recovery counts from the last input, as before."""
    t = Loop(tmp_path)
    t.into_a_round()
    t.rig.j.db.execute("DELETE FROM meta WHERE key='alive_at'")
    t.wall += 90.0
    t.mono += 90.0
    t.crash(30.0)
    assert len(t.voids) == 1 and "down for 120 s" in t.voids[0].body["reason"]


def test_no_stamp_while_no_round_waits_or_the_rule_is_off(tmp_path):
    """The stamp is written only where it can matter: a round open, the limit set."""
    def stamps(t, seconds):
        n = 0
        end = t.mono + seconds
        while t.timer is not None and t.timer <= end:
            t.wall, t.mono = t.wall + t.timer - t.mono, t.timer
            t.timer = None
            n += sum(getattr(e, "key", None) == "alive_at" for e in t.step(TimerDue()))
        return n
    t = Loop(tmp_path / "a")
    assert stamps(t, 60.0) == 0             # between rounds: nothing to void
    t.into_a_round()
    assert 10 <= stamps(t, 60.0) <= 13      # every 5 s while the round waits
    (tmp_path / "b").mkdir()
    off = Loop(tmp_path / "b", limit=0.0)
    off.into_a_round()
    assert stamps(off, 60.0) == 0


def test_a_stamp_older_than_the_last_input_proves_nothing(tmp_path):
    """The clock ahead while the round waited (stamps in the clock's future), then set back
    (NTP), an input, a kill, down 500 s: that stamp, later by the wall clock than everything
    since, would have counted the outage as negative and the round gone on. A stamp counts
    only if no input came after it; the old rule then: from the last input."""
    t = Loop(tmp_path)
    t.into_a_round()
    t.wall += 1000.0                  # the clock 1,000 s ahead
    t.run_for(20.0)                   # stamps at the wrong time
    stamp = t.rig.j.get_meta("alive_at")
    assert stamp is not None and float(stamp.split()[0]) > t.wall - 10
    t.wall -= 1000.0                  # set right
    t.step(Command(b'{"id":"p","type":"pause","reason":"x"}'))
    t.crash(500.0)
    assert len(t.voids) == 1 and "down for 500 s" in t.voids[0].body["reason"]
