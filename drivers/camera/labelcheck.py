"""Reference photos labelled wrongly in a CONSISTENT way (Q and K swapped in every suit, spades and
clubs swapped everywhere, every rank shifted by one): each photo then agrees with its same-rank and
same-suit neighbours (Templates.inconsistent passes), and the templates read the wrong card with
high confidence. Checked here against what a card shows whatever the deck's design:

- the pips on a number card's face: A..10 show 1..10 (a rank shift, two ranks swapped);
- the pips' shape: a diamond fills half its upright box and is convex, a heart more of its box
  (spades and clubs: a club's three lobes leave notches, a spade's outline fewer);
- the court's rank glyph: a Q is the court letter with a hole, a J the one with the least ink.

Decks without pips (the project's own drawn deck: one large pip on every card) skip the count."""
import math

import cv2
import numpy as np

from controller.cards import CARDS
from .index import MATCH, SEARCH, _product, _windows

CW, CH = 240, 336                 # the canonical card (visual.CW, CH)
VALUE = {r: i + 1 for i, r in enumerate("A23456789T")}
_KERNEL = np.ones((15, 15), np.uint8)
_CROSS = np.ones((3, 3), np.uint8)
HOLE = 0.1                        # the least hole depth that can say "a Q" (hole_depth)
# the outline's error that mixed_up allows, in its (MATCH-scaled) pixels: the reader's own slack
# (SEARCH canonical pixels). At 3, two of a correct 2h's three neighbours taken with their
# outline 4-5 pixels off (a bowed card, a tilted one) left it "an 8's rank" in every photo of
# it: a correct set refused (the held-out KDE Standard deck, issue 17)
SHIFT = math.ceil(SEARCH * MATCH)
UNCLEAR = 13                      # photos of no clear ink colour that are the light, not a few photos


