"""The smart shoe (protocol v1) and its session: sequence tracking, resend, acknowledgement,
heartbeat watchdog. Runs in the serial link's reader thread; emits typed events only."""
from controller.cards import INDEX

from . import shoe_protocol as sp
from .events import CardRead, CardUnreadable, CutCard, DeviceState, ShoeHello, ShoeStatus
from .serial_link import SerialLink


class ShoeSession:
    """Frames in, events out. `write` sends a command frame to the shoe."""

    def __init__(self, emit, write, min_confidence=90, resend_timeout=0.25, resend_tries=3,
                 stall_timeout=3.0, name="shoe", auto_ack=True, resume=None):
        self.emit = emit
        # auto_ack False: the owner acknowledges with ack(seq) once it has the event safe (the
        # daemon, after its journal commit), so a crash in between loses nothing: the shoe resends.
        self.auto_ack = auto_ack
        self.write = write
        self.min_confidence = min_confidence
        self.resend_timeout = resend_timeout
        self.resend_tries = resend_tries
        self.stall_timeout = stall_timeout
        self.name = name
        self.parser = sp.FrameParser()
        self.boot = None
        self.last = None            # last sequence number delivered (or given up)
        self.top = None             # highest sequence number the shoe says it has sent
        self.held = {}              # seq -> frame, arrived ahead of a gap
        self.gap_deadline = None
        self.gap_tries = 0
        self.last_heard = None
        self.stalled = False
        self.faults = frozenset()
        if resume is not None:  # (boot, last sequence number journaled) from a previous run
            self.boot, self.last = resume
            self.top = self.last
        self.counts = {"frames": 0, "bad_frames": 0, "duplicates": 0, "resend_requests": 0,
                       "lost_frames": 0, "low_confidence": 0}

    # -- link callbacks ------------------------------------------------------------------------

    def connected(self, now):
        self.last_heard = now
        self.stalled = False
        self.parser = sp.FrameParser()  # nothing half-read survives a reconnect
        self.emit(DeviceState(self.name, "connected"))
        self.write(sp.encode("ID"))
        self.write(sp.encode("QST"))

    def lost(self, reason, now):
        self.emit(DeviceState(self.name, "disconnected", {"reason": reason}))

    def data(self, data, now):
        self.last_heard = now
        if self.stalled:
            self.stalled = False
            self.emit(DeviceState(self.name, "connected", {"reason": "line alive again"}))
        for f in self.parser.feed(data):
            if isinstance(f, sp.BadFrame):
                self.counts["bad_frames"] += 1
                continue
            self.counts["frames"] += 1
            self._frame(f, now)

    def tick(self, now):
        if self.gap_deadline is not None and now >= self.gap_deadline:
            if self.gap_tries < self.resend_tries:
                self._ask_resend(now)
            else:
                self._give_up(self._missing(), "not resent in time")
        if (self.last_heard is not None and not self.stalled
                and now - self.last_heard > self.stall_timeout):
            self.stalled = True
            self.emit(DeviceState(self.name, "fault", {
                "reason": f"stalled: nothing from the shoe for {self.stall_timeout:g} s"}))

    # -- frames --------------------------------------------------------------------------------

    def _frame(self, f, now):
        k = f.kind
        if k == "HELLO":
            self._hello(f, now)
        elif k == "HB":
            self._note_top(f.seq)
            if self._missing() and self.gap_deadline is None:
                self._ask_resend(now)  # the shoe sent frames we never saw
        elif k == "GONE":
            try:
                lo, hi = int(f.fields[0]), int(f.fields[1])
            except ValueError:
                return
            span = set(sp.seq_range((lo - 1) % sp.SEQ_MOD, hi))
            self._give_up([s for s in self._missing() if s in span], "the shoe cannot resend it")
        elif k in sp.EVENT_TYPES:
            self._event(f, now)

    def _hello(self, f, now):
        last, model, fw, serial_no, boot = f.fields
        last, boot = int(last), int(boot)
        self.emit(ShoeHello(model, fw, serial_no, boot, last))
        if self.boot is not None and boot != self.boot:
            # The shoe restarted: frames we still waited for are gone for good.
            self._give_up(self._missing(), "the shoe restarted")
            self.last = self.top = last
            self.held = {}
        elif self.last is None:
            self.last = self.top = last
        else:
            self._note_top(last)
            if self._missing() and self.gap_deadline is None:
                self._ask_resend(now)   # frames sent while we were away
        self.boot = boot

    def _event(self, f, now):
        s = f.seq
        if self.last is None:
            self.last = (s - 1) % sp.SEQ_MOD
        self._note_top(s)
        if s == (self.last + 1) % sp.SEQ_MOD:
            self._deliver(f)
            self._drain()
        elif sp.seq_after(self.last, s):
            if s in self.held:
                self.counts["duplicates"] += 1
                return
            self.held[s] = f
            if self.gap_deadline is None:
                self._ask_resend(now)
        else:
            self.counts["duplicates"] += 1  # already delivered: never twice

    def _note_top(self, s):
        if self.top is None or sp.seq_after(self.top, s):
            self.top = s

    def _missing(self):
        """Sequence numbers the shoe sent that we have neither delivered nor hold."""
        if self.last is None or self.top is None or not sp.seq_after(self.last, self.top):
            return []
        return [s for s in sp.seq_range(self.last, self.top) if s not in self.held]

    def _ask_resend(self, now):
        self.gap_tries += 1
        self.counts["resend_requests"] += 1
        self.gap_deadline = now + self.resend_timeout
        self.write(sp.encode("RSND", (self.last + 1) % sp.SEQ_MOD))

    def _give_up(self, seqs, why):
        """Frames that will never come: each may have been a card, so each is an unreadable card
        (the round pauses) rather than a silent loss."""
        for s in seqs:
            self.counts["lost_frames"] += 1
            self.held[s] = None
        self.gap_deadline = None
        self.gap_tries = 0
        for s in seqs:
            self.emit(CardUnreadable("shoe", {"seq": s, "reason": f"frame lost: {why}"}))
        self._drain()

    def _drain(self):
        while True:
            nxt = (self.last + 1) % sp.SEQ_MOD
            if nxt not in self.held:
                break
            f = self.held.pop(nxt)
            if f is None:
                self.last = nxt
            else:
                self._deliver(f)
        if not self._missing():
            self.gap_deadline = None
            self.gap_tries = 0

    def _deliver(self, f):
        self.last = f.seq
        k = f.kind
        if k == "CARD":
            card, conf = f.fields[1], f.fields[2]
            try:
                conf = int(conf)
            except ValueError:
                conf = -1
            if card not in INDEX:
                self.emit(CardUnreadable("shoe", {"seq": f.seq, "reason": f"not a card: {card!r}"}))
            elif not 0 <= conf <= 100 or conf < self.min_confidence:
                self.counts["low_confidence"] += 1
                self.emit(CardUnreadable("shoe", {"seq": f.seq, "reason": "low confidence",
                                                  "read": card, "confidence": conf}))
            else:
                self.emit(CardRead(card, "shoe", conf, f.seq))
        elif k == "UNRD":
            self.emit(CardUnreadable("shoe", {"seq": f.seq, "reason": f.fields[1]}))
        elif k == "CUT":
            self.emit(CutCard(f.seq))
        elif k == "STAT":
            door, jam, sensor, light, gate = f.fields[1:]
            st = ShoeStatus(f.seq, door, jam == "1", sensor, light, gate)
            self.emit(st)
            faults = frozenset(x for x, bad in (("door open", door == "open"), ("jam", st.jam),
                                                ("sensor fault", sensor != "ok"),
                                                ("low light", light != "ok")) if bad)
            if faults != self.faults:
                self.faults = faults
                self.emit(DeviceState(self.name, "fault" if faults else "ok",
                                      {"reason": ", ".join(sorted(faults))} if faults else {}))
        if self.auto_ack:
            self.write(sp.encode("ACK", f.seq))

    def ack(self, seq):
        self.write(sp.encode("ACK", seq))


class ShoeDriver:
    """A protocol-v1 shoe on a serial URL. start(emit), command(name, *args), close()."""

    def __init__(self, url, settings=None, **session_options):
        self.url = url
        self.settings = settings
        self.options = session_options
        self.session = None
        self.link = None

    def start(self, emit):
        self.link = SerialLink(self.url, None, self.settings, name="shoe")
        self.session = ShoeSession(emit, self.link.write, **self.options)
        self.link.protocol = self.session
        self.link.start()

    def command(self, name, *args):
        """`gate lock|unlock`, `led NAME on|off|blink`, `status`, `ack SEQ`. False if the shoe
        is unplugged."""
        frames = {"gate": ("GATE", 1), "led": ("LED", 2), "status": ("QST", 0), "ack": ("ACK", 1)}
        if name not in frames or len(args) != frames[name][1]:
            raise ValueError(f"shoe command {name!r} {args}: expected gate lock|unlock, "
                             f"led NAME on|off|blink, status, or ack SEQ")
        return self.link.write(sp.encode(frames[name][0], *args))

    def close(self):
        if self.link is not None:
            self.link.close()
