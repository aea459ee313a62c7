"""The protocol-v1 shoe's session: frames in, events out (docs/shoe-protocol.md). Runs in the
serial link's reader thread; emits typed events only. Its parts, each a mixin of `ShoeSession`:
shoe_boots.py (HELLO, boots, implausible numbers), shoe_gaps.py (the sequence: gaps, resend
requests, duplicates, conflicts, delivery) and shoe_reports.py (STAT reports and faults)."""
import collections
import logging

from . import shoe_protocol as sp
from .events import DeviceState
from .shoe_boots import Boots
from .shoe_gaps import Gaps
from .shoe_reports import StatusReports
from .shoe_status import StatusDebounce

# the one logger of the shoe's session, as before the split (an operator's filter, a test's
# caplog, name "drivers.shoe")
log = logging.getLogger("drivers.shoe")


def _shape(data):
    """A bad frame as the log may show it: its type and size, never its fields. A corrupted
    CARD frame (or its tail after a lost '$') names a card, perhaps the hole card, and the log
    never names a card (docs/architecture.md, "Secrets"). The raw bytes are for a technician's
    serial terminal on a table out of play, not the daemon's log."""
    kind = data[1:].replace(b"*", b",").split(b",")[0] if data.startswith(b"$") else b""
    known = {**sp.EVENT_TYPES, **sp.INFO_TYPES, **sp.COMMANDS}
    kind = kind if kind.isascii() and kind.decode() in known else b""   # a known word only
    odd = sum(1 for b in data if not 32 <= b < 127)
    return (f"{'$' + kind.decode() + ' ' if kind else ''}{len(data)} bytes"
            + (f", {odd} not printable ASCII" if odd else ""))


