"""A European single-zero roulette round (RULES.md, "Roulette"): betting closes ("no more bets",
from the wheel or the betting system), the wheel's winning number ends the round. A no-spin
(the wheel's flag, too few revolutions, or declared by the dealer) voids the spin, not the round:
the bets stay locked and the round waits for the next valid spin. Also the layout: which numbers each bet covers, written once for the engine, the
settlement and the analysis."""
from .expectation import Expect

TRIOS = (frozenset((0, 1, 2)), frozenset((0, 2, 3)))    # the three-number bets with zero
RED = frozenset({1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36})


def describe(n):
    """The round_result fields of a winning number."""
    if n == 0:
        return {"number": 0, "colour": "green", "even_odd": None, "low_high": None,
                "dozen": None, "column": None}
    return {"number": n, "colour": "red" if n in RED else "black",
            "even_odd": "even" if n % 2 == 0 else "odd", "low_high": "low" if n <= 18 else "high",
            "dozen": (n - 1) // 12 + 1, "column": (n - 1) % 3 + 1}


def _streets():
    return [frozenset((r, r + 1, r + 2)) for r in range(1, 35, 3)]


def _splits():
    out = {frozenset((0, n)) for n in (1, 2, 3)}
    for n in range(1, 37):
        if n % 3 != 0:
            out.add(frozenset((n, n + 1)))          # side by side in a row
        if n <= 33:
            out.add(frozenset((n, n + 3)))          # one above the other
    return out


def _corners():
    out = {frozenset((0, 1, 2, 3))}                 # the first four
    for n in range(1, 33):
        if n % 3 != 0:
            out.add(frozenset((n, n + 1, n + 3, n + 4)))
    return out


INSIDE = {"straight": {frozenset((n,)) for n in range(37)}, "split": _splits(),
          "street": set(_streets()), "trio": set(TRIOS), "corner": _corners(),
          "six_line": {frozenset(range(r, r + 6)) for r in range(1, 32, 3)}}
OUTSIDE = {"red": RED, "black": frozenset(range(1, 37)) - RED,
           "odd": frozenset(range(1, 37, 2)), "even": frozenset(range(2, 37, 2)),
           "low": frozenset(range(1, 19)), "high": frozenset(range(19, 37))}


def covered(kind, numbers=None, which=None):
    """The numbers a bet covers, or None when it is not a bet on this layout."""
    if kind in INSIDE:
        s = frozenset(numbers or ())
        return s if s in INSIDE[kind] else None
    if kind in OUTSIDE:
        return OUTSIDE[kind]
    if kind == "dozen" and which in (1, 2, 3):
        return frozenset(range(12 * (which - 1) + 1, 12 * which + 1))
    if kind == "column" and which in (1, 2, 3):
        return frozenset(range(which, 37, 3))
    return None


MIN_REVOLUTIONS = 3      # RULES.md: a valid spin completes at least 3 revolutions


class Round:
    __slots__ = ("number", "profile", "over", "void_spins")

    def __init__(self, number, profile, over=False, void_spins=0):
        self.number = number
        self.profile = profile
        self.over = over
        self.void_spins = void_spins      # spins declared void in this round (re-spun)


def expect(rnd):
    return None if rnd.over else Expect.RESULT


def announce(rnd):
    return [] if rnd.over else [{"type": "awaiting_result", "round": rnd.number}]


def start(profile, number):
    rnd = Round(number, profile)
    return rnd, [{"type": "round_started", "round": number, "game": "roulette",
                  "profile": profile.name, "seats": None}] + announce(rnd)


def on_spin_void(rnd, spin, reason, by=None):
    """The spin is void (no-spin): the bets stay locked and the ball is spun again."""
    again = Round(rnd.number, rnd.profile, void_spins=rnd.void_spins + 1)
    out = {"type": "spin_void", "round": rnd.number, "spin": spin, "reason": reason,
           "void_spins": again.void_spins}
    if by is not None:
        out["by"] = by
    return again, [out] + announce(again)


def on_number(rnd, n, spin=None, revolutions=None, manual=None):
    """The winning number; `manual` = (by, reason) when a supervisor entered it by hand."""
    if revolutions is not None and revolutions < MIN_REVOLUTIONS:
        return on_spin_void(rnd, spin, f"too few revolutions ({revolutions}, at least "
                                       f"{MIN_REVOLUTIONS})")
    done = Round(rnd.number, rnd.profile, over=True, void_spins=rnd.void_spins)
    result = {"type": "round_result", "round": rnd.number, "game": "roulette",
              "profile": rnd.profile.name, **describe(n)}
    if spin is not None:
        result["spin"] = spin
    if manual is not None:
        result["manual"] = {"by": manual[0], "reason": manual[1]}
    return done, [result]