def canonical(bgr, quad):
    """The card's face at CW x CH, divided by its own paper (1 paper, 0 ink): light falls out."""
    dst = np.float32([[0, 0], [CW, 0], [CW, CH], [0, CH]])
    m = cv2.getPerspectiveTransform(np.float32(quad), dst)
    g = cv2.warpPerspective(bgr, m, (CW, CH), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    g = cv2.cvtColor(g, cv2.COLOR_BGR2GRAY)
    # the paper: the brightest nearby, over a reach wider than the largest pip (an ace's),
    # at a quarter of the size (fast); a 15-pixel reach took a large pip's middle for paper
    small = cv2.dilate(cv2.resize(g, (CW // 4, CH // 4), interpolation=cv2.INTER_AREA), _KERNEL)
    paper = cv2.GaussianBlur(cv2.resize(small, (CW, CH)).astype(np.float32) + 1, (0, 0), 6)
    return (g.astype(np.float32) + 1) / paper


def pips(gray, box):
    """The pips of a face (canonical gray): [(area, fill of its upright box, solidity)], the ink
    blobs away from the card's edge and its two index corners, at least a third of the largest."""
    ink = (gray < 0.6).astype(np.uint8)
    inset = 6
    ink[:inset], ink[-inset:], ink[:, :inset], ink[:, -inset:] = 0, 0, 0, 0
    x0, y0, x1, y1 = box
    ink[:y1 + 4, :x1 + 4] = 0                       # the index corner and its rotated twin
    ink[CH - y1 - 4:, CW - x1 - 4:] = 0
    n, lab, st, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    if n < 2:
        return []
    big = max(st[1:, 4])
    out = []
    for i in range(1, n):
        x, y, w, h, a = st[i]
        if a < max(40, big / 3):
            continue
        cnt = cv2.findContours((lab[y:y + h, x:x + w] == i).astype(np.uint8), cv2.RETR_EXTERNAL,
                               cv2.CHAIN_APPROX_SIMPLE)[0]
        m = (lab[y:y + h, x:x + w] == i).astype(np.uint8)
        hull = cv2.contourArea(cv2.convexHull(max(cnt, key=cv2.contourArea)))
        dt = cv2.distanceTransform(np.pad(m, 1), cv2.DIST_L2, 5).max()
        out.append((int(a), a / float(w * h), a / max(hull, 1.0), dt / np.sqrt(a)))
    return out


def hole_depth(gray):
    """How much lighter than its ring the deepest enclosed area of a glyph is (gray: paper 1):
    the ink's holes filled by reconstruction from the border. A Q's bowl at the table camera's
    125 pixels is a faint light spot, not a hole a threshold finds (0.26-0.52 against a K's
    0.12-0.27 where the blur closes the angle of its arms, a J's 0.03)."""
    ink = 1 - gray.astype(np.float32)
    pad = np.pad(ink, 1, constant_values=float(np.percentile(ink, 10)))
    marker = np.full_like(pad, pad.max())
    marker[0, :], marker[-1, :], marker[:, 0], marker[:, -1] = pad[0, :], pad[-1, :], pad[:, 0], pad[:, -1]
    for _ in range(sum(pad.shape)):
        nxt = np.maximum(cv2.erode(marker, _CROSS), pad)
        if np.array_equal(nxt, marker):
            break
        marker = nxt
    return float((marker - pad).max())


def _median(values):
    return float(np.median(values)) if values else float("nan")


def _cards(rank_or_suit):
    return [c for c in CARDS if rank_or_suit in c]


def _names(cards):
    return ", ".join(cards)


def _count_check(counts):
    """(cards, message) when the photos of a number rank show another count of pips in three
    or four suits: a rank shift or two ranks swapped. Only for a deck with pips (many photos
    show five or more, whatever the labels say)."""
    if sum(1 for n in counts.values() if n >= 5) < 12:
        return None
    wrong, said = [], []
    for r, v in VALUE.items():
        off = [c for c in _cards(r) if counts[c] != v]
        if len(off) < 3:            # one odd card (a decorated four, pips run together) is not a shift
            continue
        wrong += off
        shown = [counts[c] for c in off]
        k = max(set(shown), key=shown.count)
        name = "10" if r == "T" else r
        said.append(f"the photos labelled {name} ({_names(off)}) show "
                    + (f"{k} pip{'s' * (k != 1)}" if shown.count(k) >= 3 else f"no {v} pips"))
    if not wrong:
        return None
    more = f" and {len(said) - 2} more ranks" if len(said) > 2 else ""
    return wrong, "; ".join(said[:2]) + more + ": are the labels shifted or two ranks swapped?"


# the pips' shape, per pair of suits of one colour: a diamond's pips fill less of their upright box
# and hold a wider circle than a heart's; a spade's more of its hull and a wider circle than a
# club's three lobes (docs/calibration.md: the margins measured on every deck)
_SHAPE = {("d", "h"): lambda p: p[3] - p[1], ("s", "c"): lambda p: p[2] + p[3]}
_SUIT = {"s": "spades", "h": "hearts", "d": "diamonds", "c": "clubs"}


def _suit_check(shapes, what="photos", shown="pips"):
    for (a, b), score in _SHAPE.items():
        med = {u: _median([_median([score(p) for p in ps]) for c, ps in shapes.items()
                           if c[1] == u and ps]) for u in (a, b)}
        if med[b] > med[a]:
            wrong = _cards(a) + _cards(b)
            return wrong, (f"the {what} labelled {_SUIT[a]} show {_SUIT[b]}' {shown} and those labelled "
                           f"{_SUIT[b]} {_SUIT[a]}' ({_names(_cards(a)[:3])}, ... {_names(_cards(b)[:3])}, "
                           f"...): are the suits swapped?")
    return None


def _glyph(part, up=4):
    """The suit glyph of a learned index (its part below the split, paper 1) as a pip: (area,
    fill, solidity, widest circle), its largest ink blob measured 4 times enlarged (the index's
    few canonical pixels)."""
    g = cv2.resize(part, None, fx=up, fy=up, interpolation=cv2.INTER_CUBIC)
    n, lab, st, _ = cv2.connectedComponentsWithStats((g < 0.6).astype(np.uint8), connectivity=8)
    if n < 2:
        return []
    i = 1 + int(np.argmax(st[1:, 4]))
    x, y, w, h, a = st[i]
    m = (lab[y:y + h, x:x + w] == i).astype(np.uint8)
    cnt = cv2.findContours(m, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)[0]
    hull = cv2.contourArea(cv2.convexHull(max(cnt, key=cv2.contourArea)))
    dt = cv2.distanceTransform(np.pad(m, 1), cv2.DIST_L2, 5).max()
    return [(int(a), a / float(w * h), a / max(hull, 1.0), dt / np.sqrt(a))]


def index_suit_check(patches, cut, what="templates"):
    """(cards, message) when the learned indexes' suit glyphs are the other suit's of their
    colour (spades and clubs, or hearts and diamonds, renamed across the whole deck: every
    neighbour check passes), or None. The pips' shape rule (_SHAPE) on the index's glyph."""
    return _suit_check({c: _glyph(p[cut:]) for c, p in patches.items()}, what, "suit glyphs")


_LETTER = {"Q": "a Q's letter (with a hole)", "J": "a J's letter (the least ink)",
           "K": "a K's letter (more ink than a J's, no hole)"}


def court_check(patches, cut):
    """(cards, message) when the court labels do not fit their letters, or None. A Q's letter has
    a hole (its bowl), a J's and a K's none: the labelled rank whose photos show the deepest (by
    their median; at least HOLE, and deeper than the Q's) is the Q; of the other two the one with
    less ink is the J. The message names what each moved label shows (a J-Q swap is not called
    a Q-K one)."""
    depth = {r: _median([hole_depth(patches[c][:cut]) for c in _cards(r)]) for r in "JQK"}
    ink = {r: _median([float((patches[c][:cut] < 0.6).mean()) for c in _cards(r)]) for r in "JQK"}
    q = max(depth, key=depth.get)
    if q != "Q" and depth[q] > max(depth["Q"], HOLE):
        j, k = sorted((r for r in "JQK" if r != q), key=ink.get)
        shows = {q: "Q", j: "J", k: "K"}
    else:               # the hole where its label says: J and K told apart by their ink
        shows = {"Q": "Q", "J": "K", "K": "J"} if ink["J"] > ink["K"] else {}
    moved = [r for r in "JQK" if shows.get(r, r) != r]
    if not moved:
        return None
    said = "; ".join(f"the photos labelled {r} ({_names(_cards(r))}) show {_LETTER[shows[r]]}"
                     for r in moved)
    ask = (f"are {moved[0]} and {moved[1]} swapped?" if len(moved) == 2 else
           "are the court labels J, Q, K rotated?")
    return [c for r in moved for c in _cards(r)], f"{said}: {ask}"


_RANK = {"T": "10"}
_COLOUR = {"s": "black", "c": "black", "h": "red", "d": "red"}


def ink_mislabels(hue):
    """(cards, message) when the photos' ink is not their labels' colour ({card: 'red', 'black'
    or None}), or None. A camera without colour turns red ink black, never black ink red: a
    photo labelled spades or clubs showing red ink is a label (a suit rotation across colours),
    and so are a few red cards showing black; every red card black and no black one red is the
    camera's colour."""
    off = [c for c in CARDS if hue[c] != _COLOUR[c[1]]]
    # a photo of no clear colour is no label's evidence, and its gray template reads as well: a
    # strong cast on a dark felt clips one channel of the paper (a 5c under a white-balance error
    # refused a correct set); many such photos are the light (UNCLEAR), said and refused
    if sum(hue[c] is None for c in off) < UNCLEAR:
        off = [c for c in off if hue[c] is not None]
    if not off:
        return None
    red_black = [c for c in off if c[1] in "hd"]
    if len(red_black) == len(off) and len(off) >= 20:
        return off, (f"the reference images of {_names(off)} do not show their ink's colour (red "
                     f"hearts and diamonds, black spades and clubs): is the camera sending colour, "
                     f"its saturation up, the light white?")
    if all(hue[c] is None for c in off):      # neither colour: the light or the focus, not a label
        return off, (f"the reference images of {_names(off)} show no clear ink colour: is the light "
                     f"white, the card flat and sharp? take them again")
    said = []
    for u in "shdc":
        mine = [c for c in off if c[1] == u]
        if not mine:
            continue
        shown = [hue[c] or "no clear" for c in mine]
        k = max(set(shown), key=shown.count)
        said.append(f"the photo{'s' * (len(mine) > 1)} labelled {_SUIT[u]} ({_names(mine[:4])}"
                    f"{' ...' if len(mine) > 4 else ''}) show{'s' * (len(mine) == 1)} {k} ink")
    many = sum(c[1] in "sc" for c in off) >= 6 and len(red_black) >= 6
    ask = ("are the suits' labels rotated across the colours?" if many else
           "photos of other cards, or labels with the wrong suit?")
    return off, "; ".join(said) + ": " + ask


def same_photo(samples):
    """The two cards whose reference images are one and the same photo, or None: a photo listed
    (or copied) for two cards passes as each, and was said to be "a wrong outline"."""
    import hashlib
    seen = {}
    for img, _, c in samples:
        h = hashlib.sha1(np.ascontiguousarray(img).tobytes()).digest()
        if h in seen and seen[h] != c:
            return [seen[h], c]
        seen.setdefault(h, c)
    return None


def mixed_up(t, margin=0.02):
    """{card: what its learned index shows instead} where a card's rank part is more like another
    rank's (by the median over that rank's other suits) or its suit part more like another
    suit's, by more than `margin`: two cards' files swapped or renamed by hand, or a photo of
    another card. Each part compared at every shift of up to SHIFT pixels (the outline's error),
    all cards in one matrix product (0.1 s a deck, twice the 3-pixel search's)."""
    scores = []
    for m, shape in ((t.rank_m, t.part_shapes[0]), (t.suit_m, t.part_shapes[1])):
        wins, spreads = zip(*(_windows(np.pad(m[:, i].reshape(shape), SHIFT, mode="edge"), shape)
                              for i in range(len(t.cards))))
        sc = _product((np.concatenate(wins), np.concatenate(spreads)), m)
        scores.append(sc.reshape(len(t.cards), len(wins[0]), -1).max(axis=1))
    out = {}
    for j, sc in enumerate(scores):
        keys = sorted({c[j] for c in t.cards})
        groups = np.array([[i for i, c in enumerate(t.cards) if c[j] == k] for k in keys])
        sc = sc.astype(np.float64)
        np.fill_diagonal(sc, np.nan)            # a card is not its own neighbour
        med = np.nanmedian(sc[:, groups], axis=2)       # card x rank (or suit)
        for i, c in enumerate(t.cards):
            # a suit against all four, not its colour's two only: at load there is no ink to
            # check the colour by, and a Kd/Ks index swap signed again loaded (review). A warm-lit
            # As's glyph scored a diamond 0.89-0.94 against the spades' 0.95-0.99 (40 photos)
            own, best = med[i, keys.index(c[j])], int(np.argmax(med[i]))
            if keys[best] != c[j] and med[i, best] - own > margin:
                k = keys[best]
                what = f"{'an' if k in 'A8' else 'a'} {_RANK.get(k, k)}'s rank" if j == 0 else f"a {_SUIT[k][:-1]}"
                out[c] = f"{out[c]} and {what}" if c in out else what
    return out


def narrow_courts(shows, patches, cut):
    """mixed_up's "a Q's rank" / "a K's rank" kept only on the cards whose own letter is not
    their label's: the four of the eight Q and K indexes with the deepest hole are the Qs (when
    they stand clear of the other four). Q and K swapped in two suits only: each Q's neighbours
    are half Ks, and the median blamed the correct Qd, Kd, Qc, Kc too."""
    qk = sorted((c for c in CARDS if c[0] in "QK"), key=lambda c: -hole_depth(patches[c][:cut]))
    depth = [hole_depth(patches[c][:cut]) for c in qk]
    if depth[3] < depth[4] + 0.05:          # no clear four holes: name every card mixed_up names
        return shows
    kept = {c: w for c, w in shows.items()
            if not (w in ("a Q's rank", "a K's rank") and (c[0] == "Q") == (c in qk[:4]))}
    return kept or shows


def consistent_mislabels(samples, templates):
    """(cards, one-line message) of reference photos labelled wrongly in a way repeated across the
    deck, or None. samples: [(image, quad, card)] as Templates.capture takes them."""
    counts, shapes = {}, {}
    for img, q, c in samples:
        if c in counts:
            continue
        p = pips(canonical(img, q), templates.box)
        counts[c], shapes[c] = len(p), (p if c[0] in "23456789T" else [])
    return (_count_check(counts) or _suit_check(shapes)
            or court_check(templates.patches, templates.split - templates.box[1]))
