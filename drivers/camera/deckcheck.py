"""At capture, each reference card against the rest of the deck (issue 17's cold trial): one photo
of another deck's card (Tigullio's 7h in Kennard's set, an svg-cards 5s) passed every label check
and the set was accepted; its templates then refused that card every time. A set half of one
design and half of another (Responsive's and cardsJS' like artwork, their corners cut otherwise)
was accepted too and read 68-84%.

Each card's own measurements, as the reader's deck check takes them (deckprint.py): its
proportions, its corners' rounding, and where its rank and suit lie against the same rank's and
the same suit's templates of the OTHER cards. A card far from the others' median (leave-one-out,
by a tolerance from their spread with a floor) is another deck's; cards that fall into two groups
of several each are two designs mixed."""
import math

import numpy as np

from .deckprint import aspect, rounding
from .hands import both_corners
from .index import CH, CW, MATCH, S, SEARCH, _match_gray, _peak, _scores, corner

# per measure: the floor of its tolerance (proportions: log of height/width, 0.025 = 2.5%;
# rounding and index place: canonical pixels), and how many of the others' spreads (1.48 MAD) it
# is at least. The index place at its better corner (as the reader's check: an outline off on
# one side shifts one corner's index, at 125 pixels Tigullio's Qs 6 pixels at one corner), and
# its floor the reader's SHIFT_TOL ceiling and more: correct cards under bench_capture's
# conditions lay up to 4 off at one corner
# the corners' floor above the reader's ROUND_TOL_MIN: a gloss put one correct Tigullio photo's
# rounding 2.1 off the others' (bench_capture seed 17, white table; correct sets' largest 0.4-0.8);
# a square-cut card among round-cut ones (Responsive's, cardsJS') 3.3-3.8 off
FLOOR = (0.025, 3.0, 4.5)
SPREADS = 5.0
# two designs: groups of MIX_GROUP cards or more, the gap between them MIX_SPREADS times the
# wider group's spread (and the floor): Responsive's corners 0.0-0.5, cardsJS' 3.2-4.6 at 125
# pixels (a spread of 0.57: 5 of them would not part them)
MIX_GROUP, MIX_SPREADS, MIX_FLOOR = 6, 3.0, (0.025, 1.5)
_COLS = ("proportions", "corners")


def measure(samples, t):
    """{card: (log aspect, rounding, near (rank dx, rank dy, suit dx, suit dy), far (the same))}
    of each reference photo; the index place at each index corner against the other cards'
    templates of its rank and its suit (its own was learned from this photo), canonical pixels."""
    out = {}
    s = t.cut + S
    for img, q, c in samples:
        ranks = [j for j, d in enumerate(t.cards) if d[0] == c[0] and d != c]
        suits = [j for j, d in enumerate(t.cards) if d[1] == c[1] and d != c]
        places = []
        for cq in both_corners(q):
            gray = _match_gray(corner(img, cq, t.box, SEARCH))
            place = [math.nan] * 4
            for k, (part, shape, m, js) in enumerate(((gray[:s + S], t.part_shapes[0], t.rank_m, ranks),
                                                      (gray[s - S:], t.part_shapes[1], t.suit_m, suits))):
                if js:
                    sc = _scores(part, shape, m[:, js])
                    peaks = np.array([_peak(part, shape, None, sc[:, i]) for i in range(len(js))])
                    place[2 * k:2 * k + 2] = np.median(peaks, axis=0) / MATCH
            places.append(tuple(place))
        out[c] = (math.log(aspect(q)), rounding(img, q, (CW, CH)), *places)
    return out


def _table(m):
    """cards, and the measures as rows of columns: log aspect, rounding, 4 index components at
    the near corner, 4 at the far one."""
    cards = list(m)
    return cards, np.array([[m[c][0], m[c][1], *m[c][2], *m[c][3]] for c in cards], np.float64)


def _tol(values, floors):
    """The values' median per column, and the tolerance: the floor, or SPREADS spreads."""
    with np.errstate(invalid="ignore"):
        med = np.nanmedian(values, axis=0)
        spread = 1.4826 * np.nanmedian(np.abs(values - med), axis=0)
    return med, np.maximum(floors, SPREADS * np.nan_to_num(spread)), spread


def _court(card):
    return card[0] in "JQK"


