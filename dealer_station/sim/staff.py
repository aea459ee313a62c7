"""The simulated dealer and pit boss (a part of `Harness`, harness.py): the dealer acts on the
latest announcement (a card from the shoe laid on the camera's table, the player's decision through
the betting system, insurance closed), carries out the scripted procedures at its moment, clears
the table and closes betting between rounds; the pit boss resolves a paused table."""
import time

IDENTIFY_WAIT_S = 1.5     # how long the pit boss waits for the camera to identify a misread card


class Staff:
    """A mixin of `Harness`: acts through the harness's devices, panel and betting system."""

    def _pit_boss(self):
        """The pit boss at a paused table: a foreign card voids the round (key and void);
        a misread waits for the camera to identify the card (or goes to the discard rack);
        anything else is cleared and the round goes on."""
        reason, since = self.pause
        if self.down:
            return          # a device fault: the round goes on when the device is back
        if self.dealer_error is not None:
            # the supervisor's decision: a misdeal voids the round, an exposed card is burned
            # and play continues
            decision = "void" if self.dealer_error == "misdeal" else "continue"
            self.say(f"paused: dealer error {self.dealer_error} (the pit boss decides {decision})")
            self.bs.command({"type": "supervisor_decision", "decision": decision,
                             "reason": "simulated pit boss", "by": "pitboss"})
            self.dealer_error = None
        elif self.mismatch is not None and self.mismatch[0] in self.result_seq:
            rnd, then = self.mismatch
            self.say(f"paused: two numbers for round {rnd} (the pit boss confirms {then})")
            self.bs.command({"type": "correct_result", "round": rnd, "seq": self.result_seq[rnd],
                             "number": then, "reason": "the wheel read two numbers",
                             "by": "pitboss"})
            self.mismatch = None
        elif "foreign_card" in self.unresolved:
            self.say(f"paused: {reason} (the pit boss voids the round with the key)")
            self.panel.void_with_key()
        else:
            if reason == "misread" and self.tcam and not self.identified:
                if time.monotonic() - since < IDENTIFY_WAIT_S:
                    return
                self.tcam.discard_last(self.last_zone)
            self.say(f"paused: {reason} (the pit boss resumes)")
            self.panel.press("resume")
        self.pressed_at = time.monotonic()      # pressed: wait for the table to answer

    def act(self, m):
        t = m["type"]
        time.sleep(self.delay)
        if self._procedure(m):
            return
        if t == "awaiting_card":
            card = self.shoe.deal()
            if self.tcam:
                self.last_zone = self.tcam.zone(m)
                disagree = "camera_disagrees" in self.pending_fault and m["face"] == "up" and self.last_zone
                if disagree:
                    self.pending_fault.remove("camera_disagrees")
                    self.tcam.cam.disagree_next()
                self.tcam.lay(m, card)
                if disagree:     # the camera's report lands before the next card is drawn
                    self.hold = ({"irregularity"}, time.monotonic() + 0.5, None)
        elif t == "awaiting_decision":
            if "card_out_of_turn" in self.pending_fault:
                self.pending_fault.remove("card_out_of_turn")
                self.shoe.deal()                # a card dealt out of turn (to the discard rack)
                # read before the player's decision comes back
                self.hold = ({"irregularity"}, time.monotonic() + 0.3,
                             lambda: self.bs.decide(m))
                return
            self.bs.decide(m)
        elif t == "insurance_offered":
            self.bs.command({"type": "insurance_closed"})

    def _procedure(self, m):
        """A scripted procedure at the dealer's moment; True when it took the dealer's turn."""
        t, pf = m["type"], self.pending_fault
        if t == "awaiting_card" and "shoe_jam" in pf:
            pf.remove("shoe_jam")
            self.shoe.status(jam=True)          # the card sticks: the table pauses
            self.jam_until = time.monotonic() + 0.5
            return True
        # a dealer error is reported at a decision (baccarat has none: at a card of the round)
        if t == "awaiting_decision" or (t == "awaiting_card" and m.get("round") is not None
                                        and self.profile.game == "baccarat"):
            for name, error in (("exposed_card", "exposed_card"), ("misdeal", "misdeal")):
                if name in pf:
                    pf.remove(name)
                    self.bs.command({"type": "dealer_error", "error": error, "by": "dealer",
                                     "detail": "simulated"})
                    return True
        if t == "awaiting_result" and "no_spin" in pf:
            pf.remove("no_spin")
            self.bs.command({"type": "no_spin", "reason": "the ball left the wheel (simulated)",
                             "by": "dealer"})
            return True
        if t == "awaiting_result" and "wheel_fault" in pf:
            pf.remove("wheel_fault")
            self.wheel.component_fault("12", periods=3)
            return True
        return False

    def _between_rounds(self):
        if self.state in ("ready", "shuffle") and self.tcam and self.tcam.ended_at is not None:
            if not self.tcam.ready_to_pick_up():
                return
            self.tcam.pick_up()             # the camera has seen every card: clear the table
        if self.tcam and not self.tcam.table_clear():
            return
        if self.down:
            return                              # betting does not close with the shoe down
        if self.state == "ready" and (self.rounds == 0 or self.started < self.rounds):
            n = self.started + 1
            for f in self.faults.pop(n, []):
                self._fault(f)
            if "card_out_of_turn" in self.pending_fault and self.profile.game == "baccarat":
                # no decisions at baccarat: the card comes out before "no more bets"
                self.pending_fault.remove("card_out_of_turn")
                self.shoe.deal()
                return                          # betting closes once the pit boss has cleared it
            self.state = "closing"
            self.bs.close_betting(n)
        elif self.state == "shuffle":
            self.state = "loading"
            self._load_shoe()
