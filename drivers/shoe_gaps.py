"""The shoe session's sequence: events in order, a gap asked for again (RSND) and given up as
unreadable cards, duplicates dropped, conflicts reported, and each event delivered (and
acknowledged when the session acknowledges itself). A mixin of `ShoeSession`
(drivers/shoe_session.py), whose state it reads and moves."""
import logging

from controller.cards import INDEX

from . import shoe_protocol as sp
from .events import CardRead, CardUnreadable, CutCard, ShoePosition

# the one logger of the shoe's session, as before the split (an operator's filter, a test's
# caplog, name "drivers.shoe")
log = logging.getLogger("drivers.shoe")


class Gaps:
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
