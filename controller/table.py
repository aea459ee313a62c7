"""The table engine: `step(table, input) -> (table, outputs)`.

The shoe lifecycle (shoe loaded -> burn -> rounds -> cut card -> last round -> shuffle due), the
rounds of each game, irregularities and pause / resume / void. Pure: no I/O, no clock, no
randomness; a Table is never changed in place, so an old state stays valid (replay, audit).
An input that is malformed or not allowed now gives one `rejected` output and the same Table.
"""
from . import camera_check, procedures
from .cards import BJ_VALUE
from .expectation import Expect, Finished, Pending, Sighting, describe
from .games import game_of
from .protocol import Rejected, validate
from .shoe import Shoe

ANNOUNCEMENTS = frozenset(("awaiting_card", "awaiting_decision", "insurance_offered",
                           "awaiting_result"))


class Table:
    __slots__ = ("profile", "game", "phase", "shoe", "round", "rounds", "shoes", "last_round", "paused",
                 "pending", "seen", "finished", "early", "faults", "undo")

    def but(self, **kw):
        t = Table.__new__(Table)
        t.profile = self.profile
        t.game = self.game
        t.phase = self.phase
        t.shoe = self.shoe
        t.round = self.round
        t.rounds = self.rounds
        t.shoes = self.shoes
        t.last_round = self.last_round
        t.paused = self.paused
        t.pending = self.pending
        t.seen = self.seen
        t.finished = self.finished
        t.early = self.early
        t.faults = self.faults
        t.undo = self.undo
        for k, v in kw.items():
            setattr(t, k, v)
        return t


def new_table(profile):
    t = Table.__new__(Table)
    t.profile = profile
    t.game = game_of(profile)  # the Game (games.py), chosen once
    # no_shoe | burn | ready | round | shuffle_due; a wheel needs no shoe
    t.phase = "no_shoe" if t.game.uses_cards else "ready"
    t.shoe = None
    t.round = None           # the round under way (in phase burn only after burn_incomplete)
    t.rounds = 0             # rounds started at this table: the next round's number - 1
    t.shoes = 0
    t.last_round = False     # the cut card came out: the round under way (or next) is the last
    t.paused = None          # the reason, while paused
    t.pending = ()           # irregular reads awaiting resume or void: Pending, ...
    t.seen = ()              # Sighting(zone, card), ... the camera confirmed in the round under way
    # Finished(round, ((zone, cards), ...), seen) of the round that just ended with a result: the
    # camera may confirm its last cards after the result (it sees a card some frames after the shoe)
    t.finished = None
    # Sighting(zone, card), ... the camera saw where the table waits for a card, before the shoe's
    # read came (a resend, a replugged cable): checked when the shoe's card for that place arrives
    t.early = ()
    t.faults = ()            # (device, reason), ... of required devices reported down
    # (round before, round after, card, shoe log n) of the last card dealt to the round: what a
    # supervisor's "replace" after a dealer error takes back
    t.undo = None
    return t


def expect(t):
    """What the table waits for (an `expectation.Await*`), or None. Nothing while paused."""
    if t.paused:
        return None
    if t.phase == "burn":
        return Expect.card("burn", None, None, "up" if t.shoe.exposed is None else "down")
    if t.phase == "round":
        return t.game.expect(t.round)
    return None


def announce(t):
    if t.paused:
        return []
    if t.phase == "burn":
        e = expect(t)
        return [{"type": "awaiting_card", "round": None, "to": "burn", "seat": None,
                 "hand": None, "face": e.face}]
    if t.phase == "round":
        return t.game.announce(t.round)
    return []


def step(t, event):
    """Apply one input. Returns (new table, list of output dicts)."""
    try:
        ev = validate(event)
        t2, out = _HANDLERS[ev["type"]](t, ev)
    except Rejected as r:
        kind = event.get("type") if isinstance(event, dict) else None
        rej = {"type": "rejected", "input": kind if isinstance(kind, str) else None,
               "code": r.code, "reason": r.reason}
        if isinstance(event, dict) and "id" in event:
            rej["id"] = event["id"]
        out = [rej]
        t2 = t
        ev = event if isinstance(event, dict) else {}
    if t2.paused:  # nothing is asked of the dealer or the players while paused
        out = [o for o in out if o["type"] not in ANNOUNCEMENTS]
    if "ts" in ev:
        ts = ev["ts"]
        for o in out:
            o["ts"] = ts
    return t2, out


# -- inputs -------------------------------------------------------------------------------------

def _no_cards(t, kind):
    if not t.game.uses_cards:
        raise Rejected("not_allowed", f"{kind} has no meaning at a {t.game.name} table")


