"""A card's outline as a quad: corners ordered, sides fitted to the edges, refined to sub-pixel
on the card's own edge, judged card-like (proportions, fit to the blob's hull); the corner
hypotheses of a blob of overlapping cards (find_corners); the measured card size."""
import math

import cv2
import numpy as np

# constants of the per-card array work (np.roll, np.stack and np.linspace were a fifth of it)
_NEXT = np.array([1, 2, 3, 0])            # each corner's next: np.roll(quad, -1, axis=0)
_PREV = np.array([3, 0, 1, 2])            # and the one before it
_ROLLS = [np.array([(i + k) % 4 for i in range(4)]) for k in range(4)]   # np.roll(quad, -k, axis=0)
_TURN = np.float32([1, -1])               # (dy, dx) * _TURN: a direction turned a quarter
_REFINE_TS = np.linspace(0.1, 0.9, 14, dtype=np.float32)


def whiteness(bgr):
    b, g, r = cv2.split(bgr)
    return cv2.min(cv2.min(b, g), r)


def _misfit(quad, hull, hull_area):
    """The area between a quad and a convex hull (their symmetric difference)."""
    inter, _ = cv2.intersectConvexConvex(quad, np.float32(hull).reshape(-1, 2))
    return cv2.contourArea(quad) + hull_area - 2 * inter


def _refine_in(bgr, quad, middle=False):
    """refine() on the card's own neighbourhood (the whole frame's whiteness costs more than
    every card's together)."""
    m = int(max(3.0, 0.04 * _short(quad))) + 4
    h, w = bgr.shape[:2]
    x0, y0 = (max(int(v) - m, 0) for v in quad.min(axis=0))
    x1, y1 = min(int(quad[:, 0].max()) + m + 1, w), min(int(quad[:, 1].max()) + m + 1, h)
    # a contiguous copy first: cv2.split of a strided view was 9x slower than of a copy
    g = cv2.GaussianBlur(whiteness(np.ascontiguousarray(bgr[y0:y1, x0:x1])), (3, 3), 0).astype(np.float32)
    off = np.float32([x0, y0])
    return refine(g, quad - off, middle) + off


def find_corners(blob, card_size, quads=(), dedupe=True, eps=0.012, fit=None):
    """Index-corner hypotheses in a blob of overlapping cards: at each convex corner of about 90
    degrees, a card of the measured size is laid in each of the ways that corner can belong to
    it. Returns 4x2 quads (tl tr br bl) whose tl or br is that corner; those coinciding with a
    whole card already found are left out. Reading decides which hypotheses hold: a corner
    with no clear index is refused, never guessed. `fit(p, a, la, b, lb)`: the corner and its
    two sides' directions moved onto the image's edges (hands.fit_outline_corner), or None."""
    w, h = card_size
    poly = cv2.approxPolyDP(blob, eps * cv2.arcLength(blob, True), True).reshape(-1, 2).astype(np.float32)
    if cv2.contourArea(poly, oriented=True) < 0:
        poly = poly[::-1]          # clockwise in image coordinates (y down)
    out = []
    n = len(poly)
    for i in range(n):
        p, prev, nxt = poly[i], poly[i - 1], poly[(i + 1) % n]
        a, b = nxt - p, prev - p   # along the outline clockwise, and back
        la, lb = _norm(a), _norm(b)
        if la < 0.12 * w or lb < 0.12 * w:
            continue
        a, b = a / la, b / lb
        if a[0] * b[1] - a[1] * b[0] <= 0:       # a concave corner: another card's edge
            continue
        if abs(float(a @ b)) > math.cos(math.radians(70)):
            continue
        if fit is not None:
            p, a, b = fit(p, a, la, b, lb) or (p, a, b)
        # p is the tl of a card whose top edge runs along a and left edge along b, or its br
        # (the card turned half round: the same picture); or tr / bl, whose index corners lie
        # one card width / height away along the edges.
        for q in (np.float32([p, p + w * a, p + w * a + h * b, p + h * b]),
                  np.float32([p + w * b, p, p + h * a, p + w * b + h * a])):
            q = _order(q)
            inner = q.mean(axis=0) * 0.7 + q * 0.3     # a card lies on the blob, not off it
            if min(cv2.pointPolygonTest(blob, (float(x), float(y)), True) for x, y in inner) < -2:
                continue
            if not dedupe or all(np.linalg.norm(q.mean(axis=0) - k.mean(axis=0)) > 0.3 * w
                                 for k in list(quads) + out):
                out.append(q)
    return out


