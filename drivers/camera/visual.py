"""Visual rank and suit that learns the deck: where the index sits on this deck's cards (position,
size and colour vary from deck to deck) and what each card's index looks like, from one
photo (or live frame) per card of the studio's own deck. A card is read from its index corners,
each compared with all 52 learned indexes; refused when a match is weak or ambiguous, when the
ink's colour is unclear, or when two readable corners disagree. A corner of another deck's design
matches none of them well: such cards are refused."""
import json
import os

import cv2
import numpy as np

from controller.cards import CARDS
from .deckprint import CORNER_FACE_MIN, SMALL, DeckPrint, corner_face_score, rounding, visible_face_score
from .find import card_size_of, find_cards
from .hands import both_corners, corner_gray, hand_corners, refine_corner, whole_card
from .labelcheck import consistent_mislabels, contact_sheet
from .occluded import masked_face_score, occluders, visible

CW, CH = 240, 336                 # the canonical card: templates and reads at this size
REGION = (int(0.34 * CW), int(0.38 * CH))   # where an index is looked for: the corner area
SEARCH = 6                        # pixels of slack around the learned box (outline error)
MATCH = 0.75                      # indexes are compared at half the canonical size: 4x faster,
S = int(SEARCH * MATCH)           # and no read lost on the material measured (docs/camera.md)
FORMAT = 4                        # 3: with the whole face of each card (the deck check); 4: the deck's
                                  # fingerprint (deckprint.py)
FACE_W, FACE_H = 120, 168         # the whole face, compared as ink edges at this size
FACE_MIN = 0.62                   # a whole card reads only if its face is this like the learned one
# at the table's scale (a card under deckprint.SMALL pixels wide) the face is blurred to its
# pips' outlines: cardsJS cards passing the fingerprint scored 0.66-0.73 against the table
# camera's Kennard templates, that deck's own cards 0.77 and more (docs/camera.md)
FACE_MIN_SMALL = 0.75
STRICT = 0.88                     # a single corner (a covered card) reads only at this score
TWIN = {"s": "c", "c": "s", "h": "d", "d": "h"}      # the other suit of the same colour
INK = {"s": "black", "c": "black", "h": "red", "d": "red"}
_FACE_KERNEL = np.ones((13, 13), np.uint8)
_SHOW_KERNEL = np.ones((9, 9), np.uint8)
VISIBLE = 0.6                     # a whole card partly under another is judged on what shows: most of it
FACE_SUIT = 0.05                  # a suit the index leaves open is the face's when it beats the other by this
NEAR = 0.02                       # and beats the next by at least this, however alike (_clear)
HIDDEN = 0.25                     # of a covered index corner's box under another card (_read_occluded)
LAID = 0.95                       # a corner laid from the hand's outline, its own edges not found:
                                  # a glyph a few pixels off once read 0.92 as another rank


def face(bgr, quad):
    """The card's whole face as unit-length ink edges: the paper divided out (shadow, glare and
    white balance fall out), edges so that pip size, the font and a printed outline count. Two
    deck designs share an index font closely enough to pass the index reader (Adrian Kennard's
    and the Vectorized Playing Cards' fours of diamonds: 0.93); their faces do not."""
    dst = np.float32([[0, 0], [FACE_W, 0], [FACE_W, FACE_H], [0, FACE_H]])
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


class BadReference(ValueError):
    """Reference images to take again: `cards`."""

    def __init__(self, cards, message, why=None):
        super().__init__(message)
        self.cards = cards
        self.why = why or {}        # {card: why its image was refused}, when said per card


def index_patch(img, quad, box):
    """The index of a reference card, checked: the two index corners of a card show the same
    index, so a wrong outline (a white area inside the card, a card turned a quarter) or a
    smudged corner gives None instead of a template that would misread every card after it."""
    a = _ink(corner(img, quad, box, 0))
    far = corner(img, both_corners(quad)[1], box, SEARCH)
    b = _ink(far)
    if a[2] is None or a[2] != _ink(far[SEARCH:-SEARCH, SEARCH:-SEARCH])[2] or a[1].mean() < 0.03:
        return None
    shape = a[0].shape
    same = _best_over_shifts(b[0], shape, np.ascontiguousarray(_unit(a[0][None]).T))[0]
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


