"""Where a card's index sits, measured from the card's own edges beside it (issue 17, the deck
check's index place at the photo scale). The outline's sides are straight lines fitted along
the whole card; a curled card's long sides bow, so beside its index (near the card's end) its
edge lies a few canonical pixels inside the fitted side, and its index as far off the place the
deck prints it: the same deck's curled cards were refused as another design at 3.2-3.9 against
a tolerance of 3 (docs/camera.md). Measured from the edge beside the index instead, the index
is where the deck prints it; another design's index printed elsewhere stays as far off."""
import cv2
import numpy as np

from .deckprint import SMALL
from .index import CH, CW
from .outline import whiteness
from .templates import index_offsets, index_shift

_IN, _OUT = 6.0, 8.0        # image px searched inside and outside the outline's side (an index
                            # printed 8 canonical px in, 10 image px, stays out of the search)
_PLACES = 8                 # places along the side beside the index box
_NEED = 5                   # of them on a clear fall, or the side's place is not measured
_ALONG = np.linspace(0.1, 0.9, 14, dtype=np.float32)     # and along the whole side, as refine's
# canonical px: how far inside that median a flat card's edge beside the index lies (the
# reference photos' too, so the learned place holds it): 0.32-0.45 on average over three
# designs' photos (Kennard 447, cardsJS and Responsive 70 each; sd 0.3), whatever the table
_FLAT = 0.3


def edge_inset(bgr, quad, box):
    """(left, top): how far inside the outline's left and top sides (the quad's tl corner is the
    index corner) the card's own edge lies beside the index `box`, in canonical pixels; 0.0 for
    a side whose edge does not show there at enough places (a glare, a shadow: the outline's
    side is then the best place known). Each side's edge beside the index is taken against the
    same measure's median along the whole side (where the outline's fitted line lies), less a
    flat card's (_FLAT: the reference photos are flat)."""
    q = np.float32(quad)
    x0, y0, x1, y1 = box
    offs = np.arange(-_IN, _OUT + 0.01, 0.5, dtype=np.float32)
    sides = []
    # the left side beside the index's rows (along q0 -> q3), the top beside its columns (q0 -> q1);
    # each measured outward (away from the card), its inset scaled by the card's other side
    for far, t0, t1, across, canon in ((q[3], y0 / CH, y1 / CH, q[1], CW), (q[1], x0 / CW, x1 / CW, q[3], CH)):
        other = across - q[0]
        size = max(float(np.linalg.norm(other)), 1e-6)
        ts = np.concatenate([np.linspace(t0, t1, _PLACES, dtype=np.float32), _ALONG])
        base = q[0][None] + ts[:, None] * (far - q[0])[None]
        sides.append((base[:, None] + offs[None, :, None] * (-other / size)[None, None], canon / size))
    pts = np.concatenate([p for p, _ in sides])
    h, w = bgr.shape[:2]
    (cx0, cy0), (cx1, cy1) = np.floor(pts.min(axis=(0, 1))) - 2, np.ceil(pts.max(axis=(0, 1))) + 3
    cx0, cy0, cx1, cy1 = max(int(cx0), 0), max(int(cy0), 0), min(int(cx1), w), min(int(cy1), h)
    if cx1 - cx0 < 3 or cy1 - cy0 < 3:
        return 0.0, 0.0
    # the card's whiteness there, blurred as outline.refine looks at it
    g = cv2.GaussianBlur(whiteness(np.ascontiguousarray(bgr[cy0:cy1, cx0:cx1])), (3, 3), 0).astype(np.float32)
    pts = pts - np.float32([cx0, cy0])
    prof = cv2.remap(g, pts[..., 0].copy(), pts[..., 1].copy(), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE)
    drop = prof[:, :-1] - prof[:, 1:]                   # falling going outward
    k = np.argmax(drop, axis=1)
    best = drop[np.arange(len(k)), k]
    pos = (offs[k] + offs[k + 1]) / 2
    out, n = [], _PLACES + len(_ALONG)
    for i, (_, scale) in enumerate(sides):
        b, p = best[i * n:(i + 1) * n], pos[i * n:(i + 1) * n]
        # a fall as outline.refine takes one (faint where the card barely stands out)
        strong = b > min(6.0, max(2.5, 0.5 * float(np.median(b))))
        near, along = strong[:_PLACES], strong[_PLACES:]
        if near.sum() < _NEED or along.sum() < 6:
            out.append(0.0)
            continue
        out.append(float(np.median(p[_PLACES:][along]) - np.median(p[:_PLACES][near])) * scale - _FLAT)
    return out[0], out[1]


def placed_shift(t, bgr, quad, card, gray=None):
    """index_shift for the deck check: at the photo scale (a card SMALL pixels wide or more)
    each part's x and y measured from the card's edge beside the index (edge_inset), not from
    the outline's fitted sides; at the table's scale the outline's (a card 125 pixels wide
    places its edge no better than its outline: not measured there)."""
    if t.card_size[0] < SMALL:
        return index_shift(t, bgr, quad, card, gray)
    rx, ry, ux, uy = index_offsets(t, bgr, quad, card, gray)
    left, top = edge_inset(bgr, quad, t.box)
    return max(abs(rx - left), abs(ry - top), abs(ux - left), abs(uy - top))
