"""Covered cards in a blackjack hand (and cards turned so that they touch): their index corners,
located on the two edges that meet there. A hand is one blob that is not card-shaped; at each
convex right-angled corner of its outline find_corners lays a card of the measured size each
way that corner can belong to it; laid from another corner of the hand, a covered card's index
corner is a few pixels and degrees off (each card is dealt a little turned), so each hypothesis
is moved onto the card's own edges before its index is read (docs/camera.md)."""
import cv2
import numpy as np

from .outline import _median, _norm, find_corners, refine, whiteness

_HALF = np.array([2, 3, 0, 1])
# where along the top side (past the index) and the left side (short of it) edges are sampled
_TOP_TS, _LEFT_TS = np.float32(np.linspace(0.22, 0.92, 12)), np.float32(np.linspace(0.12, 0.7, 12))


def both_corners(quad):
    """The quad as seen from each index corner: tl, and br (the card turned half round)."""
    return (quad, np.asarray(quad)[_HALF])     # np.roll(quad, 2, axis=0), without its overhead


def corner_gray(bgr):
    """The frame's whiteness, blurred, float32: what refine_corner looks for edges in."""
    return cv2.GaussianBlur(whiteness(bgr), (3, 3), 0).astype(np.float32)


def hand_corners(bgr, blobs, quads, card_size, gray=None):
    """Index-corner hypotheses in blobs of overlapping cards, each moved onto the two edges
    that meet there (refine_corner) and given once: [(quad whose tl is the index corner, located)];
    `located` False: laid from the hand's outline, its own edges not found. `gray`:
    corner_gray(bgr) when the caller has it."""
    w = card_size[0]
    if not blobs:
        return []
    gray = corner_gray(bgr) if gray is None else gray
    fit = fit_outline_corner(gray, card_size)
    tried, failed = np.zeros((0, 2, 2), np.float32), np.zeros((0, 2, 2), np.float32)
    found, out, laid = np.zeros((0, 2, 2), np.float32), [], []

    def add(r, located, apart):
        nonlocal found
        if not len(found) or np.abs(found - r[:2]).max(axis=(1, 2)).min() > apart:
            found = np.concatenate([found, r[None, :2]])
            out.append((r, located))
    # the same hand is a blob at several thresholds: each corner once; its outline simplified
    # twice (a short step of the outline's staircase is cut off by the coarser one)
    for blob, eps in ((b, e) for e in (0.012, 0.006) for b in blobs):
        for q in find_corners(blob, card_size, quads, dedupe=False, eps=eps, fit=fit):
            for v in both_corners(q):
                if len(tried) and np.abs(tried - v[:2]).max(axis=(1, 2)).min() < 0.05 * w:
                    continue
                # a hypothesis whose edges were not found does not stand for the corner: another
                # laid from elsewhere (2-4 px nearer; KDE Standard's covered cards laid 6 px off
                # from one step of the outline, 2 px from another) may find them
                if len(failed) and np.abs(failed - v[:2]).max(axis=(1, 2)).min() < _RETRY:
                    continue
                # on its own edges; on the edges beyond a printed frame's line along them (the
                # court's frame of a deck that prints it against the index: the steepest fall
                # along a top card's side over the card below is the frame's, 6 px inside)
                # (beyond the frame's line a corner lies only its margin away, 4-6 px: kept
                # unless within 2 px of one found, where the same corner's is)
                located = [(r, apart) for r, apart in ((refine_corner(gray, v, card_size), 0.04 * w),
                                                       (refine_corner(gray, v, card_size, outer=True), 2.0))
                           if r is not None]
                if located:
                    tried = np.concatenate([tried, v[None, :2]])
                else:
                    failed = np.concatenate([failed, v[None, :2]])
                for r, apart in located:
                    add(r, True, apart)
                laid.append(v)
    # and each as laid from the fitted outline corner, for a covered card whose edges over the
    # card below do not show (its index decides): after every located corner, which it must
    # not crowd out
    for v in laid:
        add(v, False, 0.04 * w)
    return out