class Templates:
    """The learned deck: the card size in the camera's pixels, the index box, and the index of
    each of the 52 cards as a gray patch (rank part above `split`, suit part below)."""

    def __init__(self, card_size, box, split, patches, faces, deck_print=None):
        self.card_size, self.box, self.split, self.patches = card_size, tuple(box), split, patches
        self.faces = faces
        self.print = deck_print        # DeckPrint; None only while capture() learns it
        self.cut = round((split - self.box[1]) * MATCH)
        # split into rank and suit, compared separately: a 6 of spades never passes for a 6 of
        # clubs on the strength of the rank alone
        small = {c: cv2.resize(p, None, fx=MATCH, fy=MATCH, interpolation=cv2.INTER_AREA)
                 for c, p in patches.items()}
        self.cards = list(small)
        # transposed and contiguous: a product with a transposed view is 10x slower
        self.rank_m = np.ascontiguousarray(_unit(np.stack([small[c][:self.cut] for c in self.cards])).T)
        self.suit_m = np.ascontiguousarray(_unit(np.stack([small[c][self.cut:] for c in self.cards])).T)
        self.part_shapes = (small[self.cards[0]][:self.cut].shape, small[self.cards[0]][self.cut:].shape)

    @classmethod
    def capture(cls, samples):
        """samples: [(image, quad, card)], every card of the deck once (one photo per card)."""
        seen = {c for _, _, c in samples}
        missing = [c for c in CARDS if c not in seen]
        if missing:
            raise ValueError(f"templates missing for {', '.join(missing)}")
        region = (0, 0) + REGION
        box, split = learn_box([corner(img, q, region, 0) for img, q, _ in samples])
        patches, failed = {}, []
        # a red card must show red ink and a black card black: a camera that sends grey (its
        # saturation down, a monochrome mode) makes templates that cannot tell a diamond from a
        # spade
        inks = {card: _ink(corner(img, q, box, 0)) for img, q, card in samples}
        blank = [c for c in CARDS if np.count_nonzero(inks[c][1]) < 15]
        if blank:       # no ink at all where the index is: not a colour question
            raise BadReference(blank, f"no index found in the corner of the reference images of "
                               f"{', '.join(blank)} (a blank card, or a white sheet taken for the card?)")
        hue = {card: ink[2] for card, ink in inks.items()}
        off = [c for c in CARDS if hue[c] != INK[c[1]]]
        if off:
            raise BadReference(off, f"the reference images of {', '.join(off)} do not show "
                               f"{'their ink' if len(off) > 1 else 'its ink'}'s colour (red hearts "
                               f"and diamonds, black spades and clubs): is the camera sending "
                               f"colour, its saturation up, the light white?")
        for img, q, card in samples:
            if card in patches:
                continue
            patch = index_patch(img, q, box)
            if patch is None:
                failed.append(card)
            else:
                patches[card] = patch
        if failed:
            raise BadReference(failed, f"no index found at both corners of the reference images of "
                               f"{', '.join(failed)} (is the card whole in the picture, flat and sharp?)")
        faces = {}
        for img, q, card in samples:
            faces.setdefault(card, face(img, q))
        t = cls(card_size_of([q for _, q, _ in samples]), box, split, patches, faces)
        bad = t.inconsistent()
        if bad:
            raise BadReference(bad, f"the reference images of {', '.join(bad)} show no index like "
                               f"the other cards' (a wrong outline?): take them again")
        # each corner read against the rest of the deck: a photo of another card than its label,
        # or a card whose corners show two cards (A at one, K at the other), passed every test
        # above, and its template read the wrong card
        why = {c: w for img, q, c in samples if (w := t.misread(img, q, c))}
        if why:
            raise BadReference(list(why), "; ".join(f"the reference image of {c} {w}" for c, w in why.items())
                               + ": take it again with the card its label names", why)
        wrong = consistent_mislabels(samples, t)    # labels wrong alike across the deck (labelcheck.py)
        if wrong:
            raise BadReference(*wrong)
        # the fingerprint: each photo's rounding, and its far index corner's shift from the
        # template its near corner gave (the outline's error at this camera's scale)
        t.print = DeckPrint.learn([rounding(img, q, (CW, CH)) for img, q, _ in samples],
                                  [index_shift(t, img, both_corners(q)[1], c) for img, q, c in samples],
                                  t.card_size[0])
        return t

    def misread(self, bgr, quad, card):
        """Why the reference photo of `card` is not that card, or None: each index corner compared
        with every other card's template (its own was learned from this photo), its rank part must
        be most like `card`'s rank in the other suits, its suit part most like `card`'s suit on the
        other cards (those of its colour: the colour was checked). Most like a rank or suit by the
        median over its cards: one mislabelled photo's template (a 5 labelled 6c) is one vote
        among its rank's, not the best match of every other 5."""
        seen = []
        for q in both_corners(quad):
            gray = _match_gray(corner(bgr, q, self.box, SEARCH))
            s = self.cut + S
            rs = _best_over_shifts(gray[:s + S], self.part_shapes[0], self.rank_m)
            us = _best_over_shifts(gray[s - S:], self.part_shapes[1], self.suit_m)
            seen.append(_most_like(rs, self.cards, card, 0) + _most_like(us, self.cards, card, 1))
        if seen[0] == seen[1] == card:
            return None
        if seen[0] != seen[1]:
            return f"shows {seen[0]} at one index corner and {seen[1]} at the other"
        return f"shows {seen[0]}, not {card}"

    def inconsistent(self):
        """Cards whose learned index disagrees with the deck: a suit glyph is the same on every
        card of the suit, a rank glyph the same in every suit. A template learned from a wrong
        outline (a white area inside the card) matches neither."""
        shapes = self.part_shapes
        pad = lambda x: np.pad(x, 3, mode="edge")     # noqa: E731  (slack for the outline)
        bad = []
        for i, c in enumerate(self.cards):
            r, u = self.rank_m[:, i].reshape(shapes[0]), self.suit_m[:, i].reshape(shapes[1])
            rs = _best_over_shifts(pad(r), shapes[0], self.rank_m)
            us = _best_over_shifts(pad(u), shapes[1], self.suit_m)
            same_rank = [rs[j] for j, d in enumerate(self.cards) if d[0] == c[0] and d != c]
            same_suit = [us[j] for j, d in enumerate(self.cards) if d[1] == c[1] and d != c]
            # a suit glyph is more like its own suit's than the other suit of its colour's: two
            # photos labelled with their suits swapped (2s and 2c) pass every other test
            twin = [us[j] for j, d in enumerate(self.cards) if d[1] == TWIN[c[1]]]
            if max(same_rank) < 0.75 or float(np.median(same_suit)) < max(
                    0.75, float(np.median(twin))):
                bad.append(c)
        return bad

    def save(self, folder):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "deck.json"), "w") as f:
            json.dump({"format": FORMAT, "card_size": list(self.card_size), "box": list(self.box),
                       "split": self.split, "print": self.print.to_json()}, f)
        for c, p in self.patches.items():
            f = self.faces[c]
            # 16 bits: at 8 the faint edges of a face fell to zero (the self-score was 0.94)
            for name, img in ((f"index_{c}.png", np.uint8(np.clip(p * 200, 0, 255))),
                              (f"face_{c}.png", np.uint16(np.clip((f - f.min()) / max(
                                  float(np.ptp(f)), 1e-9) * 65535, 0, 65535)))):
                if not cv2.imwrite(os.path.join(folder, name), img):      # a full card, a read-only one
                    raise OSError(f"cannot write {os.path.join(folder, name)}")
        if not cv2.imwrite(os.path.join(folder, "contact.png"), contact_sheet(self.patches)):
            raise OSError(f"cannot write {os.path.join(folder, 'contact.png')}")   # for the eye: labels

    @classmethod
    def load(cls, folder):
        path = os.path.join(folder, "deck.json")
        try:
            with open(path) as f:
                meta = json.load(f)
        except OSError:
            raise ValueError(f"{folder}: no deck.json (templates from an older version, or none: "
                             f"capture them with shoe-calibrate camera templates)") from None
        except ValueError:
            raise ValueError(f"{path}: damaged (not JSON: cut short or edited?): capture the "
                             f"templates again") from None
        card_size, box, split = _deck_meta(path, meta)
        patches, faces = {}, {}
        shape = (box[3] - box[1], box[2] - box[0])
        for c in CARDS:
            g = cv2.imread(os.path.join(folder, f"index_{c}.png"), cv2.IMREAD_GRAYSCALE)
            f = cv2.imread(os.path.join(folder, f"face_{c}.png"), cv2.IMREAD_UNCHANGED)
            if g is None:
                raise ValueError(f"{folder}: missing template index_{c}.png")
            if g.shape != shape:     # every index is the learned box's size (none resized by hand)
                raise ValueError(f"{folder}: template index_{c}.png is {g.shape[1]} x {g.shape[0]} "
                                 f"pixels, the index box {shape[1]} x {shape[0]}: capture the "
                                 f"templates again")
            if f is None or f.shape != (FACE_H, FACE_W) or f.dtype != np.uint16:
                raise ValueError(f"{folder}: missing or damaged template face_{c}.png")
            patches[c] = g.astype(np.float32) / 200
            faces[c] = _unit(f.astype(np.float32)[None])[0].reshape(f.shape)
        try:
            deck_print = DeckPrint.from_json(meta["print"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: no valid deck fingerprint ('print'): capture the templates "
                             f"again") from None
        return cls(card_size, box, split, patches, faces, deck_print)


def _deck_meta(path, meta):
    """(card_size, box, split) of a deck.json, checked: a file edited by hand (NaN, a string, a
    split outside the index) is said naming its key, not found as a crash in the camera thread."""
    def bad(key, want):
        return ValueError(f"{path}: {key}: expected {want}, got {json.dumps(meta.get(key))[:40]} "
                          f"(edited by hand? capture the templates again)")
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: expected an object with format, card_size, box, split, print "
                         f"(edited by hand? capture the templates again)")
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: template format {meta.get('format')}, expected {FORMAT} (from an "
                         f"older version: capture them again with shoe-calibrate camera templates)")

    def numbers(key, n, kind):
        v = meta.get(key)
        if not (isinstance(v, list) and len(v) == n and all(
                isinstance(x, kind) and not isinstance(x, bool) and np.isfinite(x) for x in v)):
            raise bad(key, f"{n} {'whole ' if kind is int else ''}numbers")
        return v
    w, h = numbers("card_size", 2, (int, float))
    if not (16 <= w <= 4000 and 16 <= h <= 4000):
        raise bad("card_size", "a card's width and height in pixels (16 to 4000)")
    box = numbers("box", 4, int)
    if not (0 <= box[0] < box[2] <= CW and 0 <= box[1] < box[3] <= CH):
        raise bad("box", f"x0 < x1 <= {CW}, y0 < y1 <= {CH} on the canonical card")
    split = meta.get("split")
    # the rank above the split and the suit below, each at least a few pixels when compared
    if not (isinstance(split, int) and not isinstance(split, bool)
            and box[1] + 4 / MATCH <= split <= box[3] - 4 / MATCH):
        raise bad("split", f"a whole number between the index box's top and bottom "
                           f"({box[1]} and {box[3]})")
    return (float(w), float(h)), tuple(box), split


