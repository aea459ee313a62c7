"""What a corner's rounding measures under a moving card's streak (issue 17), for the deck check
(deckprint.DeckPrint._moving). Smeared along its streak, an index printed near the card's edge
(svg-cards') runs into its corner's measure: svg-cards' moving cards at 125 pixels measured
4.1-5.5 against the learned 2.07 +- 2 (their index corners 5.5-10, the others 2.2-3.3;
bench/diag_blur.py) and were refused, every other check passing. Such a card is measured at its
two corners without an index, against the learned corner's measure under the card's own streak:
a corner of the learned rounding drawn, smeared by the streak as each of those corners sees it,
and measured by rounding.py's own code. The window keeps its width; its place moves by the
model's rise (nothing tuned). Only for a deck whose rounding does not tell its cut (deckprint)."""
import math

import cv2
import numpy as np

from .rounding import P, L, _TURNED, _corner_roundings
from .streak import line_kernel

K = 8                       # supersampling of the drawn corner
BASE = 1.2                  # canonical pixels: the blur every frame has (reference photos too)
_RADII = np.arange(0.0, 16.01, 0.5)
PLAIN = (1, 3)              # the corners without an index (the quad's 0 and 2 hold it)


def _corner(radius):
    """A corner patch as rounding.py samples it (card at (P, P), light card on a dark table),
    its corner cut round by `radius` canonical pixels (drawn at K times the resolution)."""
    n = (L + 2 * P) * K
    yy, xx = (np.mgrid[0:n, 0:n] + 0.5) / K
    card = (xx >= P) & (yy >= P)
    c = P + radius
    out = (xx < c) & (yy < c) & ((xx - c) ** 2 + (yy - c) ** 2 > radius ** 2)
    img = np.where(card & ~out, 200.0, 60.0).astype(np.float32)
    return cv2.resize(img, (L + 2 * P, L + 2 * P), interpolation=cv2.INTER_AREA)


def _measure(small, kernel=None):
    """rounding.py's measure of a drawn corner blurred by BASE and by `kernel` (canonical
    pixels, or None)."""
    small = cv2.GaussianBlur(small, (0, 0), BASE)
    if kernel is not None:
        small = cv2.filter2D(small, -1, kernel, borderType=cv2.BORDER_REPLICATE)
    return float(_corner_roundings(small[None])[0])


_CORNERS = {r: _corner(r) for r in _RADII}
_SHARP = np.float64([_measure(_CORNERS[r]) for r in _RADII])


def radius_of(rounding):
    """The drawn corner's radius that measures `rounding` (canonical pixels) unmoved."""
    ok = ~np.isnan(_SHARP)
    m = np.maximum.accumulate(_SHARP[ok])
    return float(np.interp(rounding, m, _RADII[ok]))


def corner_streaks(quad, canon, streak):
    """The streak `streak` (image pixels) as each of the card's four corners' patches see it
    (rounding.corners_rounding's warps), in canonical pixels."""
    cw, ch = canon
    v = np.float32(streak)
    out = []
    for k in range(4):
        q = np.float32(quad)[_TURNED[k]]
        w, h = (cw, ch) if k % 2 == 0 else (ch, cw)
        m = cv2.getPerspectiveTransform(q, np.float32([[P, P], [w + P, P], [w + P, h + P], [P, h + P]]))
        a, b = cv2.perspectiveTransform(np.float32([[q[0] + 0.5 * v, q[0] - 0.5 * v]]), m)[0]
        out.append(a - b)
    return out


def _nearest(rounding):
    """The drawn corner that measures `rounding` unmoved."""
    return _CORNERS[min(_RADII, key=lambda r: abs(r - radius_of(rounding)))]


def rise(rounding, quad, canon, streak, corners=PLAIN):
    """How much more than unmoved a corner of the deck's learned `rounding` measures, on a card
    at `quad` smeared by `streak` (image pixels), at `corners` (the quad's corner numbers, as
    rounding.corners_rounding numbers them): their mean; nan when one does not measure."""
    img = _nearest(rounding)
    vs = corner_streaks(quad, canon, streak)
    vals = [_measure(img, line_kernel(vs[k])) for k in corners]
    if any(math.isnan(x) for x in vals):
        return np.nan
    return sum(vals) / len(vals) - _measure(img)

