"""Finding card faces in an image whatever the table: green, blue or red felt, grey, white or wood,
under uneven light; at any angle; their size from the calibration, not constants.

A card face is the whitest thing on a table: its darkest colour channel is high where a felt,
wood or a tinted laminate has one channel low, and a white table is still a little darker than
card stock. The image's min-channel is thresholded at a few levels below its brightest pixels;
a blob that is card-shaped at some level (a filled rectangle of the card's proportions and, when
known, its measured size) is a card. Overlapping cards merge into one blob that is not
card-shaped: its right-angled convex corners are where single cards' corners show (find_corners).
"""
import math

import cv2
import numpy as np

from . import gapblob
from .morph import open_ellipse
from .frame import to_size
from .outline import _card_like, _centre, _fit_sides, _misfit, _order, _refine_in, whiteness
from .tablelevel import light_table, ratio_masks

FAST = True
# below the brightest pixels: stock under glare, in shadow; 27: cream stock on a light-grey table
# is only 30-40 levels above it in the min-channel, and a corner darkened by the lens's
# vignetting fell out of the 18 mask while 36 was already below the table
LEVELS = (18, 27, 36, 60, 90, 125, 160)
# of a card's width: the most of an outline on the image's border where a turned card's corner
# grazes it (its blur, contact shadow and the edges' width reach the border 1-2 px before its
# paper does: 9 px of the border at half size, measured); a card cut by the border lies along it
# for twice its overhang or more, and an outline beyond the frame is refused (find_cards' end)
GRAZE = 0.15