def refine_corner(gray, quad, card_size, outer=False):
    """A covered card's index corner (the quad's tl) moved onto its two visible edges: a corner
    hypothesis laid from another corner of the hand's outline is a few pixels and degrees off
    (each card is dealt a little turned), which the index reader cannot afford. Along the top
    and left sides' normals, the steepest fall from the card's white outward (to the table, or
    to the card below in the top card's shadow), a line fitted to each twice, the two crossed;
    the card rebuilt from that corner along the two lines at the measured size. `gray`: the
    frame's whiteness, blurred, float32 (once per frame). None when either edge is not found
    (no card corner there). `outer`: each side moved out to a parallel line of falls at least
    _BEYOND px beyond the steepest one's (a frame printed inside the edge: a corner that is the
    reader's to judge beside the plain one); None when neither side has one."""
    w, h = card_size
    r = max(4.0, 0.08 * w)
    g, q = gray, quad
    offs = np.arange(-r, r + 0.01, 0.5, dtype=np.float32)
    lines, moved = [], False
    # the top side from tl (index 0 -> 1) past the index; the left side (3 -> 0) short of it
    for a, b, ts in ((q[0], q[1], _TOP_TS), (q[3], q[0], _LEFT_TS)):
        d = (b - a) / max(float(_norm(b - a)), 1e-6)
        n = np.float32([d[1], -d[0]])                       # outward (clockwise, y down)
        base = a[None] + ts[:, None] * (b - a)[None]
        line = _edge(g, base, n, d, offs)
        if line is None:
            return None
        if outer:
            far = _edge(g, base, n, d, offs, beyond=line)
            if far is not None and abs(float(far[1][0] * line[1][1] - far[1][1] * line[1][0])) < _PARALLEL:
                line, moved = far, True
        lines.append(line)
    if outer and not moved:
        return None
    tl = _cross(lines)
    if tl is None or _norm(tl - q[0]) > 2 * r:
        return None
    right, down = lines[0][1], -lines[1][1]                 # along the top side, down the left
    return np.float32([tl, tl + w * right, tl + w * right + h * down, tl + h * down])


_TURN_MAX = 0.2     # sin of the largest turn of an edge from the laid side (12 degrees): hands are
                    # dealt a few degrees turned, laid corners a few more
# every pair of up to 24 places (i < j), for _edge's consensus line
_PAIRS = [np.triu_indices(m, 1) for m in range(25)]


_RETRY = 1.5       # px: a hypothesis this near one whose edges were not found is not tried again
_BEYOND = 2.0       # px: a frame's line and the card's edge beyond it lie 4-6 px apart (Tigullio, 125 px)
_PARALLEL = 0.05    # sin of the largest angle between a printed frame's line and the card's edge


def _edge(g, base, n, d, offs, need=6, beyond=None):
    """A straight edge near the points `base`: along the outward normal `n`, the steepest fall
    from the card's white outward at each; the line most of them lie on (a glyph or a shadow
    pulls some off), fitted to those. (point, direction along `d`) or None."""
    pts = base[:, None] + offs[None, :, None] * n[None, None]
    prof = cv2.remap(g, pts[..., 0].copy(), pts[..., 1].copy(), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE)
    drop = prof[:, :-1] - prof[:, 1:]
    if beyond is not None:
        # only falls outward of the line `beyond` (point, direction) by more than _BEYOND px
        p, v = beyond
        m = np.float32([-v[1], v[0]])
        at = -((base - p[None]) @ m) / float(n @ m)          # where the line crosses each normal
        mids = (offs[:-1] + offs[1:]) / 2
        drop = np.where(mids[None, :] > at[:, None] + _BEYOND, drop, -np.inf)
    k = np.argmax(drop, axis=1)
    strong = drop[np.arange(len(k)), k] > 4
    sel = (base + ((offs[k] + offs[k + 1]) / 2)[:, None] * n[None])[strong]
    line = _line(sel[:, None], n, d, need) if len(sel) >= need else None
    if line is not None:
        return line
    # the steepest fall alone split between two lines (a frame printed 5-6 px inside the edge,
    # steeper than the edge's own fall over the card below at half the places: neither line
    # kept `need` places, Tigullio's covered courts unlocated): each place's two steepest
    # falls, the line through most places
    mids = (offs[:-1] + offs[1:]) / 2
    side = np.pad(drop, ((0, 0), (1, 1)), constant_values=-np.inf)
    peak = np.where((drop >= side[:, :-2]) & (drop > side[:, 2:]) & (drop > 4), drop, -np.inf)
    two = np.argsort(-peak, axis=1)[:, :2]
    cand = base[:, None] + mids[two][..., None] * n[None, None]
    cand[~np.isfinite(np.take_along_axis(peak, two, axis=1))] = np.nan
    return _line(cand, n, d, need)


