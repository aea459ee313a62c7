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
- The stamp names the last input journaled before it ("<wall> <input n>"): recovery uses it only
  if no input came after it. A stamp left from earlier (a round before, or this one before an
  input) is no proof: taken by the later wall time, a clock stepped back after it (a Pi's clock
  set right by NTP) would have under-counted a real outage.
- A journal without a stamp (written before) counts from its last input, as before.
"""
from .station_types import SetMeta

EVERY_MAX_S = 5.0     # the measurement's grain: the outage is over-counted by at most this
EVERY_MIN_S = 0.5


def every(limit):
    """Seconds between stamps: a quarter of the limit, within [EVERY_MIN_S, EVERY_MAX_S]."""
    return min(EVERY_MAX_S, max(EVERY_MIN_S, limit / 4)) if limit else EVERY_MAX_S


def stamp_value(text, last_n):
    """The journaled stamp as seconds since the epoch if it came after input `last_n`, the
    journal's last, and no other; else None (absent, older, or not a stamp)."""
    try:
        wall, n = text.split()
        return float(wall) if int(n) == last_n else None
    except (AttributeError, ValueError):
        return None


class AliveWatch:
    def __init__(self):
        self.due = None          # monotonic time of the next stamp (None until recovery)
        self.last_input = None   # monotonic time of the last input journaled

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
        return [SetMeta("alive_at", f"{clock.wall:.3f} {last_n}", sync=False)]
