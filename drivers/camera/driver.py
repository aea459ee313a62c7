"""The camera driver: frames from a video source, cards read inside the table's zones (barcodes
or visual), tracked, and reported once as CardSeen (and CardGone when picked up)."""
import json
import logging
import math
import threading
import time

import cv2
import numpy as np

from ..events import CardGone, CardSeen, DeviceState  # noqa: F401 (re-exported)
from .outline import _centre
from .recognize import read_codes
from .tracker import ZoneTracker
from .video import Capture, open_source

log = logging.getLogger(__name__)


def _thumb(entry):
    """A zone's thumbnail for change detection, from its [crop, thumbnail or None], taken once."""
    if entry[1] is None:
        entry[1] = cv2.resize(entry[0], (24, 32), interpolation=cv2.INTER_AREA).astype(np.int16)
    return entry[1]


def _number(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) \
        and math.isfinite(v) and abs(v) < 1e6


def _orient(a, b, c):
    """The sign of the turn a -> b -> c (exact: the corners are integers)."""
    v = (int(b[0]) - int(a[0])) * (int(c[1]) - int(a[1])) - (int(b[1]) - int(a[1])) * (int(c[0]) - int(a[0]))
    return (v > 0) - (v < 0)


def _on(a, b, c):
    """Whether c, on the line through a and b, lies on the segment a-b."""
    return min(a[0], b[0]) <= c[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= c[1] <= max(a[1], b[1])


def _meet(a, b, c, d):
    """Whether the segments a-b and c-d share any point (crossing, touching or overlapping)."""
    o1, o2, o3, o4 = _orient(a, b, c), _orient(a, b, d), _orient(c, d, a), _orient(c, d, b)
    if o1 * o2 < 0 and o3 * o4 < 0:
        return True
    return (o1 == 0 and _on(a, b, c)) or (o2 == 0 and _on(a, b, d)) \
        or (o3 == 0 and _on(c, d, a)) or (o4 == 0 and _on(c, d, b))


def _crossed(p):
    """Whether the closed polygon `p` is not a simple one: two sides cross or touch (a bow tie, a
    figure eight: its inside is not the area the technician drew), a corner is listed twice, a
    side folds back on the one before it (a spike), or it encloses no area."""
    n = len(p)
    edges = [(p[i], p[(i + 1) % n]) for i in range(n)]
    for i, (a, b) in enumerate(edges):
        if tuple(a) == tuple(b):
            return True
        c = edges[(i + 1) % n][1]           # the next side b -> c folds back over a -> b
        if _orient(a, b, c) == 0 and (int(c[0]) - int(b[0])) * (int(b[0]) - int(a[0])) \
                + (int(c[1]) - int(b[1])) * (int(b[1]) - int(a[1])) < 0:
            return True
    for i in range(n):
        for j in range(i + 2, n):
            if i == 0 and j == n - 1:       # neighbours through the closing corner
                continue
            if _meet(*edges[i], *edges[j]):
                return True
    return abs(cv2.contourArea(np.float32(p))) < 1


def _polygon(pts, where):
    """The zone's corners as int32, or a ValueError naming `where` ("everywhere", [x, y, z],
    [true, 20] or a bow tie were taken, or raised numpy's words without the key)."""
    shape = f"{where}: a polygon is a list of at least three [x, y] points (pixels)"
    if isinstance(pts, (str, bytes, dict)) or not hasattr(pts, "__len__") or len(pts) < 3:
        raise ValueError(shape)
    for q in pts:
        if isinstance(q, (str, bytes, dict)) or not hasattr(q, "__len__") or len(q) != 2 \
                or not all(_number(v) for v in q):
            raise ValueError(f"{shape}, not {json.dumps(q, default=str)}")
    p = np.int32(np.float64([[float(v) for v in q] for q in pts]))     # as before: truncated
    if len(p) > 3 and (p[0] == p[-1]).all():
        p = p[:-1]          # closed by repeating its first corner (review32: accepted before)
    if _crossed(p):
        raise ValueError(f"{where}: its sides cross or touch, or it encloses nothing: list the "
                         f"corners in order round the zone, each once")
    return p


class Zones:
    """The table's card areas: polygons in frame pixels, from the calibration file."""

    def __init__(self, polygons, frame_size=None):
        if not polygons:
            raise ValueError("zones: at least one zone polygon is needed")
        self.polygons = {}
        for name, pts in polygons.items():
            p = _polygon(pts, f"zones.{name}")
            if frame_size and ((p < 0).any() or (p[:, 0] >= frame_size[0]).any()
                               or (p[:, 1] >= frame_size[1]).any()):
                raise ValueError(f"zones.{name}: a point lies outside the {frame_size[0]}x"
                                 f"{frame_size[1]} frame")
            self.polygons[name] = p
        self._boxes = {}

    def crops(self, frame, margin=8):
        """(name, image of the zone's bounding box, inside(x, y) in that image's coordinates)."""
        h, w = frame.shape[:2]
        for name, p in self.polygons.items():
            x0, y0 = np.maximum(p.min(axis=0) - margin, 0)
            x1, y1 = np.minimum(p.max(axis=0) + margin, (w - 1, h - 1))
            crop = frame[y0:y1 + 1, x0:x1 + 1]
            local = (p - (x0, y0)).astype(np.float32)
            yield name, crop, (lambda x, y, poly=local: cv2.pointPolygonTest(
                poly, (float(x), float(y)), False) >= 0)

    def draw(self, frame):
        out = frame.copy()
        for name, p in self.polygons.items():
            cv2.polylines(out, [p], True, (0, 255, 255), 2)
            cv2.putText(out, name, tuple(int(v) for v in p[0]), cv2.FONT_HERSHEY_SIMPLEX, 0.6,
                        (0, 255, 255), 2)
        return out


def card_fit_error(card_size, polygons):
    """Why a card of `card_size` (the templates', in pixels) fits none of the zones, or None. A
    zone holds at least one card: templates captured at another distance than the table camera's
    (296-pixel webcam photos, 125-pixel cards on the table) made a camera that reads nothing
    while every check passed."""
    w, h = card_size
    boxes = [np.ptp(np.float32(p).reshape(-1, 2), axis=0) for p in polygons.values()]
    slack = 1.25            # a zone drawn tight around the card's place, the outline's error
    if any((w <= slack * zw and h <= slack * zh) or (w <= slack * zh and h <= slack * zw)
           for zw, zh in boxes):
        return None
    zw, zh = max(boxes, key=lambda b: b[0] * b[1])
    return (f"the templates' card ({w:.0f} x {h:.0f} pixels) fits in no zone (the largest is "
            f"{zw:.0f} x {zh:.0f}): the templates were captured at another camera distance or "
            f"resolution than the table's; capture them with the table camera")


FIND_AREA = (0.6, 1.45)      # the finder's outlines, in times the templates' card area (find.py)


CARD_SHAPE = (0.5, 0.9)      # a card's width / height upright (tarot 0.57, bridge 0.64, poker 0.72)


def measured_card(card, where="card", frame=None):
    """(width, height) of a calibration's [card] table (the card's size measured in the table
    camera's frame: `shoe-calibrate camera zones --card` writes whole pixels, the card upright),
    or a ValueError naming the key. `frame`: (width, height) the camera sends, when set: a card
    larger than the frame was never measured in it."""
    if not isinstance(card, dict):
        raise ValueError(f"{where}: expected width and height, a card's size in pixels in the "
                         f"camera's frame (shoe-calibrate camera zones --card measures it)")
    unknown = sorted(set(card) - {"width", "height"})
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key (expected width and height)")
    for k in ("width", "height"):
        v = card.get(k)
        if v is None:
            raise ValueError(f"{where}.{k}: missing (the card's {k} in pixels in the camera's frame)")
        if isinstance(v, bool) or not isinstance(v, int) or not 16 <= v <= 4000:
            raise ValueError(f"{where}.{k}: {v!r}: expected a whole number of pixels, 16 to 4000")
    w, h = card["width"], card["height"]
    if not CARD_SHAPE[0] <= w / h <= CARD_SHAPE[1]:
        raise ValueError(f"{where}: width {w}, height {h}: not a card upright (its width "
                         f"{CARD_SHAPE[0]} to {CARD_SHAPE[1]} times its height; measure it again: "
                         f"shoe-calibrate camera zones --card)")
    if frame and not ((w <= frame[0] and h <= frame[1]) or (w <= frame[1] and h <= frame[0])):
        raise ValueError(f"{where}.{'height' if h > max(frame) else 'width'}: a {w} x {h} card is "
                         f"larger than the {frame[0]} x {frame[1]} frame the camera sends "
                         f"([camera] width, height): measure it again")
    return float(w), float(h)


def card_size_error(card_size, measured):
    """Why templates of `card_size` cannot read the cards measured at the table (`measured`, the
    calibration's [card]), or None: the finder looks only for outlines of FIND_AREA times the
    templates' card area. Templates from a camera further away or zoomed out (a smaller card)
    fitted every zone and read nothing. Said as the area ratio, the rule's own terms."""
    ratio = (measured[0] * measured[1]) / (card_size[0] * card_size[1])
    if FIND_AREA[0] <= ratio <= FIND_AREA[1]:
        return None
    return (f"the card measured at the table ({measured[0]:.0f} x {measured[1]:.0f} pixels, the "
            f"calibration's [card]) has {ratio:.2f} times the area of the templates' card "
            f"({card_size[0]:.0f} x {card_size[1]:.0f}), the camera looks for {FIND_AREA[0]} to "
            f"{FIND_AREA[1]} times: captured at another camera height or zoom, they would read "
            f"nothing; capture them with the table camera at its height")


class CameraDriver:
    """start(emit), close(). mode 'barcode' (decoder + codebook) or 'visual' (a recognizer)."""

    def __init__(self, source, zones, mode="barcode", decoder=None, codebook=None,
                 recognizer=None, stable=3, gone=8, pace=None):
        if mode == "barcode" and (decoder is None or codebook is None):
            raise ValueError("barcode mode needs a decoder and the codebook")
        if mode == "visual" and recognizer is None:
            raise ValueError("visual mode needs templates (a recognizer)")
        if mode == "visual" and (why := card_fit_error(recognizer.t.card_size, zones.polygons)):
            raise ValueError(why)
        self.capture = Capture(source if hasattr(source, "read") else open_source(source), pace)
        self.zones = zones
        self.mode = mode
        self.decoder = decoder
        self.codebook = codebook
        self.recognizer = recognizer
        self.tracker = ZoneTracker(stable, gone)
        # a card turned any way whose centre lies in the zone reaches half its diagonal beyond it
        self.margin = (int(np.hypot(*recognizer.t.card_size) / 2) + 4) if mode == "visual" else 8
        self.stats = {"frames": 0, "decode_s": 0.0, "unknown_codes": 0, "refused": 0}
        self._last = {}
        self._stop = threading.Event()
        self._thread = None

    def read_zone(self, crop, inside=None):
        """The cards read in one zone image whose centre lies in the zone (nothing guessed)."""
        if self.mode == "barcode":
            cards, unknown = read_codes(self.decoder, cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY),
                                        self.codebook, inside)
            self.stats["unknown_codes"] += len(unknown)
            return cards
        cards = [c for c, _ in self.recognizer.read_image(crop, inside)]
        self.stats["refused"] += self.recognizer.refused
        return cards

    def read_frame(self, frame, names=None):
        """{zone: [cards]} read in the whole frame (visual mode)."""
        names = names or list(self.zones.polygons)
        polys = {n: self.zones.polygons[n].astype(np.float32) for n in names}
        out = {n: [] for n in names}
        inside = lambda x, y: any(cv2.pointPolygonTest(p, (float(x), float(y)), False) >= 0  # noqa: E731
                                  for p in polys.values())
        for card, q in self.recognizer.read_image(frame, inside):
            cx, cy = _centre(q)       # q.mean(axis=0)'s arithmetic, faster
            for n, p in polys.items():
                if cv2.pointPolygonTest(p, (float(cx), float(cy)), False) >= 0:
                    out[n].append(card)
                    break
        self.stats["refused"] += self.recognizer.refused
        return out

    def process(self, frame, emit):
        t0 = time.perf_counter()
        todo = []
        for name, crop, inside in self.zones.crops(frame, 8):
            # a zone that has not changed and whose cards are all reported needs no new read; the
            # thumbnails are compared only then (a zone being confirmed is read whatever it shows,
            # and the thumbnail was 4% of a frame's time)
            prev = self._last.get(name)
            cur = self._last[name] = [crop.copy(), None]
            if (prev is not None and self.tracker.settled(name) and not self.tracker.absent
                    and np.abs(_thumb(prev) - _thumb(cur)).mean() < 2.0):
                continue
            todo.append((name, crop, inside))
        if self.mode == "visual" and todo:
            # cards are found once in the whole frame (a card turned any way reaches beyond its
            # zone's box) and belong to the zone holding their centre
            read = self.read_frame(frame, [n for n, _, _ in todo])
            results = [(n, read[n]) for n, _, _ in todo]
        else:
            results = [(n, self.read_zone(crop, inside)) for n, crop, inside in todo]
        for name, cards in results:
            for event, card in self.tracker.update(name, cards):
                emit(CardSeen(card, name) if event == "seen" else CardGone(card, name))
        self.stats["frames"] += 1
        self.stats["decode_s"] += time.perf_counter() - t0

    def start(self, emit):
        self.capture.start()
        emit(DeviceState("camera", "connected"))

        def run():
            fault = size = outside = None
            while not self._stop.is_set():
                n, frame = self.capture.latest(timeout=0.5)
                if frame is None:
                    if self.capture.ended:
                        emit(DeviceState("camera", "disconnected",
                                         {"reason": self.capture.end_reason or "the video source ended"}))
                        return
                    continue
                if frame.shape[:2] != size:
                    # zones drawn on another resolution than the camera sends (it could not set
                    # the calibration's width x height): a fault, said once; what lies inside
                    # the frame is still read
                    size = frame.shape[:2]
                    try:
                        Zones(self.zones.polygons, frame_size=(size[1], size[0]))
                        if outside is not None and fault is None:
                            emit(DeviceState("camera", "ok", {"reason": "the zones lie in the frame"}))
                        outside = None
                    except ValueError as e:
                        outside = str(e)
                        emit(DeviceState("camera", "fault", {"reason": outside}))
                try:
                    self.process(frame, emit)
                except Exception as e:     # noqa: BLE001 (any fault of the reader is the camera's fault)
                    # RULES.md, device faults: a reader that raises (damaged templates, a bug)
                    # must not leave the camera "connected" and silent: the fault is reported
                    # once per reason, the traceback logged once, and the next frames are tried
                    why = f"the card reader failed: {type(e).__name__}: {e}"
                    if why != fault:
                        log.exception("camera: %s", why)
                        emit(DeviceState("camera", "fault", {"reason": why}))
                        fault = why
                    continue
                if fault is not None:       # a frame read again: the reader's fault has cleared,
                    # not the zones' (they still lie beyond the frame: that fault is said again)
                    emit(DeviceState("camera", "fault", {"reason": outside}) if outside else
                         DeviceState("camera", "ok", {"reason": "frames read again"}))
                    fault = None
        self._thread = threading.Thread(target=run, name="camera", daemon=True)
        self._thread.start()

    def close(self):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)
        self.capture.close()
