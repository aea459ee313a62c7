"""Game profiles: every rule of RULES.md that differs between tables, as frozen data.

A profile is built from a plain mapping (what `tomllib` gives for a profile file) by
`profile_from_mapping`, which validates strictly: an unknown key or a value out of range is an
error naming the key. Reading the file is the shell's job; this module only sees data.
"""
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction

from .games import GAMES as _GAMES, Baccarat, Roulette


class FrozenMap(dict):
    """A read-only dict (the pay table of a frozen profile) that still pickles, so a profile can
    travel to the worker processes of a simulation."""

    def _read_only(self, *args, **kwargs):
        raise TypeError("a profile's payouts are read-only")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only

    def __hash__(self):
        return hash(tuple(sorted(self.items())))

    def __reduce__(self):
        return (FrozenMap, (dict(self),))

GAMES = tuple(_GAMES)            # the games the engine plays (games.py)
DEALER_ORDERS = ("up_hole", "hole_up")
PEEK_CARDS = ("ace", "ten")
TIMEOUT_PLAYS = ("hit_to_12", "stand")

BLACKJACK_PAYOUTS = ("blackjack", "win", "insurance", "even_money")
PAIRS_PAYOUTS = ("pairs_mixed", "pairs_coloured", "pairs_perfect", "pairs_suited_trips")
LUCKY7_PAYOUTS = ("lucky7_1", "lucky7_2", "lucky7_3")
BACCARAT_PAYOUTS = Baccarat.payouts
ROULETTE_PAYOUTS = Roulette.payouts


class ProfileError(ValueError):
    """A profile mapping that does not describe a valid profile. `errors`: every problem found,
    each naming its key (section.key); the message is them all, one per line."""

    def __init__(self, errors):
        self.errors = [errors] if isinstance(errors, str) else list(errors)
        super().__init__("\n".join(self.errors))


@dataclass(frozen=True)
class Profile:
    name: str
    game: str
    decks: int
    seats: int = 0
    dealer_order: str = "up_hole"
    peek: tuple = ()
    insurance: bool = False
    even_money: bool = False
    surrender: bool = False
    double_after_split: bool = True
    max_hands: int = 2
    resplit_aces: bool = False
    dealer_hits_soft_17: bool = False
    timeout_play: str = "stand"
    burn: bool = True
    cut_card_from_back: int | None = None
    cut_card_tolerance: int = 26
    shuffle_every_round: bool = False
    pairs: bool = False
    lucky7: bool = False
    require_inspection: bool = False  # shoe_loaded must record the shoe's inspection (002)
    card_source: str = "shoe"      # "camera": the camera's reads deal the cards (no shoe scanner)
    payouts: FrozenMap = field(default_factory=FrozenMap)

    @property
    def cards(self):
        return 52 * self.decks


def _payouts(d):
    return FrozenMap({k: Fraction(v) for k, v in d.items()})


_BJ_PAY = {"blackjack": Fraction(3, 2), "win": 1, "insurance": 2, "even_money": 1}

