"""The deck's fingerprint (issue 17): what refuses another deck design whose index font and pip
layout pass the reader and the face check. Two measures, both cheap on a card already read:

- the corners' rounding (`rounding.py`): how far the card's outline stands back from its two
  sides' crossing at a corner (0 for a square-cut card, about 4 canonical pixels for the usual
  poker-deck radius); measured against the sides' own positions near the corner, so the
  outline's error falls out;
- where the index sits (`visual.index_shift`): the rank and the suit of the read card
  lie where the learned ones lay, within the outline's error. A like font placed or sized a few
  pixels differently (Kennard's against the Vectorized Playing Cards': 3-6 pixels) is another
  deck;
- the card's proportions (`proportioned`): a bridge-size card (57 x 89 mm) is another deck than a
  poker-size one (63 x 88 mm), whatever its ace looks like.

Tolerances come from the spread over the reference photos, with floors measured on held-out
photos (docs/camera.md)."""
import cv2
import numpy as np

from .rounding import P, L, SMALL, _corner_roundings, corners_rounding, rounding, roundings  # noqa: F401  (rounding re-exported)
from .edgeround import edge_rounding
from .streakround import PLAIN, rise

ROUND_TOL_MIN = 2.0          # canonical pixels; curl, glare and a shadow spread the rounding
# canonical pixels (the ceiling for a card 300 pixels wide, more for a smaller one; between them
# 2.5 times the reference photos' median shift, which grows as the card shrinks): the same deck's index lay
# within 2.5 of the learned one at its better corner in 502 of 504 held-out photos of three designs
# (the others, and the drawn deck's worst, 2.7-3.9, on a white table: a fainter outline); a like
# font of another design (Kennard's against the Vectorized Playing Cards') 4.5 and more
SHIFT_TOL = (3.0, 4.0)
# the card's height over its width against the learned card's: the same deck's outlines lay within
# 0.046 of it at 125 and at 300 pixels (four designs, every condition; an outline found off the
# card further); the held-out bridge-size Tigullio deck's ratio is 8.5% above the poker decks'
# (their cards under its templates: 0.059-0.107 off; its Ad passed Kennard's face and index
# checks, and Kennard's Ad its), docs/camera.md
ASPECT_TOL = 0.05
# A covered card in a hand (docs/camera.md): the face along its top and left sides (a card dealt
# over it leaves them visible: hands dealt 0.3 of a width and 0.22 of a height apart, a few
# degrees turned) at least CORNER_FACE_MIN like the learned one's: a fifth of the height along
# the top, a quarter of the width down the left side.
CORNER_FACE, CORNER_FACE_MIN = (0.25, 0.18), 0.6
# canonical pixels: how far beyond what a square corner measures under the card's blur a square-cut
# deck's card may measure (Responsive's own cards at 125 pixels, sharp: at most 0.82 over the
# learned 0.08 on four tables, every condition but the blurs: half ROUND_TOL_MIN)
SHARP_OFF = ROUND_TOL_MIN / 2
# A square-cut deck's card refused as too round is asked again by its edges' steepest rise
# (_square_by_edges): accepted when that measure lies within EDGE_SQUARE canonical pixels of the
# learned rounding and the edge's width (a Gaussian edge's sigma, canonical pixels) is at most
# EDGE_SHARP (bench/diag_edge_cut.py; docs/camera.md, "Where the thresholds come from"): the
# tuned square decks' own cards refused so measured -0.34 to 1.35 over the learned rounding when
# sharp (43 of 44 within 1.25); cardsJS' cards (round, the same artwork) under Responsive's
# templates 2.26 and more at an edge width up to 1.6, but down to 0.97 under a streak
# smear.streaked missed (widths 1.68-1.72)
EDGE_SQUARE, EDGE_SHARP = 1.25, 1.6
# image pixels: the largest blur defocus.estimate gives (its grid's last, refined by a parabola
# through its neighbours at most a step beyond): a card measuring rounder than the square cut
# could under it is not asked its blur (its cost)
BLUR_MAX = 2.4


