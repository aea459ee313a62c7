"""A card's corner rounding (the deck's fingerprint, deckprint.py): how far the card's outline
stands back from its two sides' crossing at a corner (0 for a square-cut card, about 4 canonical
pixels for the usual poker-deck radius), measured against the sides' own positions near the
corner, so the outline's error falls out. docs/camera.md, "The deck check"."""
import math

import cv2
import numpy as np

P, L = 8, 24                 # the corner patch: L canonical pixels of card, P of table beyond
ROUND_MAX = 10.0             # canonical pixels: rounder than any deck measured (0-5) is a glyph's edge
_TURNED = [np.array([(i + k) % 4 for i in range(4)]) for k in range(4)]   # corner k to tl
# A corner's rounding is trusted only where its two sides' roundings agree within SIDES_DIFFER
# and its sides lie within SIDE_OFF canonical pixels of the outline's: a gloss or a shadow's edge
# across a corner on a light table made its two roundings 4-19 apart, or put a side's crossings
# 5.5-15 pixels off (the corner's rounding -10 to +15); clean corners' two roundings lay within
# 1, their sides 0.5-3 pixels in, a curled card's long sides up to 6 in at its ends. A side
# within SIDE_OFF_ALONE is in place (a corner's only side must be: a shadow put one 6.4 pixels
# out, its rounding 14)
SIDE_OFF, SIDES_DIFFER, SIDE_OFF_ALONE = 7.5, 3.0, 4.5
# A dark line printed round the card's edge (svg-cards' border): the band just beyond the outline
# darker than BORDER_DARK of the table's level and by BORDER_STEP grey levels at least. Borderless
# decks' band (a contact shadow, the edge's blur) lay at 0.66 of the table at the darkest (cardsJS
# and Kennard on white; Responsive and the drawn deck 0.83; 1,780 corners of white and light grey
# tables, every condition), svg-cards' border at 0.22-0.6 in 466 of 600 corners
BORDER_DARK, BORDER_STEP = 0.6, 40
SMALL = 200                  # pixels: a card narrower than this is at the table camera's scale


def _settled(per, photo):
    """Whether the corners measured so far give the card's rounding: two at least; at the photo
    scale (`photo`), when only two, within SIDES_DIFFER of each other. The median of two corners
    is their mean, so one corner spoiled past the per-corner checks spoils the card: a white
    table's shadow had one of a Kennard 3h's two grey corners at 8.97 against 3.57 (the card
    6.27, refused at the learned 3.98 +- 2.0) where its red channel measured three corners at
    2.9-3.3. Then the other channels fill the missing corners, and the median of three or four
    decides."""
    vals = [v for v in per if not math.isnan(v)]
    if len(vals) != 2 or not photo:
        return len(vals) >= 2
    return abs(vals[0] - vals[1]) <= SIDES_DIFFER


def _crossings(rows, mid):
    """Per row, where it first rises above `mid` (subpixel, in canonical pixels from the side's
    nominal line); nan where it never does (or already does at the patch's edge). `mid`: one
    level, or one per row."""
    above = rows > (mid[:, None] if np.ndim(mid) else mid)
    i = np.argmax(above, axis=1)
    n = np.arange(len(rows))
    ok = above[n, i] & (i > 0)
    i = np.maximum(i, 1)
    lo, hi = rows[n, i - 1], rows[n, i]
    x = i - 1 + (mid - lo) / np.maximum(hi - lo, 1e-6) - P
    return np.where(ok, x, np.nan).astype(np.float32)


