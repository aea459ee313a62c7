"""The templates on disk: deck.json, one index and one face PNG a card, contact.png, and
manifest.sha256 (every other file's SHA-256, as `sha256sum` writes it). A folder edited by hand
(two cards' files swapped, a PNG cut short or painted over, deck.json changed) is refused at
load, naming the files; every file is read once, its size and its checksum checked before it is
decoded (a huge or crafted PNG never reaches the decoder)."""
import hashlib
import json
import os
import re
import stat

import cv2
import numpy as np

from controller.cards import CARDS
from .index import CH, CW, FACE_H, FACE_W, MATCH

FORMAT = 5                        # 3: the whole face of each card (the deck check); 4: the deck's
                                  # fingerprint (deckprint.py); 5: manifest.sha256, and faces
                                  # sampled on pixel edges (index.face; older faces sit half a pixel off)
MANIFEST = "manifest.sha256"
MAX_FILE = 4 << 20                # bytes: the largest template file is a few tens of kilobytes
NAMES = (["deck.json", "contact.png"] + [f"index_{c}.png" for c in CARDS]
         + [f"face_{c}.png" for c in CARDS])
AGAIN = "capture the templates again (shoe-calibrate camera templates)"
_LINE = re.compile(r"([0-9a-f]{64}) [ *](\S+)")


def write_manifest(folder):
    """manifest.sha256 over the files just written (`sha256sum -c manifest.sha256` checks it)."""
    lines = []
    for name in sorted(NAMES):
        with open(os.path.join(folder, name), "rb") as f:
            lines.append(f"{hashlib.sha256(f.read()).hexdigest()}  {name}\n")
    with open(os.path.join(folder, MANIFEST), "w") as f:
        f.write("".join(lines))


def _read(folder, name):
    """A template file's bytes: a regular file of at most MAX_FILE bytes, or a one-line error
    (opened without blocking: a FIFO put in its place must not hang the daemon's start)."""
    path = os.path.join(folder, name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:     # missing, a symlink loop, no permission
        raise ValueError(f"{path}: {e.strerror}: {AGAIN}") from None
    try:        # checked on the bare fd: os.fdopen raises on a directory (and leaked the fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ValueError(f"{path}: {what}, expected a file: {AGAIN}")
        if st.st_size > MAX_FILE:
            raise ValueError(f"{path}: {st.st_size} bytes, no template file is so large: {AGAIN}")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_FILE + 1)
    finally:
        os.close(fd)


def read_files(folder):
    """{name: bytes} of every template file, and {name: its checksum in the manifest}."""
    try:
        entries = os.listdir(folder)
    except FileNotFoundError:
        raise ValueError(f"{folder}: no such folder (capture the templates with shoe-calibrate "
                         f"camera templates)") from None
    except OSError as e:     # not a folder, a symlink loop, no permission
        raise ValueError(f"{folder}: {e.strerror}") from None
    if not entries:
        raise ValueError(f"{folder}: an empty folder, no templates in it (capture them with "
                         f"shoe-calibrate camera templates)")
    if "deck.json" not in entries:
        raise ValueError(f"{folder}: no deck.json (templates from an older version, or none: "
                         f"capture them with shoe-calibrate camera templates)")
    files = {"deck.json": _read(folder, "deck.json")}
    if MANIFEST not in entries:
        return files, None
    mpath = os.path.join(folder, MANIFEST)
    try:
        text = _read(folder, MANIFEST).decode("ascii")
    except UnicodeDecodeError:
        raise ValueError(f"{mpath}: not a checksum list (edited by hand?): {AGAIN}") from None
    sums = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _LINE.fullmatch(line)
        if m and (m[2] not in NAMES or m[2] in sums):     # the name said: a hash fills 60 chars
            raise ValueError(f"{mpath}:{n}: {m[2][:60]!r} "
                             f"{'listed twice' if m[2] in sums else 'is not a template file'} "
                             f"(edited by hand?): {AGAIN}")
        if not m:
            raise ValueError(f"{mpath}:{n}: expected '<sha256>  <template file>', each file once, "
                             f"got {line[:60]!r} (edited by hand?): {AGAIN}")
        sums[m[2]] = m[1]
    gone = [x for x in NAMES[1:] if x not in entries]     # a file deleted, the manifest re-signed
    if gone:
        raise ValueError(f"{folder}: missing template {', '.join(gone[:3])}"
                         f"{' ...' if len(gone) > 3 else ''} (deleted?): {AGAIN}")
    missing = [x for x in NAMES if x not in sums]
    if missing:
        raise ValueError(f"{mpath}: no checksum for {', '.join(missing[:3])}"
                         f"{' ...' if len(missing) > 3 else ''} (edited by hand?): {AGAIN}")
    for name in NAMES[1:]:
        files[name] = _read(folder, name)
    return files, sums


def _verify(folder, files, sums):
    wrong = [n for n in NAMES if hashlib.sha256(files[n]).hexdigest() != sums[n]]
    if wrong:
        raise ValueError(f"{folder}: {', '.join(wrong[:4])}{' ...' if len(wrong) > 4 else ''} "
                         f"{'do' if len(wrong) > 1 else 'does'} not match {MANIFEST} (swapped, "
                         f"edited or cut short by hand?): {AGAIN}")