class ShoeSession(Boots, Gaps, StatusReports):
    """Frames in, events out. `write` sends a command frame to the shoe.

    No single frame is trusted about sequence numbers (a corrupt frame can pass a 16-bit CRC):
    a number more than `max_gap` ahead of the last delivered event is dropped and the shoe is
    asked for its HELLO; only a HELLO in answer that confirms it moves the session that far, as one
    reported jump. A frame at or before the last delivered one is dropped only when it is provably
    the same frame again (same number, same content); otherwise it is a conflict and reported.
    """

    def __init__(self, emit, write, min_confidence=90, resend_timeout=0.25, resend_tries=3,
                 stall_timeout=3.0, name="shoe", auto_ack=True, resume=None, max_gap=sp.MAX_GAP,
                 status_settle=0.2):
        self.emit = emit
        # auto_ack False: the owner acknowledges with ack(seq) once it has the event safe (the
        # daemon, after its journal commit), so a crash in between loses nothing: the shoe resends.
        self.auto_ack = auto_ack
        self.write = write
        self.min_confidence = min_confidence
        self.resend_timeout = resend_timeout
        self.resend_tries = resend_tries
        self.stall_timeout = stall_timeout
        self.max_gap = max_gap
        self.name = name
        self.parser = sp.FrameParser()
        self.boot = None
        self.last = None            # last sequence number delivered (or given up)
        self.top = None             # highest sequence number the shoe says it has sent
        self.held = {}              # seq -> frame, arrived ahead of a gap
        self.recent = collections.OrderedDict()   # seq -> frame delivered, to prove duplicates
        self.gap_deadline = None
        self.gap_tries = 0
        self.gap_checked = False    # asked for a HELLO before giving a gap up
        self.gap_from = None        # self.last when the RSND in force was sent (progress check)
        # A confirmed jump past max_gap being asked for (RSND): the shoe may keep more than it
        # must, e.g. a run of STAT frames sent while the daemon restarted. What it no longer has
        # is reported as one span, as before (rule 3).
        self.catching = False
        self.asked = False          # an ID sent and its HELLO not yet come
        self.last_ask = None        # when we last sent ID
        self.ask_pending = False    # an ID is due once the rate limit allows
        self.claim = None           # (boot, seq) an unbelieved frame claimed, for a HELLO to confirm
        self.unplaced = []          # frames come while a new boot waited to be confirmed
        self.last_heard = None
        self.stalled = False
        self.faults = frozenset()
        # STAT reports are published once settled (a bouncing door is one change, not dozens)
        self.status = StatusDebounce(status_settle)
        self.now = 0.0
        self.logged = {}            # log line kind -> when last written (rate limit)
        if resume is not None:  # (boot, last sequence number journaled) from a previous run
            self.boot, self.last = resume
            self.top = self.last
        self.counts = {"frames": 0, "bad_frames": 0, "duplicates": 0, "resend_requests": 0,
                       "lost_frames": 0, "low_confidence": 0, "implausible": 0, "conflicts": 0,
                       "jumps": 0, "unexpected": 0, "before_restart": 0}

    # -- link callbacks ------------------------------------------------------------------------

    def connected(self, now):
        self.last_heard = now
        self.stalled = False
        self.parser = sp.FrameParser()  # nothing half-read survives a reconnect
        self.emit(DeviceState(self.name, "connected"))
        self._ask_hello(now, force=True)
        self.write(sp.encode("QST"))

    def lost(self, reason, now):
        self.emit(DeviceState(self.name, "disconnected", {"reason": reason}))

    def data(self, data, now):
        self.now = now              # the link's clock, for the frames delivered below
        self.last_heard = now
        if self.stalled:
            self.stalled = False
            self.emit(DeviceState(self.name, "connected", {"reason": "line alive again"}))
        for f in self.parser.feed(data):
            if isinstance(f, sp.BadFrame):
                self.counts["bad_frames"] += 1
                self._log_bad(f, now)
                continue
            self.counts["frames"] += 1
            self._frame(f, now)

    def tick(self, now):
        self._statuses(self.status.tick(now), now)
        if self.ask_pending and now - self.last_ask >= self.resend_timeout:
            self._ask_hello(now)
        if self.gap_deadline is not None and now >= self.gap_deadline:
            if self.catching and self.last != self.gap_from:
                # a long catch-up still coming (a few hundred frames take a second at 115200
                # baud): wait on, without asking for the whole rest again
                self.gap_from, self.gap_deadline = self.last, now + self.resend_timeout
            elif self.gap_tries < self.resend_tries:
                self._ask_resend(now)
            elif not self.gap_checked:
                # No resend came: before calling the frames lost, ask the shoe where it stands;
                # its HELLO lowers a top that came from a frame it never sent.
                self.gap_checked = True
                self.gap_deadline = now + self.resend_timeout
                self._ask_hello(now, force=True)
            else:
                self._give_up(self._missing(), "not resent in time")
        if (self.last_heard is not None and not self.stalled
                and now - self.last_heard > self.stall_timeout):
            self.stalled = True
            self.emit(DeviceState(self.name, "fault", {
                "reason": f"stalled: nothing from the shoe for {self.stall_timeout:g} s"}))

    def _log_bad(self, f, now):
        self._warn(now, "bad", "%s: bad frame dropped (%s): %s; %d so far", self.name, f.reason,
                   _shape(f.data), self.counts["bad_frames"] + self.counts["unexpected"])

    def _warn(self, now, kind, *args, level=logging.WARNING):
        # one line per kind per 10 s at most: line noise or a babbling shoe must not flood the log
        if now - self.logged.get(kind, -1e9) >= 10:
            self.logged[kind] = now
            log.log(level, *args)

    # -- frames --------------------------------------------------------------------------------

    def _frame(self, f, now):
        k = f.kind
        if k == "HELLO":
            self._hello(f, now)
        elif k == "HB":
            if self._restart_unconfirmed():
                # its number is of a boot not yet believed: taken as the old boot's, a new boot's
                # "HB 3" after an old boot's 1 asked for 2-3 of the old boot, and the restart's
                # confirmation then reported them lost (two false misreads)
                self._hold_for_boot(f, now)
            elif self._plausible(f.seq, now):
                self._note_top(f.seq)
                if self._missing() and self.gap_deadline is None:
                    self._ask_resend(now)  # the shoe sent frames we never saw
        elif k == "GONE":
            lo, hi = int(f.fields[0]), int(f.fields[1])
            span = set(sp.seq_range((lo - 1) % sp.SEQ_MOD, hi))
            self._give_up([s for s in self._missing() if s in span], "the shoe cannot resend it")
        elif k in sp.EVENT_TYPES:
            self._event(f, now)
        else:   # a host command echoed back, or a shoe speaking another dialect
            self.counts["unexpected"] += 1
            # the frame as it came, without the line end encode adds ("2 not printable ASCII")
            self._log_bad(sp.BadFrame(sp.encode(k, *f.fields)[:-2], "not a frame a shoe sends"),
                          now)

    def ack(self, seq):
        self.write(sp.encode("ACK", seq))
