"""A card's printed frame taken for its outline (issue 17): a court card whose picture is framed by
a dark line a few pixels inside the card's edge (the held-out Tigullio deck), on a light table
where the paper's own edge is faint, is found at the frame. Its index then lies ~8 canonical
pixels nearer the corner than on the deck's other cards, and the capture refused every court
("no index like the other cards'"). The deck's other photos give the card's size: an outline
smaller than it has each side that shows the frame (a dark line, paper beyond it, then the
table) moved out to the card's edge."""
import cv2
import numpy as np

from .outline import _NEXT, _REFINE_TS, _TURN, _norm, _refine_in, whiteness

SMALLER = 1.04       # an outline this much smaller than the deck's on an axis: a frame?
FIT = 0.03           # the grown outline must then be the deck's size within this
# the reader's (to_size): one side on the frame and one aslant make an outline 1.5-4% smaller,
# and a pose's card is up to 5% off the measured size
READ_SMALLER, READ_FIT = 1.025, 0.05


def sides(quad):
    """(width, height) of a tl tr br bl quad: the mean of its opposite sides."""
    q = np.float32(quad)
    return ((np.linalg.norm(q[0] - q[1]) + np.linalg.norm(q[3] - q[2])) / 2,
            (np.linalg.norm(q[0] - q[3]) + np.linalg.norm(q[1] - q[2])) / 2)


def to_card_edge(bgr, quad, size, smaller=SMALLER, within=FIT):
    """`quad` with each side moved out to the card's edge when it lies on a frame printed inside
    the card (see above); `quad` itself when it is not smaller than `size` (w, h) on either axis,
    or when the sides moved do not make a quad of `size`."""
    q = np.float32(quad)
    w, h = sides(q)
    if w * smaller > size[0] and h * smaller > size[1]:
        return quad
    reach = int(0.12 * min(size)) + 2          # the frame's margin: 4.4% of the width measured
    x0, y0 = (max(int(v) - reach - 2, 0) for v in q.min(axis=0))
    x1 = min(int(q[:, 0].max()) + reach + 3, bgr.shape[1])
    y1 = min(int(q[:, 1].max()) + reach + 3, bgr.shape[0])
    g = cv2.GaussianBlur(whiteness(np.ascontiguousarray(bgr[y0:y1, x0:x1])), (3, 3), 0).astype(np.float32)
    local = q - np.float32([x0, y0])
    a, b = local, local[_NEXT]
    d = (b - a) / np.maximum(np.linalg.norm(b - a, axis=1, keepdims=True), 1e-6)
    n = d[:, ::-1] * _TURN                    # outward
    ts = np.linspace(0.15, 0.85, 15, dtype=np.float32)
    offs = np.arange(0, reach + 1, dtype=np.float32)
    moves = []
    for i in range(4):
        base = a[i] + ts[:, None] * (b[i] - a[i])
        pts = base[:, None] + offs[None, :, None] * n[i]
        prof = cv2.remap(g, pts[..., 0].copy(), pts[..., 1].copy(), cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_REPLICATE)
        edge = np.float32([_paper_end(p) for p in prof])
        # the side's lines that show the frame, when most do; else a line that shows none lies
        # on the card's edge already (0): a side may lie aslant, on the frame at one end and on
        # the edge at the other (its fit took points of both). A line through the moves: each
        # end's move
        ok = ~np.isnan(edge)
        fit = (np.polyfit(ts[ok], edge[ok], 1) if np.count_nonzero(ok) >= 0.6 * len(edge)
               else np.polyfit(ts, np.nan_to_num(edge, nan=0.0), 1))
        moves.append((float(np.polyval(fit, 0.0)), float(np.polyval(fit, 1.0))))
    moved = local.copy()
    for i in range(4):                        # a side's two corners moved along its normal
        for k, m in zip((i, _NEXT[i]), moves[i]):
            moved[k] = moved[k] + max(m, 0.0) * n[i]
    moved += np.float32([x0, y0])
    mw, mh = sides(moved)
    if abs(mw / size[0] - 1) > within or abs(mh / size[1] - 1) > within:
        return quad
    return moved.astype(np.float32)


def to_size(bgr, quad, size):
    """find_cards' outline fitted to the card's measured `size` (w, h): one too large moved in
    (_sized: a gloss joined to the table beyond it); one smaller, found on a court's printed
    frame, moved out to the card's edge (to_card_edge: never in) when more of the moved sides
    than of the found ones are a step from paper down to a darker outside (_steps: a frame's
    line has paper beyond it): a card in a hand, or beside another, keeps its outline."""
    quad = _sized(bgr, quad, size)
    w, h = sides(quad)
    if w * READ_SMALLER > size[0] and h * READ_SMALLER > size[1]:
        return quad
    found = _steps(bgr, quad, size)
    if found == 4 * len(_REFINE_TS):        # a step everywhere: no outline shows more (most cards)
        return quad
    moved = to_card_edge(bgr, quad, size, READ_SMALLER, READ_FIT)
    if moved is quad or _steps(bgr, moved, size) <= found:
        return quad
    return moved