def _line(cand, n, d, need):
    """The line most places' candidates (`cand`: places x candidates x 2, NaN for none) lie on
    within a pixel, each place counted once (every pair of candidates tried, the line within
    _TURN_MAX of the side's direction), then least squares over the nearest candidate of each:
    (point, direction along `d`) or None."""
    if cand.shape[1] == 1:
        sel = cand[:, 0]
        # a first least-squares fit through all was pulled by a glyph or picture edge 7-9 px off
        # near one end, cut the true edge's places and left too few (a top card's far corner
        # unlocated in some frames: its hand refused with it), or turned onto the outliers
        vx, vy, px, py = cv2.fitLine(sel, cv2.DIST_L2, 0, 0.01, 0.01).ravel()
        if np.abs((sel[:, 0] - px) * vy - (sel[:, 1] - py) * vx).max() < 1.0 \
                and abs(vx * n[0] + vy * n[1]) < _TURN_MAX:
            v = np.float32([vx, vy])                        # every place on one line: the usual case
            return np.float32([px, py]), v if v @ d > 0 else -v
    places, per = cand.shape[:2]
    flat = cand.reshape(-1, 2)
    ok = ~np.isnan(flat[:, 0])
    idx = np.flatnonzero(ok)
    if len(idx) < 2 or len(idx) > 24:
        return None
    i, j = _PAIRS[len(idx)]
    i, j = idx[i], idx[j]
    i, j = i[i // per != j // per], j[i // per != j // per]        # two places, not one's two falls
    v = flat[j] - flat[i]
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-6)
    good = np.abs(v @ np.float32([n[0], n[1]])) < _TURN_MAX           # near the side's direction
    if not good.any():
        return None
    i, v = i[good], v[good]
    with np.errstate(invalid="ignore"):
        dist = np.abs((flat[None, :, 0] - flat[i][:, None, 0]) * v[:, None, 1]
                      - (flat[None, :, 1] - flat[i][:, None, 1]) * v[:, None, 0])
    dist = np.where(np.isnan(dist), np.inf, dist).reshape(len(i), places, per)
    best = dist[int(np.argmax((dist < 1.0).any(axis=2).sum(axis=1)))]
    nearest = np.argmin(best, axis=1)
    sel = cand[np.arange(places), nearest][best[np.arange(places), nearest] < 1.0]
    if len(sel) < need:
        return None
    for _ in range(2):
        vx, vy, px, py = cv2.fitLine(sel, cv2.DIST_L2, 0, 0.01, 0.01).ravel()
        res = np.abs((sel[:, 0] - px) * vy - (sel[:, 1] - py) * vx)
        keep = res < 1.5
        if keep.sum() < need:
            return None
        sel = sel[keep]
    if float(res[keep].max()) > 3:
        return None                                         # not one straight edge
    v = np.float32([vx, vy])
    return np.float32([px, py]), v if v @ d > 0 else -v


def _cross(lines):
    """Where two near-square lines [(point, direction)] cross; None when not near square."""
    (p1, d1), (p2, d2) = lines
    den = d1[0] * d2[1] - d1[1] * d2[0]
    if abs(den) < 0.9:
        return None
    t = ((p2[0] - p1[0]) * d2[1] - (p2[1] - p1[1]) * d2[0]) / den
    return p1 + t * d1


