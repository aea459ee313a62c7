"""The station's rule for an outage it cannot count (a part of `Station`, pure like it).

RULES.md: a fault during a round pauses it and raises an alarm at once; cleared in time, the
round goes on, else it is voided and every bet refunded. At a restart the station counts the
outage (station_alive.measure); when the clock cannot be trusted (a Pi booted without NTP yet, a
clock gone back) it does not guess, short or long: the round pauses as the irregularity
`outage_unmeasured` (controller/outage.py) for the supervisor, who resumes it (an override with
a reason) or voids it. If the clock was synchronised when the table was last known alive, this
run counts the outage after all once the clock is synchronised: the time of the recovery then is
the synchronised wall clock less the monotonic time since, and `outage_measured` voids the round
past the limit or lets it go on (if nothing else holds it). A restart before that leaves it to
the supervisor (the monotonic time of that recovery is gone with the process).
"""
import datetime

from .station_types import Log

CHECK_S = 2.0     # while an outage waits for a synchronised clock: looked at this often


class StationOutage:
    def _unmeasured(self, point, why, clock):
        """At recovery, with a round open: the outage since `point` cannot be counted."""
        if any(p.kind == "outage" for p in self.table.pending):
            return [Log("warning", f"outage not counted ({why}): an earlier one still holds the "
                                   f"round for the supervisor")]
        if point.synced and not clock.synced:
            self.outage_wait = (point.wall, clock.mono)
            self.outage_check = clock.mono + CHECK_S
        since = datetime.datetime.fromtimestamp(point.wall, datetime.timezone.utc).isoformat(
            timespec="seconds")
        reason = (f"{why}: the outage since {since} cannot be counted; the supervisor resumes or "
                  f"voids the round" + (", or it is counted once the clock is synchronised"
                                        if self.outage_wait else ""))
        return self.process({"type": "outage_unmeasured", "reason": reason[:500]}, "recovery",
                            clock)[0] + [Log("warning", f"round paused: {reason}")]

    def _outage_due(self, clock):
        """At a TimerDue while an outage waits: counted if the clock is synchronised now."""
        if self.outage_wait is None or clock.mono < self.outage_check:
            return []
        self.outage_check = clock.mono + CHECK_S
        if not clock.synced:
            return []
        since, at_mono = self.outage_wait
        self.outage_wait = None
        limit = self.s.void_after_outage_s
        if not any(p.kind == "outage" for p in self.table.pending):
            return []                      # the supervisor decided meanwhile
        down = clock.wall - (clock.mono - at_mono) - since
        if down < 0 or not limit:
            return [Log("warning", f"the clock is synchronised: the outage counts {down:.0f} s"
                                   f"{'' if limit else ' (the rule is off)'}; the round waits "
                                   f"for the supervisor")]
        return self.process({"type": "outage_measured", "seconds": round(down, 1),
                             "limit": limit}, "recovery", clock)[0] + [
            Log("info", f"the clock is synchronised: the table was down for {down:.0f} s "
                        f"(limit {limit:g} s)")]

    def _outage_wake(self):
        return self.outage_check if self.outage_wait is not None else None

