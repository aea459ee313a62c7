"""The station core's `resend`, paged (pure: the journal is read by the shell, a page at a time).

A `resend from: 1` read up to 10,000 journal rows on the loop's thread before it was answered
(about 28 ms each on the Pi's class of machine; 100 resends with new ids held the loop 3-4 s,
bench/bench_resend.py), and every card and decision queued behind them waited. Now a resend is
answered at once from what the station knows (the first event the journal still holds at or
after `from`, read by its key, and the table's last sequence number); the events it covers that
are not already on their way are *wanted*, and read `PAGE` at a time: each page is a
`ResendPage` effect that the shell reads and puts back on the loop's queue as a `ResendRows`
event, behind whatever came meanwhile. So a card waits for one page at most, never a flood.

- nothing lost: every event of the range answered is on its way (queued, in flight) or wanted;
- nothing twice: an event on its way, or wanted already by an earlier resend, is not wanted again
  (it is counted in the reply's `coalesced`), so 100 resends of one gap republish it once;
- in order: the pages are read in sequence order and published ahead of the table's new events,
  as the whole range was before.
"""
from collections import deque

from .station_types import ResendPage

LIMIT = 10000      # events a resend covers at most (docs/protocol.md, "Commands")
PAGE = 500         # journal rows read per loop turn (about 1.5 ms here)


def _overlap(ranges, lo, hi):
    return sum(max(0, min(b, hi) - max(a, lo) + 1) for a, b in ranges)


class ResendQueue:
    def __init__(self):
        self.wanted = []        # [lo, hi] ranges of sequence numbers to read, sorted, disjoint
        self.ahead = deque()    # (seq, message) read for a resend, published before new events
        self.reading = None     # (lo, hi) of the page asked for, not yet come back

    def __len__(self):
        """Events wanted or read and not yet handed to the broker."""
        return len(self.ahead) + _overlap(self.wanted, 0, float("inf"))

    def seqs(self):
        return {s for s, _ in self.ahead}

    def ask(self, lo, top, on_way):
        """A resend whose first event the journal holds is `lo` (the table's last is `top`):
        ((lo, hi) it covers, how many of them are already on their way, [effects])."""
        hi = min(lo + LIMIT - 1, top)
        coming = sorted(s for s in on_way if lo <= s <= hi)
        coalesced = len(coming) + _overlap(self.wanted, lo, hi)
        a = lo
        for s in coming + [hi + 1]:       # the range less what is on its way already
            if a <= s - 1:
                self._want(a, s - 1)
            a = s + 1
        return (lo, hi), coalesced, self._next()

    def _want(self, lo, hi):
        merged = []
        for a, b in self.wanted:
            if b < lo - 1 or a > hi + 1:
                merged.append([a, b])
            else:                          # overlapping or adjacent: one range
                lo, hi = min(a, lo), max(b, hi)
        merged.append([lo, hi])
        self.wanted = sorted(merged)

    def _next(self):
        """The next page to read, as an effect, unless one is on its way or nothing is wanted."""
        if self.reading is not None or not self.wanted:
            return []
        lo, hi = self.wanted[0]
        self.reading = (lo, min(hi, lo + PAGE - 1))
        return [ResendPage(*self.reading)]

    def rows(self, lo, hi, rows):
        """The page (lo, hi) read: its rows to publish, in order (an event archived meanwhile is
        in the archive files, not resent). Returns [effects]: the next page."""
        if self.reading != (lo, hi):
            return []                      # not the page asked for (a defect): nothing changes
        self.reading = None
        self.ahead.extend(r for r in rows if lo <= r[0] <= hi)
        left = []
        for a, b in self.wanted:           # less the page (a resend since may have widened it)
            if a < lo:
                left.append([a, min(b, lo - 1)])
            if b > hi:
                left.append([max(a, hi + 1), b])
        self.wanted = left
        return self._next()
