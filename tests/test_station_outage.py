"""The outage rule at recovery (RULES.md: a fault during a round pauses it; not cleared in time,
the round is voided): `void_after_outage_s` counts the time the table was not running, from the
last moment it was known alive (its last journaled input, or the `alive_at` stamp the station
journals while a round waits: dealer_station/station_alive.py), not from the last input.

The station is driven as the daemon's loop drives it: every `Timer` deadline is served with a
`TimerDue` at that moment (Loop.run_for). Each `Clock` carries the shell's clock facts
(dealer_station/clock_facts.py): this boot's id and whether the wall clock is synchronised. A
Raspberry Pi has no real-time clock: after a power cut it boots with a saved time (or 1970)
until NTP syncs, so across a reboot the outage is counted only on a synchronised clock; within
one boot, by the monotonic clock."""
import json

from controller import get_profile
from dealer_station.station_types import Clock, Command, Record, Timer, TimerDue
from drivers.events import CardRead, ShoeHello
from dealer_station.station_alive import every
from test_station import Rig

LIMIT = 60.0


class Loop:
    """A station over a real journal, its clock, and the daemon loop's timer."""

    def __init__(self, tmp_path, limit=LIMIT):
        self.rig = Rig(str(tmp_path / "j.sqlite"), get_profile("luxury21"))
        self.rig.settings.void_after_outage_s = limit     # the station's own settings object
        self.wall, self.mono = 1_800_000_000.0, 1000.0
        self.synced, self.boot = True, "boot-1"
        self.timer = None
        self.voids = []
        self.recover()

    def clock(self):
        return Clock(self.wall, self.mono, synced=self.synced, boot=self.boot)

    def carry(self, effects):
        for e in effects:
            if isinstance(e, Timer):
                self.timer = e.deadline
        return effects

    def recover(self):
        self.timer = None
        effects = self.carry(self.rig.recover(self.clock()))
        self.voids += [e for e in effects if isinstance(e, Record) and e.origin == "recovery"
                       and e.body["type"] == "void_round"]
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

    def reboot(self, down, wall=None, synced=False):
        """A power cut of `down` seconds: the Pi boots again (a new boot id, its monotonic clock
        from 0) with its wall clock at `wall` (None: right) and `synced` as NTP left it."""
        self.rig.j.close()
        self.boot = f"boot-{int(self.boot.split('-')[1]) + 1}"
        self.true_wall = self.wall + down            # what the time really is
        self.wall = self.true_wall if wall is None else wall
        self.mono, self.synced = 12.0, synced
        self.rig.open()
        return self.recover()

    def sync(self):
        """NTP steps the clock right."""
        self.wall, self.synced = self.true_wall + (self.mono - 12.0), True

    def events(self, kind):
        return [json.loads(m) for _, m in self.rig.j.db.execute(
            "SELECT seq, body FROM outbox ORDER BY seq") if json.loads(m)["type"] == kind]

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


# -- the clock the outage is counted on (a Pi has no real-time clock) ----------------------------

def paused_unmeasured(t):
    table = t.rig.st.table
    return (table.round is not None and table.paused == "outage_unmeasured"
            and [i["code"] for i in t.events("irregularity")] == ["outage_unmeasured"])


def test_a_power_cut_on_a_clock_not_yet_synced_pauses_the_round_instead_of_going_on(tmp_path):
    """The brief's case: a 40-minute power cut; the Pi boots with the clock fake-hwclock saved
    (a few seconds after the last stamp) and the daemon starts before NTP. Counted on that clock
    the table was down ~5 s and the round went on; it must pause for the supervisor."""
    t = Loop(tmp_path)
    t.into_a_round()
    t.run_for(30.0)
    stamp = float(t.rig.j.get_meta("alive_at").split()[0])
    t.reboot(2400.0, wall=stamp + 5.0, synced=False)
    assert not t.voids
    assert paused_unmeasured(t)
    reason = t.events("irregularity")[0]["detail"]["reason"]
    assert "not synchronised" in reason and "cannot be counted" in reason
    assert t.events("round_paused")[-1]["reason"] == "outage_unmeasured"


def test_once_ntp_syncs_the_same_run_counts_the_outage_and_voids_past_the_limit(tmp_path):
    t = Loop(tmp_path)
    t.into_a_round()
    t.run_for(30.0)
    stamp = float(t.rig.j.get_meta("alive_at").split()[0])
    t.reboot(2400.0, wall=stamp + 5.0, synced=False)
    t.run_for(20.0)                          # NTP not there yet: still paused, no judgment
    assert paused_unmeasured(t) and not t.events("round_voided")
    t.sync()
    t.run_for(5.0)
    m = t.events("outage_measured")
    assert len(m) == 1 and 2400 <= m[0]["seconds"] <= 2400 + every(LIMIT) + 0.1
    v = t.events("round_voided")
    assert len(v) == 1 and "down for 24" in v[0]["reason"] and t.rig.st.table.round is None