BUILTIN = {
    # 000: 8 decks, 7 seats, up then hole, insurance, ends at once on dealer blackjack (the shoe
    # reads the hole card), surrender not against A/T, DAS, no resplit, S17, auto-play on timeout.
    "luxury21": Profile(
        name="luxury21", game="blackjack", decks=8, seats=7, dealer_order="up_hole",
        peek=("ace", "ten"), insurance=True, even_money=False, surrender=True,
        double_after_split=True, max_hands=2, resplit_aces=False, dealer_hits_soft_17=False,
        timeout_play="hit_to_12", burn=True, cut_card_from_back=4 * 52, cut_card_tolerance=26,
        shuffle_every_round=False, pairs=True, lucky7=False,
        payouts=_payouts({**_BJ_PAY, "pairs_mixed": 5, "pairs_coloured": 10, "pairs_perfect": 30,
                          "pairs_suited_trips": 50}),
    ),
    # 001: 6 decks, no peek, no insurance, no surrender, split to 4 hands, aces once, S17.
    # Seats: the house rules' blackjack table (002) has at most seven.
    "european": Profile(
        name="european", game="blackjack", decks=6, seats=7, dealer_order="up_hole",
        peek=(), insurance=False, even_money=False, surrender=False, double_after_split=True,
        max_hands=4, resplit_aces=False, dealer_hits_soft_17=False, timeout_play="stand",
        burn=True, cut_card_from_back=4 * 52, cut_card_tolerance=26, shuffle_every_round=False,
        payouts=_payouts({"blackjack": Fraction(3, 2), "win": 1}),
    ),
    # 004: 8 decks shuffled after every round, hole card first, peek on ten or ace, insurance and
    # even money, split once, DAS, S17, no cut card, no burn. Lucky-7 pays are operator config.
    "lucky7": Profile(
        name="lucky7", game="blackjack", decks=8, seats=3, dealer_order="hole_up",
        peek=("ace", "ten"), insurance=True, even_money=True, surrender=False,
        double_after_split=True, max_hands=2, resplit_aces=False, dealer_hits_soft_17=False,
        timeout_play="stand", burn=False, cut_card_from_back=None, cut_card_tolerance=0,
        shuffle_every_round=True, lucky7=True, payouts=_payouts(_BJ_PAY),
    ),
    # 002: a European single-zero wheel, no cards.
    "roulette": Profile(
        name="roulette", game="roulette", decks=0, burn=False, cut_card_from_back=None,
        cut_card_tolerance=0,
        payouts=_payouts({"straight": 35, "split": 17, "street": 11, "corner": 8, "six_line": 5,
                          "column": 2, "dozen": 2, "even_chance": 1}),
    ),
    # 003/002: 8 decks, burn by the first card, cut card seven cards from the back.
    "punto_banco": Profile(
        name="punto_banco", game="baccarat", decks=8, burn=True, cut_card_from_back=7,
        cut_card_tolerance=13,
        payouts=_payouts({"player": 1, "banker": 1, "banker_commission": Fraction(1, 20),
                          "tie": 8}),
    ),
}


def get_profile(name):
    try:
        return BUILTIN[name]
    except KeyError:
        raise ProfileError(f"unknown profile {name!r}; built in: {', '.join(BUILTIN)}") from None


def _ratio(where, v):
    """A payout: an integer, or "a:b" (3:2), or "a/b"; positive, exact."""
    try:
        if isinstance(v, bool):
            raise ValueError
        if isinstance(v, int):
            r = Fraction(v)
        elif isinstance(v, str) and ":" in v:
            a, b = v.split(":")
            r = Fraction(int(a), int(b))
        elif isinstance(v, str):
            r = Fraction(v)
        else:
            raise ValueError
    except (ValueError, ZeroDivisionError):
        raise ProfileError(f"{where}: expected a ratio like 3:2 or an integer, got {v!r}") from None
    if r < 0:
        raise ProfileError(f"{where}: must not be negative, got {v!r}")
    return r


def _check(where, key, v, kind, lo=None, hi=None, choices=None):
    if kind is bool:
        ok = isinstance(v, bool)
    elif kind is int:
        ok = isinstance(v, int) and not isinstance(v, bool)
    else:
        ok = isinstance(v, kind)
    if not ok:
        raise ProfileError(f"{where}.{key}: expected {kind.__name__}, got {v!r}")
    if choices is not None and v not in choices:
        raise ProfileError(f"{where}.{key}: must be one of {', '.join(choices)}, got {v!r}")
    if lo is not None and not (lo <= v <= hi):
        raise ProfileError(f"{where}.{key}: must be {lo}-{hi}, got {v!r}")
    return v