def whole_card(gray, quad, card_size, parallel=False):
    """The whole card of a located index corner (the quad's tl) when its opposite corner shows
    too: that corner located on its own two edges (refine_corner from the quad turned half
    round), the card's size then measured, not assumed (cards differ by a few percent, and a
    far corner laid at the median size is too far off to read). A card turned so that it
    touches another is whole in a merged blob: read at both corners, as any whole card. None
    when the far corner's edges are not found or the card is not of the measured size.
    `parallel`: the far corner by _far_corner alone (its sides parallel to the near corner's:
    a side's line fitted freely was pulled 6 px onto the picture frame of the card below when
    the picture lay along a third of it)."""
    far = None if parallel else refine_corner(gray, np.roll(quad, 2, axis=0), card_size)
    br = far[0] if far is not None else _far_corner(gray, quad, card_size)
    if br is None:
        return None
    tl = quad[0]
    right = (quad[1] - tl) / card_size[0]
    down = (quad[3] - tl) / card_size[1]
    w, h = float((br - tl) @ right), float((br - tl) @ down)
    if not (0.9 < w / card_size[0] < 1.1 and 0.9 < h / card_size[1] < 1.1):
        return None
    card = np.float32([tl, tl + w * right, br, tl + h * down])
    # (not refined again with parallel: refine's free fit is what pulled the side)
    return card if parallel else refine(gray, card)


def _far_corner(gray, quad, card_size, need=6, agree=1.5, fall=2.5):
    """The far index corner (the quad's br) when its own two edges do not fit a line each (a top
    card's far corner over the card below's picture: a frame line or a glyph pulls the places):
    the card's sides there kept parallel to the located near corner's, each moved along its
    normal by the steepest falls' common offset, when `need` of them agree within `agree`
    pixels. A fainter fall counts (`fall`; paper over paper falls 3-5): the places must agree,
    which noise on a bare face does not. None otherwise."""
    q = np.roll(quad, 2, axis=0)
    r = max(4.0, 0.08 * card_size[0])
    offs = np.arange(-r, r + 0.01, 0.5, dtype=np.float32)
    at = q[0].copy()
    for a, b, ts in ((q[0], q[1], _TOP_TS), (q[3], q[0], _LEFT_TS)):
        d = (b - a) / max(float(_norm(b - a)), 1e-6)
        n = np.float32([d[1], -d[0]])
        pts = (a[None] + ts[:, None] * (b - a)[None])[:, None] + offs[None, :, None] * n[None, None]
        prof = cv2.remap(gray, pts[..., 0].copy(), pts[..., 1].copy(), cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_REPLICATE)
        drop = prof[:, :-1] - prof[:, 1:]
        k = np.argmax(drop, axis=1)
        o = ((offs[k] + offs[k + 1]) / 2)[drop[np.arange(len(k)), k] > fall]
        if len(o) < need:
            return None
        o = o[np.abs(o - _median(o)) <= agree]
        if len(o) < need:
            return None
        at += float(o.mean()) * n
    return at


def fit_outline_corner(gray, card_size):
    """find_corners' `fit`: a convex corner of a hand's outline and its two sides moved onto the
    image's edges. Both sides there lie on the table (a strong edge), but a step of the hand's
    staircase is short (0.22-0.3 of a card) and the polygon's side a pixel or two off: laid one
    card width away from it, a covered card's index corner was 5-12 pixels off and turned, and
    its own edges over the card below (no shadow on one side or both) could not correct it."""
    r = max(4.0, 0.08 * card_size[0])
    offs = np.arange(-r, r + 0.01, 0.5, dtype=np.float32)

    def fit(p, a, la, b, lb):
        lines = []
        # along a (clockwise) the outward normal is (a.y, -a.x); going back along b, (-b.y, b.x)
        for d, ln, n in ((a, la, np.float32([a[1], -a[0]])), (b, lb, np.float32([-b[1], b[0]]))):
            ts = np.linspace(min(0.1 * ln, 0.06 * card_size[0]) + 3, 0.85 * ln, 12, dtype=np.float32)
            line = _edge(gray, p[None] + ts[:, None] * d[None], n, d, offs)
            if line is None:
                return None
            lines.append(line)
        c = _cross(lines)
        if c is None or np.linalg.norm(c - p) > r:
            return None
        return c, lines[0][1], lines[1][1]
    return fit
