"""The station core's proof of life for the outage rule (pure: the clock comes with each call).

A round interrupted longer than `void_after_outage_s` is voided at recovery (RULES.md: a fault
not cleared in time voids the round). The outage is the time the table was not running: from
the last moment it was known alive, not from its last input. A daemon that ran quietly (a round
waiting for a card or a supervisor) and was then down briefly had the quiet time counted as
outage (a round voided "down for 121 s" after 30 s down, limit 60 s). So, while a round is open
and the rule is on, the station journals a meta `alive_at` (its wall clock) whenever `every(limit)`
seconds pass with no input journaled (an input's own `at` proves life already): recovery counts
from the later of the last input and that stamp.

- The first stamp comes one interval after recovery: a process that dies sooner (a crash loop,
  systemd restarting it every few seconds) proves nothing, and its outages add up as before.
- The stamp is written without a sync (SetMeta.sync False): a kill keeps it (the OS has it); a
  power cut may lose the last ones (the page cache's writeback, ~30 s), which only makes the
  outage look longer, never shorter.
- The stamp names the last input journaled before it ("<wall> <input n> <boot> <mono> <synced>";
  older journals' have the first two): recovery uses it only if no input came after it. A stamp left from earlier (a round before, or this one before an
  input) is no proof: taken by the later wall time, a clock stepped back after it (a Pi's clock
  set right by NTP) would have under-counted a real outage.
- A journal without a stamp counts from its last input.

The clock the outage is counted on. A Raspberry Pi has no real-time clock: after a power
cut it boots with a saved time (fake-hwclock, timesyncd) or 1970 until NTP syncs, and the unit
may start first: a 40-minute cut counted as a few seconds, or negative, let the round go on. So
each point of life carries the shell's clock facts (clock_facts.py: this boot's id, the
monotonic time, whether the wall clock was synchronised), and `measure` counts:
- within one boot (a crash, a restart): by the monotonic clock, exact whatever the wall did;
- across a reboot: by the wall clock only if it is synchronised now and was then, and did not go
  back; else the outage is not counted at all (None and why): the station pauses the round
  (`outage_unmeasured`) instead of guessing.
A stamp carries its facts; an input's come from the `clock_base` meta ("from_n boot offset
synced", the newest two, '|' between): written (synced) before the first input of a run and
again whenever the boot, the synchronisation or the wall clock against the monotonic one (a step
of more than STEP_S) changed, so an input's monotonic time is its `at` less its base's offset.
An input no base covers (a journal from before, a crash between the two writes) has no facts.
"""
from typing import NamedTuple

from .station_types import SetMeta

EVERY_MAX_S = 5.0     # the measurement's grain: the outage is over-counted by at most this
EVERY_MIN_S = 0.5
STEP_S = 1.0          # the wall clock moved against the monotonic one by more: a new base


class Point(NamedTuple):
    """When the table was last known alive, and what its clock was then."""
    wall: float
    boot: str | None = None      # the boot id (None: not known)
    mono: float | None = None    # that boot's monotonic time
    synced: bool | None = None   # the wall clock synchronised (None: not known)


def _flag(text):
    return {"1": True, "0": False}.get(text)


def _boot(text):
    return None if text == "-" else text


def every(limit):
    """Seconds between stamps: a quarter of the limit, within [EVERY_MIN_S, EVERY_MAX_S]."""
    return min(EVERY_MAX_S, max(EVERY_MIN_S, limit / 4)) if limit else EVERY_MAX_S


def stamp_point(text, last_n):
    """The journaled stamp as a Point if it came after input `last_n`, the journal's last, and no
    other; else None (absent, older, or not a stamp). A stamp from before the facts: wall only."""
    try:
        f = text.split()
        if int(f[1]) != last_n:
            return None
        if len(f) == 2:
            return Point(float(f[0]))
        return Point(float(f[0]), _boot(f[2]), float(f[3]), _flag(f[4]))
    except (AttributeError, ValueError, IndexError):
        return None


def parse_bases(text):
    """The `clock_base` meta: [(from_n, boot, offset, synced)], newest first ([] if none)."""
    out = []
    for part in (text or "").split("|"):
        try:
            n, boot, off, syn = part.split()
            out.append((int(n), _boot(boot), float(off), _flag(syn)))
        except ValueError:
            continue
    return out


def input_point(at, n, bases):
    """Input n journaled at wall `at`, with the facts of the newest base that covers it."""
    for from_n, boot, off, syn in bases:
        if from_n <= n:
            return Point(at, boot, at - off, syn)
    return Point(at)


def measure(point, clock):
    """(seconds down, None), or (None, why it cannot be counted): see the module's doc."""
    if point.boot is not None and point.boot == clock.boot and point.mono is not None:
        return max(0.0, clock.mono - point.mono), None
    if not clock.synced:
        return None, "the clock is not synchronised (no NTP since the start; no real-time clock)"
    if point.synced is None:
        return None, "the clock's state when the table was last known alive is not on record"
    if not point.synced:
        return None, "the clock was not synchronised when the table was last known alive"
    down = clock.wall - point.wall
    if down < 0:
        return None, f"the clock went back {-down:.0f} s across the outage"
    return down, None


class AliveWatch:
    def __init__(self):
        self.due = None          # monotonic time of the next stamp (None until recovery)
        self.last_input = None   # monotonic time of the last input journaled
        self.bases = []          # the clock_base meta, parsed (parse_bases), newest first
        self.base = None         # (boot, offset, synced) this run wrote, or None

    def observe(self, clock, next_n, limit):
        """Before input `next_n` is journaled: [SetMeta clock_base] if the rule is on and this
        clock's facts are not those of the base on record for this run, else []."""
        if not limit:
            return []
        off, syn = clock.wall - clock.mono, bool(clock.synced)
        b = self.base
        if b is not None and b[0] == clock.boot and b[2] == syn and abs(b[1] - off) <= STEP_S:
            return []
        self.base = (clock.boot, off, syn)
        self.bases = [(next_n, clock.boot, off, syn)] + [x for x in self.bases if x[0] < next_n][:1]
        return [SetMeta("clock_base", "|".join(f"{n} {b or '-'} {o:.3f} {int(bool(y))}"
                                               for n, b, o, y in self.bases))]

    def start(self, mono, limit):
        """Recovery done: the first stamp one interval from now."""
        self.due = mono + every(limit)

    def input(self, mono):
        self.last_input = mono

    def wake_at(self):
        return self.due

    def due_now(self, clock, limit, round_open, last_n):
        """At a TimerDue: [SetMeta] when a stamp is due and can matter, else []. `last_n`: the
        number of the last input journaled."""
        if self.due is None or clock.mono < self.due:
            return []
        n = every(limit)
        if self.last_input is not None and clock.mono < self.last_input + n:
            # the input proved life: one interval after it (the same sum as the test, or the
            # float's last bit left mono - last_input < n at that deadline: a spin)
            self.due = self.last_input + n
            return []
        self.due = clock.mono + n
        if not (limit and round_open):
            return []
        return [SetMeta("alive_at", f"{clock.wall:.3f} {last_n} {clock.boot or '-'} "
                                    f"{clock.mono:.3f} {int(bool(clock.synced))}", sync=False)]
