"""A punto banco round (RULES.md, "Baccarat"). The drawing rules live here once: the engine and
the exact analysis (`analysis.py`) both call `next_hand`."""
from .cards import BAC_VALUE
from .expectation import Expect

# Banker total -> the Player third-card values on which the Banker draws (RULES.md table).
BANKER_DRAWS_ON = {
    0: frozenset(range(10)), 1: frozenset(range(10)), 2: frozenset(range(10)),
    3: frozenset({0, 1, 2, 3, 4, 5, 6, 7, 9}),
    4: frozenset({2, 3, 4, 5, 6, 7}),
    5: frozenset({4, 5, 6, 7}),
    6: frozenset({6, 7}),
    7: frozenset(),
}


def player_draws(player_total):
    return player_total <= 5


def banker_draws(banker_total, player_third):
    """`player_third` is the Player's third card in points, or None when the Player stood."""
    if banker_total >= 8:
        return False
    if player_third is None:
        return banker_total <= 5
    return player_third in BANKER_DRAWS_ON[banker_total]


def next_hand(player, banker):
    """Which hand the next card goes to, 'player' or 'banker', or None when the coup is complete.
    `player` and `banker` are the point values of the cards dealt so far, in order."""
    n = len(player) + len(banker)
    if n < 4:
        return "player" if n % 2 == 0 else "banker"
    pt = (player[0] + player[1]) % 10
    bt = (banker[0] + banker[1]) % 10
    if pt >= 8 or bt >= 8:
        return None  # a natural: both stand
    if len(player) == 2:
        if len(banker) == 2:
            if player_draws(pt):
                return "player"
            return "banker" if banker_draws(bt, None) else None
        return None
    if len(banker) == 2:
        return "banker" if banker_draws(bt, player[2]) else None
    return None


class Round:
    __slots__ = ("number", "profile", "player", "banker", "over")

    def __init__(self, number, profile, player=(), banker=(), over=False):
        self.number = number
        self.profile = profile
        self.player = player
        self.banker = banker
        self.over = over

    def values(self):
        return tuple(BAC_VALUE[c] for c in self.player), tuple(BAC_VALUE[c] for c in self.banker)


_AWAIT = {to: Expect.card(to) for to in ("player", "banker")}


def expect(rnd):
    if rnd.over:
        return None
    return _AWAIT[next_hand(*rnd.values())]


def announce(rnd):
    e = expect(rnd)
    if e is None:
        return []
    return [{"type": "awaiting_card", "round": rnd.number, "to": e.to, "seat": None, "hand": None,
             "face": "up"}]


def start(profile, number):
    rnd = Round(number, profile)
    out = [{"type": "round_started", "round": number, "game": "baccarat", "profile": profile.name,
            "seats": None}]
    return rnd, out + announce(rnd)


def on_card(rnd, card):
    pv, bv = rnd.values()
    to = next_hand(pv, bv)
    if to == "player":
        rnd = Round(rnd.number, rnd.profile, rnd.player + (card,), rnd.banker)
        pv = pv + (BAC_VALUE[card],)
    else:
        rnd = Round(rnd.number, rnd.profile, rnd.player, rnd.banker + (card,))
        bv = bv + (BAC_VALUE[card],)
    out = [{"type": "card_dealt", "round": rnd.number, "card": card, "to": to, "seat": None,
            "hand": None, "face": "up"}]
    nxt = next_hand(pv, bv)
    if nxt is not None:
        out.append({"type": "awaiting_card", "round": rnd.number, "to": nxt, "seat": None,
                    "hand": None, "face": "up"})
        return rnd, out
    rnd.over = True
    pt = sum(pv) % 10
    bt = sum(bv) % 10
    natural = (pv[0] + pv[1]) % 10 >= 8 or (bv[0] + bv[1]) % 10 >= 8
    out.append({"type": "round_result", "round": rnd.number, "game": "baccarat",
                "profile": rnd.profile.name,
                "player": {"cards": list(rnd.player), "total": pt},
                "banker": {"cards": list(rnd.banker), "total": bt},
                "winner": "player" if pt > bt else "banker" if bt > pt else "tie",
                "natural": natural})
    return rnd, out
