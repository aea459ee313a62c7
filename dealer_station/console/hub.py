"""What the console shows, built on the daemon's loop thread from what it publishes anyway (the
public status snapshot and the public events), and handed to the web threads as one JSON text.

The loop calls `update()`; the web threads only `wait()` for a newer version and read the text
(one tuple assignment: no lock shared with the loop beyond the condition's notify). Nothing here
reads the engine's state: the hole card never reaches this module before the table publishes it.
"""
import json
import threading
import time
from collections import deque

# What the dealer and the pit boss do for each irregularity (RULES.md: "Procedures common to every
# live table"; the house's own wording may replace these).
PROCEDURES = {
    "unexpected_card": "Stop. Leave the card where it lies and call the pit boss: it goes to the "
                       "discard rack on resume, or the round is voided.",
    "foreign_card": "Stop. Do not deal on. Call the pit boss: the card is removed and inspected, "
                    "the round is voided.",
    "card_after_shoe_end": "Stop. The shoe is finished: call the pit boss; the card goes to the "
                           "discard rack.",
    "misread": "Stop. Leave the card face down where it lies. The pit boss enters it by hand or "
               "sends it to the discard rack.",
    "burn_incomplete": "Stop. Finish the burn procedure before dealing; the pit boss resumes.",
    "misplaced_card": "Stop. The camera saw a card in the wrong place. Do not move it: call the "
                      "pit boss.",
    "source_mismatch": "Stop. The camera and the shoe disagree. Do not move the cards: call the "
                       "pit boss.",
    "exposed_hole_card": "Stop. The hole card was exposed. Call the pit boss: the supervisor "
                         "decides whether the round stands or is voided.",
    "unexpected_result": "Stop. A winning number came with bets still open. The pit boss "
                         "resumes (the number is discarded).",
    "internal_error": "Stop. A software fault. Call the pit boss; report it with the journal.",
    "dealer_error": "Stop. Leave the cards as they lie and call the pit boss: the supervisor "
                    "decides (continue, replace the card, or void the round).",
    "device_fault": "Stop. A device is down: the round goes on once it is restored, or the pit "
                    "boss voids it.",
    "outage_unmeasured": "Stop. The table restarted and cannot tell how long it was down (its "
                         "clock is not synchronised). Call the pit boss: resume or void; once "
                         "the clock syncs the table decides itself.",
    "number_mismatch": "Stop. The wheel reported two numbers. The pit boss confirms one (resume "
                       "keeps the first), enters or corrects the number, or voids the round.",
}
OTHER = "Stop dealing and call the pit boss."
HISTORY = 30


class Hub:
    def __init__(self, table_id, profile, decision_s=0.0, insurance_s=0.0):
        self.base = {"table": table_id, "profile": profile}
        self.cond = threading.Condition()
        self.version = 0
        self.text = "{}"
        self.open = []             # irregularities since the last resume / void
        self.review = deque(maxlen=HISTORY)   # reported after a result: for the pit boss
        self.history = deque(maxlen=HISTORY)  # ended rounds, newest first
        self.last_result = None
        self.last_round = None     # the last_round message of the current shoe
        self.actions = deque(maxlen=HISTORY)  # what console accounts did, newest first
        self.closed = False

    # -- the loop thread -----------------------------------------------------------------------

    def messages(self, rows):
        """The outputs of one input as journaled: ((seq, message text), ...)."""
        for _, text in rows:
            m = json.loads(text)
            t = m["type"]
            if t == "irregularity":
                entry = {"seq": m["seq"], "code": m["code"], "round": m.get("round"),
                         "detail": m.get("detail"), "ts": m.get("ts"),
                         "procedure": PROCEDURES.get(m["code"], OTHER)}
                (self.review if (m.get("detail") or {}).get("after_result") else self.open).append(entry)
            elif t in ("round_resumed", "round_voided"):
                self.open = []
            elif t == "supervisor_decided":     # the dealer error is decided: others may remain
                self.open = [i for i in self.open if i["code"] != "dealer_error"]
            if t == "round_result":
                self.last_result = m
                self.history.appendleft({"round": m["round"], "ended": "result", "ts": m.get("ts"),
                                         "summary": summary(m), "seq": m["seq"]})
            elif t == "round_voided":
                self.history.appendleft({"round": m["round"], "ended": "voided", "ts": m.get("ts"),
                                         "summary": m.get("reason")})
            elif t == "result_corrected":    # a new event referring to the result: noted beside it
                for h in self.history:
                    if h["round"] == m["round"] and h.get("seq") == m["corrects"]:
                        h["corrected"] = ("voided" if m["voided"] else summary(m["result"])) + \
                            f" ({m['by']}: {m['reason']})"
            elif t == "last_round":
                self.last_round = m
            elif t == "shoe_started":
                self.last_round = None

    def action(self, account, role, command, reply):
        """Noted by the web thread that sent a command (shown on the pit page)."""
        with self.cond:
            self.actions.appendleft({"at": time.time(), "by": account, "role": role,
                                     "type": command.get("type"), "reason": command.get("reason"),
                                     "status": reply.get("status"), "code": reply.get("code")})

    def update(self, status, timer=None, at=None):
        """A new view from the loop: the status document (public snapshot, devices), the
        running timer ({what, seat, hand, deadline: epoch seconds} or None), and when the loop
        took the event that caused it (for the paint latency)."""
        snap = status.get("snapshot") or {}
        with self.cond:
            actions = list(self.actions)
        paused = snap.get("paused")
        doc = {**self.base, "at": at or time.time(), "version": self.version + 1,
               "snapshot": snap, "devices": status.get("devices", {}),
               "last_seq": status.get("last_seq"), "timer": timer,
               "irregularities": list(self.open) if paused else [],
               "paused": paused, "pause_procedure": PROCEDURES.get(paused, OTHER) if paused else None,
               "review": list(self.review), "history": list(self.history),
               "last_result": self.last_result, "last_round": self.last_round,
               "actions": actions}
        text = json.dumps(doc, separators=(",", ":"))
        with self.cond:
            self.version += 1
            self.text = text
            self.cond.notify_all()

    def close(self):
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    # -- the web threads -----------------------------------------------------------------------

    def wait(self, after, timeout):
        """(version, text) newer than `after`, or (after, None) after `timeout`."""
        with self.cond:
            if self.version <= after and not self.closed:
                self.cond.wait(timeout)
            if self.version <= after:
                return after, None
            return self.version, self.text


def summary(m):
    """One line of a round_result for the history."""
    if m["game"] == "roulette":
        return f"{m['number']} {m.get('colour') or ''}".strip()
    if m["game"] == "baccarat":
        return (f"{m['winner']} (player {m['player']['total']}, banker {m['banker']['total']}"
                f"{', natural' if m.get('natural') else ''})")
    d = m["dealer"]
    dealer = "blackjack" if d.get("blackjack") else ("bust" if d.get("bust") else d.get("total"))
    seats = " ".join(f"{s['seat']}:{'/'.join(h['outcome'] for h in s['hands'])}" for s in m["seats"])
    return f"dealer {dealer}; {seats}"