def _shoe_loaded(t, ev):
    _no_cards(t, "shoe_loaded")
    if t.round is not None:
        raise Rejected("round_in_progress", f"round {t.round.number} is under way: finish or void it first")
    if t.paused:
        raise Rejected("paused", f"the table is paused ({t.paused}): resume first")
    n = t.shoes + 1
    p = t.profile
    how = ev.get("inspection")
    if how is None and p.require_inspection:
        raise Rejected("inspection_required", f"{p.name} requires the shoe's inspection: "
                                              f"inspection scanner or manual (with confirmed_by)")
    if (how == "manual") != ("confirmed_by" in ev):
        raise Rejected("malformed", "shoe_loaded.confirmed_by: the supervisor who confirmed a "
                                    "manual inspection, given with inspection manual only")
    t = t.but(shoe=Shoe(n, p.decks), shoes=n, last_round=False,
              phase="burn" if p.burn else "ready")
    out = [{"type": "shoe_started", "shoe": n, "profile": p.name, "decks": p.decks,
            "cards": p.cards, "burn": p.burn}]
    if how is not None:
        out[0]["inspection"] = {"method": how, "confirmed_by": ev.get("confirmed_by")}
    return t, out + announce(t)


def _card(t, ev):
    _no_cards(t, "a card")
    card, source = ev["card"], ev["source"]
    shoe = t.shoe
    if shoe is None:
        return _irregular(t, "unexpected_card", {"card": card, "source": source,
                                                 "why": "no shoe is loaded"}, Pending("unexpected", card, None))
    if t.paused and source != "shoe" and any(p.kind == "misread" for p in t.pending):
        return _identify(t, card, source)
    if shoe.is_foreign(card):
        t = t.but(shoe=shoe.record(card, source, "foreign"))
        return _irregular(t, "foreign_card", {"card": card, "source": source,
                                              "read": shoe.count(card) + 1, "decks": shoe.decks},
                          Pending("foreign", card, None))
    if t.paused:
        t = t.but(shoe=shoe.read(card, source, "unexpected"))
        return _irregular(t, "unexpected_card", {"card": card, "source": source,
                                                 "why": f"the table is paused ({t.paused})"},
                          Pending("unexpected", card, None))
    e = expect(t)
    if e is not None and e.what == "card":
        return _deliver(t, card, source, e)
    if t.phase == "shuffle_due":
        t = t.but(shoe=shoe.read(card, source, "after_end"))
        return _irregular(t, "card_after_shoe_end", {"card": card, "source": source},
                          Pending("unexpected", card, None))
    why = ("no round is under way (betting not closed)" if t.round is None
           else f"the table waits for {describe(e)}")
    t = t.but(shoe=shoe.read(card, source, "unexpected"))
    return _irregular(t, "unexpected_card", {"card": card, "source": source, "why": why},
                      Pending("unexpected", card, None))


def _deliver(t, card, source, e, logged=False):
    """Give `card` to the place the table expects (`e`), logging the read unless it is."""
    shoe = t.shoe if logged else t.shoe.read(card, source, e.dest)
    if e.to == "burn":
        return _burn(t.but(shoe=shoe), card)
    rnd, out = t.game.on_card(t.round, card)
    t = t.but(shoe=shoe, round=rnd, undo=(t.round, rnd, card, shoe.log_len))
    if not t.early:
        return _after_round_step(t, out)
    t, out, irregular = camera_check.match_early(t, card, e, out)
    t, out = _after_round_step(t, out)
    if irregular is None:
        return t, out
    code, detail = irregular
    if t.round is None:      # that card ended the round: the result stands, reported for review
        return t, out + [camera_check.after_result(code, rnd.number, detail)]
    t, more = _irregular(t, code, detail, Pending("seen", detail.get("seen"), None))
    return t, out + more


def _burn(t, card):
    shoe = t.shoe
    if shoe.exposed is None:
        shoe = shoe._copy(exposed=card, burn_required=BJ_VALUE[card])
        out = [{"type": "card_dealt", "round": None, "card": card, "to": "burn", "seat": None,
                "hand": None, "face": "up"}]
    else:
        shoe = shoe._copy(burned=shoe.burned + 1)
        out = [{"type": "card_dealt", "round": None, "card": None, "to": "burn", "seat": None,
                "hand": None, "face": "down"}]
    t = t.but(shoe=shoe)
    if shoe.burned < shoe.burn_required:
        return t, out + announce(t)
    out.append({"type": "burn_complete", "shoe": shoe.number, "exposed": shoe.exposed,
                "burned": shoe.burned})
    t = t.but(phase="round" if t.round is not None else "ready")
    return t, out + announce(t)


def _after_round_step(t, out):
    rnd = t.round
    if not t.game.over(rnd):
        return t, out
    done = Finished(rnd.number, tuple((z, tuple(c)) for z, c in t.game.zones(rnd).items()), t.seen)
    return _round_ended(t.but(round=None, finished=done), out)


