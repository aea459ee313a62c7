"""The index reader's primitives: the canonical card, a corner's patch and its ink, the
learned index box, and the correlation of a patch with the learned indexes over small shifts
(integral-image spreads, one matrix product). Shared by the templates and the reader."""
import cv2
import numpy as np

from .hands import both_corners

CW, CH = 240, 336                 # the canonical card: templates and reads at this size
REGION = (int(0.34 * CW), int(0.38 * CH))   # where an index is looked for: the corner area
SEARCH = 6                        # pixels of slack around the learned box (outline error)
MATCH = 0.75                      # indexes are compared at half the canonical size: 4x faster,
S = int(SEARCH * MATCH)           # and no read lost on the material measured (docs/camera.md)
FACE_W, FACE_H = 120, 168         # the whole face, compared as ink edges at this size
FACE_MIN = 0.62                   # a whole card reads only if its face is this like the learned one
# at the table's scale (a card under deckprint.SMALL pixels wide) the face is blurred to its
# pips' outlines: cardsJS cards passing the fingerprint scored 0.66-0.73 against the table
# camera's Kennard templates, that deck's own cards 0.77 and more (docs/camera.md)
FACE_MIN_SMALL = 0.75
STRICT = 0.88                     # a single corner (a covered card) reads only at this score
# the blurred reads only for an outline whose plain read found an index-like corner: the others
# (another object, a table's pattern) cost nothing more; under it a corner says no card
BLURRED_MIN = 0.55
TWIN = {"s": "c", "c": "s", "h": "d", "d": "h"}      # the other suit of the same colour
INK = {"s": "black", "c": "black", "h": "red", "d": "red"}
_FACE_KERNEL = np.ones((13, 13), np.uint8)
FACE_SUIT = 0.05                  # a suit the index leaves open is the face's when it beats the other by this
NEAR = 0.02                       # and beats the next by at least this, however alike (_clear)
LAID = 0.95                       # a corner laid from the hand's outline, its own edges not found:
                                  # a glyph a few pixels off once read 0.92 as another rank


def face(bgr, quad):
    """The card's whole face as unit-length ink edges: the paper divided out (shadow, glare and
    white balance fall out), edges so that pip size, the font and a printed outline count. Two
    deck designs share an index font closely enough to pass the index reader (Adrian Kennard's
    and the Vectorized Playing Cards' fours of diamonds: 0.93); their faces do not."""
    # the quad's corners on the face's outer pixel edges (pixel centres at +0.5): the face of
    # the quad turned half round is then this face turned half round. Laid on the pixels'
    # centres, it was shifted a pixel each way, and a card whose outline's order was the
    # reference photo's turned half round scored 0.75 where it scored 0.97 (svg-cards' fine
    # court and pip lines at 125 pixels; docs/camera.md)
    dst = np.float32([[0, 0], [FACE_W, 0], [FACE_W, FACE_H], [0, FACE_H]]) - 0.5
    m = cv2.getPerspectiveTransform(np.float32(quad), dst)
    g = cv2.warpPerspective(bgr, m, (FACE_W, FACE_H), flags=cv2.INTER_AREA, borderMode=cv2.BORDER_REPLICATE)
    g8 = cv2.cvtColor(g, cv2.COLOR_BGR2GRAY)
    g = g8.astype(np.float32) + 1
    # dilated in bytes, then +1 (the same maxima, the filter faster on bytes)
    paper = cv2.GaussianBlur(cv2.dilate(g8, _FACE_KERNEL).astype(np.float32) + 1, (0, 0), 3)
    g = cv2.GaussianBlur(np.clip(1 - g / paper, 0, 1), (0, 0), 1.0)
    e = cv2.magnitude(cv2.Sobel(g, cv2.CV_32F, 1, 0), cv2.Sobel(g, cv2.CV_32F, 0, 1))
    return _unit(e[None])[0].reshape(e.shape)


def face_score(f, learned):
    """Correlation of two faces; the card may lie either way round."""
    return max(float((f * learned).sum()), float((f * learned[::-1, ::-1]).sum()))


def corner(bgr, quad, box, pad=SEARCH, scale=1.0):
    """The image of `box` (x0, y0, x1, y1 on the canonical card) at the tl corner of `quad`,
    `pad` pixels wider each side, at `scale`; warps only that patch (fast)."""
    x0, y0, x1, y1 = box
    x0, y0 = x0 - pad, y0 - pad
    dst = (np.float32([[0, 0], [CW, 0], [CW, CH], [0, CH]]) - np.float32([x0, y0])) * scale
    m = cv2.getPerspectiveTransform(np.float32(quad), dst)
    size = (round((x1 - x0 + pad) * scale), round((y1 - y0 + pad) * scale))
    return cv2.warpPerspective(bgr, m, size, flags=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_REPLICATE)


