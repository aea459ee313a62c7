"""A card photographed while it moves (issue 17): at the table's scale an index is about 12 x 30
pixels and a 4-7 pixel streak smears it below the reader's threshold. The streak is measured on
the card itself, and the index compared with the learned indexes blurred by that streak: the
photo and the template then differ only by what the cards differ by. Only for a whole card whose
plain read failed (visual._read_quad): the reader's cost on a sharp frame is unchanged.

The streak: the cepstrum (the inverse transform of the log spectrum) of the card's face. A linear blur of length L multiplies the spectrum by a sinc whose zeros repeat
every 1/L along its direction; their log is a deep periodic trough, a negative peak at distance L
along the streak in the cepstrum. The card's own content (its sides, pips and glyphs) lies near
the origin. Known weakness: a streak along the card's sides competes with the sides' own lines;
a wrong streak mostly lowers the scores; what a blurred read passes (by the looser likeness
margin, visual.WAY_STREAK) must still agree with any corner read sharp and pass the face check and
the deck's fingerprint."""
import math

import cv2
import numpy as np

from .index import CH, CW, MATCH, _unit

TILE, STEP = 48, 24                            # the card's face read in tiles, their spectra averaged
INSIDE = 0.9                                   # of the card's width and height: its face, not the table
LENGTHS = np.arange(3.0, 10.01, 0.5)           # pixels: the streaks looked for (the model's 4-7 and some)
ANGLES = np.radians(np.arange(0, 180, 3))
_WIN = np.outer(np.hanning(TILE), np.hanning(TILE)).astype(np.float32)
_C = TILE // 2
_MX = (_C + np.outer(np.cos(ANGLES), LENGTHS)).astype(np.float32)   # where each streak's trough lies
_MY = (_C - np.outer(np.sin(ANGLES), LENGTHS)).astype(np.float32)


def estimate(bgr, quad):
    """The streak of the card at `quad` as an image vector (dx, dy), its length in pixels;
    direction up to its sign (a linear blur is symmetric). The power spectra of overlapping
    tiles of the card's face averaged (Welch: one tile's spectrum is too noisy to show the
    sinc's zeros; measured on the sweep's motion frames, 280 cards: 74% within a pixel of the
    true streak against 60% from one 128-pixel square)."""
    q = np.float32(quad)
    w, h = np.linalg.norm(q[1] - q[0]), np.linalg.norm(q[3] - q[0])
    upright = abs(q[3] - q[0])[1] >= abs(q[3] - q[0])[0]        # the card's height along the image's y
    size = (int(INSIDE * w), int(INSIDE * h)) if upright else (int(INSIDE * h), int(INSIDE * w))
    size = (max(size[0], TILE), max(size[1], TILE))
    centre = q.mean(axis=0)
    crop = cv2.getRectSubPix(bgr, size, (float(centre[0]), float(centre[1])))
    g = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY).astype(np.float32)
    power, n = np.zeros((TILE, TILE), np.float32), 0
    for y in range(0, g.shape[0] - TILE + 1, STEP):
        for x in range(0, g.shape[1] - TILE + 1, STEP):
            t = g[y:y + TILE, x:x + TILE]
            spec = cv2.dft((t - t.mean()) * _WIN, flags=cv2.DFT_COMPLEX_OUTPUT)
            power += spec[..., 0] ** 2 + spec[..., 1] ** 2
            n += 1
    # the log spectrum is real and even: its forward transform's real part is the cepstrum
    cep = np.fft.fftshift(cv2.dft(np.log(power / n + 1e-3), flags=cv2.DFT_COMPLEX_OUTPUT)[..., 0])
    v = cv2.remap(cep, _MX, _MY, cv2.INTER_LINEAR)
    a, k = np.unravel_index(int(np.argmin(v)), v.shape)
    length = float(LENGTHS[k])
    return length * math.cos(ANGLES[a]), -length * math.sin(ANGLES[a])


def kernel(quad, box, streak):
    """The streak `streak` (image pixels) seen from the learned index's place at the tl corner of
    `quad`, as a kernel on the reader's comparison grid (canonical pixels times MATCH): the card's
    turn, scale and perspective taken into account."""
    m = cv2.getPerspectiveTransform(np.float32([[0, 0], [CW, 0], [CW, CH], [0, CH]]), np.float32(quad))
    centre = cv2.perspectiveTransform(np.float32([[[(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]]]), m)[0, 0]
    v = np.float32(streak) if np.ndim(streak) else np.float32([0, 0])
    ends = centre + 0.5 * np.float32([v, -v])
    a, b = cv2.perspectiveTransform(ends[None], np.linalg.inv(m))[0] * MATCH
    d = a - b
    if np.ndim(streak) == 0:        # a defocus: a round blur of `streak` pixels' sigma
        p = cv2.perspectiveTransform(np.float32([[centre + (1, 0), centre - (1, 0)]]), np.linalg.inv(m))[0]
        sigma = float(streak) * 0.5 * MATCH * float(np.linalg.norm(p[0] - p[1]))
        r = int(math.ceil(3 * sigma))
        g = cv2.getGaussianKernel(2 * r + 1, sigma).astype(np.float32)
        return g @ g.T
    return line_kernel(d)


def line_kernel(d):
    """A line kernel of vector `d` (pixels): the segment splatted bilinearly, summing to 1."""
    r = int(math.ceil(max(abs(d[0]), abs(d[1])) / 2)) + 1
    k = np.zeros((2 * r + 1, 2 * r + 1), np.float32)
    n = max(int(4 * np.hypot(*d)), 2)
    for t in np.linspace(-0.5, 0.5, n):
        x, y = r + t * d[0], r + t * d[1]
        x0, y0 = int(x), int(y)
        fx, fy = x - x0, y - y0
        k[y0, x0] += (1 - fx) * (1 - fy)
        k[y0, x0 + 1] += fx * (1 - fy)
        k[y0 + 1, x0] += (1 - fx) * fy
        k[y0 + 1, x0 + 1] += fx * fy
    return k / k.sum()


def blurred(small, cut, k):
    """(rank, suit) matrices as the reader's (zero-mean unit columns) of the learned indexes
    `small` (N x h x w, at MATCH) blurred by `k`: whole, then split at `cut` (the streak crosses
    the line between rank and suit)."""
    b = np.stack([cv2.filter2D(p, -1, k, borderType=cv2.BORDER_REPLICATE) for p in small])
    return (np.ascontiguousarray(_unit(b[:, :cut]).T), np.ascontiguousarray(_unit(b[:, cut:]).T))
