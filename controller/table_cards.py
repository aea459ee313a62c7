"""The shoe and its cards (a part of table.py): a shoe loaded, the burn, each card read (from
the shoe, entered by hand, or seen by the camera through camera_check.py), an unreadable read
and the cut card."""
from . import camera_check
from .cards import BJ_VALUE
from .expectation import Pending, Sighting, describe
from .protocol import Rejected
from .shoe import Shoe
from .table_pause import _irregular
from .table_state import _after_round_step, announce, expect


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
        # delivered as on an unpaused table: an irregularity the card raises (the camera saw
        # another card there) joins the pending ones, and the table, paused already for its
        # first reason, announces no second pause
        t2, more = _deliver(live.but(shoe=shoe, pending=pending), card, source, e, logged=True)
        return t2.but(paused=t.paused), out + [o for o in more if o["type"] != "round_paused"]
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