def _png_size(data):
    """(height, width) a PNG's header states, or None."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 26:
        return int.from_bytes(data[20:24], "big"), int.from_bytes(data[16:20], "big")
    return None


def _png_header(folder, name, data, shape, depth):
    """A template PNG's header: its size and bit depth, gray (a resize by hand named; a crafted
    header of a huge image refused before anything decodes it)."""
    got = None
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 26:
        got = ((int.from_bytes(data[20:24], "big"), int.from_bytes(data[16:20], "big")),
               data[24] if data[25] == 0 else -1)          # bit depth, of a gray image
    if got and got[0] != shape and name.startswith("index_"):
        raise ValueError(f"{folder}: template {name} is {got[0][1]} x {got[0][0]} pixels, the "
                         f"index box {shape[1]} x {shape[0]}: {AGAIN}")
    if got != (shape, depth):
        raise ValueError(f"{folder}: template {name} is damaged (not a {shape[1]} x {shape[0]} "
                         f"{depth}-bit gray PNG): {AGAIN}")


def _png(folder, name, data, shape):
    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if img is None or img.shape != shape:
        raise ValueError(f"{folder}: template {name} is damaged (cut short?): {AGAIN}")
    return img


def load_parts(folder):
    """(card_size, box, split, patches, faces, fingerprint json) of a templates folder: deck.json
    checked key by key, each PNG's header, every file against the manifest, then decoded."""
    files, sums = read_files(folder)
    path = os.path.join(folder, "deck.json")
    try:
        meta = json.loads(files["deck.json"])
    except ValueError:
        raise ValueError(f"{path}: damaged (not JSON: cut short or edited?): {AGAIN}") from None
    card_size, box, split = deck_meta(path, meta)
    if sums is None:
        raise ValueError(f"{folder}: no {MANIFEST} (removed by hand?): {AGAIN}")
    shape = (box[3] - box[1], box[2] - box[0])
    want = {**{f"index_{c}.png": (shape, 8) for c in CARDS},
            **{f"face_{c}.png": ((FACE_H, FACE_W), 16) for c in CARDS}}
    sizes = {_png_size(files[f"index_{c}.png"]) for c in CARDS}
    if len(sizes) == 1 and None not in sizes and sizes != {shape}:    # deck.json of another set
        (h, w), = sizes
        raise ValueError(f"{path}: its index box ({shape[1]} x {shape[0]}) is not the index files' "
                         f"(all {w} x {h} pixels): deck.json of another templates folder? {AGAIN}")
    for name, (sh, depth) in want.items():
        _png_header(folder, name, files[name], sh, depth)
    _verify(folder, files, sums)
    patches, faces = {}, {}
    for c in CARDS:
        patches[c] = _png(folder, f"index_{c}.png", files[f"index_{c}.png"], shape)
        faces[c] = _png(folder, f"face_{c}.png", files[f"face_{c}.png"], (FACE_H, FACE_W))
    return card_size, box, split, patches, faces, meta["print"]


def deck_meta(path, meta):
    """(card_size, box, split) of a deck.json, checked: a file edited by hand (NaN, a string, a
    split outside the index) is said naming its key, not found as a crash in the camera thread."""
    def bad(key, want):
        return ValueError(f"{path}: {key}: expected {want}, got {json.dumps(meta.get(key))[:40]} "
                          f"(edited by hand? capture the templates again)")
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: expected an object with format, card_size, box, split, print "
                         f"(edited by hand? capture the templates again)")
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: template format {meta.get('format')}, expected {FORMAT} (from an "
                         f"older version: capture them again with shoe-calibrate camera templates)")
    unknown = sorted(set(meta) - {"format", "card_size", "box", "split", "print"})
    if unknown:
        raise ValueError(f"{path}: unknown key {unknown[0]!r} (edited by hand? capture the templates "
                         f"again)")
    p = meta.get("print")
    if not (isinstance(p, dict) and set(p) == {"rounding", "rounding_tol", "shift_tol"} and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in p.values())
            and p["rounding_tol"] > 0 and p["shift_tol"] > 0):
        raise ValueError(f"{path}: no valid deck fingerprint ('print'): expected rounding, rounding_tol "
                         f"> 0 and shift_tol > 0 as numbers, got {json.dumps(p)[:80]} (edited by hand? "
                         f"capture the templates again)")

    def numbers(key, n, kind):
        v = meta.get(key)
        if not (isinstance(v, list) and len(v) == n and all(
                isinstance(x, kind) and not isinstance(x, bool) and np.isfinite(x) for x in v)):
            raise bad(key, f"{n} {'whole ' if kind is int else ''}numbers")
        return v
    w, h = numbers("card_size", 2, (int, float))
    if not (16 <= w <= 4000 and 16 <= h <= 4000):
        raise bad("card_size", "a card's width and height in pixels (16 to 4000)")
    box = numbers("box", 4, int)
    if not (0 <= box[0] < box[2] <= CW and 0 <= box[1] < box[3] <= CH):
        raise bad("box", f"x0 < x1 <= {CW}, y0 < y1 <= {CH} on the canonical card")
    split = meta.get("split")
    # the rank above the split and the suit below, each at least a few pixels when compared
    if not (isinstance(split, int) and not isinstance(split, bool)
            and box[1] + 4 / MATCH <= split <= box[3] - 4 / MATCH):
        raise bad("split", f"a whole number between the index box's top and bottom "
                           f"({box[1]} and {box[3]})")
    return (float(w), float(h)), tuple(box), split
