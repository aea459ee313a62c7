"""A camera model for test material nobody here drew: the published deck designs in
tests/data/decks (and the synthetic deck) laid on procedurally drawn tables and photographed with
perspective, defocus, motion blur, sensor noise, JPEG at quality 60-90, white-balance shifts,
shadows and glare. Deterministic from the random generator passed in. Tests and benchmark only."""
import math
import os

import cv2
import numpy as np

from . import webcam_model

DECKS_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "decks")
# tigullio and kdestandard last: held out (issue 17), added in that order so that the others
# keep their index (their templates' seed)
DECKS = ("cardsjs", "svgcards", "kennard", "responsive", "synth", "tigullio", "kdestandard")
SURFACES = ("green_felt", "blue_felt", "red_felt", "grey", "light_grey", "white", "wood")
CONDITIONS = ("clean", "defocus", "motion", "noise", "jpeg", "white_balance", "shadow", "glare",
              "perspective", "rotation")
# faults of a real photo of a real card that the table conditions lack: a card bowed from the
# shuffle (its long sides curved, one half lit more), and the specular streak of a glossy card;
# and a cheap webcam's faults pushed hard (webcam_model.WEBCAM_FAULTS)
WEBCAM_CONDITIONS = CONDITIONS + ("curl", "gloss") + webcam_model.WEBCAM_FAULTS
_FELT = {"green_felt": (40, 110, 35), "blue_felt": (120, 60, 20), "red_felt": (35, 30, 140),
         "grey": (150, 150, 148), "light_grey": (188, 189, 186), "white": (222, 224, 224)}
_cache = {}


def load_deck(name):
    """{card: BGRA face} of one deck design; 'synth' is the project's own drawn deck."""
    if name not in _cache:
        from controller.cards import CARDS
        if name == "synth":
            from .synth import card_face
            faces = {c: cv2.cvtColor(card_face(c), cv2.COLOR_BGR2BGRA) for c in CARDS}
        else:
            faces = {}
            for c in CARDS:
                img = cv2.imread(os.path.join(DECKS_DIR, name, c + ".png"), cv2.IMREAD_UNCHANGED)
                if img is None:
                    raise FileNotFoundError(f"{name}/{c}.png: run scripts/fetch-decks --write")
                faces[c] = img
        _cache[name] = faces
    return _cache[name]


def surface(kind, w, h, rng):
    """A table: felt (fine fibre noise), grey or white laminate, or wood grain; under uneven
    light (a smooth gradient of up to 30%)."""
    if kind == "wood":
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        a = rng.uniform(0, math.pi)
        u = xx * math.cos(a) + yy * math.sin(a)
        v = -xx * math.sin(a) + yy * math.cos(a)
        grain = np.sin(u / rng.uniform(6, 14) + 3 * np.sin(v / 90.0)) * 0.5 + 0.5
        base = np.float32([40, 85, 140])[None, None] * (0.75 + 0.4 * grain[..., None])
    else:
        base = np.empty((h, w, 3), np.float32)
        base[:] = _FELT[kind]
    base += rng.normal(0, 5 if "felt" in kind else 3, (h, w, 1)).astype(np.float32)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    gx, gy = rng.uniform(-1, 1, 2)
    light = 1 + 0.15 * (gx * (xx / w - 0.5) * 2 + gy * (yy / h - 0.5) * 2)
    return np.clip(base * light[..., None], 0, 255).astype(np.uint8)


