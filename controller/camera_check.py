"""The camera cross-check (the `card_seen` input): a card the camera saw in a zone, checked
against what the shoe read and where the engine sent it. Part of the pure core, split from
`table.py` for size; it calls back into the table's helpers."""
from . import table as T
from .protocol import Rejected


def zone_of(e):
    """The camera zone of a card destination ('card', to, seat, ...)."""
    return f"seat_{e[2]}" if e[1] == "seat" else e[1]


def zone_cards(t):
    """{zone: [cards placed there]} in the round under way, as far as a camera may see them."""
    r = t.round
    if r is None or t.profile.game == "roulette":
        return {}
    if t.profile.game == "baccarat":
        return {"player": list(r.player), "banker": list(r.banker)}
    out = {f"seat_{s.seat}": list(s.dealt) for s in r.seats}
    dealer = list(r.dealer)
    if not r.revealed and len(dealer) > r.hole_index:
        del dealer[r.hole_index]            # face down: not for the camera to confirm yet
    out["dealer"] = dealer
    return out


def card_seen(t, ev):
    """The camera saw `card` land in `zone`: confirm it against what the shoe read and where the
    engine sent it, deal it (camera as the card source), or identify an unreadable card."""
    T._no_cards(t, "card_seen")
    card, zone = ev["card"], ev["zone"]
    if t.round is None and not (t.paused and t.pending):
        if t.finished is None:
            raise Rejected("no_round", "no round is under way: nothing to check the camera against")
        return seen_after_result(t, card, zone)
    misread = next((p for p in t.pending if p[0] == "misread" and p[2] is not None
                    and p[2][0] == "card" and zone_of(p[2]) == zone), None)
    if t.paused and misread is not None:
        return T._identify(t, card, "camera")
    e = T.expect(t)
    if t.profile.card_source == "camera" and e is not None and e[0] == "card" and e[1] != "burn":
        if zone_of(e) != zone:
            return T._irregular(t, "misplaced_card", {"card": card, "zone": zone,
                                                      "expected_zone": zone_of(e)},
                                ("unexpected", card, None))
        t2, out = T._card(t, {"type": "card", "card": card, "source": "camera"})
        return t2.but(seen=t2.seen + ((zone, card),)), out
    zc = zone_cards(t)
    confirmed = sum(1 for z, c in t.seen if (z, c) == (zone, card))
    if zc.get(zone, []).count(card) > confirmed:
        return t.but(seen=t.seen + ((zone, card),)), [
            {"type": "card_confirmed", "round": t.round.number, "card": card, "zone": zone}]
    if confirmed:
        return t, []     # seen again (a hand hid it a while, the daemon restarted): nothing new
    if (e is not None and e[0] == "card" and e[1] != "burn" and zone_of(e) == zone
            and not any(z == zone for z, _ in t.early)):
        return t.but(early=t.early + ((zone, card),)), []    # ahead of the shoe's read
    for other, cards in zc.items():
        done = sum(1 for z, c in t.seen if (z, c) == (other, card))
        if other != zone and cards.count(card) > done:
            return T._irregular(t, "misplaced_card", {"card": card, "zone": zone,
                                                      "expected_zone": other}, ("seen", card, None))
    unconfirmed = list(zc.get(zone, []))
    for z, c in t.seen:
        if z == zone and c in unconfirmed:
            unconfirmed.remove(c)
    return T._irregular(t, "source_mismatch", {"zone": zone, "seen": card, "read": unconfirmed},
                        ("seen", card, None))


def seen_after_result(t, card, zone):
    """The camera reports a card of the round that has just ended. A match confirms it; anything
    else is reported for review (the result is out and settled: nothing left to pause)."""
    number, zones, seen = t.finished
    zc = dict(zones)
    t2 = t.but(finished=(number, zones, seen + ((zone, card),)))
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
    return t2, [{"type": "irregularity", "code": "misplaced_card" if other else "source_mismatch",
                 "round": number, "detail": {**detail, "after_result": True}}]


def dealt_after_seen(t, card, e, out):
    """The shoe's card for place `e` arrived after the camera saw a card there (held in
    `t.early`): the same card is confirmed, another is a source_mismatch."""
    rnd = t.round
    zone = zone_of(e)
    early = next((x for x in t.early if x[0] == zone), None)
    if early is None:
        return T._after_round_step(t, out)
    t = t.but(early=tuple(x for x in t.early if x is not early))
    if early[1] == card:
        i = next(i for i, o in enumerate(out) if o["type"] == "card_dealt") + 1
        out = out[:i] + [{"type": "card_confirmed", "round": rnd.number, "card": card,
                          "zone": zone}] + out[i:]
        return T._after_round_step(t.but(seen=t.seen + (early,)), out)
    detail = {"zone": zone, "seen": early[1], "read": [card]}
    t, out = T._after_round_step(t, out)
    if t.round is None:      # that card ended the round: the result stands, reported for review
        return t, out + [{"type": "irregularity", "code": "source_mismatch", "round": rnd.number,
                          "detail": {**detail, "after_result": True}}]
    t, more = T._irregular(t, "source_mismatch", detail, ("seen", early[1], None))
    return t, out + more