def _ink(patch):
    """(gray, ink mask, colour) with the patch's own paper as white: white balance and light fall
    out. colour is 'red', 'black' or None (unclear)."""
    n, gray = _paper_gray(patch)
    ink = gray < 0.6
    if np.count_nonzero(ink) < 15:
        return gray, ink, None
    px = n[ink]
    red = float((px[:, 2] - np.maximum(px[:, 0], px[:, 1])).mean())
    # a warm light clips the paper's red channel first: divided by it, black ink looks a little
    # red (up to 0.12 on 1,284 webcam corners under tungsten, where red ink read 0.22 and more)
    return gray, ink, "red" if red > 0.18 else "black" if red < 0.14 else None


def _match_gray(patch):
    """The corner patch as the reader compares it: divided by its paper, at MATCH of its size."""
    gray = _paper_gray(patch)[1]
    return cv2.resize(gray, (round(gray.shape[1] * MATCH), round(gray.shape[0] * MATCH)),
                      interpolation=cv2.INTER_AREA)


def _paper_gray(patch):
    """(colours, gray) divided by the patch's own paper: _ink's first half, all a reader's
    comparison needs."""
    flat = patch.reshape(-1, 3)
    k = int(0.9 * (len(flat) - 1))
    paper = _kth(flat, k) + 1                             # the 90th percentile: the paper
    n = np.divide(patch, paper, dtype=np.float32)         # the bytes as float32, divided
    np.minimum(n, 1.2, out=n)                             # (never below 0)
    return n, (n[..., 0] + n[..., 1] + n[..., 2]) / 3     # mean(axis=2), 5x faster


def _kth(flat, k):
    """The k-th smallest value of each column of N x 3 uint8 pixels (np.partition's answer)
    from a histogram per channel: partitioning the floats was half the index reader's time."""
    if flat.dtype != np.uint8:
        return np.partition(flat.astype(np.float32), k, axis=0)[k]
    img = flat.reshape(-1, 1, 3)          # cv2.calcHist: a third faster than np.bincount here
    hist = np.concatenate([cv2.calcHist([img], [c], None, [256], [0, 256]) for c in range(3)])
    return (hist.reshape(3, 256).cumsum(axis=1) <= k).sum(axis=1).astype(np.float32)


def learn_box(patches):
    """The index box (x0, y0, x1, y1) and the row splitting rank from suit, from the corner
    REGION of each reference card: the ink nearest the corner, and what stacks below it."""
    boxes, splits = [], []
    for p in patches:
        gray, ink, _ = _ink(p)
        inset = 4
        ink[:inset], ink[:, :inset] = False, False      # the card's own edge or border line
        n, _, st, _ = cv2.connectedComponentsWithStats(ink.astype(np.uint8), connectivity=8)
        comps = [st[i] for i in range(1, n) if st[i][4] >= 12]
        if not comps:
            continue
        first = min(comps, key=lambda s: s[0] + s[1])
        col0, col1 = first[0] - 0.06 * CW, first[0] + 0.16 * CW
        group = [s for s in comps if s[0] >= col0 and s[0] + s[2] <= col1 + 0.04 * CW]
        group.sort(key=lambda s: s[1])
        rows, bottom = [], None
        for s in group:     # rows: the rank (one or two glyphs side by side), then the suit
            if bottom is None or s[1] <= bottom + 2:
                if not rows:
                    rows.append([s])
                else:
                    rows[-1].append(s)
                bottom = max(bottom or 0, s[1] + s[3])
            elif len(rows) < 2 and s[1] - bottom < 0.06 * CH:
                rows.append([s])
                bottom = s[1] + s[3]
        if len(rows) < 2:
            continue
        allc = rows[0] + rows[1]
        boxes.append((min(s[0] for s in allc), min(s[1] for s in allc),
                      max(s[0] + s[2] for s in allc), max(s[1] + s[3] for s in allc)))
        splits.append((max(s[1] + s[3] for s in rows[0]) + min(s[1] for s in rows[1])) / 2)
    if len(boxes) < len(patches) // 2:
        raise ValueError("no index found in the corners of most reference cards")
    b = np.array(boxes)
    box = (int(np.percentile(b[:, 0], 10)) - 2, int(np.percentile(b[:, 1], 10)) - 2,
           int(np.percentile(b[:, 2], 90)) + 3, int(np.percentile(b[:, 3], 90)) + 3)
    box = (max(box[0], 2), max(box[1], 2), min(box[2], REGION[0]), min(box[3], REGION[1]))
    return box, int(np.median(splits))


