"""Camera steps of the calibration tool: draw the zones over a table image, sweep exposure and
focus for the best decode rate, capture rank and suit templates from labelled photos, and read
photos (camera_read.py: as the daemon reads a frame)."""
import os

import cv2
import numpy as np

from controller.cards import INDEX
from drivers.camera.driver import Zones
from drivers.camera.frame import to_card_edge
from drivers.camera.outline import card_size_of
from drivers.camera.recognize import Templates, find_cards
from drivers.camera.index import CH, CW
from drivers.camera.templates import BadReference, OtherDeck
from drivers.camera.video import cut_jpeg

CANON = (CW, CH)

from .camera_files import label_rows, quiet_stderr, template_file, write_templates  # noqa: F401
from .charts import bar_chart  # noqa: F401  (the sweep's and the read test's chart)
from .files import make_folder
from .shoe_tools import ToolError


MAX_PIXELS = 40_000_000       # no camera frame or photo here is larger; decoding one costs 1.3 GB


def _dimensions(data):
    """(width, height) from a PNG's or a JPEG's header, without decoding it; None otherwise."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    i = 2
    while data[:2] == b"\xff\xd8" and i + 9 < len(data) and data[i] == 0xFF:
        marker, size = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):     # a frame header
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
        i += 2 + size
    return None


def read_image(path):
    """The photo at `path` as BGR, or a ToolError naming what is wrong with the file."""
    if os.path.isdir(path):
        raise ToolError(f"{path}: a folder, not a photo")
    if os.path.islink(path) and not os.path.exists(path):
        raise ToolError(f"{path}: a symbolic link to nothing (its target missing, or a loop)")
    if not os.path.isfile(path):
        raise ToolError(f"{path}: no such file")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:          # the photos copied by root, the tool run as the table's user
        raise ToolError(f"{path}: cannot be read ({e.strerror}): give this user read access") from None
    if not data:
        raise ToolError(f"{path}: an empty file (0 bytes): take it again")
    size = _dimensions(data)
    if size and size[0] * size[1] > MAX_PIXELS:
        raise ToolError(f"{path}: {size[0]} x {size[1]} pixels: larger than any camera's photo "
                        f"(at most {MAX_PIXELS // 1_000_000} megapixels): scale it down")
    if cut_jpeg(data):
        raise ToolError(f"{path}: a damaged JPEG (cut short, no end marker): take it again")
    try:
        with quiet_stderr():        # libpng's "iCCP: known incorrect sRGB profile" and the like
            img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    except cv2.error:
        # OpenCV's own check of the size its header states (OPENCV_IO_MAX_IMAGE_PIXELS, set by
        # calibration/__init__.py): a TIFF, WebP, BMP ... over the limit, refused undecoded
        raise ToolError(f"{path}: larger than any camera's photo (over "
                        f"{MAX_PIXELS // 1_000_000} megapixels), or its header is damaged") from None
    if img is None:
        raise ToolError(f"{path}: not an image")
    if min(img.shape[:2]) < 32:
        raise ToolError(f"{path}: {img.shape[1]} x {img.shape[0]} pixels: too small to show a card")
    return img


def draw_zones(image, polygons, out, where="zones"):
    """The zones drawn over `image`, written to `out`; a zone beyond the image (zones drawn on
    another camera's frame) or an --out that names no image file is a ToolError."""
    try:
        img = Zones(polygons, frame_size=(image.shape[1], image.shape[0])).draw(image)
    except ValueError as e:
        raise ToolError(f"{where}: {e} (zones drawn on another camera's picture, or the wrong "
                        f"image?)") from None
    try:
        ok = cv2.imwrite(str(out), img)
    except cv2.error:           # no encoder for the name: no extension, or an unknown one
        raise ToolError(f"--out {out}: not an image file name (end it in .png)") from None
    if not ok:
        raise ToolError(f"--out {out}: cannot write the PNG")
    return out


def measure_card(image, polygons, where):
    """(width, height, n): the median size in pixels of the cards lying in the zones of a table
    photo (a card's centre inside a zone), for the calibration's [card]; a ToolError when none."""
    inside = [np.float32(p) for p in polygons.values()]
    quads = [q for q in find_cards(image) if any(
        cv2.pointPolygonTest(p, tuple(float(v) for v in q.mean(axis=0)), False) >= 0 for p in inside)]
    if not quads:
        raise ToolError(f"{where}: no card found in the zones: lay a card (face up, flat) in a zone "
                        f"for --card")
    w, h = card_size_of(quads)
    return round(w), round(h), len(quads)


def too_dark(image):
    return float(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).mean()) < 25


