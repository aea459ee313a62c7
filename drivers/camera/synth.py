"""Synthetic card images: cards rendered (corner rank and suit, centre pips, an optional QR code)
onto a felt table at given places, under chosen conditions (perspective, rotation, blur, noise,
glare, low light). For the tests, the benchmark and the virtual camera. Deterministic from a seed.
"""
import math

import cv2
import numpy as np
import zxingcpp

CARD_W, CARD_H = 250, 350        # face size in pixels before placement (63 x 88 mm at 4 px/mm)
FELT = (40, 110, 35)             # BGR
RANK_TEXT = {"T": "10"}
SUIT_COLOUR = {"s": (20, 20, 20), "c": (20, 20, 20), "h": (30, 30, 200), "d": (30, 30, 200)}


def _suit_shape(img, suit, cx, cy, size, colour):
    """Draw a suit glyph with primitives: a heart, diamond, spade or club centred at (cx, cy)."""
    s = size
    if suit == "d":
        pts = np.array([[cx, cy - s], [cx + 0.7 * s, cy], [cx, cy + s], [cx - 0.7 * s, cy]], np.int32)
        cv2.fillPoly(img, [pts], colour, cv2.LINE_AA)
    elif suit == "h":
        r = int(s * 0.5)
        cv2.circle(img, (int(cx - r * 0.9), int(cy - r * 0.4)), r, colour, -1, cv2.LINE_AA)
        cv2.circle(img, (int(cx + r * 0.9), int(cy - r * 0.4)), r, colour, -1, cv2.LINE_AA)
        pts = np.array([[cx - 1.85 * r, cy - 0.1 * r], [cx + 1.85 * r, cy - 0.1 * r], [cx, cy + s]], np.int32)
        cv2.fillPoly(img, [pts], colour, cv2.LINE_AA)
    elif suit == "s":
        r = int(s * 0.5)
        cv2.circle(img, (int(cx - r * 0.9), int(cy + r * 0.3)), r, colour, -1, cv2.LINE_AA)
        cv2.circle(img, (int(cx + r * 0.9), int(cy + r * 0.3)), r, colour, -1, cv2.LINE_AA)
        pts = np.array([[cx - 1.85 * r, cy + 0.2 * r], [cx + 1.85 * r, cy + 0.2 * r], [cx, cy - s]], np.int32)
        cv2.fillPoly(img, [pts], colour, cv2.LINE_AA)
        pts = np.array([[cx, cy + 0.4 * s], [cx + 0.35 * s, cy + s], [cx - 0.35 * s, cy + s]], np.int32)
        cv2.fillPoly(img, [pts], colour, cv2.LINE_AA)
    else:  # club
        r = int(s * 0.42)
        for dx, dy in ((0, -0.9), (-0.95, 0.25), (0.95, 0.25)):
            cv2.circle(img, (int(cx + dx * r), int(cy + dy * r)), r, colour, -1, cv2.LINE_AA)
        pts = np.array([[cx, cy], [cx + 0.35 * s, cy + s], [cx - 0.35 * s, cy + s]], np.int32)
        cv2.fillPoly(img, [pts], colour, cv2.LINE_AA)


