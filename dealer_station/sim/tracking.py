"""What the simulated staff knows of the table, kept from its events (a part of `Harness`,
harness.py): the table's state (burn, ready, closing, round, shuffle), rounds started, resulted and
voided, the pause and its irregularities and how each was resolved, the devices down, the dealer
error or the two numbers awaiting the pit boss, and what the table waits for."""
import time
from collections import Counter

ANNOUNCEMENTS = ("awaiting_card", "awaiting_decision", "insurance_offered", "awaiting_result")


class Tracking:
    """A mixin of `Harness`: what it keeps is the harness's state (set in `Harness.__init__`)."""

    def note(self, m):
        t = m["type"]
        self.bs.check(m)
        self.bs.note(m)
        if self.tcam:
            self.tcam.note(m)
        if t == "round_started":
            self.started += 1
            if self.roulette:
                self.bs.place_roulette_bets(m["round"])
        elif t == "round_result":
            self.resulted += 1
            self.result_seq[m["round"]] = m["seq"]
            if "correction" in self.pending_fault:
                # the pit boss corrects the result (a card game's by a void: its result follows
                # from its cards; roulette's to the neighbouring number)
                self.pending_fault.remove("correction")
                fix = ({"number": (m["number"] + 1) % 37} if m["game"] == "roulette"
                       else {"void": True})
                self.bs.command({"type": "correct_result", "round": m["round"], "seq": m["seq"],
                                 "reason": "announced wrongly (simulated)", "by": "pitboss",
                                 **fix})
            if m["game"] == "roulette":
                summary = f"{m['number']} {m['colour']}"
            elif m["game"] == "baccarat":
                summary = m["winner"]
            else:
                summary = " ".join(f"{s['seat']}:{'/'.join(h['outcome'] for h in s['hands'])}"
                                   for s in m["seats"])
            self.say(f"round {m['round']}: {summary}")
        elif t == "round_voided":
            self.voided += 1
            self._resolved("voided")
            self.say(f"round {m['round']} voided: {m['reason']}")
        elif t == "result_corrected":
            how = "voided" if m["voided"] else "corrected"
            self.resolutions.setdefault("correction", Counter())[how] += 1
            self.say(f"round {m['round']} {how} by {m['by']}: {m['reason']}")
        elif t == "spin_void":
            self.resolutions.setdefault("no_spin", Counter())["re-spun"] += 1
            if self.wheel:
                self.wheel.respin()      # the dealer launches again (after a ball out)
            self.say(f"round {m['round']}: spin void ({m['reason']}), spun again")
        elif t == "device_fault":
            self.down.add(m["device"])
        elif t == "device_restored":
            self.down.discard(m["device"])
        elif t == "rejected" and m.get("input") == "betting_closed" and self.state == "closing":
            self.state = "ready"          # the shoe was down: betting closes once it is back
        elif t == "irregularity":
            if m["code"] == "dealer_error":
                self.dealer_error = m["detail"]["error"]
            elif m["code"] == "number_mismatch":
                self.mismatch = (m["round"], m["detail"]["then"])
            if m["detail"].get("after_result"):
                self.resolutions.setdefault(m["code"], Counter())["reported after the result"] += 1
            else:
                self.unresolved.append(m["code"])
            if m["code"] == "foreign_card":
                self.foreign_armed = False
        elif t == "round_resumed":
            self._resolved("resumed")
            self.pause = self.pressed_at = None
        elif t == "round_paused":
            self.pause, self.identified = (m["reason"], time.monotonic()), False
            self.pressed_at = None
        elif t == "card_identified":
            self.identified = True
        elif t == "shuffle_due":
            self.state = "shuffle"
        if t in ANNOUNCEMENTS:
            self.waiting = {"awaiting_card": lambda: f"a card to {m['to']} {m['seat'] or ''}".strip(),
                            "awaiting_decision": lambda: f"seat {m['seat']}'s decision",
                            "insurance_offered": lambda: "insurance",
                            "awaiting_result": lambda: "the wheel's number"}[t]()
        elif t in ("round_result", "round_voided"):
            self.waiting = "the next round"
        if t in ("burn_complete", "round_result", "round_voided") or (
                t == "shoe_started" and not m["burn"]):
            self.state = "ready"
            if t == "round_voided":
                self.pause = self.pressed_at = None
        elif t == "round_started":
            self.state = "round"

    def _resolved(self, how):
        for code in self.unresolved:
            self.resolutions.setdefault(code, Counter())[how] += 1
        self.unresolved = []