def sweep(source, zones, decode_zone, settings):
    """For each setting (a dict of camera properties), apply it, grab a few frames and count the
    zones decoded. `source` has set(prop, value) and read() (OpenCV's VideoCapture does)."""
    from drivers.camera.video import CAMERA_PROPS
    results = []
    for setting in settings:
        for k, v in setting.items():
            # False: this source cannot apply it (a video file, an MJPEG stream, a webcam without
            # manual focus); sweeping on would measure noise and write settings never tried
            if source.set(CAMERA_PROPS[k], v) is False:
                raise ToolError(f"this source cannot set the camera's {k}: the sweep needs a "
                                f"camera that applies exposure and focus (--source /dev/videoN)")
        decoded = total = 0
        for _ in range(3):
            ok, frame = source.read()
            if not ok:
                raise ToolError("the camera gave no frame (is it connected?)")
            for name, crop, inside in zones.crops(frame):
                total += 1
                decoded += bool(decode_zone(crop, inside))
        results.append({**setting, "decode_rate": decoded / total if total else 0.0})
    best = max(results, key=lambda r: r["decode_rate"])
    return best, results


def out_folder(out_dir):
    """Make the templates' folder now, or raise a ToolError: before 52 photos are read. A folder
    holding other files than templates is refused (the new templates replace the whole folder).
    True when it made the folder (taken away again if the capture is refused)."""
    made = make_folder(out_dir, f"--out {out_dir}", "the folder")
    other = sorted(f for f in os.listdir(out_dir) if not template_file(f))
    if other:
        raise ToolError(f"--out {out_dir}: holds other files than templates ({', '.join(other[:3])}"
                        f"{' ...' if len(other) > 3 else ''}): give a new folder or one of templates")
    return made


def _save_templates(samples, out_dir, names=None):
    """`names`: {card: its photo's file}, to name the photos to take again."""
    # one camera height for every reference photo: the card size learned is the one the daemon
    # looks for (a set mixing 120- and 296-pixel cards gave a size that matched neither)
    ws = [card_size_of([q])[0] for _, q, _ in samples]
    mid = float(np.median(ws))
    off = [(c, w) for (_, _, c), w in zip(samples, ws) if not 0.8 * mid <= w <= 1.25 * mid]
    if off:
        who = lambda c: f"{names[c]}: {c}" if names else c     # noqa: E731  (the photo to take again)
        raise ToolError(f"the reference photos of {', '.join(f'{who(c)} ({w:.0f})' for c, w in off[:6])}"
                        f"{' ...' if len(off) > 6 else ''} show the card at another size than the "
                        f"others (about {mid:.0f} pixels wide): take every photo from the same "
                        f"height, the table camera's")
    try:
        t = Templates.capture(framed(samples))
    except OtherDeck as e:      # not a photo to take again: a card to replace
        raise ToolError(e.say(names.get if names else lambda c: f"the reference image of {c}")) from None
    except BadReference as e:
        if not names:
            raise ToolError(str(e)) from None
        if e.why:       # one line: each photo, its label and what it shows
            raise ToolError("; ".join(f"{names[c]}: labelled {c}, it {w}" for c, w in e.why.items())
                            + ": take it again") from None
        raise ToolError(f"{', '.join(names[c] for c in e.cards)}: {e}") from None
    except ValueError as e:
        raise ToolError(str(e)) from None
    # captured, with a word on the photos that may read less well (the tool prints it)
    t.warning_lines = [f"{', '.join(names[c] if names else c for c in cards)}: {why}"
                       for cards, why in t.warnings]
    return write_templates(t, out_dir)