def card_quad(centre, width, angle, tilt=0.0, aspect=1.4):
    """The four image corners (tl, tr, br, bl of the face) of a card `width` pixels wide at
    `centre`, turned by `angle` degrees, its far edge shortened by `tilt` (perspective)."""
    cw, ch = width / 2, width * aspect / 2
    pts = np.float32([[-cw * (1 - tilt), -ch], [cw * (1 - tilt), -ch], [cw, ch], [-cw, ch]])
    a = math.radians(angle)
    rot = np.float32([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    return pts @ rot.T + np.float32(centre)


def lay(frame, face, quad):
    """Warp a BGRA `face` onto `frame` (in place) at `quad`, with a soft contact shadow: a card
    lying on a table is never a cut-out."""
    h, w = face.shape[:2]
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    m = cv2.getPerspectiveTransform(src, np.float32(quad))
    size = (frame.shape[1], frame.shape[0])
    alpha = face[..., 3] if face.shape[2] == 4 else np.full((h, w), 255, np.uint8)
    a = cv2.warpPerspective(alpha, m, size).astype(np.float32) / 255
    shadow = cv2.GaussianBlur(cv2.warpAffine(a, np.float32([[1, 0, 2], [0, 1, 3]]), size), (0, 0), 2.5)
    f = frame.astype(np.float32) * (1 - 0.35 * shadow[..., None])
    warped = cv2.warpPerspective(face[..., :3], m, size).astype(np.float32)
    f = f * (1 - a[..., None]) + warped * a[..., None]
    frame[:] = np.clip(f, 0, 255).astype(np.uint8)


def camera(frame, rng, cond="clean", webcam=False):
    """The camera: every photograph gets mild defocus, sensor noise, a small white-balance error
    and JPEG at quality 60-90; `cond` stresses one of them (or adds a shadow or glare). A
    `webcam` (the technician's photo) is webcam_model.photograph: a cheap webcam's lens, light,
    exposure, sensor and processing."""
    if webcam:
        return webcam_model.photograph(frame, rng, cond, _events)[0]
    f = frame.astype(np.float32)
    h, w = f.shape[:2]
    wb = rng.uniform(0.75, 1.2, 3) if cond == "white_balance" else rng.uniform(0.94, 1.06, 3)
    f *= np.float32(wb)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    f = np.clip(_events(f, rng, cond, xx, yy), 0, 255).astype(np.uint8)
    f = cv2.GaussianBlur(f, (0, 0), rng.uniform(1.2, 1.8) if cond == "defocus" else rng.uniform(0.4, 0.9))
    if cond == "motion":
        f = webcam_model.motion_blur(f, rng)
    noise = rng.uniform(6, 10) if cond == "noise" else rng.uniform(1.5, 3.5)
    f = np.clip(f.astype(np.float32) + rng.normal(0, noise, f.shape), 0, 255).astype(np.uint8)
    q = int(rng.integers(60, 71)) if cond == "jpeg" else int(rng.integers(60, 91))
    return cv2.imdecode(cv2.imencode(".jpg", f, [cv2.IMWRITE_JPEG_QUALITY, q])[1], cv2.IMREAD_COLOR)


def _events(f, rng, cond, xx, yy):
    """The shadow, gloss and glare conditions on a float image (in place where it can)."""
    h, w = f.shape[:2]
    if cond == "shadow":           # a hand or the dealer's arm: a soft-edged dark band
        a = rng.uniform(0, math.pi)
        d = (xx - w * rng.uniform(0.3, 0.7)) * math.cos(a) + (yy - h * rng.uniform(0.3, 0.7)) * math.sin(a)
        f *= (1 - 0.45 / (1 + np.exp(-d / 12)))[..., None]
    if cond == "gloss":            # a lamp's reflection on a glossy card: a washed-out streak
        a = rng.uniform(0, math.pi)
        d = (xx - w * rng.uniform(0.4, 0.6)) * math.cos(a) + (yy - h * rng.uniform(0.4, 0.6)) * math.sin(a)
        f += (rng.uniform(60, 110) * np.exp(-d ** 2 / (2 * (0.025 * w) ** 2)))[..., None]
    if cond == "glare":            # a light reflected off the laminate
        cx, cy = rng.uniform(0.3, 0.7) * w, rng.uniform(0.3, 0.7) * h
        f += (70 * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * (0.12 * w) ** 2)))[..., None]
    return f


def pose(rng, cond, centre, width, aspect=1.4):
    """A card's place under `cond`: any angle for 'rotation', a tilt for 'perspective', else the
    few degrees of a card dealt square to its box."""
    angle = rng.uniform(0, 360) if cond == "rotation" else rng.uniform(-6, 6) + 180 * rng.integers(2)
    tilt = rng.uniform(0.1, 0.18) if cond == "perspective" else rng.uniform(0, 0.03)
    return card_quad(np.float32(centre) + rng.uniform(-5, 5, 2), width * rng.uniform(0.95, 1.05), angle, tilt,
                     aspect)


