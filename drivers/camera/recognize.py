"""Card recognition inside one zone's image: barcodes (pyzbar or zxing-cpp, one symbology) mapped
through the codebook, or visual rank and suit against templates of the studio's own deck
(find.py, visual.py). Both refuse rather than guess: an unknown payload, a low or ambiguous
match, or two corners that disagree give no card."""

import cv2
import numpy as np

CANON_W, CANON_H = 240, 336           # a card rectified to this size


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


# -- card outlines and visual rank and suit: find.py and visual.py ------------------------------

from .find import find_cards  # noqa: E402,F401  (the names callers import from here)
from .templates import Templates  # noqa: E402,F401
from .visual import VisualRecognizer  # noqa: E402,F401


def rectify(bgr, quad):
    """The card at `quad` warped upright to CANON_W x CANON_H (for display and the tools)."""
    dst = np.float32([[0, 0], [CANON_W, 0], [CANON_W, CANON_H], [0, CANON_H]])
    return cv2.warpPerspective(bgr, cv2.getPerspectiveTransform(np.float32(quad), dst), (CANON_W, CANON_H))