def _median(a):
    """The median of a few values, nan left out (in Python: np.median's overhead on ten values
    was a third of the fingerprint's time)."""
    v = sorted(x for x in a.tolist() if x == x)
    n = len(v)
    if not n:
        return np.nan
    return float(v[n // 2]) if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _medians(a):
    """_median along the last axis, for every row at once (the same arithmetic: the sorted
    values' middle two, nan left out, averaged in float64)."""
    s = np.sort(a, axis=-1)                         # nan sort last
    cnt = np.count_nonzero(~np.isnan(s), axis=-1)
    lo = np.take_along_axis(s, np.maximum(cnt - 1, 0)[..., None] // 2, -1)[..., 0].astype(np.float64)
    hi = np.take_along_axis(s, (cnt // 2)[..., None], -1)[..., 0].astype(np.float64)
    return np.where(cnt > 0, (lo + hi) / 2, np.nan)


# an index printed close to the edge (below): the rows searched for the edge's own crossings, how
# close they must lie to count as one straight edge, how many of them, and how much further out
# than the side's usual place (the median of rows 10-20) they must lie to be taken instead
_SIDE, _AGREE, _NEED, _OUTER = slice(10, 32), 0.75, 6, 2.0


def _sides(a):
    """Each side's place from its crossings (rows of `a`: one per canonical pixel along the
    side, nan left out): the median of rows 10-20; but when at least _NEED of rows 10-31 lie
    within _AGREE of one another more than _OUTER further out, their median. An index printed
    close to the edge (svg-cards at 125 pixels: the paper between edge and glyph blurred under
    the mid level) puts most crossings of rows 10-20 9-13 pixels inside the edge (a 5's straight
    bar as tightly as the edge's own); the median landed among them and clean corners measured
    -3.9 to -4.6 against the learned 1.9 (docs/camera.md). A glyph only ever moves crossings
    inward."""
    usual = _medians(a[..., 10:20])
    b = a[..., _SIDE]
    ok = ~np.isnan(b)
    if not (np.where(ok, b, np.inf).min(axis=-1) < usual - _OUTER).any():
        return usual                # nothing further out: the usual case, at no further cost
    near = (np.abs(b[..., :, None] - b[..., None, :]) <= _AGREE) & ok[..., None, :]
    enough = ok & (near.sum(axis=-1) >= _NEED)
    pick = np.argmin(np.where(enough, b, np.inf), axis=-1)
    group = np.take_along_axis(near, pick[..., None, None], -2)[..., 0, :]
    outer = _medians(np.where(group, b, np.nan))
    return np.where(enough.any(axis=-1) & (outer < usual - _OUTER), outer, usual)


def _percentile(a, q):
    """np.percentile's linear answer from a partition at the two ranks around it (4x faster)."""
    f = a.ravel()
    pos = q / 100 * (f.size - 1)
    k = int(pos)
    k1 = min(k + 1, f.size - 1)
    part = np.partition(f, [k, k1])
    lo, hi = float(part[k]), float(part[k1])
    return lo + (hi - lo) * (pos - k)


def _row_percentiles(a, q):
    """_percentile of each row of `a`, from one partition of them all (the same arithmetic)."""
    pos = q / 100 * (a.shape[1] - 1)
    k = int(pos)
    k1 = min(k + 1, a.shape[1] - 1)
    part = np.partition(a, [k, k1], axis=1)
    lo, hi = part[:, k].astype(np.float64), part[:, k1].astype(np.float64)
    return lo + (hi - lo) * (pos - k)


def corner_rounding(gray):
    """The rounding of one corner patch (tl corner of the card at (P, P)): the outline's distance
    from the left side, 1-3 pixels below the top side, less the left side's own distance further
    down (and the same with the sides swapped). nan when no outline shows (paper like table)."""
    mended = {}
    v = _corner_roundings(gray[None], mended)[0]
    return mended.get(0, v)


def _corner_roundings(grays, mended=None, contrast=None, border=False):
    """corner_rounding of each of n patches (n x (L+2P) x (L+2P)): the array work done once for
    all four corners of a card (per corner, numpy's call overhead was most of its cost). A corner
    measured by one side alone, the other off the outline, is nan there and its value put in
    `mended` (by its index) when given. `contrast`: a list given is filled with each patch's
    paper over its table (levels)."""
    n = len(grays)
    paper = _row_percentiles(grays[:, P + 2:, P + 2:].reshape(n, -1), 90)
    beyond_left, beyond_top = grays[:, :, :P - 3].reshape(n, -1), grays[:, :P - 3].reshape(n, -1)
    table = _row_percentiles(np.concatenate([beyond_top, beyond_left], axis=1), 50)
    # A dark line printed round the card's edge (svg-cards' border) on a table as light as the
    # paper: the outline lies on the line's inside, and the line, not the table, is what the
    # paper rises from there; measured at the table's level the middle sat near the paper's top.
    # `border`: at the table's scale only, where it was measured (at the photo scale it split
    # the held-out KDE deck's reference photos into two designs and moved glossy corners).
    if border:
        # the band just beyond the outline along both sides (the corner itself left out)
        ring = _row_percentiles(np.concatenate([grays[:, P - 3:P, P + 2:].reshape(n, -1),
                                                grays[:, P + 2:, P - 3:P].reshape(n, -1)], axis=1), 50)
        lined = (ring < BORDER_DARK * table) & (table - ring > BORDER_STEP)
        if lined.any():
            # and the table beyond the line, as light as the paper, is not searched for the rise
            grays = grays.copy()
            lid = ring[lined].astype(np.float32)[:, None, None]
            grays[lined, :P - 3] = np.minimum(grays[lined, :P - 3], lid)
            grays[lined, :, :P - 3] = np.minimum(grays[lined, :, :P - 3], lid)
            table = np.where(lined, ring, table)
    if contrast is not None:
        contrast[:] = (paper - table).tolist()
    # compared with the float32 rows in float32, as a Python float mid was
    mids = [np.float32((paper + table) / 2)] * 2
    rows = np.concatenate([grays[:, P:], grays[:, :, P:].transpose(0, 2, 1)])   # left, then top
    cross = _crossings(rows.reshape(-1, rows.shape[2]),
                       np.repeat(np.concatenate(mids), rows.shape[1]))
    cross = cross.reshape(2, n, -1)
    mid_side = _sides(cross).tolist()      # each side's place, all at once
    res = []
    for c in range(n):
        if paper[c] - table[c] < 12:
            res.append(np.nan)
            continue
        left = cross[0, c]                      # per row y = 0..: the left side's x
        top = cross[1, c]                       # per column x = 0..: the top side's y
        sides = (mid_side[0][c], mid_side[1][c])
        out = [v for v in (_side_rounding(left, sides[0], sides[1]), _side_rounding(top, sides[1], sides[0]))
               if not math.isnan(v)]
        off = SIDE_OFF if len(out) == 2 else SIDE_OFF_ALONE
        if any(abs(v) > off for v in sides if not math.isnan(v)) \
                or len(out) == 2 and abs(out[0] - out[1]) > SIDES_DIFFER:
            # a side not where the outline put it (the light's edge, not the card's) spoils
            # both measures: its own, and its partner's, taken beside where it lies. The side
            # that is in place alone, its partner taken at its own inset (the outline's error
            # is the same along both sides near a corner); else the corner is left out
            ok = [k for k in (0, 1) if abs(sides[k]) <= SIDE_OFF_ALONE < abs(sides[1 - k])]
            if ok and mended is not None:
                v = _side_rounding((left, top)[ok[0]], sides[ok[0]], sides[ok[0]])
                if not math.isnan(v):
                    mended[c] = v
            res.append(np.nan)
            continue
        res.append(sum(out) / len(out) if out else np.nan)      # np.mean's answer
    return res


def _side_rounding(a, side, other):
    """How far a side's crossings `a` stand back from its place `side` just beyond the other
    side's place `other` (nan when either is unknown)."""
    if math.isnan(side) or math.isnan(other):
        return np.nan
    start = int(np.ceil(max(other, 0)))
    near = _median(a[start + 1:start + 4])
    # farther in than any card's corner is cut: the glyph of an index printed at the corner
    # (svg-cards' 2 at 125 pixels: 11-23), not the outline; not measured here
    return near - side if near - side < ROUND_MAX else np.nan


def rounding(bgr, quad, canon):
    """The card's corner rounding, in canonical pixels: the median of its four corners (a glare
    or a covered corner spoils one)."""
    vals = [v for v in corners_rounding(bgr, quad, canon) if not math.isnan(v)]
    return _median(np.float64(vals)) if len(vals) >= 2 else np.nan     # np.median's answer


# A corner whose paper stands above its table less than WELL times the card's best-measured
# corner's says nothing about the cut (roundings): on a white table the paper stands barely above
# the table beside two of a card's sides, the mid level its outline is crossed at lies high on the
# edge's rise (the contact shadow darkens the table just beyond the edge) and a square corner
# measures round there. The eight single-frame foreign reads found on white (Responsive's cards by
# cardsJS' templates, bench/probe_foreign_surface.py) each had the best-measured corner square
# (0.0-2.1) and a worse-measured one round (2.4-4.9), at 0.33-0.48 of the best's contrast in six
# (refused), 0.58 and 0.73 in two (still read, single frames). The tuned decks' own cards
# (bench/diag_cut_corners.py): on white 44-48% of cardsJS' and Responsive's checks have a corner
# under half the best's contrast, on light grey 3-4%; of cardsJS' own checks that pass on main
# (30 white scenes, 3 frames each) 0.5 refuses 3 of 651 on white and 0 of 610 on light grey; 0.6
# refused at least 12 on white. A square-cut deck does not ask it (deckprint.card_matches)
WELL = 0.5


def roundings(bgr, quad, canon):
    """(rounding(), the median of the corners measured at WELL of the best-measured corner's
    contrast or more: one such corner alone outvotes the worse-measured ones). Responsive's Kc
    under cardsJS's templates (bench/probe_foreign_surface.py white, shadow scene 1, seat 6)
    measured 2.4-3.8 at two corners 12-14 levels above the table, 1.4-1.6 at its best (37 above)
    and -0.9 at one 17 above: the plain median 2.28-2.67 passed cardsJS' round cut, its
    best-measured corner's 1.42-1.57 does not. Both nan with fewer than two corners measured."""
    con = []
    per = corners_rounding(bgr, quad, canon, con)
    ok = [(v, c) for v, c in zip(per, con) if not math.isnan(v)]
    if len(ok) < 2:
        return np.nan, np.nan
    return _median(np.float64([v for v, _ in ok])), well_measured(*zip(*ok))


def well_measured(values, contrasts):
    """The median of the values whose contrast is at least WELL times the highest."""
    best = max(contrasts)
    return _median(np.float64([v for v, c in zip(values, contrasts) if c >= WELL * best]))


def corner_patches(bgr, quad, canon):
    """The card's four corner patches, each turned to tl (card at (P, P)), stacked: 4 (L+2P) rows
    of (L+2P) BGR pixels."""
    cw, ch = canon
    patches = []
    for k in range(4):
        q = np.float32(quad)[_TURNED[k]]          # np.roll(quad, -k, axis=0)
        # the corner turned to tl: a canonical card of (cw, ch) or (ch, cw) for odd k
        w, h = (cw, ch) if k % 2 == 0 else (ch, cw)
        dst = np.float32([[P, P], [w + P, P], [w + P, h + P], [P, h + P]])
        m = cv2.getPerspectiveTransform(q, dst)
        patches.append(cv2.warpPerspective(bgr, m, (L + 2 * P, L + 2 * P), flags=cv2.INTER_LINEAR,
                                           borderMode=cv2.BORDER_REPLICATE))
    return np.concatenate(patches)


def corners_rounding(bgr, quad, canon, contrast=None):
    """Each of the card's four corners' rounding (canonical pixels, nan where not measured), as
    rounding() takes their median. `contrast`: a list given is filled with each corner's paper
    over its table in the channel its rounding came from (gray's where none did)."""
    both = corner_patches(bgr, quad, canon)
    # Not measured again at each side's own middle when no corner measured at the card's one
    # middle: on a white table under glare that measured a cardsJS card's round corners as
    # square (-0.16, -1.59) and Responsive's templates (same artwork, square-cut) read its 5c
    # (review31); a card no corner of which is measured stays refused
    grays = cv2.cvtColor(both, cv2.COLOR_BGR2GRAY).astype(np.float32)
    # only at the photo scale: the table scale (125 px) not measured with it, kept as it was
    photo = min(np.linalg.norm(np.float32(quad)[[1, 2, 3, 0]] - np.float32(quad), axis=1)) >= SMALL
    mended, con = {}, []
    per = _corner_roundings(grays.reshape(4, L + 2 * P, L + 2 * P), mended, con, not photo)
    mended_con = {k: con[k] for k in mended}
    for ch in (2, 0):
        if _settled(per, photo):
            break
        # cream stock on a white table: in gray the card stands under 12 above the table (no
        # rounding, refused), in red it stands 10-26 above it; a bluish table, in blue. Each
        # corner in the first of them that shows it (a valid corner's rounding is the same in
        # each, within 0.2): a shadow or a gloss may leave a different corner clear in each
        one = np.ascontiguousarray(both[..., ch], np.float32).reshape(4, L + 2 * P, L + 2 * P)
        more, c2 = {}, []
        vals = _corner_roundings(one, more, c2, not photo)
        con = [c if not math.isnan(v) or math.isnan(w) else d for v, w, c, d in zip(per, vals, con, c2)]
        per = [v if not math.isnan(v) else w for v, w in zip(per, vals)]
        mended_con = {**{k: c2[k] for k in more}, **mended_con}
        mended = {**more, **mended}         # the first channel's first
    if sum(not math.isnan(v) for v in per) < 2:
        # too few corners whose two sides agree: those measured by one side, in any channel
        con = [mended_con.get(k, c) if math.isnan(v) else c for k, (v, c) in enumerate(zip(per, con))]
        per = [mended.get(k, np.nan) if math.isnan(v) else v for k, v in enumerate(per)]
    if contrast is not None:
        contrast[:] = con
    return per