def card_face(card, code=None):
    """The face of `card` (BGR), with `code` printed as a QR code in the middle when given."""
    img = np.full((CARD_H, CARD_W, 3), 250, np.uint8)
    cv2.rectangle(img, (0, 0), (CARD_W - 1, CARD_H - 1), (190, 190, 190), 2)
    rank, suit = RANK_TEXT.get(card[0], card[0]), card[1]
    colour = SUIT_COLOUR[suit]
    for flip in (False, True):
        corner = np.full((CARD_H, CARD_W, 3), 250, np.uint8)
        scale = 1.5 if len(rank) == 1 else 1.2
        cv2.putText(corner, rank, (10, 50), cv2.FONT_HERSHEY_DUPLEX, scale, colour, 3, cv2.LINE_AA)
        _suit_shape(corner, suit, 32, 85, 20, colour)
        mask = np.zeros((CARD_H, CARD_W), np.uint8)
        mask[:115, :70] = 255
        if flip:
            corner, mask = cv2.rotate(corner, cv2.ROTATE_180), cv2.rotate(mask, cv2.ROTATE_180)
        img[mask > 0] = corner[mask > 0]
    if code is not None:
        qr = np.array(zxingcpp.create_barcode(code, zxingcpp.BarcodeFormat.QRCode).to_image(scale=8))
        qr = cv2.cvtColor(qr, cv2.COLOR_GRAY2BGR)
        h, w = qr.shape[:2]
        y, x = (CARD_H - h) // 2, (CARD_W - w) // 2
        img[y:y + h, x:x + w] = qr
    else:
        _suit_shape(img, suit, CARD_W // 2, CARD_H // 2, 45, colour)
    return img


CONDITIONS = ("clean", "blur", "noise", "perspective", "rotation", "glare", "low_light")


def felt(w=1280, h=720, seed=0):
    rng = np.random.default_rng(seed)
    img = np.empty((h, w, 3), np.uint8)
    img[:] = FELT
    img = cv2.add(img, rng.integers(0, 12, (h, w, 3), dtype=np.uint8))
    return img


def place(frame, face, centre, angle=0.0, scale=0.5, tilt=0.0):
    """Warp `face` onto `frame` at `centre` (x, y), rotated by `angle` degrees, with a `tilt`
    (0-0.25) of perspective. Returns the four corners of the card in the frame."""
    h, w = face.shape[:2]
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    cw, ch = w * scale / 2, h * scale / 2
    pts = np.float32([[-cw * (1 - tilt), -ch], [cw * (1 - tilt), -ch], [cw, ch], [-cw, ch]])
    a = math.radians(angle)
    rot = np.float32([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    dst = pts @ rot.T + np.float32(centre)
    m = cv2.getPerspectiveTransform(src, dst)
    warped = cv2.warpPerspective(face, m, (frame.shape[1], frame.shape[0]))
    mask = cv2.warpPerspective(np.full((h, w), 255, np.uint8), m, (frame.shape[1], frame.shape[0]))
    frame[mask > 128] = warped[mask > 128]
    return dst


def condition(frame, name, rng):
    """Apply one capture condition to a whole frame."""
    if name == "blur":
        return cv2.GaussianBlur(frame, (0, 0), 1.2)   # a slightly soft focus
    if name == "noise":
        n = rng.normal(0, 14, frame.shape)
        return np.clip(frame.astype(np.float32) + n, 0, 255).astype(np.uint8)
    if name == "glare":
        h, w = frame.shape[:2]
        yy, xx = np.mgrid[0:h, 0:w]
        cx, cy = rng.uniform(0.3, 0.7) * w, rng.uniform(0.3, 0.7) * h
        g = 90 * np.exp(-(((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * (0.18 * w) ** 2)))
        return np.clip(frame.astype(np.float32) + g[..., None], 0, 255).astype(np.uint8)
    if name == "low_light":
        dark = frame.astype(np.float32) * 0.28
        return np.clip(dark + rng.normal(0, 3, frame.shape), 0, 255).astype(np.uint8)
    return frame


def scene(cards, zones, cond="clean", seed=0, codes=None, size=(1280, 720)):
    """A frame with `cards` ({zone name: card}) placed in their zones' centres under `cond`.
    `codes` ({card: payload}) prints a QR code on each card. Returns (frame, {zone: corners})."""
    rng = np.random.default_rng(seed)
    frame = felt(*size, seed=seed)
    where = {}
    for zone, card in cards.items():
        poly = np.float32(zones[zone])
        c = poly.mean(axis=0) + rng.uniform(-6, 6, 2)
        angle = rng.uniform(-8, 8) if cond != "rotation" else rng.uniform(-40, 40)
        tilt = rng.uniform(0.12, 0.2) if cond == "perspective" else rng.uniform(0, 0.03)
        face = card_face(card, codes.get(card) if codes else None)
        where[zone] = place(frame, face, c, angle, tilt=tilt)
    return condition(frame, cond, rng), where


def default_zones(w=1280, h=720):
    """Seven seat boxes in an arc and a dealer box above them (a blackjack layout)."""
    zones = {"dealer": _box(w * 0.5, h * 0.2)}
    for i in range(7):   # seats 1-7 from the dealer's left, in an arc facing the dealer
        zones[f"seat_{i + 1}"] = _box(w * (0.078 + i * 0.1406),
                                      h * (0.53 + 0.19 * (1 - ((i - 3) / 3) ** 2)))
    return zones


def baccarat_zones(w=1280, h=720):
    return {"player": _box(w * 0.32, h * 0.5, 225), "banker": _box(w * 0.68, h * 0.5, 225)}


def _box(cx, cy, half_w=78, half_h=100):
    return [[cx - half_w, cy - half_h], [cx + half_w, cy - half_h], [cx + half_w, cy + half_h],
            [cx - half_w, cy + half_h]]


def dealt_round_frames(placements, zones, cond="clean", codes=None, frames_per_card=8, seed=0,
                       size=(1280, 720)):
    """The virtual camera: frames of a round being dealt. `placements` is the order cards land,
    [(zone, card)]; each card stays in its zone (beside the earlier ones, offset) and every frame
    gets fresh sensor noise. Yields (frame, index of the last card landed)."""
    rng = np.random.default_rng(seed)
    base = felt(*size, seed=seed)
    for i, (zone, card) in enumerate(placements):
        n = sum(1 for z, _ in placements[:i] if z == zone)
        poly = np.float32(zones[zone])
        # cards of one zone lie side by side from its left edge (a baccarat hand)
        centre = np.float32([poly[:, 0].min() + 75 + 150 * n, poly[:, 1].mean()]) + rng.uniform(-4, 4, 2)
        face = card_face(card, codes.get(card) if codes else None)
        tilt = rng.uniform(0.12, 0.2) if cond == "perspective" else rng.uniform(0, 0.03)
        angle = rng.uniform(-40, 40) if cond == "rotation" else rng.uniform(-6, 6)
        place(base, face, centre, angle, tilt=tilt)
        still = condition(base, cond, rng)
        for _ in range(frames_per_card):
            noisy = np.clip(still.astype(np.int16) + rng.integers(-3, 4, still.shape), 0, 255)
            yield noisy.astype(np.uint8), i


def reference_templates(zones=None):
    """Templates captured as the calibration tool does, from one rendered camera photo per card
    of the reference deck (for the tests, the benchmark and the virtual table)."""
    from controller.cards import CARDS
    from .driver import Zones
    from .recognize import Templates, find_cards
    zones = zones or default_zones()
    samples = []
    for i, c in enumerate(CARDS):
        f, _ = scene({"seat_4": c}, zones, "clean", seed=1000 + i)
        _, crop, _ = next(x for x in Zones(zones).crops(f) if x[0] == "seat_4")
        samples.append((crop, find_cards(crop)[0], c))
    return Templates.capture(samples)
