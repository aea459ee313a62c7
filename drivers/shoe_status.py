"""Debouncing the shoe's `STAT` reports (door, jam, sensor, light, gate): one report per settled
change, the final state always reported.

A door contact or a jam lever bounces: a door slammed shut can report open/closed dozens of
times in a few hundred milliseconds, and each report would pause and resume the round. As with
any contact input, the host publishes a status only once it has held, unchanged, for `settle`
seconds; a status replaced sooner is a bounce and is not published. A status that keeps
changing without ever settling for `unstable_after` seconds is itself reported (the session
raises a fault), so a sensor chattering for ever cannot hide an open door.

Pure: frames and the link's clock in, statuses out; no I/O and no clock of its own.
"""


class StatusDebounce:
    """`frame(status, now, tag)` and `tick(now)` return the (status, tag) pairs to publish now,
    oldest first.

    `status` is any comparable value (the session passes the STAT fields). A status is settled
    when it held for at least `settle` seconds before the next frame changed it, or when a tick
    finds it held that long; a settled status equal to the last published one is not published
    again. So any sequence of reports gives the settled statuses in order, each once, and the last
    report is always published once it has held for `settle` seconds."""

    def __init__(self, settle=0.2, unstable_after=3.0):
        self.settle = settle
        self.unstable_after = unstable_after
        self.published = None     # the last status published
        self.pending = None       # (status, since, tag): the latest report, not yet published
        self.unsettled_since = None   # when the reports first left the published status

    def frame(self, status, now, tag=None):
        """A report; `tag` (the frame's sequence number) goes out with the status it began."""
        out = self._flush(now)
        if self.pending is not None and self.pending[0] == status:
            return out            # the same report again: it keeps its time
        if self.pending is None and status == self.published:
            return out            # no change
        if self.unsettled_since is None:
            self.unsettled_since = now
        # a return to the published status is pending too: it must hold to end the instability
        self.pending = (status, now, tag)
        return out + self._flush(now)   # settle 0: published at once

    def tick(self, now):
        return self._flush(now)

    def unstable(self, now):
        """True while the reports have kept changing for `unstable_after` seconds or more."""
        return self.unsettled_since is not None and now - self.unsettled_since >= self.unstable_after

    def _flush(self, now):
        if self.pending is None or now - self.pending[1] < self.settle:
            return []
        status, _, tag = self.pending
        self.pending = None
        self.unsettled_since = None
        if status == self.published:
            return []             # it bounced back to what was published: nothing changed
        self.published = status
        return [(status, tag)]