def corner_face_score(f, learned, fx=CORNER_FACE[0], fy=CORNER_FACE[1]):
    """The face check on what a covered card shows (`f`, `learned`: faces as visual.face gives
    them, the index corner at tl): the correlation over the strips along its top and left
    sides (a card dealt over it leaves them visible), the card either way round."""
    h, w = f.shape
    m = np.zeros((h, w), bool)
    m[:int(fy * h)], m[:, :int(fx * w)] = True, True
    return visible_face_score(f, learned, m)


def visible_face_score(f, learned, m):
    """The faces' correlation over the mask `m` (what shows of the card), either way round."""
    a = f[m] - f[m].mean()
    best = -1.0
    for lf in (learned, learned[::-1, ::-1]):
        b = lf[m] - lf[m].mean()
        best = max(best, float(a @ b) / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-9))
    return best


class DeckPrint:
    """The learned fingerprint: the rounding (median, tolerance) and the index shift tolerance."""

    def __init__(self, rounding, rounding_tol, shift_tol):
        self.rounding, self.rounding_tol, self.shift_tol = float(rounding), float(rounding_tol), float(shift_tol)

    @classmethod
    def learn(cls, roundings, shifts, card_width):
        """From the reference photos: each one's rounding and its far index corner's shift from the
        near one's template (the outline's error at this camera's scale, and on some designs a
        far index placed a little otherwise: the median, not the tail, sets the tolerance)."""
        r = np.array([v for v in roundings if not np.isnan(v)])
        if len(r) < len(roundings) // 2:
            raise ValueError("the card's outline does not show at its corners in most reference photos "
                             "(a table as light as the cards?)")
        med = float(np.median(r))
        spread = float(np.percentile(np.abs(r - med), 98))
        scale = max(1.0, 300 / card_width)
        # at the table's scale (a card under SMALL pixels wide) the floor alone: 2.5 times the
        # median gave the cardsJS templates 3.8, and Kennard's Ad came through at 3.6 (its face as
        # like as the deck's own); the same deck's index lay within 3.0 in 266 of 269 reads
        hi = SHIFT_TOL[1] * scale if card_width >= SMALL else SHIFT_TOL[0]
        shift = float(np.clip(2.5 * np.median(np.abs(shifts)), SHIFT_TOL[0], hi))
        return cls(med, max(ROUND_TOL_MIN, 1.25 * spread), shift)

    def to_json(self):
        return {"rounding": round(self.rounding, 3), "rounding_tol": round(self.rounding_tol, 3),
                "shift_tol": round(self.shift_tol, 3)}

    @classmethod
    def from_json(cls, d):
        return cls(d["rounding"], d["rounding_tol"], d["shift_tol"])

    def card_matches(self, bgr, quad, canon, shifts, blur=None, streak=None):
        """`matches` of the card outlined by `quad`, its rounding measured here (rounding.py).
        `blur`: a callable giving the card's blur beyond the learned one (sigma, image pixels, or
        None), asked only when the rounding lies on the side of the learned one that another cut
        would put it (its cost: a rounded deck's card below it, a square deck's above SHARP_OFF).
        `streak`: a callable giving the card's measured streak (image pixels) or None, asked only
        when the rounding is outside the learned window (_moving)."""
        cut = self.cut()
        # a round-cut deck, at the table's scale (`blur` given; where it was measured): its
        # best-measured corners must tell its cut too (rounding.roundings: a square corner
        # measures round where the paper barely stands above a white table), a refusal beside
        # the plain median's. Not a square-cut deck's: that bias only hides its own cut, and on
        # white Responsive's best-measured corners (the shadow side) measured 0.9-3.2, refusing
        # 12 of its 149 passing checks in the scenes measured (bench/diag_cut_corners.py)
        weigh = cut == "round" and blur is not None
        r, best = roundings(bgr, quad, canon) if weigh else (rounding(bgr, quad, canon), np.nan)
        if streak is not None and (np.isnan(r) or abs(r - self.rounding) > self.rounding_tol):
            r = self._moving(bgr, quad, canon, streak, r)
        sigma = None
        if blur is not None and not np.isnan(r):
            q = np.float32(quad)
            scale = canon[0] / max(float(min(np.linalg.norm(q[[1, 2, 3, 0]] - q, axis=1))), 1.0)
            most = BLUR_MAX * scale             # canonical pixels: the most the estimate gives
            if (cut == "round" and min(r, best) <= (self.rounding + square_measure(most)) / 2
                    or cut == "square" and max(r, best) > self.rounding + SHARP_OFF):
                b = blur()
                if b is not None:
                    sigma = min(b * scale, most)        # image pixels to canonical ones
        # the best-measured corners on the square side only (rounder than the window: not the
        # other cut; it refused a Kennard 5h measuring 6.5 at its best corners)
        if self.matches(r, shifts, sigma) and (not weigh or best >= self.rounding - self.rounding_tol
                                               and not self.nearer_other_cut(best, sigma)):
            return True
        # a square-cut deck's card inside the learned window refused as too round by the cut
        # judged under its blur (nearer_other_cut), its index where the deck prints it: the
        # corners asked again by their edges' steepest rise (edgeround.py), at the table's scale
        return (cut == "square" and blur is not None and streak is not None and not np.isnan(r)
                and self.rounding < r <= self.rounding + self.rounding_tol and min(shifts) <= self.shift_tol
                and self._square_by_edges(bgr, quad, canon, streak))

    def _square_by_edges(self, bgr, quad, canon, streak):
        """Whether a square-cut deck's card the level-crossing measure found too round for its
        blur (inside the learned window: nearer_other_cut) is square by its edges' steepest rise
        (edgeround.py): on a white table card stock stands 5-15% above the table and that
        measure drifts round (Responsive's and the drawn deck's own cards 1.2-2.0 in the sweep,
        cardsJS' round ones 1.85-2.04). Asked only of a sharp edge (EDGE_SHARP: a round
        corner's rise near it fades under blur and a streak) on a card that does not move
        (`streak()` None: smear.streaked false), and it must say square (EDGE_SQUARE). Margins
        in docs/camera.md."""
        e, width = edge_rounding(bgr, quad, canon)
        if np.isnan(e) or e - self.rounding > EDGE_SQUARE or width > EDGE_SHARP:
            return False
        return streak() is None

    def _moving(self, bgr, quad, canon, streak, r):
        """The rounding of a moving card (`streak()`: its measured streak, or None) from its two
        corners without an index, less what the learned corner's measure rises by under that
        streak at them (streakround.py); `r` when it cannot be measured so. Smeared along the
        streak, an index printed near the edge (svg-cards') runs into its corner's measure:
        svg-cards' moving cards measured 5.5-10 at their index corners, 2.2-3.3 at the others,
        against the learned 2.07 +- 2 (bench/diag_blur.py); the corners' rise is the model's
        (0-1.9 canonical pixels for the camera model's 4-7 pixel streaks), not tuned. Only for
        a deck whose rounding does not tell its cut (cut() None: svg-cards, KDE Standard): for
        Responsive's square cut it let Responsive's templates read moving cardsJS cards (the
        same artwork) on the white table in 9 of 70 frames (bench/probe_streak_rounding.py),
        their round corners measuring low there and the square corner's rise taken off."""
        if self.cut() is not None:
            return r
        v = streak()
        if v is None:
            return r
        per = corners_rounding(bgr, quad, canon)
        m = [per[k] for k in PLAIN]
        own = rise(self.rounding, quad, canon, v)
        if any(np.isnan(x) for x in m) or np.isnan(own):
            return r
        return sum(m) / len(m) - own

    def cut(self):
        """The deck's corners' cut as the rounding tells it: "round" when a square cut lies
        beyond its window by SHARP_OFF, "square" when its learned rounding is within SHARP_OFF of
        a square corner's, else None: a deck between (svg-cards learned 2.07 +- 2, KDE Standard
        2.60) measures its own corners square too often on light tables and under blur (the
        round rule cost svg-cards 27 of 560 cards in the sweep), so it keeps the fixed window."""
        if self.rounding - self.rounding_tol > SHARP_OFF:
            return "round"
        return "square" if abs(self.rounding) <= SHARP_OFF else None

    def rounded(self):
        """Whether the deck's corners are cut round (cut())."""
        return self.cut() == "round"

    def nearer_other_cut(self, r, sigma):
        """Whether a card measuring `r` under a blur of `sigma` (canonical pixels) lies nearer
        another cut than this deck's. A blurred square corner measures rounder (square_measure:
        0 sharp, 1.0 at sigma 3, 2.1 at 4), so the fixed window is too wide on sharp cards and
        off on blurred ones (docs/camera.md: cardsJS and Responsive, the same artwork cut round
        and square). A rounded deck: nearer what a square corner measures under this blur than
        the learned rounding (a defocused Responsive card measured 2.02-2.15, inside cardsJS'
        3.95 +- 2). A square-cut deck: more than SHARP_OFF beyond what its corner measures under
        this blur (a sharp cardsJS card on a white table measured 1.85-2.04, inside Responsive's
        0.08 +- 2). The learned corner's own rise under blur is left out of a rounded deck's
        judgement (it only moves its own cards away from the square cut's)."""
        cut = self.cut()
        if sigma is None or cut is None:
            return False
        if cut == "round":
            return r <= (self.rounding + square_measure(sigma)) / 2
        return r > self.rounding + square_measure(sigma) + SHARP_OFF

    def matches(self, rounding_value, shifts, sigma=None):
        """Whether a read card is of this deck: its rounding within tolerance, and at one of its
        index corners at least the rank and suit where this deck's lie (`shifts`: per corner the
        largest of the rank's and the suit's x and y shift)."""
        if np.isnan(rounding_value) or abs(rounding_value - self.rounding) > self.rounding_tol:
            return False
        if self.nearer_other_cut(rounding_value, sigma):
            return False
        return min(shifts) <= self.shift_tol