def index_shift(t, bgr, quad, card, gray=None):
    """How far `card`'s learned rank and suit lie from where they show at the tl corner of `quad`:
    the largest of their x and y shifts, in canonical pixels (the deck fingerprint). `gray`: the
    corner's patch as the reader compared it, when it has it (the same warp, not done twice), or
    (patch, cards, rank scores, suit scores) as read_corner keeps it (the products not done twice)."""
    rsc = usc = None
    if isinstance(gray, tuple):
        gray, cards, rs, us = gray
        if card in cards:
            j = cards.index(card)
            rsc, usc = rs[:, j], us[:, j]
    if gray is None:
        gray = _match_gray(corner(bgr, quad, t.box, SEARCH))
    s, i = t.cut + S, t.cards.index(card)
    r = _peak(gray[:s + S], t.part_shapes[0], t.rank_m[:, i], rsc)
    u = _peak(gray[s - S:], t.part_shapes[1], t.suit_m[:, i], usc)
    return max(abs(v) for v in r + u) / MATCH


def _most_like(scores, cards, card, j):
    """The rank (j 0) or suit (j 1) whose cards, other than `card`, score highest by their
    median; suits only of `card`'s colour."""
    by = {}
    for v, d in zip(scores.tolist(), cards):
        if d != card and (j == 0 or INK[d[1]] == INK[card[1]]):
            by.setdefault(d[j], []).append(v)
    return max(by, key=lambda k: float(np.median(by[k])))