def _fit_sides(pts, quad):
    """The quad's corners as the crossings of straight lines fitted to the outline's points
    along each side's middle: a card's rounded corners and a rough outline place a polygon's
    vertices a few pixels off, which the index reader cannot afford."""
    d = quad[_NEXT] - quad                                   # the four sides at once
    n = np.linalg.norm(d, axis=1)
    if n.min() < 4:
        return quad
    d = d / n[:, None]
    n = n.astype(np.float64)[:, None]
    rel = pts[None] - quad[:, None]                           # 4 x points x 2
    t = rel[..., 0] * d[:, None, 0] + rel[..., 1] * d[:, None, 1]
    dist = np.abs(rel[..., 0] * d[:, None, 1] - rel[..., 1] * d[:, None, 0])
    near = (t > 0.15 * n) & (t < 0.85 * n) & (dist < np.maximum(2.0, 0.04 * n))
    lines = []
    for i in range(4):
        sel = pts[near[i]]
        if len(sel) < 5:
            return quad
        vx, vy, x0, y0 = cv2.fitLine(sel, cv2.DIST_HUBER, 0, 0.01, 0.01).ravel()
        lines.append((vx, vy, x0, y0))
    out = _meet(lines)
    if out is None:
        return quad
    return out if np.abs(out - quad).max() < 0.1 * _short(quad) else quad


def _meet(lines):
    """Where each side's line (vx, vy, x0, y0) meets the one before it: the four corners at once,
    in float32 as corner by corner before (numpy scalars' overhead); None when two are near
    parallel."""
    ln = np.float32(lines)
    d2, p2 = ln[:, :2], ln[:, 2:]
    d1, p1 = d2[_PREV], p2[_PREV]
    den = d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0]
    if (np.abs(den) < 1e-3).any():
        return None
    t = ((p2[:, 0] - p1[:, 0]) * d2[:, 1] - (p2[:, 1] - p1[:, 1]) * d2[:, 0]) / den
    return p1 + t[:, None] * d1


