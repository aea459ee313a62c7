"""Card recognition inside one zone's image: barcodes (pyzbar or zxing-cpp, one symbology) mapped
through the codebook, or visual rank and suit against templates of the studio's own deck. Both
refuse rather than guess: an unknown payload, a low or ambiguous match, or two corners that
disagree give no card."""
import os

import cv2
import numpy as np

CANON_W, CANON_H = 400, 560           # a card rectified to this size (upsampled: smoother glyphs)
K = CANON_W / 200                     # corner geometry below is given for a 200-pixel-wide card
RANKS = "A23456789TJQK"
SUITS = "shdc"
GLYPH = (20, 25)                      # rank and suit glyphs are compared at this size


# -- barcodes -----------------------------------------------------------------------------------

class PyzbarDecoder:
    """zbar, after a median blur and CLAHE (robust in low light and noise)."""
    name = "pyzbar"

    def __init__(self, symbology="qrcode"):
        from pyzbar import pyzbar
        self._zbar = pyzbar
        self.symbols = [{"qrcode": pyzbar.ZBarSymbol.QRCODE, "code128": pyzbar.ZBarSymbol.CODE128,
                         "datamatrix": None}[symbology]]
        if self.symbols[0] is None:
            raise ValueError("pyzbar cannot read DataMatrix: use the zxing decoder")
        self.clahe = cv2.createCLAHE(clipLimit=2.0, tileGridSize=(4, 4))

    def decode(self, gray):
        """[(payload, (x, y) centre)]"""
        img = self.clahe.apply(cv2.medianBlur(gray, 3))
        return [(d.data.decode("ascii", "replace"),
                 (d.rect.left + d.rect.width / 2, d.rect.top + d.rect.height / 2))
                for d in self._zbar.decode(img, symbols=self.symbols)]


class ZxingDecoder:
    """zxing-cpp restricted to the deck's one symbology."""
    name = "zxing"

    def __init__(self, symbology="qrcode"):
        import zxingcpp
        self._zx = zxingcpp
        self.format = {"qrcode": zxingcpp.BarcodeFormat.QRCode,
                       "code128": zxingcpp.BarcodeFormat.Code128,
                       "datamatrix": zxingcpp.BarcodeFormat.DataMatrix}[symbology]

    def decode(self, gray):
        """[(payload, (x, y) centre)]. When nothing is found, once more on the image enlarged
        1.6 times: a steeply tilted code's modules are then wide enough (measured: it recovers
        18 of 19 misses under perspective)."""
        out = self._read(gray, 1.0)
        if not out:
            out = self._read(cv2.resize(gray, None, fx=1.6, fy=1.6, interpolation=cv2.INTER_CUBIC), 1.6)
        return out

    def _read(self, gray, scale):
        out = []
        for b in self._zx.read_barcodes(gray, formats=self.format, try_invert=False):
            if b.valid:
                p = b.position
                xs = [p.top_left.x, p.top_right.x, p.bottom_right.x, p.bottom_left.x]
                ys = [p.top_left.y, p.top_right.y, p.bottom_right.y, p.bottom_left.y]
                out.append((b.text, (sum(xs) / 4 / scale, sum(ys) / 4 / scale)))
        return out


DECODERS = {"pyzbar": PyzbarDecoder, "zxing": ZxingDecoder}


def read_codes(decoder, gray, codebook, inside=None):
    """(cards, unknown payloads) for one zone image; `inside(x, y)` keeps only codes whose centre
    lies in the zone."""
    cards, unknown = [], []
    for payload, (x, y) in decoder.decode(gray):
        if inside is not None and not inside(x, y):
            continue
        card = codebook.get(payload)
        (cards if card else unknown).append(card or payload)
    return cards, unknown


# -- card outlines ------------------------------------------------------------------------------

def find_cards(bgr, min_area=6000, max_area=60000):
    """Quadrilaterals of card faces: bright, unsaturated regions against the felt. Returns a list
    of 4x2 float32 corner arrays ordered tl, tr, br, bl with the long side vertical."""
    hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)
    s, v = hsv[..., 1], hsv[..., 2]
    felt = s > 70                        # the felt is saturated, a card face is not
    felt_v = float(np.median(v[felt])) if felt.sum() > 200 else 0.0
    mask = ((s < 55) & (v > min(235, felt_v * 1.15 + 6))).astype(np.uint8) * 255
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8))
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    quads = []
    for c in contours:
        area = cv2.contourArea(c)
        if not min_area <= area <= max_area:
            continue
        approx = cv2.approxPolyDP(c, 0.03 * cv2.arcLength(c, True), True)
        if len(approx) != 4 or not cv2.isContourConvex(approx):
            rect = cv2.minAreaRect(c)
            if area < 0.85 * rect[1][0] * rect[1][1]:
                continue   # not card-shaped: two overlapping cards, a hand, a chip
            approx = cv2.boxPoints(rect)
        quads.append(_order(np.float32(approx).reshape(4, 2)))
    return quads


def _order(pts):
    c = pts.mean(axis=0)
    ang = np.arctan2(pts[:, 1] - c[1], pts[:, 0] - c[0])
    pts = pts[np.argsort(ang)]          # clockwise from the top-left quadrant, image coordinates
    start = int(np.argmin(pts.sum(axis=1)))
    pts = np.roll(pts, -start, axis=0)
    if np.linalg.norm(pts[0] - pts[1]) > np.linalg.norm(pts[1] - pts[2]):
        pts = np.roll(pts, -1, axis=0)  # the short side on top: portrait
    return pts


