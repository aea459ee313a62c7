"""`shoe-calibrate camera recognize` and `accuracy`: photos read as the daemon reads a frame.

The cards come from the camera driver's own per-frame reader (VisualRecognizer.read_image,
drivers/camera/scene.py: outlines of the templates' size, the cards of a hand from their index
corners, corners relocated on their edges, covered cards vouched for in their blob), not from a
reader of the tool's own: a photo of a dealt hand read one card per outline here once, its
covered cards never (black-box trial, docs/camera.md), while the table reads them. What differs
from the table: one frame (the driver's tracker wants a card in several), the whole photo (no
zones), and a photo with no card of the templates' size is read at any size (`fallback`)."""
import numpy as np

from drivers.camera.hands import both_corners
from drivers.camera.recognize import VisualRecognizer, find_cards

from .camera_tools import load_templates, read_image
from .shoe_tools import ToolError


def _corners(q):
    return [[round(float(x), 1), round(float(y), 1)] for x, y in q]


def _confidence(rec, img, q):
    """The best index corner's match (shown only: the card is the reader's). A covered card's
    other corner lies under a card and scores less."""
    return round(max(rec.read_corner(img, c)[1] for c in both_corners(q)), 3)


def read_photo(rec, img):
    """[{card or 'unknown', confidence, corners, covered, fallback}] of one photo. `covered`: read
    as a covered card of a hand (from its index corner alone). An outline of the templates' size
    at whose place nothing was read is 'unknown' (refused). `fallback` True: no card of the
    templates' size in the photo, and one found at any size read on its outline (a photo from
    another height): the daemon, which looks for cards of the templates' size only, reads none."""
    got = rec.read_image(img)
    kinds = list(rec.kinds)
    found = [{"card": card, "confidence": _confidence(rec, img, q), "corners": _corners(q),
              "covered": kind == "covered", "fallback": False} for (card, q), kind in zip(got, kinds)]
    quads = find_cards(img, rec.t.card_size)
    near = 0.25 * rec.t.card_size[0]
    for q in quads:
        centre = np.float32(q).mean(axis=0)
        if not any(np.linalg.norm(np.float32(p).mean(axis=0) - centre) < near for _, p in got):
            found.append({"card": "unknown", "confidence": _confidence(rec, img, q),
                          "corners": _corners(q), "covered": False, "fallback": False})
    if got or quads:
        return found
    for q in find_cards(img):
        card, conf = rec.read_quad(img, q)
        found.append({"card": card or "unknown", "confidence": round(conf, 3), "corners": _corners(q),
                      "covered": False, "fallback": True})
    return found


def recognize(images, templates_dir, keep_going=False):
    """[(image, read_photo's list)] for each photo. `keep_going`: a photo that cannot be read
    gives its ToolError in place of the list (said by the caller; the other photos are read)."""
    rec = VisualRecognizer(load_templates(templates_dir))
    out = []
    for path in images:
        try:
            img = read_image(path)
        except ToolError as e:
            if not keep_going:
                raise
            out.append((str(path), e))
            continue
        out.append((str(path), read_photo(rec, img)))
    return out