def refine(gray, quad, middle=False):
    """Each side moved onto the card's edge in the full-resolution image: along the side's
    normal, the steepest fall from the card's white to what lies outside, at 14 places; a
    straight line fitted to them (twice, the second time without the places a glyph or a
    shadow pulled off). A mask's outline is eroded, merged with a contact shadow or halved in
    resolution; the index reader needs the corner within a few pixels. With `middle`, each
    place is the fall's middle instead (_middle: a smeared edge)."""
    r = max(3.0, 0.04 * _short(quad))
    offs = np.arange(-r, r + 0.01, 0.5, dtype=np.float32)
    ts = _REFINE_TS
    a, b = quad, quad[_NEXT]                                    # the four sides at once
    d = (b - a) / np.maximum(np.linalg.norm(b - a, axis=1, keepdims=True), 1e-6)
    n = d[:, ::-1] * _TURN                                      # outward: clockwise, y down
    base = a[:, None] + ts[None, :, None] * (b - a)[:, None]    # 4 x T x 2
    pts = base[:, :, None] + offs[None, None, :, None] * n[:, None, None]
    pts = pts.reshape(4 * len(ts), len(offs), 2)
    prof = cv2.remap(gray, pts[..., 0].copy(), pts[..., 1].copy(), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE)
    drop = prof[:, :-1] - prof[:, 1:]                           # falling going outward
    k = np.argmax(drop, axis=1)
    best = drop[np.arange(len(k)), k]
    # a fall of 6 a half pixel, or half the card's typical one where its edge is faint: cream
    # stock on a light table under a webcam's blur fell 3-5 (every side refused, the mask's
    # outline kept: the drop shadow's outer edge, 5-9 pixels out); where the card stands out
    # (a typical fall of 12 and more) the same 6 as always
    strong = (best > min(6.0, max(2.5, 0.5 * _median(best)))).reshape(4, -1)
    pos = _middle(drop, k, best, offs) if middle else (offs[k] + offs[k + 1]) / 2
    at = (base.reshape(-1, 2) + pos[:, None] * np.repeat(n, len(ts), 0))
    at = at.reshape(4, len(ts), 2)
    lines = []
    for i in range(4):
        # a side whose edge does not show (a card on a near-white table, under a gloss) keeps
        # the outline's line; the others are still moved (one faint side refined none: a side
        # left on the contact shadow's outer edge, 6 pixels off, misplaced the index)
        side = (d[i, 0], d[i, 1], a[i, 0], a[i, 1])
        sel = at[i][strong[i]]
        if len(sel) < 6:
            lines.append(side)
            continue
        for _ in range(2):
            vx, vy, x0, y0 = cv2.fitLine(sel, cv2.DIST_L2, 0, 0.01, 0.01).ravel()
            res = np.abs((sel[:, 0] - x0) * vy - (sel[:, 1] - y0) * vx)
            keep = res < max(1.5, _median(res) * 2)
            if keep.sum() < 6:
                break
            sel = sel[keep]
        else:
            side = (vx, vy, x0, y0)
        lines.append(side)
    out = _meet(lines)
    if out is None:
        return quad
    return out if np.abs(out - quad).max() < 2 * r + 2 else quad


def _middle(drop, k, best, offs):
    """Where each profile's fall lies, as the centre of the fall's mass over the run of steps
    around the steepest (`k`, falling by `best`) that fall by more than 0.3 of it. A card moving
    or out of focus smears its edge into a ramp 4-7 pixels wide whose steps fall about alike:
    the steepest is anywhere on it (noise decides), the middle is where the edge is."""
    thr = 0.3 * best[:, None]
    idx = np.arange(drop.shape[1])[None]
    low = drop <= thr
    left = np.where(low & (idx < k[:, None]), idx, -1).max(axis=1)
    right = np.where(low & (idx > k[:, None]), idx, drop.shape[1]).min(axis=1)
    w = np.where((idx > left[:, None]) & (idx < right[:, None]), drop - thr, 0)
    mid = (offs[:-1] + offs[1:]) / 2
    return (w * mid).sum(axis=1) / np.maximum(w.sum(axis=1), 1e-6)


def _median(a):
    """np.median of a short 1-d array, without its generic machinery (10x its cost here)."""
    s = np.sort(a)
    m = len(s) // 2
    return float(s[m]) if len(s) % 2 else float((s[m - 1] + s[m]) / 2)


