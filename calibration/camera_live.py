"""`shoe-calibrate camera templates --source`: templates from live frames, the reference deck's
cards laid one by one in one zone."""
import cv2
import numpy as np

from drivers.camera.driver import Zones
from drivers.camera.recognize import find_cards

from .camera_tools import _save_templates, too_dark
from .shoe_tools import ToolError


def _face(img, quad):
    """The card's face, warped upright to 64 x 88 and normalised (light falls out)."""
    m = cv2.getPerspectiveTransform(np.float32(quad), np.float32([[0, 0], [63, 0], [63, 87], [0, 87]]))
    g = cv2.cvtColor(cv2.warpPerspective(img, m, (64, 88)), cv2.COLOR_BGR2GRAY).astype(np.float32)
    return (g - g.mean()) / (g.std() + 1e-6)


GLITCH = 2        # frames: an empty spell this short may be a glitch, not the card taken away


def still_there(sample, crop, quad):
    """Whether the card of `sample` (crop, quad, card) lies where it lay, untouched: the outline
    within 3 pixels and the face the same. A frame in which the finder saw nothing (a hand, a
    glitch, a damaged frame) took the next card of the order as it; the labels then slid by one.
    Measured on the camera model: the same card 0.04 apart at most, two cards (7h 8h, Ks Kc, 9c
    9s) 0.11 at least, at the same place."""
    before, q0, _ = sample
    return float(np.abs(q0 - quad).max()) <= 3 and \
        float(np.abs(_face(before, q0) - _face(crop, quad)).mean()) < 0.07


def templates_from_frames(source, zone_polygon, order, out_dir, max_frames=100000):
    """Templates from live frames: the technician lays the reference deck's cards one by one, in
    `order`, in one zone, taking each away before laying the next; the first frame showing a
    single card after the zone was empty is taken as the next card of the order, unless it is
    the card taken last still lying there."""
    zones = Zones({"capture": zone_polygon})
    samples, armed, notes, changed, empty = [], True, [], {}, 0
    for n in range(max_frames):
        if len(samples) == len(order):
            break
        ok, frame = source.read()
        if not ok:
            break
        if too_dark(frame):
            raise ToolError("too dark: the camera image is almost black (add light, check exposure)")
        _, crop, inside = next(zones.crops(frame))
        quads = [q for q in find_cards(crop) if inside(*q.mean(axis=0))]
        if not quads:
            armed = True               # the zone is empty: ready for the next card
            empty += 1
            continue
        if len(quads) == 1 and not armed and samples and len(samples) not in changed \
                and not still_there(samples[-1], crop, quads[0]):
            changed[len(samples)] = n + 1     # moved, or the next laid with no empty zone between
        if len(quads) != 1 or not armed:
            continue                   # two cards, or the same card still lying there
        armed, gap, empty = False, empty, 0
        # a glitch is one or two frames; taking a card away and laying the next takes longer
        # (the same face measure cannot tell two alike cards laid at one place from one card)
        if samples and gap <= GLITCH and still_there(samples[-1], crop, quads[0]):
            notes.append(f"frame {n + 1}: the zone looked empty for a moment with {samples[-1][2]} "
                         f"lying there; not taken as {order[len(samples)]}")
            continue
        samples.append((crop, quads[0], order[len(samples)]))
    if len(samples) < len(order):
        why = getattr(source, "end_reason", None)       # a folder's files skipped or not read
        last = "".join(f"; at frame {f} the card taken as {order[k - 1]} moved or another came with "
                       f"no empty zone between" for k, f in sorted(changed.items())[:3])
        last += ": take each card away, the zone empty, before laying the next" if samples else ""
        last += "".join(f"; {n}" for n in notes)      # a frame not taken, which may be why
        raise ToolError(f"captured {len(samples)} of {len(order)} cards: the source ended first"
                        + (f" ({why})" if why else "") + last)
    t = _save_templates(samples, out_dir)
    t.warning_lines = notes + getattr(t, "warning_lines", [])
    return t
