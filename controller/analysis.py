"""Game math from the rule code that runs the table.

- `baccarat_exact`: enumerates every coup through `baccarat.next_hand`, the engine's own
  drawing rule, with exact integer weights.
- `pairs_exact`: enumerates the seat's two cards and the dealer's up card through the engine's
  own `pairs_pattern`.
- `simulate`: plays whole shoes through `table.step` (via autoplay) with a computer player and
  settles every round with `settlement.settle`. Pure: the caller shuffles.
"""
from fractions import Fraction

from .autoplay import play_shoe
from .baccarat import next_hand
from .blackjack import pairs_pattern
from .cards import CARDS
from .settlement import settle

PATTERNS = ("suited_trips", "perfect", "coloured", "mixed", "none")


def baccarat_exact(profile, decks=None):
    """Exact probabilities of Player, Banker and Tie and each bet's expected return per unit,
    for a fresh shoe of `decks` decks (default: the profile's)."""
    decks = decks or profile.decks
    counts = [16 * decks] + [4 * decks] * 9   # cards per baccarat point value 0-9
    total = 52 * decks
    tally = {"player": 0, "banker": 0, "tie": 0}
    naturals = [0]

    def deal(p, b, remaining, weight):
        to = next_hand(p, b)
        if to is None:
            for k in range(6 - len(p) - len(b)):  # every coup over the same 6-card denominator
                weight *= remaining - k
            pt, bt = sum(p) % 10, sum(b) % 10
            tally["player" if pt > bt else "banker" if bt > pt else "tie"] += weight
            if len(p) == 2 and len(b) == 2 and ((p[0] + p[1]) % 10 >= 8 or (b[0] + b[1]) % 10 >= 8):
                naturals[0] += weight
            return
        for v in range(10):
            c = counts[v]
            if c:
                counts[v] = c - 1
                if to == "player":
                    deal(p + (v,), b, remaining - 1, weight * c)
                else:
                    deal(p, b + (v,), remaining - 1, weight * c)
                counts[v] = c
    deal((), (), total, 1)
    den = 1
    for k in range(6):
        den *= total - k
    pr = {k: Fraction(v, den) for k, v in tally.items()}
    pay = profile.payouts
    banker_win = pay["banker"] * (1 - pay["banker_commission"])
    ev = {"player": pr["player"] * pay["player"] - pr["banker"],
          "banker": pr["banker"] * banker_win - pr["player"],
          "tie": pr["tie"] * pay["tie"] - (1 - pr["tie"])}
    return {"decks": decks, "probability": pr, "expected_return": ev,
            "house_edge": {k: -v for k, v in ev.items()}, "natural": Fraction(naturals[0], den)}


def pairs_exact(profile, decks=None):
    """Exact probabilities of each Pairs pattern (seat's first two cards, dealer's up card) and
    the side bet's return to player under the profile's pay table."""
    decks = decks or profile.decks
    n = 52 * decks
    weight = {p: 0 for p in PATTERNS}
    for a in CARDS:
        for up in CARDS:
            w_up = decks - (up == a)
            for b in CARDS:
                w_b = decks - (b == a) - (b == up)
                if w_b > 0:
                    weight[pairs_pattern(a, b, up)] += decks * w_up * w_b
    den = n * (n - 1) * (n - 2)
    pr = {k: Fraction(v, den) for k, v in weight.items()}
    pay = profile.payouts
    rtp = sum(pr[p] * (1 + pay[f"pairs_{p}"]) for p in PATTERNS if p != "none")
    return {"decks": decks, "probability": pr, "perfect_any": pr["perfect"] + pr["suited_trips"],
            "rtp": rtp, "house_edge": 1 - rtp}


