"""A blackjack round's end (a part of blackjack.py): the hole card revealed (once, also when it
was exposed by mistake and kept in play), the dealer's drawing rule, and the result with the side
bets' patterns (Pairs, Lucky 7). It calls nothing of the round's course: the imports point one way."""
from .cards import RED, hand_total


def expose_hole(rnd):
    """The hole card exposed by mistake and kept in play (the supervisor's "continue")."""
    out = []
    return _reveal(rnd, out), out


def _reveal(rnd, out):
    if rnd.revealed:        # exposed earlier (a dealer error kept in play): said once
        return rnd
    out.append({"type": "hole_card_revealed", "round": rnd.number,
                "card": rnd.dealer[rnd.hole_index]})
    return rnd.but(revealed=True)


def _dealer_draws(rnd):
    total, soft = hand_total(rnd.dealer)
    if len(rnd.dealer) == 2 and total == 21:
        return False
    if not (total < 17 or (total == 17 and soft and rnd.profile.dealer_hits_soft_17)):
        return False
    # House rules: no card that cannot change the result.
    return any(not (h.surrendered or h.total > 21 or h.natural)
               for s in rnd.seats for h in s.hands)


def pairs_pattern(a, b, up):
    """The Pairs side bet's highest pattern for a seat's first two cards and the dealer's up card."""
    if a[0] != b[0]:
        return "none"
    if a == b:
        return "suited_trips" if up == a else "perfect"
    return "coloured" if (a in RED) == (b in RED) else "mixed"


def lucky7_count(dealt):
    n = 0
    for c in dealt[:3]:
        if c[0] != "7":
            break
        n += 1
    return n


def _finish(rnd, out):
    rnd = rnd.but(phase="over")
    d_total, _ = hand_total(rnd.dealer)
    d_bj = len(rnd.dealer) == 2 and d_total == 21
    d_bust = d_total > 21
    p = rnd.profile
    seats = []
    for s in rnd.seats:
        hands = []
        for h in s.hands:
            if h.surrendered:
                res = "surrender"
            elif h.total > 21:
                res = "lose"
            elif h.natural:
                res = "push" if d_bj else "blackjack"
            elif d_bj:
                res = "lose"
            elif d_bust or h.total > d_total:
                res = "win"
            else:
                res = "push" if h.total == d_total else "lose"
            hands.append({"cards": list(h.cards), "total": h.total, "soft": h.soft,
                          "outcome": res, "doubled": h.doubled, "split": h.split})
        entry = {"seat": s.seat}
        if p.pairs:
            entry["pairs"] = pairs_pattern(s.dealt[0], s.dealt[1], rnd.up_card)
        if p.lucky7:
            entry["lucky7"] = lucky7_count(s.dealt)
        entry["hands"] = hands
        seats.append(entry)
    out.append({"type": "round_result", "round": rnd.number, "game": "blackjack",
                "profile": p.name,
                "dealer": {"cards": list(rnd.dealer), "total": d_total, "blackjack": d_bj,
                           "bust": d_bust},
                "seats": seats})
    return rnd, out