def bowed(face, rng):
    """A card bowed along its length, seen from above: its middle nearer the camera (wider by
    2-5%), its long sides curved, the half turned to the light brighter than the other."""
    h, w = face.shape[:2]
    a = rng.uniform(0.02, 0.05)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    bulge = np.sin(np.pi * yy / h)
    mx = (w / 2 + (xx - w / 2) * (1 + a) / (1 + a * bulge)).astype(np.float32)
    out = cv2.remap(face, mx, yy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    light = 1 + rng.choice([-1, 1]) * rng.uniform(0.06, 0.15) * (xx / w - 0.5) * 2 * bulge
    out = out.astype(np.float32)
    out[..., :3] *= light[..., None]
    return np.clip(out, 0, 255).astype(np.uint8)


def webcam_photo(deck, card, table, rng, cond="clean", size=(800, 600), width=300):
    """The technician's photo of one card: straight down, the card `width` pixels wide at any
    place and angle on a (textured) table, printed on real stock (webcam_model). Returns
    (photo, quad), the quad where the card's corners appear in the photo."""
    frame = surface(table, size[0], size[1], rng)
    webcam_model.textured(frame, rng)
    face = webcam_model.printed(load_deck(deck)[card], rng)
    if cond == "curl":
        face = bowed(face, rng)
    quad = card_quad((size[0] / 2 + rng.uniform(-60, 60), size[1] / 2 + rng.uniform(-20, 20)),
                     width, rng.uniform(0, 360) if cond == "rotation" else rng.uniform(-10, 10),
                     rng.uniform(0.1, 0.18) if cond == "perspective" else 0.0,
                     face.shape[0] / face.shape[1])
    webcam_model.lay_real(frame, face, quad, rng)
    photo, lens = webcam_model.photograph(frame, rng, cond, _events)
    return photo, lens.project(quad)


def hand(frame, deck, cards, centre, width, angle, rng, offset=(0.3, 0.22)):
    """A blackjack hand centred at `centre`: `cards` dealt one over the other, each shifted by
    `offset` (fractions of the card's width and height) so that the index corner of every card
    below stays visible. Returns the quads, bottom card first."""
    faces = load_deck(deck)
    quads = []
    a = math.radians(angle)
    ux, uy = np.float32([math.cos(a), math.sin(a)]), np.float32([-math.sin(a), math.cos(a)])
    aspect = faces[cards[0]].shape[0] / faces[cards[0]].shape[1]
    n = len(cards) - 1
    corner = (np.float32(centre) - (n * offset[0] + 1) * width / 2 * ux
              - (n * offset[1] + 1) * width * aspect / 2 * uy)
    for i, c in enumerate(cards):
        face = faces[c]
        tl = np.float32(corner) + i * (offset[0] * width * ux + offset[1] * width * aspect * uy)
        centre = tl + width / 2 * ux + width * aspect / 2 * uy + rng.uniform(-2, 2, 2)
        q = card_quad(centre, width, angle + rng.uniform(-3, 3), 0.0, aspect)
        lay(frame, face, q)
        quads.append(q)
    return quads


def table_frame(deck, cards, zones, table, cond, rng, size=(1280, 720), width=125):
    """A frame of the table camera: `cards` ({zone: card}) each laid at its zone's centre in a
    pose drawn for `cond`, photographed. Returns (frame, {zone: quad})."""
    frame = surface(table, *size, rng)
    faces = load_deck(deck)
    where = {}
    for zone, card in cards.items():
        face = faces[card]
        q = pose(rng, cond, np.float32(zones[zone]).mean(axis=0), width, face.shape[0] / face.shape[1])
        lay(frame, face, q)
        where[zone] = q
    return camera(frame, rng, cond), where


def framed(zones, width, size=(1280, 720), margin=8):
    """The zones' centres drawn toward the frame's centre (one scale for the whole layout) just
    enough that a card at any angle at each lies `margin` pixels inside the frame: a table's
    camera sees the whole layout with a margin. The largest card a pose draws: 1.05 `width`,
    1.45 times as high, its centre 5 pixels each way off the zone's."""
    reach = 1.05 * width * math.hypot(1, 1.45) / 2 + 5 * math.sqrt(2) + margin
    mid = np.float32(size) / 2
    cs = {z: np.float32(b).mean(axis=0) for z, b in zones.items()}
    s = min([1.0] + [float((mid[i] - reach) / abs(c[i] - mid[i])) for c in cs.values() for i in (0, 1)
                     if abs(c[i] - mid[i]) > mid[i] - reach])
    return {z: (np.float32(b) - cs[z] + mid + s * (cs[z] - mid)).tolist() for z, b in zones.items()}


def reference_templates(deck, seed=0, size=(1280, 720), width=125):
    """Templates as the technician captures them: one photo per card by the table's camera,
    each on a table surface in turn, near the middle, straight; a photo the tool rejects is
    taken again (another surface and pose), as on site."""
    from controller.cards import CARDS
    from .find import find_cards
    from .templates import BadReference, Templates
    rng = np.random.default_rng(seed)

    def photo(i, c):
        for attempt in range(6):
            frame = surface(SURFACES[(i + attempt) % len(SURFACES)], *size, rng)
            face = load_deck(deck)[c]
            lay(frame, face, pose(rng, "clean", (size[0] / 2, size[1] / 2), width,
                                  face.shape[0] / face.shape[1]))
            frame = camera(frame, rng)
            quads = find_cards(frame)
            if len(quads) == 1:
                return frame, quads[0], c
        raise ValueError(f"{deck} {c}: no single card found in six reference photos")

    samples = [photo(i, c) for i, c in enumerate(CARDS)]
    for _ in range(6):
        try:
            return Templates.capture(samples)
        except BadReference as e:
            samples = [photo(i + 1, c) if c in e.cards else (img, q, c)
                       for i, (img, q, c) in enumerate(samples)]
    return Templates.capture(samples)
