"""Reference photos labelled wrongly in a CONSISTENT way (Q and K swapped in every suit, spades and
clubs swapped everywhere, every rank shifted by one): each photo then agrees with its same-rank and
same-suit neighbours (Templates.inconsistent passes), and the templates read the wrong card with
high confidence. Checked here against what a card shows whatever the deck's design:

- the pips on a number card's face: A..10 show 1..10 (a rank shift, two ranks swapped);
- the pips' shape: a diamond fills half its upright box and is convex, a heart more of its box
  (spades and clubs: a club's three lobes leave notches, a spade's outline fewer);
- the court's rank glyph: a Q is the court letter with a hole, a J the one with the least ink.

Decks without pips (the project's own drawn deck: one large pip on every card) skip the count."""
import cv2
import numpy as np

from controller.cards import CARDS

CW, CH = 240, 336                 # the canonical card (visual.CW, CH)
VALUE = {r: i + 1 for i, r in enumerate("A23456789T")}
_KERNEL = np.ones((15, 15), np.uint8)
_CROSS = np.ones((3, 3), np.uint8)
HOLE = 0.1                        # the least hole depth that can say "a Q" (hole_depth)


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


def _suit_check(shapes):
    for (a, b), score in _SHAPE.items():
        med = {u: _median([_median([score(p) for p in ps]) for c, ps in shapes.items()
                           if c[1] == u and ps]) for u in (a, b)}
        if med[b] > med[a]:
            wrong = _cards(a) + _cards(b)
            return wrong, (f"the photos labelled {_SUIT[a]} show {_SUIT[b]}' pips and those labelled "
                           f"{_SUIT[b]} {_SUIT[a]}' ({_names(_cards(a)[:3])}, ... {_names(_cards(b)[:3])}, "
                           f"...): are the suits swapped?")
    return None


def _court_check(patches, cut):
    """A Q's letter has a hole (its bowl), a J's and a K's none: the photos labelled Q must show
    the deepest (by their median; the deeper at least HOLE). A J has less ink than a K."""
    depth = {r: {c: hole_depth(patches[c][:cut]) for c in _cards(r)} for r in "JQK"}
    med = {r: _median(list(d.values())) for r, d in depth.items()}
    for r in "KJ":
        if med[r] > max(med["Q"], HOLE):
            shown = [c for c, v in depth[r].items() if v > med["Q"]]
            return _cards("Q") + _cards(r), (
                f"the photos labelled {r} ({_names(shown)}) show a letter with a hole (a Q's) and "
                f"those labelled Q less of one: are Q and {r} swapped?")
    # a J is the court letter with the least ink: one stroke and a hook, a K three strokes
    ink = {r: _median([float((patches[c][:cut] < 0.6).mean()) for c in _cards(r)]) for r in "JK"}
    if ink["J"] > ink["K"]:
        return _cards("J") + _cards("K"), ("the letters of the photos labelled J hold more ink than "
                                           "those labelled K: are J and K swapped?")
    return None


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
            or _court_check(templates.patches, templates.split - templates.box[1]))


def contact_sheet(patches):
    """One image of the 52 learned indexes, each under its label (a row per suit, a column per
    rank), for the technician to look over: a label wrong across the deck shows at a glance."""
    ranks, suits = "A23456789TJQK", "shdc"
    h, w = next(iter(patches.values())).shape
    cell_w, cell_h, top = max(w, 40) + 8, h + 26, 20
    sheet = np.full((len(suits) * cell_h + 4, len(ranks) * cell_w + 4), 255, np.uint8)
    for i, u in enumerate(suits):
        for j, r in enumerate(ranks):
            c, x, y = r + u, 4 + j * cell_w, 4 + i * cell_h
            cv2.putText(sheet, c, (x, y + 14), cv2.FONT_HERSHEY_SIMPLEX, 0.5, 0, 1, cv2.LINE_AA)
            if c in patches:
                sheet[y + top:y + top + h, x:x + w] = np.uint8(np.clip(patches[c] * 200, 0, 255))
    return sheet