def _square_corner(sigma, k=8):
    """A square-cut card's corner patch as rounding.py samples it (card at (P, P), light card on
    a dark table), blurred by `sigma` canonical pixels."""
    n = (L + 2 * P) * k
    yy, xx = (np.mgrid[0:n, 0:n] + 0.5) / k
    img = np.where((xx >= P) & (yy >= P), 200.0, 60.0).astype(np.float32)
    img = cv2.resize(img, (L + 2 * P, L + 2 * P), interpolation=cv2.INTER_AREA)
    return cv2.GaussianBlur(img, (0, 0), sigma) if sigma > 0 else img


# what rounding.py measures of a square corner blurred by each sigma (canonical pixels): computed
# once from the measuring code itself, not tuned (0 up to sigma 1, 1.0 at 3, 2.1 at 4)
_SIGMAS = np.arange(0.0, 6.01, 0.25)
_SQUARE = np.float64([_corner_roundings(_square_corner(s)[None])[0] for s in _SIGMAS])
_SQUARE = np.maximum.accumulate(np.nan_to_num(_SQUARE))


def square_measure(sigma):
    """The rounding a square-cut corner measures under a blur of `sigma` canonical pixels."""
    return float(np.interp(sigma, _SIGMAS, _SQUARE))


def aspect(quad):
    """The card's long sides over its short ones: of each pair of opposite sides the longer (a
    tilted card's far side is the shorter), either way round (not every caller's quad starts on
    the short side)."""
    q = np.float32(quad)
    s = np.linalg.norm(q[[1, 2, 3, 0]] - q, axis=1)
    a, b = max(s[0], s[2]), max(s[1], s[3])
    return max(a, b) / max(min(a, b), 1e-6)


def proportioned(quad, card_size):
    """Whether the card outlined by `quad` has the learned card's proportions: its aspect within
    ASPECT_TOL of the learned card's."""
    return abs(aspect(quad) / (max(card_size) / min(card_size)) - 1) <= ASPECT_TOL