def _round_ended(t, out):
    if t.last_round or t.profile.shuffle_every_round:
        out.append({"type": "shuffle_due", "shoe": t.shoe.number})
        return t.but(phase="shuffle_due"), out
    return t.but(phase="ready"), out


def _irregular(t, code, detail, item):
    rnd = t.round.number if t.round is not None else None
    out = [{"type": "irregularity", "code": code, "round": rnd, "detail": detail}]
    if not t.paused:
        out.append({"type": "round_paused", "round": rnd, "reason": code})
    return t.but(paused=t.paused or code, pending=t.pending + (item,)), out


def _identify(t, card, source):
    """A card entered by hand (or read by the camera) for the oldest unreadable card."""
    i = next(i for i, p in enumerate(t.pending) if p.kind == "misread")
    was = t.pending[i].expect
    pending = t.pending[:i] + t.pending[i + 1:]
    shoe = t.shoe
    if shoe.is_foreign(card):
        raise Rejected("foreign_card", f"{card} would be read {shoe.count(card) + 1} times in a "
                                       f"{shoe.decks}-deck shoe: not the unreadable card")
    # The unreadable card is delivered where the table then expected a card, if it still does.
    live = t.but(paused=None)
    e = expect(live)
    # the hole card identified is the hole card still: not named until its reveal
    hole = was is not None and was.what == "card" and was.face == "down"
    out = [{"type": "card_identified", "card": None if hole else card, "source": source,
            "round": t.round.number if t.round is not None else None}]
    if was is not None and was.what == "card" and e == was:
        shoe = shoe.identify(card, source, e.dest)
        t2, more = _deliver(live.but(shoe=shoe), card, source, e, logged=True)
        return t2.but(paused=t.paused, pending=pending), out + more
    shoe = shoe.identify(card, source, "burn")
    return t.but(shoe=shoe, pending=pending), out


def _card_unreadable(t, ev):
    _no_cards(t, "card_unreadable")
    source = ev["source"]
    shoe = t.shoe
    detail = {"source": source}
    e = expect(t)
    # A reader's detail may name a card: never while the hole card is awaited or lies unrevealed
    # (a shoe frame conflicting with the hole card's number, read later, names it: issue #16's
    # rule, as for the camera's sightings). It stays in the journal's input for the pit boss.
    hole = (e is not None and e.what == "card" and e.face == "down") or (
        t.round is not None and t.game.hidden(t.round) is not None)
    if "detail" in ev and not hole:
        detail["detail"] = ev["detail"]
    if shoe is not None:
        t = t.but(shoe=shoe.record(None, source, "unreadable"))
    return _irregular(t, "misread", detail, Pending("misread", None, expect(t)))


def _cut_card(t, ev):
    p = t.profile
    if p.cut_card_from_back is None:
        raise Rejected("no_cut_card", f"{p.name} uses no cut card (it shuffles after every round)")
    if t.shoe is None or t.phase == "shuffle_due":
        raise Rejected("no_shoe", "no shoe is being dealt")
    if t.shoe.cut_at is not None:
        raise Rejected("cut_card_seen", f"the cut card already came out after {t.shoe.cut_at} cards")
    shoe = t.shoe._copy(cut_at=t.shoe.drawn)
    rnd = t.round.number if t.round is not None else t.rounds + 1
    out = [{"type": "last_round", "shoe": shoe.number, "round": rnd}]
    off = shoe.remaining - p.cut_card_from_back
    if abs(off) > p.cut_card_tolerance:
        out.append({"type": "procedure_warning", "code": "cut_card_position",
                    "detail": {"expected_remaining": p.cut_card_from_back,
                               "remaining": shoe.remaining, "tolerance": p.cut_card_tolerance}})
    return t.but(shoe=shoe, last_round=True), out


def _betting_closed(t, ev):
    p = t.profile
    if t.paused:
        raise Rejected("paused", f"the table is paused ({t.paused})")
    if t.round is not None:
        raise Rejected("round_in_progress", f"round {t.round.number} is under way")
    if t.phase == "no_shoe":
        raise Rejected("no_shoe", "no shoe is loaded")
    if t.phase == "shuffle_due":
        raise Rejected("shuffle_due", "the last round of this shoe is over: shuffle and load a new shoe")
    if t.faults:
        raise Rejected("device_down", f"betting does not close on a round while a required device "
                                      f"is down ({', '.join(d for d, _ in t.faults)})")
    rnd, out = t.game.start(p, t.rounds + 1, ev.get("seats"))
    if t.phase == "burn":  # the round may not be dealt before the burn is complete
        t = t.but(round=rnd, rounds=rnd.number, seen=(), finished=None, early=())
        t2, more = _irregular(t, "burn_incomplete", {"required": t.shoe.burn_required,
                                                     "burned": t.shoe.burned,
                                                     "exposed": t.shoe.exposed},
                              Pending("burn_incomplete", None, None))
        return t2, out + more
    t = t.but(round=rnd, rounds=rnd.number, phase="round", seen=(), finished=None, early=())
    return t, out


