"""How each game's bets are paid: the bet fields and kinds, exact money, and one pay function
per game (`blackjack`, `baccarat`, `roulette`) and the refund of a voided round. The entry
point is `settlement.settle`; `games.py` picks the pay function of a profile's game."""
from decimal import Decimal
from fractions import Fraction

from .roulette import covered


class SettlementError(ValueError):
    """A bet that cannot be settled on this round or profile; the message says why."""


OUTCOME_RETURN = {"win": 2, "push": 1, "lose": 0,
                  "surrender": Fraction(1, 2)}

BET_FIELDS = {
    "seat": {"id", "kind", "seat", "amount", "insurance", "even_money", "pairs", "lucky7"},
    "behind": {"id", "kind", "seat", "amount", "insurance", "follow_double", "follow_split", "pairs"},
    "player": {"id", "kind", "amount"}, "banker": {"id", "kind", "amount"},
    "tie": {"id", "kind", "amount"},
}
BLACKJACK_KINDS = ("seat", "behind")
BACCARAT_KINDS = ("player", "banker", "tie")
ROULETTE_KINDS = ("straight", "split", "street", "trio", "corner", "six_line", "column", "dozen",
                  "red", "black", "odd", "even", "low", "high")
INSIDE_KINDS = ("straight", "split", "street", "trio", "corner", "six_line")
for _k in ROULETTE_KINDS:
    BET_FIELDS[_k] = {"id", "kind", "amount"} | (
        {"numbers"} if _k in INSIDE_KINDS else
        {"which"} if _k in ("column", "dozen") else set())


def money(x):
    """Minor units (an int or a Fraction) as an exact Decimal (every pay table here divides by
    2s and 5s)."""
    if isinstance(x, int):
        return Decimal(x)
    d = x.denominator
    if d == 1:
        return Decimal(x.numerator)
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d != 1:
        raise SettlementError(f"{x} minor units has no exact decimal form")
    return Decimal(x.numerator) / Decimal(x.denominator)


def _amount(bet, key, required=True):
    v = bet.get(key, 0)
    if not required and v == 0:
        return 0
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise SettlementError(f"bet {bet.get('id')!r}: {key} must be a positive whole number of "
                              f"minor units, got {v!r}")
    return v


def _flag(bet, key):
    v = bet.get(key, False)
    if not isinstance(v, bool):
        raise SettlementError(f"bet {bet.get('id')!r}: {key} must be true or false, got {v!r}")
    return v


def check_bet(bet, kinds):
    if not isinstance(bet, dict):
        raise SettlementError(f"a bet is an object, got {bet!r}")
    kind = bet.get("kind")
    if kind not in kinds:
        raise SettlementError(f"bet {bet.get('id')!r}: kind must be one of {', '.join(kinds)} "
                              f"for this game, got {kind!r}")
    extra = set(bet) - BET_FIELDS[kind]
    if extra:
        raise SettlementError(f"bet {bet.get('id')!r}: unknown field {sorted(extra)[0]!r}")
    return kind


def _exact(x):
    if isinstance(x, Fraction) and x.denominator == 1:
        return x.numerator
    return x


class _Bet:
    """Accumulates the lines of one bet."""

    def __init__(self, bet_id):
        self.id = bet_id
        self.lines = []

    def line(self, item, staked, returned, result):
        # ints stay ints (the common case, and much cheaper than Fractions); Fractions only
        # where a pay ratio leaves a fraction of a minor unit
        self.lines.append({"item": item, "staked": _exact(staked), "returned": _exact(returned),
                           "result": result})

    def raw(self):
        """Exact ints and Fractions (for simulations summing millions of bets)."""
        return {"id": self.id, "lines": self.lines}

    def out(self):
        staked = sum(x["staked"] for x in self.lines)
        returned = sum(x["returned"] for x in self.lines)
        return {"id": self.id, "staked": money(staked), "returned": money(returned),
                "net": money(returned - staked),
                "lines": [{**x, "staked": money(x["staked"]), "returned": money(x["returned"])}
                          for x in self.lines]}


def refund(profile, bet):
    """A voided round refunds everything (RULES.md: a malfunction voids all pays and plays).
    Double and split stakes placed during the round are refunded by whoever holds them."""
    b = _Bet(bet.get("id"))
    a = _amount(bet, "amount")
    b.line("bet", a, a, "refund")
    if bet.get("insurance"):
        b.line("insurance", Fraction(a, 2), Fraction(a, 2), "refund")
    for side in ("pairs", "lucky7"):
        s = _amount(bet, side, required=False)
        if s:
            b.line(side, s, s, "refund")
    return b


def baccarat(profile, res, bet):
    pay = profile.payouts
    a = _amount(bet, "amount")
    kind = bet["kind"]
    b = _Bet(bet.get("id"))
    w = res["winner"]
    if kind == "tie":
        ret = a * (1 + pay["tie"]) if w == "tie" else 0
        b.line("tie", a, ret, "win" if w == "tie" else "lose")
    elif w == "tie":
        b.line(kind, a, a, "push")  # Player and Banker bets push on a tie
    elif w == kind:
        win = a * pay[kind]
        if kind == "banker":
            win -= win * pay["banker_commission"]
        b.line(kind, a, a + win, "win")
    else:
        b.line(kind, a, 0, "lose")
    return b