_RULES = {  # key: (type, lo, hi, choices)
    "name": (str, None, None, None), "game": (str, None, None, GAMES), "decks": (int, 1, 8, None),
    "seats": (int, 0, 7, None), "dealer_order": (str, None, None, DEALER_ORDERS),
    "insurance": (bool, None, None, None), "even_money": (bool, None, None, None),
    "surrender": (bool, None, None, None), "double_after_split": (bool, None, None, None),
    "max_hands": (int, 1, 4, None), "resplit_aces": (bool, None, None, None),
    "dealer_hits_soft_17": (bool, None, None, None),
    "timeout_play": (str, None, None, TIMEOUT_PLAYS), "burn": (bool, None, None, None),
    "cut_card_from_back": (int, 1, 416, None), "cut_card_tolerance": (int, 0, 416, None),
    "shuffle_every_round": (bool, None, None, None), "pairs": (bool, None, None, None),
    "lucky7": (bool, None, None, None),
    "card_source": (str, None, None, ("shoe", "camera")),
    "require_inspection": (bool, None, None, None),
}


def profile_from_mapping(data, where="profile"):
    """Build a Profile from a mapping: `base` names a built-in profile to start from (required
    unless every field is given), other keys override it. Raises ProfileError naming every bad
    key at once (a profile file is fixed in one go, not one error per try)."""
    if not isinstance(data, dict):
        raise ProfileError(f"{where}: expected a table, got {type(data).__name__}")
    data = dict(data)
    errors = []

    def checked(fn, *args):
        try:
            return True, fn(*args)
        except ProfileError as e:
            errors.extend(e.errors)
            return False, None

    base = data.pop("base", None)
    values = {}
    base_ok = True
    if base is not None:
        base_ok, start = checked(lambda: get_profile(_check(where, "base", base, str)))
        if base_ok:
            values = {f.name: getattr(start, f.name) for f in fields(Profile)}
    known = {f.name for f in fields(Profile)}
    for key, v in data.items():
        if key not in known:
            errors.append(f"{where}.{key}: unknown key (known: base, {', '.join(sorted(known))})")
        elif key == "peek":
            if not isinstance(v, list) or any(p not in PEEK_CARDS for p in v):
                errors.append(f"{where}.peek: expected a list of 'ace'/'ten', got {v!r}")
            else:
                values[key] = tuple(p for p in PEEK_CARDS if p in v)
        elif key == "payouts":
            if not isinstance(v, dict):
                errors.append(f"{where}.payouts: expected a table, got {v!r}")
                continue
            allowed = (BLACKJACK_PAYOUTS + PAIRS_PAYOUTS + LUCKY7_PAYOUTS + BACCARAT_PAYOUTS
                       + ROULETTE_PAYOUTS)
            merged = dict(values.get("payouts", {}))
            for k, r in v.items():
                if k not in allowed:
                    errors.append(f"{where}.payouts.{k}: unknown payout (known: {', '.join(allowed)})")
                else:
                    ok, ratio = checked(_ratio, f"{where}.payouts.{k}", r)
                    if ok:
                        merged[k] = ratio
            values[key] = FrozenMap(merged)
        else:
            ok, value = checked(_check, where, key, v, *_RULES[key])
            if ok:
                values[key] = value
    if base_ok:   # with a bad base, what it would have given is not missing
        errors += [f"{where}.{k}: missing (or give base = a built-in profile)"
                   for k in ("name", "game", "decks") if k not in values and k not in data]
    if errors:
        raise ProfileError(errors)
    p = Profile(**values)
    _consistent(p, where)
    return p


def _consistent(p, where):
    """Rules across keys, each broken one reported (once the keys themselves are valid)."""
    game = _GAMES[p.game]
    errors = []
    problem = game.profile_problem(p)
    if problem:
        errors.append(f"{where}.{problem[0]}: {problem[1]}")
    if p.cut_card_from_back is not None and p.cut_card_from_back >= p.cards:
        errors.append(f"{where}.cut_card_from_back: {p.cut_card_from_back} is not inside a "
                      f"{p.decks}-deck shoe")
    if p.even_money and not p.insurance:
        errors.append(f"{where}.even_money: even money is offered with insurance; set insurance")
    if p.insurance and "ace" not in p.peek:
        errors.append(f"{where}.insurance: insurance needs the dealer to peek on an ace")
    errors += [f"{where}.payouts.{k}: missing" for k in game.payouts if k not in p.payouts]
    if errors:
        raise ProfileError(errors)


def with_changes(profile, **changes):
    return replace(profile, **changes)
