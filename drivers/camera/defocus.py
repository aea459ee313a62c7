"""A card out of focus (issue 17): how much its index is blurred beyond the learned indexes,
estimated from the card itself. A fixed round blur (sigma 1.2 px) read the held-out deck 66% under
the camera model's defocus (sigma 1.2-1.8 px on the frame, the reference photos 0.4-0.9); a real
lens's blur differs again. The estimate: the round blur whose blurred learned indexes the card's
two index corners match best (rank and suit parts, every card of the ink's colour, the reader's
shifts), between the grid's steps by a parabola. Matching the index against itself blurred is
the measure the reader needs: the blur left between this photo and the reference photos, the
lens's, the sensor's and the warp's together, whatever the table around the card. Only for a
whole card whose plain, streak and fixed-blur reads failed (visual._read_streaked): no cost on a
sharp frame. Measured (bench/diag_defocus.py --estimate 150, six decks, 900 single cards): at the
camera model's defocus the estimate less the blur left (sqrt(sigma^2 - 0.65^2), the reference
photos drawn at 0.4-0.9) is -0.05 to 0.00 on average per deck, sd 0.07-0.14, within 0.3 px for
97-100%; a frame as sharp as the reference photos is estimated at the grid's foot (0.6)."""
import numpy as np

from . import streak as motion
from .index import CH, CW, S, SEARCH, _ink, _match_gray, _product, _windows, corner

GRID = (0.6, 0.9, 1.2, 1.5, 1.8, 2.1)     # image pixels: the round blurs the estimate weighs
FLOOR = 1.2             # read at no less: the fixed blur read before, never a sharper (looser) one
# under this a card is as sharp as the reference photos (estimated 0.60 for every frame blurred
# under theirs, 0.6-1.06 at 0.7-1.1 px, 0.8 and more at the camera model's defocus, 1.2-1.8 px)
SHARP = 0.9
FEW = 4                 # learned indexes (rank and suit parts each) weighed at every blur


def bank(templates, small):
    """{sigma: {colour: (rank, suit) matrices}} of the learned indexes `small` ({colour: N x h x
    w at MATCH}) blurred by each of GRID, for a card of the learned size."""
    w = templates.card_size[0]
    quad = np.float32([[0, 0], [w, 0], [w, w * CH / CW], [0, w * CH / CW]])
    return {s: {colour: motion.blurred(m, templates.cut, motion.kernel(quad, templates.box, s))
                for colour, m in small.items()} for s in GRID}


def estimate(bgr, corners, templates, blurred, known=None):
    """The blur (sigma, image pixels) of the card whose index corners are `corners` (quads with
    the index at tl): the grid's blur whose learned indexes (`blurred`, bank()) both corners
    match best, refined by a parabola through it and its neighbours; None when no corner's ink
    colour is clear. `known`: {a corner's np.float32 bytes: (its compared patch, its ink's
    colour)} the reader made of the same corners (read_corner's `keep`): the same pixels, not
    warped and divided again (the deck check asks every card's blur on a light table)."""
    total, n = np.zeros(len(GRID)), 0
    s = templates.cut + S
    for q in corners:
        gray, colour = known.get(np.float32(q).tobytes(), (None, None)) if known else (None, None)
        if gray is None:
            patch = corner(bgr, q, templates.box, SEARCH)
            colour = _ink(patch[SEARCH:-SEARCH, SEARCH:-SEARCH])[2]
            if colour is None:
                continue
            gray = _match_gray(patch)
        parts = (_windows(gray[:s + S], templates.part_shapes[0]),
                 _windows(gray[s - S:], templates.part_shapes[1]))
        # every learned index at FLOOR, then at the other blurs only the few best there (the
        # products were two thirds of the estimate's time)
        best = []
        for j, w in enumerate(parts):
            sc = _product(w, blurred[FLOOR][colour][j]).max(axis=0)
            best.append(np.argsort(sc)[-FEW:])
            total[GRID.index(FLOOR)] += float(sc.max())
        for i, sigma in enumerate(GRID):
            if sigma != FLOOR:
                total[i] += sum(float(_product(w, blurred[sigma][colour][j][:, best[j]]).max())
                                for j, w in enumerate(parts))
        n += 1
    if not n:
        return None
    i = int(np.argmax(total))
    if 0 < i < len(GRID) - 1:
        a, b, c = total[i - 1:i + 2]
        d = a - 2 * b + c
        if d < 0:
            return float(GRID[i] + 0.5 * (a - c) / d * (GRID[1] - GRID[0]))
    return float(GRID[i])


def nearest(sigma):
    """The grid's blur to read at for an estimate `sigma`: the nearest, not under FLOOR."""
    return min((g for g in GRID if g >= FLOOR), key=lambda g: abs(g - sigma))
