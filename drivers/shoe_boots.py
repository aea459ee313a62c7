"""The shoe session's boots and HELLOs: where the shoe stands, asked (ID) and believed only when
it says so twice; a restart, a jump past what the shoe can resend, a number too far ahead to
believe, and frames held while a new boot waits to be confirmed. A mixin of
`ShoeSession` (drivers/shoe_session.py), whose state it reads and moves."""
import logging

from . import shoe_protocol as sp
from .events import CardUnreadable, ShoeHello

# the one logger of the shoe's session, as before the split (an operator's filter, a test's
# caplog, name "drivers.shoe")
log = logging.getLogger("drivers.shoe")


class Boots:
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