def _steps(bgr, quad, size):
    """How many of 14 places along each side are a step down outward: the whiteness a little
    inside the side over 6 levels above that a little outside it (a line drawn on paper is not
    one, an edge of the paper is). Sampled from the image itself (no crop's whiteness: it ran
    on every card a little small, most of a table's)."""
    d = max(2.0, 0.01 * size[0])
    q = np.float32(quad)
    offs = np.float32([-2, -1.5, -1, 1, 1.5, 2]) * d
    a, b = q, q[_NEXT]
    u = (b - a) / np.maximum(np.linalg.norm(b - a, axis=1, keepdims=True), 1e-6)
    n = u[:, ::-1] * _TURN
    base = a[:, None] + _REFINE_TS[None, :, None] * (b - a)[:, None]
    pts = (base[:, :, None] + offs[None, None, :, None] * n[:, None, None]).reshape(-1, len(offs), 2)
    prof = cv2.remap(bgr, pts[..., 0].copy(), pts[..., 1].copy(), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE).min(axis=2).astype(np.float32)
    return int((prof[:, :3].mean(axis=1) - prof[:, 3:].mean(axis=1) > 6).sum())


def _paper_end(p):
    """Where the paper ends along one line out of the frame (whiteness `p` from the found side
    outward): past the frame's dark line (the darkest of the first samples: the found side is
    where the lit inside stopped, at the line), the steepest fall outward (paper to table, over
    two samples); NaN when the line shows no such fall of over 6 levels below paper as light as
    the frame's inside, or no dark line."""
    j = int(np.argmin(p[:max(4, len(p) // 6)]))
    fall = p[j + 1:-2] - p[j + 3:]
    if not len(fall):
        return np.nan
    o = int(np.argmax(fall))
    top = float(p[j + 1:j + 2 + o].max())
    if fall[o] <= 6 or top - p[j] < 12 or top < p[0] - 6:
        return np.nan
    return j + 1 + o + 1.0


def _sized(bgr, quad, size):
    """A quad a side of which lies off the card (a gloss or a glare joined to the table beyond
    it, the side's own edge too far for refine): longer or wider than the measured card by over
    4%, each of the two sides across that axis is moved in to the measured size and refined
    again; the quad whose sides show the most edge wins, the found one when it is not beaten."""
    best, score = quad, None
    for axis, want in ((0, size[0]), (1, size[1])):
        # axis 0: the width (tl-tr and bl-br); axis 1: the height (tl-bl and tr-br)
        a, b = ((0, 1), (3, 2)) if axis == 0 else ((0, 3), (1, 2))
        have = (_norm(quad[a[1]] - quad[a[0]]) + _norm(quad[b[1]] - quad[b[0]])) / 2
        if have <= 1.04 * want:
            continue
        if score is None:           # only for a quad of the wrong size (most are not: no cost)
            score = _support(bgr, quad)
        for end in (0, 1):          # move this end of both sides in
            q = quad.copy()
            for i, j in (a, b):
                near, far = (i, j) if end == 0 else (j, i)
                q[near] = quad[far] + (quad[near] - quad[far]) * (want / have)
            q = _refine_in(bgr, q)
            v = _support(bgr, q)
            if v > score:
                best, score = q, v
    return best


def _support(bgr, quad):
    """How many of 14 places along each side show the card's edge (a fall outward of over 6
    within a pixel and a half of the side): how well the quad lies on a card."""
    m = 4
    h, w = bgr.shape[:2]
    x0, y0 = (max(int(v) - m, 0) for v in quad.min(axis=0))
    x1, y1 = min(int(quad[:, 0].max()) + m + 1, w), min(int(quad[:, 1].max()) + m + 1, h)
    g = cv2.GaussianBlur(whiteness(np.ascontiguousarray(bgr[y0:y1, x0:x1])), (3, 3), 0).astype(np.float32)
    q = quad - np.float32([x0, y0])
    offs = np.arange(-1.5, 1.51, 0.5, dtype=np.float32)
    a, b = q, q[_NEXT]
    d = (b - a) / np.maximum(np.linalg.norm(b - a, axis=1, keepdims=True), 1e-6)
    n = d[:, ::-1] * _TURN
    base = a[:, None] + _REFINE_TS[None, :, None] * (b - a)[:, None]
    pts = (base[:, :, None] + offs[None, None, :, None] * n[:, None, None]).reshape(-1, len(offs), 2)
    prof = cv2.remap(g, pts[..., 0].copy(), pts[..., 1].copy(), cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return int(((prof[:, :-1] - prof[:, 1:]).max(axis=1) > 6).sum())
