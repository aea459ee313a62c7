"""The smart shoe (protocol v1) and its session: sequence tracking, resend, acknowledgement,
heartbeat watchdog. Runs in the serial link's reader thread; emits typed events only."""
import collections
import logging

from controller.cards import INDEX

from . import shoe_protocol as sp
from .events import (CardRead, CardUnreadable, CutCard, DeviceState, ShoeHello, ShoePosition,
                     ShoeStatus)
from .serial_link import SerialLink
from .shoe_status import StatusDebounce

log = logging.getLogger(__name__)

# STAT's fields and the words each may take (docs/shoe-protocol.md, "Frames from the shoe")
STAT_WORDS = (("door", ("open", "closed")), ("jam", ("0", "1")), ("sensor", ("ok", "fault")),
              ("light", ("ok", "low")), ("gate", ("locked", "unlocked")))


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


class ShoeSession:
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

    def _ahead(self, s):
        """How far s is after the last delivered number (0 when not after it)."""
        if self.last is None or not sp.seq_after(self.last, s):
            return 0
        return (s - self.last) % sp.SEQ_MOD

    def _plausible(self, s, now):
        if self._ahead(s) <= self.max_gap:
            return True
        self.counts["implausible"] += 1
        self._warn(now, "implausible", "%s: sequence number %d is %d ahead of %d (more than %d): "
                   "not believed; asking the shoe for its HELLO (%d so far)", self.name, s,
                   self._ahead(s), self.last, self.max_gap, self.counts["implausible"])
        self.claim = (self.boot, s)
        self._ask_hello(now)
        return False

    def _confirms(self, boot, last):
        """This HELLO agrees with the claim that made us ask: same boot, at or a little after."""
        if self.claim is None or self.claim[0] != boot:
            return False
        return last == self.claim[1] or 0 < (last - self.claim[1]) % sp.SEQ_MOD <= self.max_gap

    def _ask_hello(self, now, force=False):
        """Ask the shoe where it stands; the HELLO that answers is believed (rate-limited)."""
        if force or self.last_ask is None or now - self.last_ask >= self.resend_timeout:
            self.last_ask, self.asked, self.ask_pending = now, True, False
            self.write(sp.encode("ID"))
        else:
            self.ask_pending = True     # tick asks once the limit allows

    def _hello(self, f, now):
        last, model, fw, serial_no, _ = f.fields
        last, boot = f.seq, f.boot
        asked, self.asked = self.asked, False
        restarted = self.boot is not None and boot != self.boot
        if restarted or (self.last is not None and self._ahead(last) > self.max_gap):
            # A restart or a long jump is believed only when the shoe, asked, says it twice.
            if not (asked and self._confirms(boot, last)):
                self.counts["implausible"] += 1
                self._warn(now, "implausible", "%s: HELLO says boot %d, last %d (we are at boot "
                           "%s, %s): asking again before believing it", self.name, boot, last,
                           self.boot, self.last)
                self.claim = (boot, last)
                self._ask_hello(now)
                return
        self.claim = None
        # a new boot's frames count from 1: the baseline is 0, not the HELLO's number (below)
        self.emit(ShoeHello(model, fw, serial_no, boot, 0 if restarted else last))
        if restarted:
            # The shoe restarted: frames we still waited for are gone for good.
            self._give_up(self._missing(), "the shoe restarted", previous_boot=True)
            self.held = {}
            self.recent.clear()
            # Frames of the new boot sent before we heard of it (the daemon down while the shoe
            # rebooted and cards were drawn) are still in the shoe, unacknowledged: asked for
            # from 1 like any gap. Taking the HELLO's number as the start skipped them: two
            # cards drawn then were never reported, not even as misreads (cold trial).
            # What it no longer holds is one reported span (a shoe swapped in with a past).
            self.last = self.top = 0
            if sp.seq_after(0, last):
                self.catching = True
                self._note_top(last)
                self._ask_resend(now)
            elif last != 0:
                self._jump(last)        # half the numbers or more: nothing to ask for
        elif self.last is None:
            self.last = self.top = last
        elif self._ahead(last) > self.max_gap:
            # The shoe confirms, in answer to our question: asked for like any gap before any is
            # called lost. A restart after 80 door reports sent while the daemon was down was a
            # false "sequence jumped" misread that paused the table (cold trial); what the shoe
            # answers GONE for, or never sends, is still reported (one span: _give_up).
            self.catching = True
            self._note_top(last)
            if self.gap_deadline is None:
                self._ask_resend(now)
        else:
            self._lower_top(last)
            self._note_top(last)
            if self._missing() and self.gap_deadline is None:
                self._ask_resend(now)   # frames sent while we were away
            self._drain()
        self.boot = boot
        # the frames held while this boot was in question, now numbers of a boot we know
        held, self.unplaced = self.unplaced, []
        for f in held:
            self._frame(f, now)

    def _lower_top(self, said):
        """The shoe's HELLO says it has sent nothing after `said`: a higher top came from a frame
        it never sent (frames actually received and held stay wanted)."""
        if self.top is None or not sp.seq_after(said, self.top):
            return
        top = said if sp.seq_after(self.last, said) else self.last
        for s, held in self.held.items():
            if held is not None and sp.seq_after(top, s):
                top = s
        self.top = top

    def _jump(self, to):
        """A jump past what the shoe can resend, confirmed by its HELLO: one unreadable card for
        the whole span (the round pauses), then on from the shoe's number."""
        lo = (self.last + 1) % sp.SEQ_MOD
        self.counts["jumps"] += 1
        log.error("%s: the shoe's sequence jumped from %d to %d: frames %d-%d are not accounted "
                  "for", self.name, self.last, to, lo, to)
        self.held = {}
        self.gap_deadline, self.gap_tries, self.gap_checked = None, 0, False
        self.last = self.top = to
        self.emit(CardUnreadable("shoe", {"seq": to, "reason": f"shoe sequence jumped: frames "
                                          f"{lo}-{to} not accounted for"}, seq=to))

    def _hold_for_boot(self, f, now):
        """Keep a frame (event or HB) until the HELLO that confirms or refutes a restart has been
        handled; then it is taken as a frame of the boot the shoe confirmed (_hello). Bounded:
        past that, a frame is left with the shoe (unacknowledged, it is asked for again)."""
        self.counts["before_restart"] += 1
        if len(self.unplaced) < 4 * self.max_gap:
            self.unplaced.append(f)
        self._warn(now, "before_restart", "%s: %s %d held until the shoe's restart (boot %d) is "
                   "confirmed; %d so far", self.name, f.kind, f.seq, self.claim[0],
                   self.counts["before_restart"], level=logging.INFO)
        self._ask_hello(now)        # rate-limited: a lost ID does not leave the claim open

    def _restart_unconfirmed(self):
        """A HELLO said the shoe restarted (a new boot) and is not yet confirmed: the numbers
        the shoe sends now are of a boot not yet believed."""
        return self.claim is not None and self.boot is not None and self.claim[0] != self.boot

    def _event(self, f, now):
        s = f.seq
        if self._restart_unconfirmed():
            # A HELLO said the shoe restarted and we asked it to say so again: until it does,
            # a frame's number is of a boot not yet believed, and comparing it with the previous
            # boot's was a false "conflicts with what was delivered" at every start after a
            # shoe reboot (the QST's STAT 3 against the journal's 37).
            self._hold_for_boot(f, now)
            return
        if self.last is None:
            self.last = (s - 1) % sp.SEQ_MOD
        if s == (self.last + 1) % sp.SEQ_MOD:
            self._note_top(s)
            self._deliver(f)
            self._drain()
        elif sp.seq_after(self.last, s):
            if not self._plausible(s, now):
                return                  # if real, the shoe still has it and will resend it
            self._note_top(s)
            if s in self.held:
                if self.held[s] == f:
                    self.counts["duplicates"] += 1
                else:
                    self._conflict(f, now)
                return
            self.held[s] = f
            if self.gap_deadline is None:
                self._ask_resend(now)
        elif self.recent.get(s) == f:
            self.counts["duplicates"] += 1  # the very frame already delivered: never twice
        else:
            self._conflict(f, now)

    def _conflict(self, f, now):
        """An event under a number already used for another (or one too old to compare): a card
        may have left the shoe, so it is reported, outside the sequence (not acknowledged)."""
        self.counts["conflicts"] += 1
        # kind and number only: the frame's card may be the hole card (never in the log). The
        # line says what is done with it: a STAT is no card (nothing left the shoe), so it is
        # not reported; the shoe is asked for its status again (QST) instead.
        done = ("dropped (a status report: no card left the shoe), the status asked for again"
                if f.kind == "STAT"
                else "reported as an unreadable card" if f.kind in ("CARD", "UNRD")
                else "reported as the cut card")
        log.warning("%s: %s %d conflicts with what was delivered under that number: %s; "
                    "resynchronising", self.name, f.kind, f.seq, done)
        if f.kind == "CARD":
            self.emit(CardUnreadable("shoe", {"seq": f.seq, "read": f.fields[1],
                                              "reason": "sequence conflict: number already used"}))
        elif f.kind == "UNRD":
            self.emit(CardUnreadable("shoe", {"seq": f.seq, "reason":
                                              f"sequence conflict: number already used ({f.fields[1]})"}))
        elif f.kind == "CUT":
            self.emit(CutCard(None))
        elif f.kind == "STAT":
            self.write(sp.encode("QST"))
        self._ask_hello(now)

    def _note_top(self, s):
        if self.top is None or sp.seq_after(self.top, s):
            self.top = s

    def _missing(self):
        """Sequence numbers the shoe sent that we have neither delivered nor hold."""
        if self.last is None or self.top is None or not sp.seq_after(self.last, self.top):
            return []
        return [s for s in sp.seq_range(self.last, self.top) if s not in self.held]

    def _any_missing(self):
        """`bool(self._missing())` without listing a long gap (a catch-up's thousands) after
        every frame delivered."""
        if self.last is None or self.top is None or not sp.seq_after(self.last, self.top):
            return False
        n = self.last
        while n != self.top:
            n = (n + 1) % sp.SEQ_MOD
            if n not in self.held:
                return True
        return False

    def _ask_resend(self, now):
        self.gap_from = self.last
        self.gap_tries += 1
        self.counts["resend_requests"] += 1
        self.gap_deadline = now + self.resend_timeout
        self.write(sp.encode("RSND", (self.last + 1) % sp.SEQ_MOD))

    def _give_up(self, seqs, why, previous_boot=False):
        """Frames that will never come: each may have been a card, so each is an unreadable card
        (the round pauses) rather than a silent loss. Each carries its number, so the owner
        journals and acknowledges it like any event, except numbers of a previous boot, which mean
        nothing to the shoe now."""
        for s in seqs:
            self.counts["lost_frames"] += 1
            self.held[s] = None
        self.gap_deadline = None
        self.gap_tries = 0
        self.gap_checked = False
        if seqs and (self.catching or len(seqs) > self.max_gap):
            # of a long jump asked for (or more than a shoe must keep): one span, as rule 3
            self.counts["jumps"] += 1
            what = "shoe sequence jumped: " if self.catching else ""
            log.error("%s: %sframes %d-%d are not accounted for (%s)", self.name, what, seqs[0],
                      seqs[-1], why)
            self.emit(CardUnreadable("shoe", {"seq": seqs[-1], "reason": f"{what}frames "
                                              f"{seqs[0]}-{seqs[-1]} not accounted for ({why})"},
                                     seq=None if previous_boot else seqs[-1]))
        else:
            for s in seqs:
                self.emit(CardUnreadable("shoe", {"seq": s, "reason": f"frame lost: {why}"},
                                         seq=None if previous_boot else s))
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
        if not self._any_missing():
            self.gap_deadline = None
            self.gap_tries = 0
            self.gap_checked = False
            self.catching = False

    def _deliver(self, f):
        self.last = f.seq
        self.recent[f.seq] = f
        while len(self.recent) > 4 * self.max_gap:
            self.recent.popitem(last=False)
        k = f.kind
        if k == "CARD":
            # decode() let through only a confidence of 0-100 in plain digits
            card, conf = f.fields[1], int(f.fields[2])
            if card not in INDEX:
                self.emit(CardUnreadable("shoe", {"seq": f.seq, "reason": f"not a card: {card!r}"},
                                         seq=f.seq))
            elif conf < self.min_confidence:
                self.counts["low_confidence"] += 1
                self.emit(CardUnreadable("shoe", {"seq": f.seq, "reason": "low confidence",
                                                  "read": card, "confidence": conf}, seq=f.seq))
            else:
                self.emit(CardRead(card, "shoe", conf, f.seq))
        elif k == "UNRD":
            self.emit(CardUnreadable("shoe", {"seq": f.seq, "reason": f.fields[1]}, seq=f.seq))
        elif k == "CUT":
            self.emit(CutCard(f.seq))
        elif k == "STAT":
            self._statuses(self.status.frame(tuple(f.fields[1:]), self.now, f.seq), self.now)
            # every STAT frame moves the shoe's position, settled or bounced: unacknowledged and
            # unpersisted, a restart resumed at the last card and met a HELLO past MAX_GAP (70
            # door reports: "sequence jumped", a false misread that paused the table)
            self.emit(ShoePosition(f.seq))
        if self.auto_ack:
            self.write(sp.encode("ACK", f.seq))

    def _statuses(self, settled, now):
        """Publish the settled statuses, each with the fault it amounts to, then whether the
        reports will not settle; a DeviceState once per change of the faults: inside the
        ShoeStatus that changed them (one change, one event: as two, the daemon published its
        retained status twice, the first half-changed), on its own for "status unstable"."""
        for status, seq in settled:
            # a word outside the spec's (door "ajar", jam "yes") is not guessed healthy: the
            # report says null for it and the shoe is in fault until a known status settles;
            # the reason names the field, never its value (a corrupt frame's bytes may be a card)
            unknown = [name for (name, words), v in zip(STAT_WORDS, status) if v not in words]
            door, jam, sensor, light, gate = (None if name in unknown else v
                                              for (name, _), v in zip(STAT_WORDS, status))
            faults = {x for x, bad in (("door open", door == "open"), ("jam", jam == "1"),
                                       ("sensor fault", sensor == "fault"),
                                       ("low light", light == "low")) if bad}
            if unknown:
                faults.add(f"unknown status report ({', '.join(unknown)})")
            self.emit(ShoeStatus(seq, door, None if jam is None else jam == "1", sensor, light,
                                 gate, self._fault_change(faults)))
        unstable = self.status.unstable(now)
        if unstable != ("status unstable" in self.faults):
            # a contact chattering for seconds is a fault itself, until one status settles
            self._faults(self.faults ^ {"status unstable"})

    def _faults(self, faults):
        change = self._fault_change(faults)
        if change is not None:
            self.emit(change)

    def _fault_change(self, faults):
        """The DeviceState that `faults` amounts to, if they changed (None if not)."""
        faults = frozenset(faults)
        if faults == self.faults:
            return None
        self.faults = faults
        return DeviceState(self.name, "fault" if faults else "ok",
                           {"reason": ", ".join(sorted(faults))} if faults else {})

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