def roulette(profile, res, bet):
    kind = bet["kind"]
    a = _amount(bet, "amount")
    numbers = bet.get("numbers")
    if numbers is not None and not (isinstance(numbers, list) and all(
            isinstance(n, int) and not isinstance(n, bool) for n in numbers)):
        raise SettlementError(f"bet {bet.get('id')!r}: numbers must be a list of pockets")
    cover = covered(kind, numbers, bet.get("which"))
    if cover is None:
        what = f"numbers {numbers}" if kind in INSIDE_KINDS else f"which {bet.get('which')!r} (1-3)"
        trio = " (0-1-2 and 0-2-3 are trios: kind trio)" if (
            kind == "street" and covered("trio", numbers) is not None) else ""
        raise SettlementError(f"bet {bet.get('id')!r}: {kind} on {what} is not a bet on the "
                              f"layout{trio}")
    # a trio pays as a street (11:1) unless the profile gives its own "trio" payout
    key = ("even_chance" if kind in ("red", "black", "odd", "even", "low", "high")
           else "street" if kind == "trio" and "trio" not in profile.payouts else kind)
    pay = profile.payouts[key]
    b = _Bet(bet.get("id"))
    # Zero is in no outside bet's numbers (red/black, odd/even, low/high, dozens, columns), so
    # they lose on zero: no la partage or en prison (docs/game-math.md, roulette settlement).
    won = res["number"] in cover
    b.line(kind, a, a * (1 + pay) if won else 0, "win" if won else "lose")
    return b


def _up_card(profile, dealer_cards):
    return dealer_cards[0] if profile.dealer_order == "up_hole" else dealer_cards[1]


def _hand_return(profile, hand, stake):
    if hand["outcome"] == "blackjack":
        return stake * (1 + profile.payouts["blackjack"])
    return stake * OUTCOME_RETURN[hand["outcome"]]


def _seat_refund(profile, bet):
    """RULES.md (000): bets behind and Pairs on a seat that took no cards are refunded; a seat
    bet there was not valid when betting closed, so it goes back whole as well."""
    b = refund(profile, bet)
    for x in b.lines:
        x["result"] = "refund: seat not in play"
    return b


def blackjack(profile, res, seats, bet):
    bid = bet.get("id")
    seat = bet.get("seat")
    if not (isinstance(seat, int) and not isinstance(seat, bool) and 1 <= seat <= profile.seats):
        raise SettlementError(f"bet {bid!r}: no seat {seat!r} at this table (1-{profile.seats})")
    if seat not in seats:
        return _seat_refund(profile, bet)
    s = seats[seat]
    a = _amount(bet, "amount")
    up = _up_card(profile, res["dealer"]["cards"])
    dealer_bj = res["dealer"]["blackjack"]
    b = _Bet(bid)
    behind = bet["kind"] == "behind"
    even = not behind and _flag(bet, "even_money")
    if even:
        if not profile.even_money or up[0] != "A" or not s["hands"][0]["outcome"] in ("blackjack", "push") \
                or len(s["hands"]) != 1 or s["hands"][0]["split"]:
            raise SettlementError(f"bet {bid!r}: even money is only for a blackjack against an ace "
                                  f"in a profile that offers it")
        b.line("even_money", a, 2 * a, "win")   # paid 1:1 at once, whatever the dealer has
    else:
        hands = s["hands"]
        follow = hands if (not behind or _flag(bet, "follow_split")) else hands[:1]
        double = (not behind) or _flag(bet, "follow_double")
        for i, h in enumerate(follow):
            stake = a * (2 if h["doubled"] and double else 1)
            b.line(f"hand {i}", stake, _hand_return(profile, h, stake), h["outcome"])
    if _flag(bet, "insurance"):
        if not profile.insurance or up[0] != "A":
            raise SettlementError(f"bet {bid!r}: insurance is only offered against an ace up"
                                  + ("" if profile.insurance else f" ({profile.name} has none)"))
        if even or (profile.even_money and not behind and s["hands"][0]["outcome"] in
                    ("blackjack", "push") and len(s["hands"][0]["cards"]) == 2
                    and s["hands"][0]["total"] == 21 and not s["hands"][0]["split"]):
            raise SettlementError(f"bet {bid!r}: a blackjack is offered even money, not insurance")
        stake = Fraction(a, 2)
        ret = stake * (1 + profile.payouts["insurance"]) if dealer_bj else 0
        b.line("insurance", stake, ret, "win" if dealer_bj else "lose")
    p = _amount(bet, "pairs", required=False)
    if p:
        if not profile.pairs:
            raise SettlementError(f"bet {bid!r}: {profile.name} has no Pairs side bet")
        pattern = s["pairs"]
        ret = p * (1 + profile.payouts[f"pairs_{pattern}"]) if pattern != "none" else 0
        b.line("pairs", p, ret, pattern)
    seven = _amount(bet, "lucky7", required=False) if not behind else 0
    if seven:
        if not profile.lucky7:
            raise SettlementError(f"bet {bid!r}: {profile.name} has no Lucky-7 side bet")
        missing = [k for k in ("lucky7_1", "lucky7_2", "lucky7_3") if k not in profile.payouts]
        if missing:
            raise SettlementError(f"bet {bid!r}: profile {profile.name} has no Lucky-7 pay table "
                                  f"(the operator sets payouts.{missing[0]} in the profile)")
        n = s["lucky7"]
        ret = seven * (1 + profile.payouts[f"lucky7_{n}"]) if n else 0
        b.line("lucky7", seven, ret, f"{n} sevens")
    return b