def odd_cards(m):
    """{card: why} for the cards unlike the rest of the deck (each against the others' median
    and spread), said as the technician reads it. The index place against the cards of its kind
    only (courts, or A-10): a design may place its courts' index otherwise (cardsJS' kings 2-4
    canonical pixels from its number cards')."""
    cards, a = _table(m)
    court = np.array([_court(c) for c in cards])
    floors = np.array(FLOOR[:2] + FLOOR[2:] * 8)
    why = {}
    for i, c in enumerate(cards):
        others = np.arange(len(cards)) != i
        med, tol, _ = _tol(a[others], floors)
        kind = others & (court == court[i])
        med[2:], tol[2:], _ = _tol(a[kind][:, 2:], floors[2:])
        with np.errstate(invalid="ignore"):
            off = np.abs(a[i] - med) / tol
        near, far = np.nanmax(off[2:6], initial=0), np.nanmax(off[6:], initial=0)
        place = min(near, far)
        if not (np.nanmax(off[:2], initial=0) > 1 or place > 1):
            continue
        what, said = [], []
        if off[0] > 1:
            what.append("proportions")
            said.append(f"height {math.exp(a[i, 0]):.2f} times its width against {math.exp(med[0]):.2f}")
        if off[1] > 1:
            what.append("corners")
            said.append(f"corners rounded {a[i, 1]:.1f} canonical pixels against {med[1]:.1f}")
        if place > 1:
            what.append("index place")
            cols = slice(2, 6) if near <= far else slice(6, 10)
            d = np.nanmax(np.abs(a[i, cols] - med[cols]))
            said.append(f"rank and suit {d:.1f} canonical pixels from where the other cards' lie "
                        f"at both index corners, against within {np.nanmax(tol[cols]) / SPREADS:.1f}")
        verb = "is" if what == ["index place"] else "are"
        why[c] = f"its {' and '.join(what)} {verb} not the rest of the deck's ({'; '.join(said)})"
    return why


def two_designs(m):
    """(group, why) when the cards split by their proportions or corners into two groups of
    MIX_GROUP or more, the gap between them wider than MIX_SPREADS of either's spread and the
    floor: `group` the smaller one's cards."""
    cards, a = _table(m)
    for k in (0, 1):
        ok = ~np.isnan(a[:, k])
        idx = np.flatnonzero(ok)[np.argsort(a[ok, k])]
        v = a[idx, k]
        for n in range(MIX_GROUP, len(v) - MIX_GROUP + 1):
            lo, hi = v[:n], v[n:]
            gap = hi[0] - lo[-1]
            spread = max(_tol(lo, MIX_FLOOR[k])[2], _tol(hi, MIX_FLOOR[k])[2])
            if gap > max(MIX_FLOOR[k], MIX_SPREADS * spread):
                small = idx[:n] if n <= len(v) - n else idx[n:]
                # the named (smaller) group's value first
                g, r = float(np.median(lo)), float(np.median(hi))
                if n > len(v) - n:
                    g, r = r, g
                why = (f"proportions (height {math.exp(g):.2f} and {math.exp(r):.2f} times the width)"
                       if k == 0 else f"corners (rounded {g:.1f} and {r:.1f} canonical pixels)")
                return [cards[i] for i in small], why
    return None


def refusal(samples, t):
    """(m, None) when every card is like the rest of the deck (m: the measures, for the
    fingerprint), else (m, (cards, odd {card: why} or None, mixed (group, why) or None))."""
    m = measure(samples, t)
    mixed = two_designs(m)
    if mixed:
        return m, (mixed[0], None, mixed)
    odd = odd_cards(m)
    return m, ((list(odd), odd, None) if odd else None)


def say(odd, mixed, name=lambda c: c, total=52):
    """The refusal as the technician reads it, each photo by `name` (its file, or its card)."""
    if mixed:
        group, why = mixed
        return (f"the reference photos split into two designs by their {why}: "
                f"{', '.join(name(c) for c in group)} ({len(group)} photos, the first value) against "
                f"the other {total - len(group)}: the set mixes two decks' cards; photograph the "
                f"studio's own deck, every card of it")
    return "; ".join(f"{name(c)}: {w}" for c, w in odd.items()) + \
        ": a card of another deck? photograph the studio's own card"