def _round_input(t, kind):
    if t.paused:
        raise Rejected("paused", f"the table is paused ({t.paused})")
    if t.round is None or t.phase != "round":
        raise Rejected("no_round", "no round is being played")
    t.game.check_input(kind)


def _decision(t, ev):
    _round_input(t, "decision")
    rnd, out = t.game.on_decision(t.round, ev["seat"], ev["hand"], ev["action"])
    return _after_round_step(t.but(round=rnd), out)


def _decision_timeout(t, ev):
    _round_input(t, "decision_timeout")
    rnd, out = t.game.on_timeout(t.round, ev["seat"], ev["hand"])
    return _after_round_step(t.but(round=rnd), out)


def _insurance_closed(t, ev):
    _round_input(t, "insurance_closed")
    rnd, out = t.game.on_insurance_closed(t.round)
    return _after_round_step(t.but(round=rnd), out)


def _pause(t, ev):
    if t.paused:
        raise Rejected("paused", f"the table is already paused ({t.paused})")
    rnd = t.round.number if t.round is not None else None
    return t.but(paused=ev["reason"]), [{"type": "round_paused", "round": rnd, "reason": ev["reason"]}]


def _pending_summary(pending):
    return {"burned": [p.card for p in pending if p.kind == "unexpected"],
            "removed": [p.card for p in pending if p.kind == "foreign"],
            "unidentified": sum(1 for p in pending if p.kind == "misread")}


def _resume(t, ev):
    if not t.paused:
        raise Rejected("not_paused", "the table is not paused")
    if t.faults:
        raise Rejected("device_down", f"a required device is down ({', '.join(d for d, _ in t.faults)})"
                                      f": the round continues once it is restored, or is voided")
    if any(p.kind == "dealer_error" for p in t.pending):
        raise Rejected("decision_pending", "a dealer error awaits the supervisor's decision "
                                           "(supervisor_decision)")
    rnd = t.round.number if t.round is not None else None
    # Unexpected cards go to the discard rack, foreign cards are taken out of play, unreadable
    # cards never identified are discarded: the round goes on where it stopped.
    out = [{"type": "round_resumed", "round": rnd, **_pending_summary(t.pending)}]
    held = procedures.take_held(t)
    t = t.but(paused=None, pending=())
    if held is not None and t.round is not None:   # the wheel's number that came while paused
        rnd, more = t.game.on_number(t.round, held.card, held.expect, None)
        return _after_round_step(t.but(round=rnd), out + more)
    return t, out + announce(t)


def _void_round(t, ev):
    if t.round is None:
        raise Rejected("no_round", "no round is under way to void")
    out = [{"type": "round_voided", "round": t.round.number, "reason": ev["reason"],
            **_pending_summary(t.pending)}]
    t = t.but(round=None, paused=None, pending=(), finished=None)
    if t.phase == "burn":
        return t, out + announce(t)
    t, out = _round_ended(t, out)
    return t, out + announce(t)


def _card_seen(t, ev):
    """The camera saw a card: camera_check decides, the table applies its verdict."""
    _no_cards(t, "card_seen")
    v = camera_check.card_seen(t, ev, expect(t))
    if isinstance(v, camera_check.Done):
        return v.table, v.out
    if isinstance(v, camera_check.Identify):
        return _identify(t, v.card, "camera")
    if isinstance(v, camera_check.Deal):
        t2, out = _card(t, {"type": "card", "card": v.card, "source": "camera"})
        return t2.but(seen=t2.seen + (Sighting(v.zone, v.card),)), out
    return _irregular(t, v.code, v.detail, v.item)


_HANDLERS = {
    "shoe_loaded": _shoe_loaded, "card": _card, "card_unreadable": _card_unreadable,
    "cut_card": _cut_card, "betting_closed": _betting_closed, "decision": _decision,
    "insurance_closed": _insurance_closed, "decision_timeout": _decision_timeout,
    "pause": _pause, "resume": _resume, "void_round": _void_round,
    "card_seen": _card_seen,
}


class Ops:
    """The engine's transitions the procedures (procedures.py) build on."""
    irregular = staticmethod(_irregular)
    void_round = staticmethod(_void_round)
    resume = staticmethod(_resume)
    after_round_step = staticmethod(_after_round_step)
    announce = staticmethod(announce)
    pending_summary = staticmethod(_pending_summary)


for _kind, _f in procedures.HANDLERS.items():
    _HANDLERS[_kind] = (lambda f: lambda t, ev: f(t, ev, Ops))(_f)
