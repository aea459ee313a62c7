"""A second measure of a card's corners' cut (issue 17), for the deck check of a square-cut deck
(deckprint.DeckPrint._square_by_edges): where the brightness rises steepest across the card's
edge, row by row near the corner, instead of where it crosses the middle between paper and table
(rounding.py). On a white table card stock stands only 5-15% above the table, the contact shadow
darkens the table beside two of the card's sides, and the rows just below a side lie in that
side's blur: there the rise to the paper's level comes late and a square corner measured round
(Responsive's and the drawn deck's 1.2-2.6 on white, where cardsJS' round corners measure
1.85-2.04; bench/diag_white_refusals.py). The steepest rise's place does not depend on the
levels: a square corner under any round blur rises steepest on its side's line in every row
(the blur of a corner is a product of the two sides' blurs), a round one further in near the
corner. It does under a streak or a strong blur (a round corner's rise near it is faint), hence
the sharpness it reports and the callers' gates."""
import math

import cv2
import numpy as np

from .rounding import L, P, SIDE_OFF, SIDES_DIFFER, corner_patches

# canonical pixels from the side's nominal line: where a side's steepest rise is looked for (its
# place: the outline lies within SIDE_OFF of the card's edge) and, in the rows next to the
# corner, how far in (a corner of cardsJS' radius rises 4-7 pixels in there; an index printed
# close to the edge, Responsive's, starts 8 in and 9 below the corner, and its ink's far side,
# a rise too, lies further)
SEARCH_SIDE, SEARCH_IN = 6, 9
ROWS = slice(10, 20)        # the side's straight part, as rounding._sides' usual place
NEAR = 3                    # rows next to the corner measured (rounding._side_rounding's)
_ROOT2PI = math.sqrt(2 * math.pi)
# a corner's width from its two sides' widths: the wider (bench/diag_edge_cut.py compares the mean,
# which put a moving cardsJS Ah smear.streaked missed at 1.40 where the wider side said 1.72)
WIDTH = max


def _rises(rows, lo, hi):
    """Per row, the place of its steepest rise within columns [lo, hi) of the patch (subpixel: a
    parabola through the central differences around the best; canonical pixels from the side's
    nominal line P) and that rise (levels a pixel)."""
    lo = max(lo, 1)
    d = (rows[:, 2:] - rows[:, :-2]) / 2                 # d[:, i]: the slope at column i + 1
    w = d[:, lo - 1:hi - 1]
    i = np.argmax(w, axis=1)
    n = np.arange(len(rows))
    top = w[n, i]
    a, b = w[n, np.maximum(i - 1, 0)], w[n, np.minimum(i + 1, w.shape[1] - 1)]
    den = a - 2 * top + b
    off = np.where((i > 0) & (i < w.shape[1] - 1) & (den < 0), 0.5 * (a - b) / np.where(den < 0, den, -1), 0)
    return lo + i + off - P, top


def _corner(g):
    """(rounding, blur) of one corner patch `g` (tl corner of the card at (P, P)) by the steepest
    rise: the left side's rise in the rows just below the top side less its place further down,
    and the same with the sides swapped, averaged (nan when the sides lie off the outline or the
    two disagree, as rounding.py leaves a corner out); blur: the rise's width along the sides'
    straight parts (the paper-to-table step over the steepest slope, over sqrt(2 pi): a
    Gaussian edge's sigma, canonical pixels), the wider side's (a streak widens the sides across
    it only)."""
    out, blurs, places = [], [], []
    for rows in (g[P:], g[:, P:].T):                 # the left side's rows, the top side's columns
        x, slope = _rises(rows[ROWS], P - SEARCH_SIDE, P + SEARCH_SIDE + 1)
        places.append(float(np.median(x)))
        # the step across the edge: the paper just inside over the table just outside
        lo = np.clip(np.round(x).astype(int) + P, 3, rows.shape[1] - 4)
        r = rows[ROWS]
        n = np.arange(len(r))
        step = np.maximum(r[n, lo + 3], r[n, lo + 2]) - np.minimum(r[n, lo - 3], r[n, lo - 2])
        blurs.append(float(np.median(step / np.maximum(slope, 1e-3))) / _ROOT2PI)
    if any(abs(v) > SIDE_OFF for v in places):
        return np.nan, np.nan
    for k, rows in enumerate((g[P:], g[:, P:].T)):
        start = int(math.ceil(max(places[1 - k], 0)))
        near = rows[start + 1:start + 1 + NEAR]
        x, _ = _rises(near, int(round(places[k])) + P - SEARCH_SIDE // 2, P + SEARCH_IN + 1)
        out.append(float(np.median(x)) - places[k])
    if abs(out[0] - out[1]) > SIDES_DIFFER:
        return np.nan, np.nan
    return sum(out) / 2, WIDTH(blurs)


def corners(bgr, quad, canon):
    """Each of the card's four corners' (rounding, blur) by the steepest rise (nan where not
    measured), in the same corner order as rounding.corners_rounding."""
    both = corner_patches(bgr, quad, canon)
    grays = cv2.cvtColor(both, cv2.COLOR_BGR2GRAY).astype(np.float32).reshape(4, L + 2 * P, L + 2 * P)
    return [_corner(g) for g in grays]


def edge_rounding(bgr, quad, canon):
    """(the card's rounding by the steepest rise: the median of its measured corners, the median
    of their blurs); both nan with fewer than two corners measured."""
    per = [c for c in corners(bgr, quad, canon) if not math.isnan(c[0])]
    if len(per) < 2:
        return np.nan, np.nan
    return float(np.median([c[0] for c in per])), float(np.median([c[1] for c in per]))