def test_a_short_power_cut_goes_on_once_the_clock_is_synchronised(tmp_path):
    """Down 20 s, the clock at 1970 until NTP: the pause holds until the clock can say, then the
    round goes on where it stopped (limit 60 s)."""
    t = Loop(tmp_path)
    t.into_a_round()
    before = t.rig.st.expectation()
    t.run_for(30.0)
    t.reboot(20.0, wall=30.0, synced=False)
    assert paused_unmeasured(t)
    t.sync()
    t.run_for(5.0)
    m = t.events("outage_measured")
    assert len(m) == 1 and 20 <= m[0]["seconds"] <= 20 + every(LIMIT) + 0.1
    assert not t.events("round_voided") and t.events("round_resumed")
    assert t.rig.st.table.paused is None and t.rig.st.expectation() == before


def test_the_supervisor_decides_before_the_clock_syncs(tmp_path):
    t = Loop(tmp_path)
    t.into_a_round()
    t.reboot(30.0, wall=1000.0, synced=False)
    assert paused_unmeasured(t)
    t.step(Command(b'{"id":"v","type":"void_round","reason":"power cut, length unknown"}'))
    assert t.rig.st.table.round is None
    t.sync()
    t.run_for(10.0)
    assert not t.events("outage_measured")        # nothing left to count


def test_a_clock_gone_back_across_the_outage_is_never_a_short_outage(tmp_path):
    """Synchronised before and after, but now earlier than the last proof of life (a bad time
    source, a clock set by hand): the outage is negative on it. It went on; now it pauses."""
    t = Loop(tmp_path)
    t.into_a_round()
    t.run_for(30.0)
    t.reboot(600.0, wall=t.wall - 3600.0, synced=True)
    assert not t.voids and paused_unmeasured(t)
    assert "went back" in t.events("irregularity")[0]["detail"]["reason"]


def test_across_a_reboot_a_synchronised_clock_counts_as_before(tmp_path):
    t = Loop(tmp_path)
    t.into_a_round()
    t.run_for(30.0)
    t.reboot(2400.0, synced=True)
    assert len(t.voids) == 1 and "down for 24" in t.voids[0].body["reason"]
    (tmp_path / "b").mkdir()
    s = Loop(tmp_path / "b")
    s.into_a_round()
    s.run_for(30.0)
    s.reboot(20.0, synced=True)
    assert not s.voids and s.rig.st.table.paused is None


def test_a_stamp_taken_on_an_unsynced_clock_cannot_count_a_reboot(tmp_path):
    """The table ran on a clock never synchronised (no network), then a power cut: NTP now, but
    the last proof of life is on the old clock: counted on it, anything. Paused, never judged."""
    t = Loop(tmp_path)
    t.synced = False
    t.into_a_round()
    t.run_for(30.0)
    t.reboot(20.0, synced=True)
    assert paused_unmeasured(t)
    assert "was not synchronised" in t.events("irregularity")[0]["detail"]["reason"]


def test_within_one_boot_the_monotonic_clock_counts_whatever_the_wall_clock_did(tmp_path):
    """A restart without a reboot, the clock never synchronised and set back an hour while the
    daemon was down: the outage is the monotonic time, exactly. By the wall it was negative."""
    t = Loop(tmp_path)
    t.synced = False
    t.into_a_round()
    t.run_for(30.0)
    t.wall -= 3600.0
    t.crash(90.0)
    assert len(t.voids) == 1 and "down for 9" in t.voids[0].body["reason"]
    (tmp_path / "b").mkdir()
    s = Loop(tmp_path / "b")
    s.synced = False
    s.into_a_round()
    s.step(CardRead("3c", seq=99))           # the last proof of life an input, not a stamp
    s.wall += 7200.0                          # and the clock stepped forward while down
    s.crash(20.0)
    assert not s.voids and s.rig.st.table.paused != "outage_unmeasured"


def test_a_journal_from_before_the_clock_facts_is_not_counted_across_a_reboot(tmp_path):
    """No clock_base and a stamp of the old form: what the clock was then is not on record."""
    t = Loop(tmp_path)
    t.into_a_round()
    t.rig.j.db.execute("DELETE FROM meta WHERE key IN ('alive_at', 'clock_base')")
    t.reboot(20.0, synced=True)
    assert paused_unmeasured(t)
