"""The face check of a card partly covered by a neighbour (cards turned any way, touching): the
neighbour's corner over the card puts its own edges and shadow into the card's face and hides
pips, and the whole face then scored 0.45-0.7 against the card's learned face (svg-cards at 125
pixels; the deck's own uncovered cards 0.75 and more). Here the face is compared only where no
other card found in the frame lies over it: the same correlation over what shows, as long as
most of the face shows (docs/camera.md)."""
import cv2
import numpy as np

VISIBLE_MIN = 0.6         # of the face: less showing is too little to tell a deck's face by
_GROW = np.ones((9, 9), np.uint8)   # the neighbour's edge and shadow beside it (face pixels)


def occluders(quad, shapes, width):
    """Of the card quads `shapes` (other cards found in the frame), those over `quad`'s area:
    not the same card (centres half a width apart or more), overlapping it."""
    c = quad.mean(axis=0)
    out = []
    for s in shapes:
        if np.linalg.norm(s.mean(axis=0) - c) < 0.5 * width:
            continue
        if cv2.intersectConvexConvex(np.float32(quad), np.float32(s))[0] > 0:
            out.append(s)
    return out


def visible(quad, others, size):
    """The face's pixels (`size` = (w, h), `quad` warped onto it) that no quad of `others`
    covers, grown by a few pixels for the neighbour's edge and contact shadow: a bool mask."""
    w, h = size
    m = cv2.getPerspectiveTransform(np.float32(quad), np.float32([[0, 0], [w, 0], [w, h], [0, h]]))
    cover = np.zeros((h, w), np.uint8)
    for s in others:
        p = cv2.perspectiveTransform(np.float32(s).reshape(-1, 1, 2), m)
        cv2.fillConvexPoly(cover, np.int32(np.round(p.reshape(-1, 2))), 1)
    return cv2.dilate(cover, _GROW) == 0


def masked_face_score(f, learned, vis):
    """face_score over the pixels `vis` only (each face's mean taken over them, unit length):
    the card either way round. -1 when too little shows."""
    if vis.mean() < VISIBLE_MIN:
        return -1.0
    a = f[vis] - f[vis].mean()
    best = -1.0
    for lf in (learned, learned[::-1, ::-1]):
        b = lf[vis] - lf[vis].mean()
        best = max(best, float(a @ b) / max(float(np.sqrt((a @ a) * (b @ b))), 1e-9))
    return best


def on_another(quad, card, wholes, width):
    """Whether a covered card read `card` at the index corner of `quad` lies where a card read
    whole in the same frame (`wholes`: [(card, quad)]) naming another card lies: its centre within
    a quarter of a card's `width` of that card's (scene.py's "a whole card found there"), the same
    paper read twice, and the two reads conflict; neither guess is taken for the covered one
    (hunt_hands scene 260: the held-out Tigullio deck's moving Ac read whole, one of its own index
    corners read As as a covered card, its strips the club's by 0.018, its index the spade's by
    0.030, its centre 4 px from the Ac's). Not where the index lies inside another card's outline:
    a turned card's corner lying over its neighbour's is read there rightly (synth's 8s on an 8c)."""
    c = np.float32(quad).mean(axis=0)
    return any(k != card and float(np.linalg.norm(np.float32(p).mean(axis=0) - c)) < 0.25 * width
               for k, p in wholes)