def rectify(bgr, quad):
    dst = np.float32([[0, 0], [CANON_W, 0], [CANON_W, CANON_H], [0, CANON_H]])
    return cv2.warpPerspective(bgr, cv2.getPerspectiveTransform(quad, dst), (CANON_W, CANON_H))


# -- visual rank and suit -----------------------------------------------------------------------

def _glyphs(card_img):
    """The rank and suit glyphs of a rectified card's top-left corner, as binary images, and
    whether the ink is red. None when the corner holds no clear glyphs."""
    corner = card_img[int(4 * K):int(96 * K), int(4 * K):int(60 * K)]
    gray = cv2.cvtColor(corner, cv2.COLOR_BGR2GRAY)
    gray = cv2.GaussianBlur(gray, (3, 3), 0)
    _, ink = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    if ink.mean() < 8 or ink.mean() > 140:
        return None
    n, labels, stats, _ = cv2.connectedComponentsWithStats(ink)
    boxes = [stats[i] for i in range(1, n) if stats[i][4] > 25 * K * K]
    if not boxes:
        return None
    # the rank sits above the suit: split the ink by the largest vertical gap
    rows = np.where(ink.sum(axis=1) > 0)[0]
    gaps = np.diff(rows)
    if not len(gaps) or gaps.max() < 3 * K:
        return None
    cut = rows[int(np.argmax(gaps))] + 1
    parts = []
    for part in (ink[:cut], ink[cut:]):
        ys, xs = np.nonzero(part)
        if len(xs) < 20 * K * K:
            return None
        g = part[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
        parts.append(cv2.resize(g, GLYPH, interpolation=cv2.INTER_AREA))
    px = corner[ink > 0].astype(np.float32)
    # red ink has red well above green and blue; black ink has neither. Averaged over the glyphs,
    # sensor noise cancels out; in between we do not decide the colour at all.
    redness = float((px[:, 2] - np.maximum(px[:, 0], px[:, 1])).mean())
    colour = "red" if redness > 15 else "black" if redness < 6 else None
    return parts[0], parts[1], colour


def _score(a, b):
    a = a.astype(np.float32) - a.mean()
    b = b.astype(np.float32) - b.mean()
    d = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / d) if d else 0.0


class Templates:
    """Rank and suit glyphs of the studio's deck, captured from reference images."""

    def __init__(self, ranks, suits):
        self.ranks = ranks      # {"A": glyph, ...}
        self.suits = suits      # {"s": glyph, ...}

    @classmethod
    def capture(cls, samples):
        """samples: [(rectified card image, card)] with every rank and suit at least once."""
        ranks, suits = {}, {}
        for img, card in samples:
            g = _glyphs(img)
            if g is None:
                raise ValueError(f"no glyphs found on the reference image of {card}")
            ranks.setdefault(card[0], g[0])
            suits.setdefault(card[1], g[1])
        missing = [r for r in RANKS if r not in ranks] + [s for s in SUITS if s not in suits]
        if missing:
            raise ValueError(f"templates missing for {', '.join(missing)}")
        return cls(ranks, suits)

    def save(self, folder):
        os.makedirs(folder, exist_ok=True)
        for k, g in self.ranks.items():
            cv2.imwrite(os.path.join(folder, f"rank_{k}.png"), g)
        for k, g in self.suits.items():
            cv2.imwrite(os.path.join(folder, f"suit_{k}.png"), g)

    @classmethod
    def load(cls, folder):
        def read(name):
            g = cv2.imread(os.path.join(folder, name), cv2.IMREAD_GRAYSCALE)
            if g is None:
                raise ValueError(f"{folder}: missing template {name}")
            return g
        return cls({r: read(f"rank_{r}.png") for r in RANKS}, {s: read(f"suit_{s}.png") for s in SUITS})


class VisualRecognizer:
    """Reads a rectified card from both corners; refuses below `threshold` or when the best and
    second-best candidates are within `margin`, or when the corners disagree."""

    def __init__(self, templates, threshold=0.55, margin=0.06):
        self.t = templates
        self.threshold = threshold
        self.margin = margin

    def _best(self, glyph, table, allowed):
        scores = sorted(((_score(glyph, g), k) for k, g in table.items() if k in allowed), reverse=True)
        (s1, k1), (s2, _) = scores[0], scores[1]
        return k1, s1, s1 - s2

    def read_corner(self, card_img):
        g = _glyphs(card_img)
        if g is None:
            return None, 0.0
        rank_g, suit_g, colour = g
        rank, rs, rmargin = self._best(rank_g, self.t.ranks, RANKS)
        suit, ss, smargin = self._best(suit_g, self.t.suits,
                                       {"red": "hd", "black": "sc"}.get(colour, SUITS))
        conf = min(rs, ss)
        if conf < self.threshold or rmargin < self.margin or smargin < self.margin:
            return None, conf
        return rank + suit, conf

    def read(self, card_img):
        """(card or None, confidence)."""
        a, ca = self.read_corner(card_img)
        b, cb = self.read_corner(cv2.rotate(card_img, cv2.ROTATE_180))
        if a is None or b is None or a != b:
            return None, min(ca, cb)
        return a, min(ca, cb)