def _groups(keys):
    """(the distinct keys, the order that groups equal keys, where each group starts): the
    arguments of np.maximum.reduceat for the best of each key."""
    order = sorted(range(len(keys)), key=lambda j: keys[j])
    names = sorted(set(keys))
    starts = [[keys[j] for j in order].index(k) for k in names]
    return names, np.array(order), np.array(starts)


def _likeness(m, shape):
    """How alike each two learned templates (columns of `m`, of `shape`) are: the best
    correlation of one with the other over the reader's shifts (symmetric)."""
    out = np.stack([_best_over_shifts(np.pad(m[:, i].reshape(shape), S, mode="edge"), shape, m)
                    for i in range(m.shape[1])])
    return np.maximum(out, out.T)


def _clear(v1, v2, margin, like=None):
    """The best match beats the next by `margin`; or, for a corner that reads alone (`like`: how
    alike the two templates are), by at least half the way from the next's template to its own
    and NEAR: a Responsive spade and club score 0.95 against each other at 125 pixels, so a
    spade read 0.994 beats the club's 0.948 by less than 0.05 though it is 0.9 of the way there
    (docs/camera.md: no wrong candidate of a located corner scored above 0.81)."""
    if v1 - v2 >= margin:
        return True
    return like is not None and v1 - v2 >= NEAR and (v1 - v2) / max(1 - float(like), 1e-3) >= 0.5


