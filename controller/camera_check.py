"""The camera cross-check (the `card_seen` input): a card the camera saw in a zone, checked
against what the shoe read and where the engine sent it.

It decides and the table applies: `card_seen` returns a verdict, either `Done` (the new table
and outputs, for what touches only the camera's own records) or an action the table carries out
with its own transitions (`Identify`, `Deal`, `Irregular`). So this module never imports
`table.py`: the dependency goes one way."""
from typing import NamedTuple

from .expectation import Finished, Pending, Sighting
from .protocol import Rejected


class Done(NamedTuple):
    table: object
    out: list


class Identify(NamedTuple):
    """The card is the pending unreadable card of this zone: identify it (source camera)."""
    card: str


class Deal(NamedTuple):
    """The camera is the card source: deal `card`, then record the sighting in `zone`."""
    card: str
    zone: str


class Irregular(NamedTuple):
    code: str
    detail: dict
    item: Pending


def zone_cards(t):
    """{zone: [cards placed there]} in the round under way, as far as a camera may see them."""
    return {} if t.round is None else t.game.zones(t.round)


def card_seen(t, ev, e):
    """The camera saw `card` land in `zone`; `e` is what the table waits for (`table.expect`)."""
    card, zone = ev["card"], ev["zone"]
    if t.round is None and not (t.paused and t.pending):
        if t.finished is None:
            raise Rejected("no_round", "no round is under way: nothing to check the camera against")
        return Done(*seen_after_result(t, card, zone))
    misread = next((p for p in t.pending if p.kind == "misread" and p.expect is not None
                    and p.expect.what == "card" and p.expect.zone == zone), None)
    if t.paused and misread is not None:
        return Identify(card)
    if t.profile.card_source == "camera" and e is not None and e.what == "card" and e.to != "burn":
        if e.zone != zone:
            return Irregular("misplaced_card", {"card": card, "zone": zone,
                                                "expected_zone": e.zone},
                             Pending("unexpected", card, None))
        return Deal(card, zone)
    zc = zone_cards(t)
    confirmed = sum(1 for z, c in t.seen if (z, c) == (zone, card))
    if zc.get(zone, []).count(card) > confirmed:
        return Done(t.but(seen=t.seen + (Sighting(zone, card),)), [
            {"type": "card_confirmed", "round": t.round.number, "card": card, "zone": zone}])
    if confirmed:
        return Done(t, [])  # seen again (a hand hid it a while, the daemon restarted): nothing new
    hidden = t.game.hidden(t.round) if t.round is not None else None
    if hidden == (zone, card):
        # the hole card seen face up where it lies: exposed (RULES.md, dealer errors); its code
        # goes nowhere, the journal keeps the sighting
        return Irregular("exposed_hole_card", {"zone": zone}, Pending("seen", None, None))
    if (e is not None and e.what == "card" and e.to != "burn" and e.zone == zone
            and not any(z == zone for z, _ in t.early)):
        return Done(t.but(early=t.early + (Sighting(zone, card),)), [])  # ahead of the shoe's read
    for other, cards in zc.items():
        done = sum(1 for z, c in t.seen if (z, c) == (other, card))
        if other != zone and cards.count(card) > done:
            return Irregular("misplaced_card", {"card": card, "zone": zone, "expected_zone": other},
                             Pending("seen", card, None))
    unconfirmed = list(zc.get(zone, []))
    for z, c in t.seen:
        if z == zone and c in unconfirmed:
            unconfirmed.remove(c)
    return Irregular("source_mismatch", {"zone": zone, "seen": withheld(t, card),
                                         "read": unconfirmed}, Pending("seen", card, None))


def withheld(t, card):
    """What the camera saw, as an output may name it: nothing while a hole card lies unrevealed
    (the camera's card might be it, and naming it only when it is not would tell as much)."""
    return None if t.round is not None and t.game.hidden(t.round) else card


def seen_after_result(t, card, zone):
    """The camera reports a card of the round that has just ended. A match confirms it; anything
    else is reported for review (the result is out and settled: nothing left to pause)."""
    number, zones, seen = t.finished
    zc = dict(zones)
    t2 = t.but(finished=Finished(number, zones, seen + (Sighting(zone, card),)))
    done = sum(1 for z, c in seen if (z, c) == (zone, card))
    if zc.get(zone, ()).count(card) > done:
        return t2, [{"type": "card_confirmed", "round": number, "card": card, "zone": zone}]
    if done:
        return t, []     # seen again
    unconfirmed = list(zc.get(zone, ()))
    for z, c in seen:
        if z == zone and c in unconfirmed:
            unconfirmed.remove(c)
    other = next((z for z, cards in zones if z != zone and card in cards), None)
    detail = ({"card": card, "zone": zone, "expected_zone": other} if other else
              {"zone": zone, "seen": card, "read": unconfirmed})
    return t2, [after_result("misplaced_card" if other else "source_mismatch", number, detail)]


def after_result(code, number, detail):
    """An irregularity about a round whose result is already out: for review, nothing paused."""
    return {"type": "irregularity", "code": code, "round": number,
            "detail": {**detail, "after_result": True}}


def match_early(t, card, e, out):
    """The shoe's card for place `e` arrived; the camera may have seen a card there first (held
    in `t.early`). Returns (table, outputs, irregularity): the same card is confirmed (a
    card_confirmed right after its card_dealt); another card gives a source_mismatch, as
    (code, detail) for the table to raise. At the hole card's place nothing names a card: the
    camera seeing the hole card there is an exposed hole card, another card a mismatch."""
    zone = e.zone
    early = next((x for x in t.early if x[0] == zone), None)
    if early is None:
        return t, out, None
    t = t.but(early=tuple(x for x in t.early if x is not early))
    if e.face == "down":
        if early[1] == card:
            return t, out, ("exposed_hole_card", {"zone": zone})
        return t, out, ("source_mismatch", {"zone": zone, "seen": None, "read": []})
    if early[1] != card:
        return t, out, ("source_mismatch", {"zone": zone, "seen": withheld(t, early[1]),
                                            "read": [card]})
    i = next(i for i, o in enumerate(out) if o["type"] == "card_dealt") + 1
    out = out[:i] + [{"type": "card_confirmed", "round": t.round.number, "card": card,
                      "zone": zone}] + out[i:]
    return t.but(seen=t.seen + (early,)), out, None
