"""The virtual camera: a table seen from above, served as an MJPEG stream over HTTP, as an IP
camera serves it. The daemon opens the stream's URL through OpenCV exactly as it opens a real
network camera, so the camera driver, zones, decoding and tracking all run for real.

The simulator places cards as the dealer lays them (each card carries the QR code of the
calibration file's codebook), turns the hole card over, clears the table, and injects faults on
command (a card that shows differently from what the shoe read).
"""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cv2
import numpy as np

from controller.cards import CARDS

from .synth import CARD_W, CARD_H, felt, place, card_face

SCALE = 0.3                      # 75 x 105 px cards on a 1280 x 720 frame
SIZE = (1280, 720)


def payload(card):
    return f"VC-{card}"


def codebook():
    """The codes printed on the virtual table's cards: {payload: card}."""
    return {payload(c): c for c in CARDS}


def layout(game, w=SIZE[0], h=SIZE[1]):
    """{zone: polygon} and {zone: [slot centres]} of the virtual table: a blackjack layout with
    the dealer's row on top and seven seat columns below (eight card places each), or the two
    baccarat hands side by side."""
    zones, slots = {}, {}
    if game == "baccarat":
        for i, name in enumerate(("player", "banker")):
            x0 = w * (0.08 + 0.5 * i)
            zones[name] = _rect(x0, h * 0.25, x0 + w * 0.34, h * 0.75)
            slots[name] = [(x0 + 70 + 120 * k, h * 0.5) for k in range(3)]
        return zones, slots
    zones["dealer"] = _rect(40, 20, w - 40, 175)
    slots["dealer"] = [(90 + 95 * k, 97) for k in range(12)]
    col = w / 7
    for s in range(1, 8):
        x0 = (s - 1) * col
        zones[f"seat_{s}"] = _rect(x0 + 6, 200, x0 + col - 6, h - 10)
        slots[f"seat_{s}"] = [(x0 + col / 2 + (k % 2 - 0.5) * 86, 270 + 122 * (k // 2))
                              for k in range(8)]
    return zones, slots


def _rect(x0, y0, x1, y1):
    return [[round(x0), round(y0)], [round(x1), round(y0)], [round(x1), round(y1)], [round(x0), round(y1)]]


def _back():
    img = np.full((CARD_H, CARD_W, 3), (150, 40, 40), np.uint8)      # a blue back, no code
    cv2.rectangle(img, (12, 12), (CARD_W - 13, CARD_H - 13), (230, 230, 230), 4)
    return img


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        cam = self.server.camera
        if self.path != "/video.mjpg":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            while not cam.stopped.wait(1 / cam.fps):
                jpeg = cam.jpeg()
                self.wfile.write(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: "
                                 + str(len(jpeg)).encode() + b"\r\n\r\n" + jpeg + b"\r\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass                 # the daemon went away (killed, restarted): it will come back

    def log_message(self, *args):
        pass


class VirtualCamera:
    def __init__(self, game, fps=25, port=0):
        self.zones, self.slots = layout(game)
        self.fps = fps
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._cards = {}              # zone -> [(card, face_up, angle)]
        self._disagree = 0
        self._faces = {}              # (card, face up) -> image: a QR code takes a while to draw
        self.shown = []               # (zone, card shown, card dealt) for the report
        self._base = felt(*SIZE, seed=7)
        self._frame = self._base.copy()
        self._jpeg = None
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        self._server.camera = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="virtual-camera",
                                        daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self._server.server_address[1]}/video.mjpg"

    def start(self):
        self._thread.start()
        return self.url

    def close(self):
        self.stopped.set()
        self._server.shutdown()
        self._server.server_close()

    # -- the table ----------------------------------------------------------------------------

    def disagree_next(self, n=1):
        """The next `n` cards laid show a different card from the one the shoe read."""
        with self._lock:
            self._disagree += n

    def lay(self, zone, card, face_up=True, crosswise=False):
        """The dealer lays `card` in `zone` (face down: its back, no code). Returns the card shown."""
        with self._lock:
            shown = card
            if self._disagree and face_up:
                self._disagree -= 1
                shown = CARDS[(CARDS.index(card) + 4) % 52]     # the next rank, same suit
            self.shown.append((zone, shown, card))
            cards = self._cards.setdefault(zone, [])
            cards.append([shown, face_up, 90.0 if crosswise else 0.0])
            self._draw(self._frame, zone, len(cards) - 1)      # on top of what lies there
            self._jpeg = None
            return shown

    def cards_in(self, zone):
        """How many cards lie in `zone`."""
        with self._lock:
            return len(self._cards.get(zone, []))

    def pick_up(self, zone, index=-1):
        """The dealer takes one card away (an unreadable card to the discard rack)."""
        with self._lock:
            if self._cards.get(zone):
                self._cards[zone].pop(index)
                self._render()

    def turn_over(self, zone, index):
        """The hole card is turned face up."""
        with self._lock:
            self._cards[zone][index][1] = True
            self._render()

    def clear(self):
        """The dealer picks the cards up."""
        with self._lock:
            self._cards = {}
            self._render()

    def _draw(self, frame, zone, k):
        if k >= len(self.slots[zone]):
            return                    # more cards than places: they lie outside the camera's view
        card, up, angle = self._cards[zone][k]
        if (card, up) not in self._faces:
            self._faces[(card, up)] = card_face(card, payload(card)) if up else _back()
        face = self._faces[(card, up)]
        place(frame, face, self.slots[zone][k], angle + (k * 5 % 7 - 3), scale=SCALE)

    def _render(self):
        frame = self._base.copy()
        for zone, cards in self._cards.items():
            for k in range(len(cards)):
                self._draw(frame, zone, k)
        self._frame = frame
        self._jpeg = None

    def jpeg(self):
        with self._lock:
            if self._jpeg is None:
                self._jpeg = cv2.imencode(".jpg", self._frame, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
            return self._jpeg

    def frame(self):
        with self._lock:
            return self._frame.copy()