def load_templates(folder):
    """The templates in `folder`, or a ToolError saying why they cannot be used."""
    try:
        with quiet_stderr():        # libpng's lines about a damaged PNG: the error names it
            return Templates.load(folder)
    except ValueError as e:
        raise ToolError(str(e)) from None


_RANK_WORDS = {"10": "T", "ACE": "A", "JACK": "J", "QUEEN": "Q", "KING": "K"}
_SUIT_WORDS = {"SPADES": "s", "SPADE": "s", "\u2660": "s", "HEARTS": "h", "HEART": "h", "\u2665": "h",
               "DIAMONDS": "d", "DIAMOND": "d", "\u2666": "d", "CLUBS": "c", "CLUB": "c", "\u2663": "c"}


def label_card(rank, suit):
    """The card a label row names, in the spellings a technician writes: 'T' or '10', any
    case, a suit letter, word or symbol ('10', 'Hearts' -> 'Th'). None when it is no card."""
    r, u = rank.strip().upper(), suit.strip().upper()
    r = _RANK_WORDS.get(r, r)
    u = _SUIT_WORDS.get(u, u.lower())
    card = r + u
    return card if card in INDEX else None


def one_card(quads):
    """The card of a photo meant to show one: the only outline, or one clearly larger than any
    other white thing in the picture (a sheet of paper, a reflection); else None."""
    if len(quads) == 1:
        return quads[0]
    if len(quads) > 1:
        areas = sorted(((cv2.contourArea(q), i) for i, q in enumerate(quads)), reverse=True)
        if areas[1][0] < 0.5 * areas[0][0]:
            return quads[areas[0][1]]
    return None


def templates_from_labels(csv_path, out_dir):
    """Templates from labelled still photos: CSV columns image,rank,suit, one card per photo,
    image paths relative to the CSV."""
    base = os.path.dirname(os.path.abspath(csv_path))
    samples, where, photos = [], {}, {}
    rows = label_rows(csv_path)
    cards = []
    for n, row in enumerate(rows, 2):       # every label first: before 52 photos are read
        if None in row.values() or not row["image"]:      # a short row (csv gives None)
            raise ToolError(f"{csv_path}:{n}: expected image,rank,suit naming a card")
        card = label_card(row["rank"], row["suit"])
        if card is None:
            raise ToolError(f"{csv_path}:{n}: {row['rank'].strip() + row['suit'].strip()!r} is not a card "
                            f"(rank A 2-9 T or 10 J Q K, suit s h d c)")
        if card in where:       # one photo per card: a second is a mislabelled photo of another
            raise ToolError(f"{csv_path}:{n}: {card} is listed twice (lines {where[card]} and {n}): "
                            f"one photo per card")
        where[card] = n
        photo = os.path.normpath(row["image"].strip())
        if photo in photos:     # one photo for two cards: it passes as each, and reads as both
            raise ToolError(f"{csv_path}:{n}: {row['image']} is listed twice (lines {photos[photo]} "
                            f"and {n}, labelled {cards[photos[photo] - 2]} and {card}): one photo per card")
        photos[photo] = n
        cards.append(card)
    for row, card in zip(rows, cards):
        img = read_image(os.path.join(base, row["image"]))
        if too_dark(img):
            raise ToolError(f"{row['image']}: too dark to capture templates from (add light)")
        quads = find_cards(img)
        q = one_card(quads)
        if q is None:
            raise ToolError(f"{row['image']}: expected one card in the photo, found {len(quads)}")
        samples.append((img, q, card))
    return _save_templates(samples, out_dir, {c: r["image"] for r, c in zip(rows, cards)})


def framed(samples):
    """The samples with an outline found on a court card's printed frame moved out to the card's
    edge, the card's size the deck's median (drivers/camera/frame.py)."""
    size = card_size_of([q for _, q, _ in samples])
    return [(img, to_card_edge(img, q, size), card) for img, q, card in samples]