def _masks(bgr, card_size, w=None):
    w = cv2.GaussianBlur(whiteness(bgr), (3, 3), 0) if w is None else w
    top, floor = _percentiles(w[::2, ::2], (99.5, 50))
    for d in LEVELS:
        level = top - d
        if level <= floor + 12 and d != LEVELS[0]:
            break            # below the table itself: the table would join every card
        yield "level", cv2.threshold(w, level, 255, cv2.THRESH_BINARY)[1]
    # A white or unevenly lit table: a card is brighter than the table around it, not than the
    # whole image. The white top-hat (the image less its opening by a square larger than a
    # card, at an eighth of the resolution: a square is separable, fast) takes the table's own
    # light away.
    h, wd = w.shape
    small = cv2.resize(w, (max(wd // 8, 4), max(h // 8, 4)), interpolation=cv2.INTER_AREA)
    k = int(1.05 * math.hypot(*card_size) / 8) if card_size else int(0.8 * min(small.shape))
    k = max(3, min(k, min(small.shape) - 1)) | 1
    bg = cv2.morphologyEx(small, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (k, k)))
    bg = cv2.resize(cv2.GaussianBlur(bg, (0, 0), 1), (wd, h), interpolation=cv2.INTER_LINEAR)
    hat = cv2.subtract(w, bg)
    # A shadow across a card: its outline is still a sharp edge where the shadow's is soft.
    # Used only where no threshold found the card (its outline lies a pixel or two off).
    edges = cv2.morphologyEx(cv2.Canny(w, 20, 45), cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    yield "edges", edges
    light = bool(card_size) and card_size[0] < 100 and light_table(small, card_size, top)
    if light:
        # The table's scale, a white or light table: a card in a shadow's band stands only 15-20
        # levels over the table there, and the lit table a card's length away takes every level
        # and the table's estimated level (top-hat, ratio) over it; its sharp outline is a closed ring of
        # edges, but the shadow's soft edge makes a trail of noise's edges that joins the ring to
        # the image's border (the outline passed over as a card cut by the frame). The regions the
        # edges enclose, filled, the trail opened off (bench_camera's white shadow scene: an
        # svg-cards Ah at the dealer's place found in no mask before)
        yield "holes", _enclosed(edges, card_size)
    if card_size and card_size[0] >= 100:
        # A photo of one large card (the technician's, 300 pixels wide; at least 100 here, at
        # half size) with a lamp's streak across card and table: no level parts them and the
        # edges' outer outline runs off into the table's; the paper inside the card's sharp
        # outline is a region of its own (the streak's soft edges make no edge).
        n, lab, st, _ = cv2.connectedComponentsWithStats(cv2.bitwise_not(edges), connectivity=4)
        hw, ht = lab.shape[1], lab.shape[0]
        keep = [i for i in range(1, n) if st[i, 2] * st[i, 3] >= 0.6 * card_size[0] * card_size[1]
                and st[i, 0] > 1 and st[i, 1] > 1
                and st[i, 0] + st[i, 2] < hw - 1 and st[i, 1] + st[i, 3] < ht - 1]
        if keep:
            yield "edges", np.isin(lab, keep).astype(np.uint8) * 255
        # A court card's picture cuts that region apart, and a shadow's band or a gloss's
        # streak across the card joins its outline to the table's edges at the image's edge:
        # the sharp outline's inside filled. A sensor's noise on a white table makes edges all
        # over it: the same from the whiteness smoothed more.
        yield "holes", _filled(lab, n, edges, card_size)
        smooth = cv2.GaussianBlur(whiteness(bgr), (0, 0), 1.5)
        edges = cv2.morphologyEx(cv2.Canny(smooth, 20, 45), cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
        n, lab = cv2.connectedComponents(cv2.bitwise_not(edges), connectivity=4)
        yield "holes", _filled(lab, n, edges, card_size)
    peak, = _percentiles(hat[::2, ::2], (99.5,))
    for f in (0.6, 0.4):
        if peak * f > 10:
            # on a light table its blobs are searched as no hand (find_cards: "tophat_light")
            yield "tophat_light" if light else "tophat", cv2.threshold(hat, peak * f, 255, cv2.THRESH_BINARY)[1]
    yield from ratio_masks(w, small, card_size, top)


def _filled(lab, n, edges, card_size):
    """The edges with every region of `lab` (the `n` regions between them) the image's border
    does not reach filled, thin spurs opened off (a streak's piece still joined is cut off in
    find_cards: _add_pieces)."""
    outside = np.zeros(n, bool)
    outside[np.concatenate([lab[0], lab[-1], lab[:, 0], lab[:, -1]])] = True
    outside[0] = True
    filled = cv2.bitwise_or(edges, (~outside)[lab].astype(np.uint8) * 255)
    k = max(3, int(card_size[0] / 12)) | 1
    return cv2.morphologyEx(filled, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))


def _enclosed(edges, card_size):
    """_filled's mask (the same pixels) by one flood fill of what the image's border reaches, not
    by labelling every region between the edges: a third of its time (1.4 to 0.4 ms a frame at
    640 x 360)."""
    h, w = edges.shape
    out = np.full((h + 2, w + 2), 255, np.uint8)       # a frame of no edge joins the border's regions
    out[1:-1, 1:-1] = cv2.bitwise_not(edges)
    cv2.floodFill(out, None, (0, 0), 128, 0, 0, 4)
    filled = cv2.compare(out[1:-1, 1:-1], 128, cv2.CMP_NE)
    k = max(3, int(card_size[0] / 12)) | 1
    return cv2.morphologyEx(filled, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))


def _percentiles(u8, qs):
    """np.percentile(u8, q) (its linear method, its arithmetic) for each q, from the pixels'
    histogram: partitioning the pixels cost more than the rest of the masks."""
    n = u8.size
    cum = np.bincount(u8.ravel(), minlength=256).cumsum()
    out = []
    for q in qs:
        q = q / 100
        v = (n - 1) * q                                   # numpy's virtual index
        k = math.floor(v)
        g = v - k
        lo, hi = (int(np.searchsorted(cum, (i if v < n - 1 else n - 1) + 1)) for i in (k, k + 1))
        d = float(hi - lo)
        out.append(hi - d * (1 - g) if g >= 0.5 else lo + d * g)
    return out


def _size_ok(area, card_size, shape):
    if card_size:
        expect = card_size[0] * card_size[1]
        return 0.6 * expect <= area <= 1.45 * expect
    return 0.01 * shape[0] * shape[1] <= area <= 0.9 * shape[0] * shape[1]


def find_cards(bgr, card_size=None, with_blobs=False):
    """Quadrilaterals of whole card faces (4x2 float32, tl tr br bl, the long side from tl to bl).
    `card_size` (w, h) in pixels narrows the search to cards of that size; with `with_blobs`,
    also the contours that were too big to be one card (overlapping cards), for find_corners.
    Cards 120 pixels wide or more are looked for at half the size: four
    times fewer pixels, and the outline's error stays within the reader's search slack."""
    if min(bgr.shape[:2]) < 16:     # no card fits (a broken source's 1-pixel frame)
        return ([], []) if with_blobs else []
    f = 2 if card_size and card_size[0] >= 120 and FAST else 1
    size = card_size
    full = bgr
    if f > 1:
        h, w = bgr.shape[:2]
        bgr = cv2.resize(bgr, (w // f, h // f), interpolation=cv2.INTER_AREA)
        card_size = (card_size[0] / f, card_size[1] / f)
    found, blobs = [], []
    # the least area of a hull that can be a card or a blob of cards (its box is no smaller)
    h, w = bgr.shape[:2]
    least = max(200, 0.6 * card_size[0] * card_size[1] if card_size else 0.01 * h * w)
    expect = card_size[0] * card_size[1] if card_size else 0
    white = cv2.GaussianBlur(whiteness(bgr), (3, 3), 0)     # the masks' whiteness (and the gap test's)
    tophat = []             # the blobs (indexes) from the top-hat's masks, for _gap_blob
    for kind, mask in _masks(bgr, card_size, white):
        contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
        contours, cuts = list(contours), len(contours)    # from index `cuts` on: _cut_spurs' pieces
        outer = {}                # a piece's index: the hull of the blob it was cut from
        for i, c in enumerate(contours):
            if len(c) < 8:
                continue
            # the hull's box is the outline's: too small a box, or one cut by the image's edge (a
            # lit patch of table, or half a card), is passed over before the costlier steps
            bx, by, bw, bh = cv2.boundingRect(c)
            if bw * bh < least:
                continue
            edge = bx <= 1 or by <= 1 or bx + bw >= mask.shape[1] - 1 or by + bh >= mask.shape[0] - 1
            if edge and (i >= cuts or not card_size or kind == "edges" and not _grazes(c, mask.shape, card_size)):
                continue
            # the hull: a court card's picture may cut its white frame open at one point
            raw, c = c, cv2.convexHull(c)
            area = cv2.contourArea(c)
            if area < 200:
                continue
            if edge:
                # a card joined to a bright streak across the table (a lamp's gloss on a white
                # or light table) that reaches the image's edge: the streak cut off, the pieces
                # looked at as any outline (not a hand's blob: they rarely reach the edge)
                if expect < area < 3 * expect:
                    _add_pieces(contours, outer, raw, c, card_size)
                # a card turned at a seat near the frame's side, wholly inside it, whose corner
                # (with its blur and shadow) grazes the edge: looked at as any outline (a card
                # cut by the edge lies along it; its outline, beyond the frame, is refused below)
                if not _grazes(raw, mask.shape, card_size):
                    continue
            (cx, cy), (rw, rh), _ = rect = cv2.minAreaRect(c)
            aspect = max(rw, rh) / min(rw, rh) if rw and rh else 0
            shaped = area >= 0.9 * rw * rh and 1.22 <= aspect <= 1.75 and _size_ok(area, card_size, mask.shape)
            if kind == "holes" and i < cuts and expect < area < 3 * expect and not (shaped and card_size[0] < 100):
                # the filled outline with a streak's or a shadow edge's bumps still on it (its
                # box too big to be the card's): also its pieces with the bumps cut off. At the
                # table's scale (the masks' card under 100 px) only when the
                # outline is not card-shaped itself: every card on a white table is such a
                # region, and its pieces (an opening by a disc) cost 4-5 ms a frame for nothing
                _add_pieces(contours, outer, raw, c, card_size)
            if not rw or not rh:
                continue
            if shaped:
                approx = cv2.approxPolyDP(c, 0.04 * cv2.arcLength(c, True), True)
                quad = cv2.boxPoints(rect)
                if len(approx) == 4 and cv2.isContourConvex(approx):
                    # the polygon follows a tilted card's trapezoid; on a card turned at an
                    # angle its coarse tolerance can also lay a side across the card (18 pixels
                    # off, measured: a wedge of 5% of the card or more left out), then the box
                    # when it fits the hull better
                    a = np.float32(approx).reshape(-1, 2)
                    off = _misfit(a, c, area)
                    quad = approx if off < 0.04 * area or off <= _misfit(quad, c, area) else quad
                # the score: large (the least eroded outline) and filling its rectangle (not
                # merged with a shadow or a spur of the table)
                # (the filled outline takes in the edge's own width: used where nothing else is)
                score = area * (area / (rw * rh)) ** 4 * {"edges": 0.95, "holes": 0.8}.get(kind, 1)
                if card_size:       # and of the card's proportions (a top-hat that lost a strip
                    # of a tilted card along one side filled its narrower rectangle better)
                    score *= max(0.0, 1 - abs(aspect * card_size[0] / card_size[1] - 1)) ** 4
                found.append((kind == "edges", -score, np.float32(quad).reshape(4, 2), raw, c, outer.get(i)))
            elif kind == "holes":
                continue        # a hand's blob comes from the other masks (as before)
            elif card_size and area > (1.3 if kind == "edges" else 0.8) * card_size[0] * card_size[1]:
                # the edges too: on a white or light table no threshold outlines a whole hand
                # (at least 1.3 cards: one card with its shadow's edge is not a hand, and cost
                # 9 ms a frame in hypotheses). Not the top-hat's on a light table: its opening
                # (a square larger than a card) takes the cards' dark ink for the table, so the
                # table between two cards a few pixels apart stands above it, joined to the cards'
                # paper, and every such blob was searched as a hand (half a white frame's time);
                # the edges and the ratio masks outline hands there. (On grey the top-hat's
                # blobs are kept, skipped, cardsJS's sweep lost 2 of 80 cards on grey, unless
                # they hold no paper beyond the whole cards found: gapblob.py.)
                if i < cuts and kind != "tophat_light":
                    if kind == "tophat":
                        tophat.append(len(blobs))
                    blobs.append(raw)
    quads = []
    # the best score first: the least eroded outline (a card with a printed border on a white
    # table: the threshold finds the inside of the border, cut open where the index touches it;
    # the edges find the outside), edges a little behind (they take in the contact shadow)
    spans = []      # each kept quad's right edge and rows: a centre beyond them is outside it
    for _, _, q, raw, hull, blob in sorted(found, key=lambda x: x[1]):
        cx, cy = (float(v) for v in _centre(q))
        # not again, and not a rectangle printed on a card found already (a court card's frame).
        # A centre right of, above or below every corner of a kept quad is outside it, as
        # pointPolygonTest says (its crossing test skips every side then; left of the quad it
        # may say 0 on a side's extension, so it is asked there): most outlines are found at
        # several levels, and the test was a tenth of the finder's time
        if all(cx > x1 or cy < y0 or cy > y1 or cv2.pointPolygonTest(p, (cx, cy), False) < 0
               for p, x1, y0, y1 in spans):
            # ordered only here: most outlines are the same card found at another level
            q = _fit_sides(raw.reshape(-1, 2).astype(np.float32), _order(q))
            if _card_like(q, hull, blob, card_size):         # the hull taken above (not twice)
                quads.append(q)
                spans.append((q, float(q[:, 0].max()), float(q[:, 1].min()), float(q[:, 1].max())))
    # a white area printed on a card, found at a level where the card's outline was not
    areas = [cv2.contourArea(q) for q in quads]      # each once, not once per pair
    quads = [q for q, a in zip(quads, areas) if not any(
        pa > a and cv2.pointPolygonTest(p, tuple(float(v) for v in _centre(q)), False) >= 0
        for p, pa in zip(quads, areas))]
    if tophat and gapblob.GAP_TEST:     # the table between whole cards is no hand (gapblob.py)
        top, floor = _percentiles(white[::2, ::2], (99.5, 50))
        blobs = [b for i, b in enumerate(blobs)
                 if i not in tophat or not gapblob.gap_blob(white, (top + floor) / 2, b, quads, card_size)]
    if f > 1:     # back to the image's pixels (a reduced pixel's centre)
        quads = [(q + 0.5) * f - 0.5 for q in quads]
        blobs = [np.float32((b + 0.5) * f - 0.5) for b in blobs]
    quads = [_refine_in(full, q) for q in quads]
    if size:
        quads = [to_size(full, q, size) for q in quads]
    # a card cut by the image's edge is not a card, however its outline was found (one cut-off
    # corner is allowed a card under a shadow band: it let a turned card reaching 6 pixels
    # beyond the frame pass another deck's templates, docs/camera.md)
    quads = [q for q in quads if in_frame(q, full.shape)]
    return (quads, blobs) if with_blobs else quads


def in_frame(quad, shape):
    """Whether a card's outline lies within the image (2 px of slack: a card's rounded corner)."""
    h, w = shape[:2]
    return bool(quad.min() >= -2 and quad[:, 0].max() <= w + 1 and quad[:, 1].max() <= h + 1)


def _grazes(contour, shape, card_size):
    """Whether an outline touches the image's border only at a point (a card's corner): at most
    GRAZE of the card's width of it lies on the border, at one place."""
    p = contour.reshape(-1, 2)
    h, w = shape
    on = (p[:, 0] <= 0) | (p[:, 1] <= 0) | (p[:, 0] >= w - 1) | (p[:, 1] >= h - 1)
    if not on.any():
        return False
    q = p[on]
    return bool(np.abs(q.max(axis=0) - q.min(axis=0)).max() <= GRAZE * card_size[0])


def _add_pieces(contours, outer, raw, hull, card_size):
    """_cut_spurs' pieces of `raw` appended to `contours`, each with its blob's hull in `outer`
    (for its corners)."""
    for piece in _cut_spurs(raw, card_size):
        outer[len(contours)] = hull
        contours.append(piece)


def _cut_spurs(contour, card_size):
    """The pieces as large as a card that an opening by a disc of a third of the card's width
    leaves of a blob (its holes filled: a court card's picture), each as the points of its
    outline on the blob's own outline: a streak narrower than the disc, joined to the card, is
    cut off; where it was cut, and at the opening's round corners (a hull 0.88 full), the
    piece's outline is not the card's edge."""
    x, y, w, h = cv2.boundingRect(contour)
    k = int(card_size[0] / 3) | 1
    m = np.zeros((h + 2 * k, w + 2 * k), np.uint8)
    cv2.drawContours(m, [contour], -1, 255, -1, offset=(k - x, k - y))
    opened = open_ellipse(m, k)     # the disc's opening (morph.py: the same pixels, in half the time)
    rim = cv2.subtract(m, cv2.erode(m, np.ones((5, 5), np.uint8)))      # the blob's outline, 2 wide
    cs, _ = cv2.findContours(opened, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    out = []
    for c in cs:
        if cv2.contourArea(c) > 0.6 * card_size[0] * card_size[1]:
            p = c.reshape(-1, 2)
            own = p[rim[p[:, 1], p[:, 0]] > 0]
            if len(own) >= 20:
                d = np.int32([x - k, y - k])
                out.append((own + d).reshape(-1, 1, 2).astype(np.int32))
    return out