class VisualRecognizer:
    """Reads cards: each index corner is compared with the 52 learned indexes (those of the ink's
    colour), rank part and suit part each; a corner reads as a card only if both parts score at
    least `threshold` and beat every other rank and suit by `margin`."""

    def __init__(self, templates, threshold=0.8, margin=0.05):
        # The index comparisons are small matrix products; OpenBLAS spreads them over every
        # core, and on a busy machine that made them 50x slower (measured): one thread.
        from threadpoolctl import threadpool_limits
        self._blas = threadpool_limits(1, user_api="blas")
        self.t = templates
        # an index is compared only with the learned indexes of its ink's colour: half the product
        self._by_colour = {}
        for colour, suits in (("red", "hd"), ("black", "sc")):
            i = [k for k, c in enumerate(templates.cards) if c[1] in suits]
            rank_m = np.ascontiguousarray(templates.rank_m[:, i])
            suit_m = np.ascontiguousarray(templates.suit_m[:, i])
            self._by_colour[colour] = ([templates.cards[k] for k in i], rank_m, suit_m,
                                       _likeness(rank_m, templates.part_shapes[0]),
                                       _likeness(suit_m, templates.part_shapes[1]))
        # per colour, the cards grouped by rank and by suit: each rank's and suit's best score
        # in one reduction (a dict filled card by card was a sixth of read_corner)
        self._groups = {colour: tuple(_groups([c[j] for c in cards]) for j in (0, 1))
                        for colour, (cards, *_) in self._by_colour.items()}
        self.threshold = threshold
        self.margin = margin

    def read_corner(self, bgr, quad, strict=False, keep=None, short=None):
        """(card or None, confidence) from the index at the tl corner of `quad`; `strict` for a
        corner that alone will decide (a covered card): a higher score (STRICT). A corner
        refused only because its suit's margin fell short adds (card, the runner-up suit's
        card) to the list `short` when one is given (read_quad lets the face decide)."""
        # the colour from the full-size patch (thin strokes shrunk lose their colour), the
        # comparison at half size (fast)
        patch = corner(bgr, quad, self.t.box, SEARCH)
        colour = _ink(patch[SEARCH:-SEARCH, SEARCH:-SEARCH])[2]   # not the table beyond the edge
        if colour is None:
            return None, 0.0
        gray = _match_gray(patch)
        cards, rank_m, suit_m, rank_like, suit_like = self._by_colour[colour]
        s = self.t.cut + S
        top, bottom = gray[:s + S], gray[s - S:]
        rsc = _scores(top, self.t.part_shapes[0], rank_m)
        windows = _windows(bottom, self.t.part_shapes[1])
        ssc = _product(windows, suit_m)
        if keep is not None:        # the compared patch and its scores, for the fingerprint's index_shift
            keep[np.float32(quad).tobytes()] = (gray, cards, rsc, ssc)
        rs, ss = rsc.max(axis=0), ssc.max(axis=0)
        (ranks, rp, rat), (suits, sp, sat) = self._groups[colour]
        rank = zip(np.maximum.reduceat(rs[rp], rat).tolist(), ranks)     # (best score, rank)
        suit = zip(np.maximum.reduceat(ss[sp], sat).tolist(), suits)
        (r1, k1), (r2, k2) = sorted(rank, reverse=True)[:2]
        (s1, j1), (s2, j2) = sorted(suit, reverse=True)[:2]
        conf = min(r1, s1)
        threshold, margin = self.threshold, self.margin
        if strict:      # a corner located on its two edges: a higher score
            threshold = max(threshold, STRICT)
        # the colour only narrows the comparison: no suit of the other colour may match the
        # shape better. "black" is the absence of red, so in a grey frame (saturation turned
        # down, a monochrome or IR mode) or a four-colour deck a diamond is "black", and among
        # spades and clubs alone it read as a spade. (Not by the margin: a spade and a heart are
        # alike at this size, and a margin over both colours refused half the good reads.)
        other = self._by_colour["black" if colour == "red" else "red"][2]
        like_r = like_s = None
        if strict and conf >= threshold and (r1 - r2 < margin or s1 - s2 < margin):
            # how alike the two best templates are (_clear), by their cards' places
            best = lambda sc, key, j: max((float(sc[i]), i) for i, c in enumerate(cards)   # noqa: E731
                                          if c[j] == key)[1]
            like_r = rank_like[best(rs, k1, 0), best(rs, k2, 0)]
            like_s = suit_like[best(ss, j1, 1), best(ss, j2, 1)]
        if conf < threshold or not (_clear(r1, r2, margin, like_r) and _clear(s1, s2, margin, like_s)):
            if short is not None and conf >= threshold and r1 - r2 >= margin and s1 > s2 \
                    and float(_product(windows, other).max()) < s1:
                short.append((k1 + j1, k1 + j2))
            return None, conf
        if float(_product(windows, other).max()) >= s1:     # the same windows
            return None, conf
        return k1 + j1, conf

    def read_quad(self, bgr, quad, need_both=True):
        """(card or None, confidence): both index corners must read the same card; with
        `need_both` False (a card partly covered in a hand) one is enough if the other reads
        nothing."""
        return self._read_quad(bgr, quad, need_both)[:2]

    def _read_quad(self, bgr, quad, need_both=True):
        """read_quad's answer and the card it refused when that card read at both corners but
        failed the deck check (another deck: the hand it lies in is refused too), else False."""
        grays, corners, short = {}, both_corners(quad), []
        (a, ca), (b, cb) = (self.read_corner(bgr, q, strict=not need_both, keep=grays,
                                             short=short if need_both else None) for q in corners)
        if a and b and a != b:
            return None, 0.0, False
        f = None
        if need_both and not (a and b):
            if not short:
                return None, min(ca, cb), False
            f = face(bgr, quad)
            a = b = self._suit_by_face(f, a, b, short)
            if not a:
                return None, min(ca, cb), False
        if need_both and not self._of_deck(bgr, quad, a, grays, f):
            return None, 0.0, a
        return a or b, max(ca, cb) if (a or b) else 0.0, False

    def _of_deck(self, bgr, quad, card, grays, f=None, hidden=()):
        """The deck check of a whole card that read `card` at both corners: its face (`f` when
        the caller has it), then its fingerprint. `hidden`: the outlines of cards lying over part
        of it; its face is then compared where it shows (at least VISIBLE of it)."""
        face_min = FACE_MIN if self.t.card_size[0] >= SMALL else FACE_MIN_SMALL
        f = face(bgr, quad) if f is None else f
        if hidden:
            shows = _shows(quad, hidden)
            if shows.mean() < VISIBLE or visible_face_score(f, self.t.faces[card], shows) < face_min:
                return False
        elif face_score(f, self.t.faces[card]) < face_min:
            return False        # another deck whose index font is like this deck's
        # another deck with a like face: its corners or its index placed otherwise
        return self.t.print.matches(rounding(bgr, quad, (CW, CH)),
                                    [index_shift(self.t, bgr, q, card, grays.get(np.float32(q).tobytes()))
                                     for q in both_corners(quad)])

    def _relocated(self, bgr, gray, quad):
        """(card, quad, foreign) of a found card whose outline failed at an index corner: each
        index corner located on its two edges (hands.refine_corner), the card measured from it
        and its opposite corner (hands.whole_card), read as any whole card; None when no such
        card differs from the outline or reads."""
        for v in both_corners(quad):
            r = refine_corner(gray, v, self.t.card_size)
            whole = whole_card(gray, r, self.t.card_size) if r is not None else None
            if whole is None or np.abs(whole - v).max() < 1.5:
                continue
            card, _, foreign = self._read_quad(bgr, whole)
            if card or foreign:
                return card, whole, foreign
        return None

    def _read_occluded(self, bgr, quad, shapes):
        """(card, quad, 'whole' or 'covered') of a card refused where other cards found in the
        frame (`shapes`) lie over it, or (None, None, None): its face compared only where it
        shows (occluded.py; most of it must), at the whole card's threshold. Both index corners
        reading the card: then its fingerprint, as any whole card's. One corner reading it at
        the covered card's score, the other under a neighbour: a covered card (the quad from
        that corner), read only as covered cards are (vouched for in its blob)."""
        others = occluders(quad, shapes, self.t.card_size[0])
        if not others:
            return None, None, None          # nothing over it: the refusal stands
        grays, corners = {}, both_corners(quad)
        (a, ca), (b, cb) = (self.read_corner(bgr, q, keep=grays) for q in corners)
        vis = visible(quad, others, (FACE_W, FACE_H))
        if a and b:
            if a != b:
                return None, None, None
            card, kind, q = a, "whole", quad
        elif bool(a and ca >= STRICT) != bool(b and cb >= STRICT) and not (a and b):
            i = 0 if a else 1
            # the corner that did not read lies under the other card (its index box hidden)
            x0, y0, x1, y1 = (np.float32(self.t.box) * np.float32([FACE_W, FACE_H, FACE_W, FACE_H])
                              / np.float32([CW, CH, CW, CH])).astype(int)
            hidden = ~(vis[y0:y1, x0:x1] if i == 1 else vis[::-1, ::-1][y0:y1, x0:x1])
            if hidden.mean() < HIDDEN:
                return None, None, None
            card, kind, q = a or b, "covered", corners[i]
        else:
            return None, None, None
        face_min = FACE_MIN if self.t.card_size[0] >= SMALL else FACE_MIN_SMALL
        if masked_face_score(face(bgr, quad), self.t.faces[card], vis) < face_min:
            return None, None, None
        if kind == "whole" and not self.t.print.matches(
                rounding(bgr, quad, (CW, CH)),
                [index_shift(self.t, bgr, c, card, grays.get(np.float32(c).tobytes())) for c in corners]):
            return None, None, None
        return card, q, kind

    def _corner_of_deck(self, bgr, quad, card):
        """The deck check of a covered card, on what shows of it: the strips along its top and
        left sides. (Its index's place and its corner's rounding are not checked: at 125 pixels
        the located corner is too rough for them; docs/camera.md.)"""
        return corner_face_score(face(bgr, quad), self.t.faces[card]) >= CORNER_FACE_MIN

    def _suit_by_face(self, f, a, b, short):
        """The card when each index corner read it or read its rank with the suit short of its
        margin (every such corner the same card first, the same runner-up), and the whole face
        is that card's by FACE_SUIT more than the runner-up's: Responsive's spade and club
        indexes correlate 0.95 at the table's scale, its faces' pips and pictures far less
        (docs/camera.md). Else None."""
        if (a is not None) + (b is not None) + len(short) != 2 or not short:
            return None
        tops = {c for c in (a, b) if c} | {c for c, _ in short}
        alts = {x for _, x in short}
        if len(tops) != 1 or len(alts) != 1:
            return None
        card, alt = tops.pop(), alts.pop()
        mine, other = face_score(f, self.t.faces[card]), face_score(f, self.t.faces[alt])
        return card if mine >= FACE_MIN and mine - other >= FACE_SUIT else None

    def read_image(self, bgr, inside=None):
        """[(card, quad)] read in an image; `inside(x, y)` keeps cards whose centre lies in the
        zone. Whole cards must read at both corners and pass the deck check; in a blob of
        overlapping cards, each corner hypothesis reads at one, and one card is reported once
        however many corners read it. A hand card that reads at both corners (its top card) gets
        the whole card's deck check; a covered card is refused under a card that failed it (a
        hand whose top card is another deck's is another deck's), and read only in a blob where
        a whole card passed it, and when it passes the covered card's own deck check. A card that
        failed on one outline and passed on another at the same place refuses nothing; a whole
        card under part of one that passed is judged on what shows of its face. A card refused
        where another card found in the frame lies over it (turned cards touching) is judged
        again on what shows of its face (_read_occluded)."""
        quads, blobs = find_cards(bgr, self.t.card_size, with_blobs=True)
        out, refused, kinds, judged, blank = [], 0, [], [], []
        # every card outline found (for what covers what), and the refused ones to look at
        # again where another card lies over them (_read_occluded): (quad, its judged entry)
        shapes, again = list(quads), []
        gray = None
        for q in quads:
            blank.append(False)         # an outline that read nothing at all, not even a foreign card
            if inside is None or inside(*q.mean(axis=0)):
                card, _, foreign = self._read_quad(bgr, q)
                if not card and not foreign:
                    # one index corner unread: the outline may lie a few pixels off there (a
                    # threshold's outline on a grey table, 6-8 pixels at one corner); the card
                    # again from its index corners located on their own edges
                    gray = corner_gray(bgr) if gray is None else gray
                    moved = self._relocated(bgr, gray, q)
                    if moved is not None:
                        card, q, foreign = moved
                if card:
                    out.append((card, q))
                    kinds.append("whole")
                else:
                    refused += 1
                    again.append((q, len(judged) if foreign else None))
                    blank[-1] = not foreign
                if card or foreign:
                    judged.append((q, not foreign, card or foreign))
        w = self.t.card_size[0]

        def copy(card, q):      # read already here; a second copy elsewhere (a multi-deck shoe) is a card
            return any(c == card and np.linalg.norm(p.mean(axis=0) - q.mean(axis=0)) < 0.5 * w
                       for c, p in out)
        gray = corner_gray(bgr) if blobs and gray is None else gray
        centres = [q.mean(axis=0) for q in quads]
        covered, retry = [], []
        for q, located in hand_corners(bgr, blobs, quads, self.t.card_size, gray):
            if inside is not None and not inside(*q.mean(axis=0)):
                continue
            near = [i for i, c in enumerate(centres) if np.linalg.norm(q.mean(axis=0) - c) < 0.25 * w]
            if near:
                # a whole card found there: its two corners, face and fingerprint decide (a
                # corner located 6 pixels off on a turned card read 7h for a 7d at 0.89); when
                # its outline read nothing (it took in a touching neighbour), the card on its
                # own located corners, as any whole card, and nothing less
                whole = whole_card(gray, q, self.t.card_size) if located and all(
                    blank[i] for i in near) else None
                if whole is not None:
                    shapes.append(whole)
                    card, _, foreign = self._read_quad(bgr, whole)
                    if not card:
                        again.append((whole, len(judged) if foreign else None))
                    if card or foreign:
                        judged.append((whole, not foreign, card or foreign))
                    if card and not copy(card, whole):
                        out.append((card, whole))
                        kinds.append("whole")
                continue
            grays = {}
            card, conf = self.read_corner(bgr, q, strict=True, keep=grays)
            if card and not located and conf < LAID:
                continue
            if not card:
                # in a blob of cards turned so that they touch, most are whole: both corners
                # and the deck check, as any whole card
                whole = whole_card(gray, q, self.t.card_size) if located else None
                if whole is not None:
                    shapes.append(whole)
                    card, _, foreign = self._read_quad(bgr, whole)
                    if not card:
                        again.append((whole, len(judged) if foreign else None))
                    if card or foreign:
                        judged.append((whole, not foreign, card or foreign))
                    if card and not copy(card, whole):
                        out.append((card, whole))
                        kinds.append("whole")
                continue
            if copy(card, q):
                continue
            # the far corner read as strictly as this one (the likeness rule: Responsive's spade and
            # club, 0.95 alike at 125 pixels, left a top card's far index short of the plain margin)
            far, _ = self.read_corner(bgr, both_corners(q)[1], strict=True, keep=grays)
            # a card turned so that it touches another: its far corner where its own edges put it
            # (the measured size laid from this corner is a few pixels off: its face and
            # fingerprint fail), then as any whole card
            whole = whole_card(gray, q, self.t.card_size) if located else None
            if whole is not None:
                shapes.append(whole)
            if far == card:         # the whole card shows (a hand's top card): as any whole card
                ok = self._of_deck(bgr, q, card, grays)
                if not ok and whole is not None and self._read_quad(bgr, whole)[0] == card:
                    ok, q = True, whole
                if not ok and whole is not None:
                    again.append((whole, len(judged)))
                judged.append((q, ok, card))
                if ok:
                    out.append((card, q))
                    kinds.append("hand-whole")
                elif located:
                    retry.append((card, q, grays))
                continue
            if whole is not None:
                got, _, foreign = self._read_quad(bgr, whole)
                if got != card:
                    again.append((whole, len(judged) if foreign else None))
                if got == card or foreign:
                    judged.append((whole, not foreign, got or foreign))
                if got == card:
                    out.append((card, whole))
                    kinds.append("whole")
                    continue
            if self._corner_of_deck(bgr, q, card):
                covered.append((card, q))
        for q, j in again:
            card, q, kind = self._read_occluded(bgr, q, shapes)
            if card is None or copy(card, q):
                continue
            if j is not None:       # not another deck's after all: its judgement goes
                judged[j] = None
            if kind == "whole":
                out.append((card, q))
                kinds.append("occluded")
                judged.append((q, True, card))
            else:
                covered.append((card, q))
        judged = [j for j in judged if j is not None]
        area = self.t.card_size[0] * self.t.card_size[1]
        # a whole card that failed the deck check where a card of the deck that passed it lies over
        # part of it (cards turned so that they touch): its face judged where it shows
        for card, q, grays in retry:
            over = [p for p, ok, c in judged
                    if ok and c != card and cv2.intersectConvexConvex(p, q)[0] > 0.02 * area]
            if over and not copy(card, q) and self._of_deck(bgr, q, card, grays, hidden=over):
                judged.append((q, True, card))
                out.append((card, q))
                kinds.append("hand-whole")
        # a card that failed the deck check on one outline (laid a few pixels off, or taking in a
        # neighbour) and passed it on another at the same place is the deck's: its failure does
        # not refuse the cards under it
        judged = [(q, ok) for q, ok, c in judged if ok or not any(
            k and d == c and np.linalg.norm(p.mean(axis=0) - q.mean(axis=0)) < 0.25 * w
            for p, k, d in judged)]
        hands = [_in_blobs(blobs, q) for q, _ in judged]
        for card, q in covered:
            mine = _in_blobs(blobs, q)
            # another deck's card over it (overlapping: the same hand, not a card beside it)
            # refuses it; a card of the deck in its blob vouches for the blob
            if copy(card, q) or any(not ok and cv2.intersectConvexConvex(q, j)[0] > 0.1 * area
                                    for j, ok in judged) or not any(
                                        ok for (_, ok), h in zip(judged, hands) if h & mine):
                continue
            out.append((card, q))
            kinds.append("covered")
        self.refused, self.kinds = refused, kinds     # kinds: per card read, for the benches
        return out

    def read(self, card_img):
        """(card or None, confidence) of an image holding one rectified card (the whole image)."""
        h, w = card_img.shape[:2]
        return self.read_quad(card_img, np.float32([[0, 0], [w, 0], [w, h], [0, h]]))


def _shows(quad, hidden):
    """Where the card `quad` shows on its face (FACE_W x FACE_H, bool): not under the outlines
    `hidden`, nor within a few pixels of their edges (the edge and its shadow are ink)."""
    m = cv2.getPerspectiveTransform(np.float32(quad), np.float32([[0, 0], [FACE_W, 0], [FACE_W, FACE_H],
                                                                  [0, FACE_H]]))
    cover = np.zeros((FACE_H, FACE_W), np.uint8)
    for p in hidden:
        cv2.fillConvexPoly(cover, np.int32(np.round(cv2.perspectiveTransform(np.float32(p)[None], m)[0])), 1)
    return cv2.dilate(cover, _SHOW_KERNEL) == 0


def _in_blobs(blobs, quad):
    """The blobs (indexes) holding the card's index (a covered card's visible part): the same
    hand is a blob at several thresholds."""
    x, y = quad[0] + 0.15 * (quad[1] - quad[0]) + 0.12 * (quad[3] - quad[0])
    return {i for i, b in enumerate(blobs) if cv2.pointPolygonTest(b, (float(x), float(y)), False) >= 0}