def _card_like(q, hull, blob=None, size=None):
    """A card seen straight down (or a little tilted) is a near-rectangle that its blob fills:
    a blob half merged with a bright table, or the inside of a printed border cut open at one
    end, gave skewed quads whose corners read the wrong glyphs."""
    # _norm: np.linalg.norm's own arithmetic without its overhead (a sixth of the finder's
    # sorted loop: twelve norms a card)
    sides = [float(_norm(q[(i + 1) % 4] - q[i])) for i in range(4)]
    if min(sides) < 4 or not 0.8 <= sides[0] / sides[2] <= 1.25 or not 0.8 <= sides[1] / sides[3] <= 1.25:
        return False
    for i in range(4):
        a, b = q[i - 1] - q[i], q[(i + 1) % 4] - q[i]
        if abs(float(a @ b)) / (_norm(a) * _norm(b)) > 0.26:    # 75..105 degrees
            return False
    qa = cv2.contourArea(np.float32(q))
    inter, _ = cv2.intersectConvexConvex(np.float32(q), np.float32(hull).reshape(-1, 2))
    if inter < 0.92 * max(qa, cv2.contourArea(hull)):
        return False
    # each corner where the blob's is: a rounded corner lies about 0.02 of the width inside;
    # but one corner of a card of the measured size may be cut off by a shadow or a gloss
    # across it (the other three and the sides fitted along their middles place it). Not of
    # another size: a side laid inside a card with a printed border, along its index, left
    # a corner off as well.
    slack = max(3.0, 0.05 * min(sides))
    # (a piece cut from a blob has the opening's round corners: its corners are the blob's)
    offs = [-cv2.pointPolygonTest(hull if blob is None else blob, (float(x), float(y)), True)
            for x, y in q]
    off = sorted(offs)
    sized = size and all(abs((sides[i] + sides[i + 2]) / 2 / size[i] - 1) < 0.05 for i in (0, 1))
    if sized and size[0] < 100 and (max(offs[0], offs[2]) < slack or max(offs[1], offs[3]) < slack):
        # at the table's scale, two OPPOSITE corners of a card of the measured size off its blob:
        # the two index corners, where an index printed against the card's border (svg-cards at
        # 125 pixels) cuts the paper inside the border open, so a level's blob loses both; the
        # sides, fitted along their middles, place them (a card touching another on a white
        # table was found in no other mask: bench_camera's white rotation scene, svg-cards 9d)
        return max(offs) < max(slack, 0.2 * min(sides))
    return off[2] < slack and off[3] < (max(slack, 0.2 * min(sides)) if sized else slack)


def _short(q):
    return float(_norm(q[0] - q[1]))


def _centre(q):
    """q.mean(axis=0) of a quad's four corners, its arithmetic without np.mean's overhead (it
    was a twentieth of a frame): the corners summed along axis 0 the same way, then divided by
    4 (np.mean divides by a numpy integer, in float64 for float32 corners, then rounds back;
    a division by 4 is exact either way)."""
    assert len(q) == 4
    return np.add.reduce(q, axis=0) / 4


def _order(pts):
    c = pts.mean(axis=0)
    ang = np.arctan2(pts[:, 1] - c[1], pts[:, 0] - c[0])
    pts = pts[np.argsort(ang)]          # clockwise from the top-left quadrant, image coordinates
    start = int(np.argmin(pts.sum(axis=1)))
    # np.roll and np.linalg.norm's answers by indexing and a dot product: _order runs for every
    # corner hypothesis of a hand, and their overhead was half its time
    pts = pts[_ROLLS[start]] if len(pts) == 4 else np.roll(pts, -start, axis=0)
    if _norm(pts[0] - pts[1]) > _norm(pts[1] - pts[2]):
        pts = pts[_NEXT] if len(pts) == 4 else np.roll(pts, -1, axis=0)  # the short side on top: portrait
    return np.float32(pts)


def _norm(v):
    """np.linalg.norm of a float vector, its own arithmetic (the square root of v.dot(v))."""
    v = np.asarray(v)
    return np.sqrt(v.dot(v)) if v.dtype.kind == "f" else np.linalg.norm(v)


def card_size_of(quads):
    """The median (width, height) in pixels of card quads: the measured card size."""
    ws = [np.linalg.norm(q[0] - q[1]) / 2 + np.linalg.norm(q[3] - q[2]) / 2 for q in quads]
    hs = [np.linalg.norm(q[0] - q[3]) / 2 + np.linalg.norm(q[1] - q[2]) / 2 for q in quads]
    return float(np.median(ws)), float(np.median(hs))