def index_patch(img, quad, box, split=None):
    """The index of a reference card, checked: the two index corners of a card show the same
    index, so a wrong outline (a white area inside the card, a card turned a quarter) or a
    smudged corner gives None instead of a template that would misread every card after it.
    `split` (the row between rank and suit): the rank and the suit compared each at its own
    best shift, as the reader compares them. A design's rotated index need not keep the rank
    and suit the same distance apart, nor the outline the two corners' scale: one shift for
    the whole index left a thin-stroked 8 at 0.68-0.77 (cardsJS, the rest of a deck 0.88-0.99)."""
    a = _ink(corner(img, quad, box, 0))
    far = corner(img, both_corners(quad)[1], box, SEARCH)
    b = _ink(far)
    # the corners' colours must not contradict each other; an unclear one (a strong colour cast
    # clipping one channel of the paper) is no contradiction (labelcheck.ink_mislabels)
    colours = {a[2], _ink(far[SEARCH:-SEARCH, SEARCH:-SEARCH])[2]} - {None}
    if len(colours) > 1 or a[1].mean() < 0.03:
        return None
    cut = None if split is None else split - box[1]
    parts = ([(a[0], b[0])] if cut is None or not 0 < cut < a[0].shape[0] else
             [(a[0][:cut], b[0][:cut + 2 * SEARCH]), (a[0][cut:], b[0][cut:])])
    same = min(_best_over_shifts(y, x.shape, np.ascontiguousarray(_unit(x[None]).T))[0] for x, y in parts)
    return np.float32(a[0]) if same >= 0.7 else None


def _unit(stack):
    """Rows of zero mean and unit length: their dot products are normalised correlations."""
    m = stack.reshape(len(stack), -1).astype(np.float32)
    m = m - m.mean(axis=1, keepdims=True)
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-6)


def _peak(img, shape, col, sc=None):
    """Where the template `col` (of `shape`) matches `img` best: (dx, dy) from the centre of the
    placements, subpixel (a parabola through the peak and its neighbours). `sc`: that column's
    scores, when the reader has them already (its product with every template of the colour)."""
    if sc is None:
        sc = _scores(img, shape, col[:, None])[:, 0]
    sc = sc.reshape(img.shape[0] - shape[0] + 1, img.shape[1] - shape[1] + 1)
    y, x = np.unravel_index(int(np.argmax(sc)), sc.shape)

    def sub(a, i):
        d = a[i - 1] - 2 * a[i] + a[i + 1] if 0 < i < len(a) - 1 else 0
        return (i + 0.5 * (a[i - 1] - a[i + 1]) / d if d < 0 else i) - (len(a) - 1) / 2
    return sub(sc[y, :], x), sub(sc[:, x], y)


def _best_over_shifts(img, shape, m):
    """For each template column of `m` (of `shape`), its best correlation over every placement in
    `img`: one matrix product for all templates and shifts (matchTemplate per template is 10x
    slower at these sizes)."""
    return _scores(img, shape, m).max(axis=0)


def _scores(img, shape, m):
    """The normalised correlation of every placement in `img` (rows, in reading order) with each
    zero-mean unit template column of `m` (of `shape`)."""
    return _product(_windows(img, shape), m)


def _product(windows, m):
    """_scores from `_windows` taken once (the suit part is compared with both colours' suits)."""
    win, spread = windows
    return (win @ m) / spread


def _windows(img, shape):
    """Every placement of `shape` in `img` as a row, and each one's spread (a column)."""
    h, w = shape
    st = img.strides
    win = np.lib.stride_tricks.as_strided(img, (img.shape[0] - h + 1, img.shape[1] - w + 1, h, w),
                                          st + st, writeable=False).reshape(-1, h * w)
    # m's columns have zero mean, so a window's own mean need not be taken off before the
    # product, only its spread divided out after it: each window's sum and sum of squares from
    # integral images (normalising every window first was half this function's time)
    s, sq = cv2.integral2(np.ascontiguousarray(img, np.float32), sdepth=cv2.CV_64F, sqdepth=cv2.CV_64F)
    box = lambda t: (t[h:, w:] - t[:-h, w:] - t[h:, :-w] + t[:-h, :-w]).ravel()  # noqa: E731
    s, sq = box(s), box(sq)
    spread = np.sqrt(np.maximum(sq - s * s / (h * w), 0)).astype(np.float32)
    # a window with no ink (its spread under 2% of the paper per pixel: a flat or clipped area)
    # scores 0: divided by a spread near 0, the product's rounding scored up to 7.6 and a corner
    # laid on a bare margin once "read" a ten of spades
    spread[spread < 0.02 * np.sqrt(h * w)] = np.inf
    return win, spread[:, None]

