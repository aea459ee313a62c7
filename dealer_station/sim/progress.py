"""How far a long table-sim run is: `1200/10000 rounds (12%), 240/min, ETA 37 min`, for the live
view's header and, with --plain, a line every so often among the round lines."""
import time


def _eta(seconds):
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    def __init__(self, total, every=30.0, clock=time.monotonic):
        self.total, self.every, self.clock = total, every, clock
        self.t0 = clock()
        self.said_at = self.t0

    def line(self, done):
        elapsed = self.clock() - self.t0
        rate = done / elapsed * 60 if elapsed > 0 else 0.0
        text = f"{done}/{self.total} rounds" if self.total else f"{done} rounds"
        if self.total:
            text += f" ({100 * done / self.total:.0f}%)"
        text += f", {rate:.0f}/min"
        if self.total and done < self.total:
            text += f", ETA {_eta((self.total - done) / rate * 60)}" if rate > 0 else ", ETA ?"
        return text

    def due(self, done):
        """The line when `every` seconds have passed since the last one (None if not, or off)."""
        if not self.every or self.clock() - self.said_at < self.every:
            return None
        self.said_at = self.clock()
        return self.line(done)