class Tally:
    """Sums for one bet type: per round, net return X and stake units m (initial bets)."""

    __slots__ = ("rounds", "units", "net", "x2", "xm", "m2", "staked")

    def __init__(self):
        self.rounds = self.units = 0
        self.net = self.x2 = self.xm = self.m2 = self.staked = 0.0

    def add(self, x, m, staked):
        self.rounds += 1
        self.units += m
        self.net += x
        self.x2 += x * x
        self.xm += x * m
        self.m2 += m * m
        self.staked += staked

    def merge(self, o):
        for k in Tally.__slots__:
            setattr(self, k, getattr(self, k) + getattr(o, k))
        return self

    def as_dict(self):
        return {k: getattr(self, k) for k in Tally.__slots__}

    @classmethod
    def from_dict(cls, d):
        t = cls()
        for k in Tally.__slots__:
            setattr(t, k, d[k])
        return t

    def summary(self):
        """Expected return per initial bet with a 95% interval (ratio estimator over rounds:
        the hands of one round share the dealer's cards, so rounds are the independent unit)."""
        if not self.units:
            return None
        r = self.net / self.units
        n = self.rounds
        ss = self.x2 - 2 * r * self.xm + r * r * self.m2
        mbar = self.units / n
        se = (ss / (n - 1)) ** 0.5 / (mbar * n ** 0.5) if n > 1 else float("inf")
        return {"hands": self.units, "rounds": n, "house_edge": -r, "rtp": 1 + r,
                "ci95": [1 + r - 1.96 * se, 1 + r + 1.96 * se], "std_error": se,
                "return_per_wagered": 1 + self.net / self.staked if self.staked else None}


UNIT = 100  # minor units per simulated bet: halves (surrender, insurance) stay whole


def simulate(profile, shoes, decide, rounds, side_bets=True):
    """Play `rounds` rounds from the card orders yielded by `shoes`, every seat in play with one
    unit on the seat, and (when the profile has them and `side_bets`) one unit on Pairs and on
    Lucky-7 (only with the operator's Lucky-7 pay table). Returns {bet: Tally} and, for lucky7,
    the count of rounds per number of leading sevens."""
    tallies = {"main": Tally()}
    pairs = side_bets and profile.pairs
    lucky = side_bets and profile.lucky7 and all(
        f"lucky7_{i}" in profile.payouts for i in (1, 2, 3))
    if pairs:
        tallies["pairs"] = Tally()
    if lucky:
        tallies["lucky7"] = Tally()
    sevens = [0, 0, 0, 0]
    patterns = {p: 0 for p in PATTERNS}
    seats = list(range(1, profile.seats + 1))
    bets = [{"id": s, "kind": "seat", "seat": s, "amount": UNIT,
             **({"pairs": UNIT} if pairs else {}), **({"lucky7": UNIT} if lucky else {})}
            for s in seats]
    played = 0
    for cards in shoes:
        for _, out in play_shoe(profile, cards, decide, seats=seats, max_rounds=rounds - played):
            for o in out:
                if o["type"] != "round_result":
                    continue
                played += 1
                res = settle(profile, o, bets, raw=True)
                main = side7 = sidep = 0
                staked = 0
                for s, r in zip(o["seats"], res):
                    for line in r["lines"]:
                        net = line["returned"] - line["staked"]
                        if line["item"] == "pairs":
                            sidep += net
                        elif line["item"] == "lucky7":
                            side7 += net
                        else:
                            main += net
                            staked += line["staked"]
                    if profile.lucky7:
                        sevens[s["lucky7"]] += 1
                    if profile.pairs:
                        patterns[s["pairs"]] += 1
                main, side7, sidep = float(main) / UNIT, float(side7) / UNIT, float(sidep) / UNIT
                staked = float(staked) / UNIT
                n = len(o["seats"])
                tallies["main"].add(main, n, staked)
                if pairs:
                    tallies["pairs"].add(sidep, n, n)
                if lucky:
                    tallies["lucky7"].add(side7, n, n)
        if played >= rounds:
            break
    return {"rounds": played, "tallies": tallies, "lucky7_counts": sevens, "pairs_counts": patterns}


def roulette_exact(profile):
    """Every bet on the layout, settled by the settlement code on each of the 37 pockets: the
    expected return per unit of each kind (all equal -1/37 on a single-zero wheel)."""
    from .roulette import INSIDE, OUTSIDE, describe
    results = [{"type": "round_result", "round": 1, "game": "roulette", **describe(n)}
               for n in range(37)]
    bets = [(k, {"numbers": sorted(c)}) for k in INSIDE for c in INSIDE[k]]
    bets += [(k, {}) for k in OUTSIDE]
    bets += [(k, {"which": w}) for k in ("dozen", "column") for w in (1, 2, 3)]
    by_kind = {}
    for kind, extra in bets:
        bet = [{"id": 1, "kind": kind, "amount": 1, **extra}]
        ret = sum(settle(profile, r, bet, raw=True)[0]["lines"][0]["returned"] for r in results)
        ev = Fraction(ret, 37) - 1
        by_kind.setdefault(kind, set()).add(ev)
    return {k: {"bets": sum(1 for kk, _ in bets if kk == k), "expected_return": sorted(v)}
            for k, v in by_kind.items()}
