"""Why a webcam photo was refused (bench_webcam.py --keep FOLDER): for each photo of a deck's
held-out set that did not read, which step failed: no outline, a corner's index (its scores), the
face check, or the fingerprint (rounding, index shift). Usage:
    diag_webcam.py FOLDER DECK [--all]
    diag_webcam.py FOLDER DECK --causes     (one cause a refused photo, counted per surface and
                                             condition; the card's true place from truth.json)
    --where SUBSTR: only the photos whose condition ("surface/condition") holds SUBSTR"""
import csv
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from calibration.camera_tools import read_image  # noqa: E402
from drivers.camera import index as ix  # noqa: E402
from drivers.camera import templates as tp  # noqa: E402
from drivers.camera import visual as v  # noqa: E402
from drivers.camera.deckprint import SMALL, rounding  # noqa: E402
from drivers.camera.find import find_cards  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402


def why(rec, img, card):
    t = rec.t
    quads = find_cards(img, t.card_size) or find_cards(img)
    if not quads:
        return "no outline"
    out = []
    for q in quads:
        got, conf = rec.read_quad(img, q)
        if got == card:
            return None
        parts = [f"quad {np.round(q.mean(axis=0)).astype(int).tolist()} size "
                 f"{np.linalg.norm(q[0] - q[1]):.0f}x{np.linalg.norm(q[0] - q[3]):.0f} read {got}"]
        for k, c in enumerate(both_corners(q)):
            short = []
            r, cf = rec.read_corner(img, c, short=short)
            parts.append(f"corner{k} {r} {cf:.3f}{' short ' + str(short) if short else ''}")
        f = ix.face_score(ix.face(img, q), t.faces[card])
        rd = rounding(img, q, (ix.CW, ix.CH))
        sh = [tp.index_shift(t, img, c, card) for c in both_corners(q)]
        parts.append(f"face {f:.3f} rounding {rd:.2f} (learned {t.print.rounding:.2f}"
                     f"+-{t.print.rounding_tol:.2f}) "
                     f"shifts {sh[0]:.2f} {sh[1]:.2f} (tol {t.print.shift_tol:.2f})")
        out.append("; ".join(parts))
    return " | ".join(out)


def _off(q, truth):
    """The largest corner distance between a found outline and the card's true corners, either
    way round."""
    t = np.float32(truth)
    return min(float(np.linalg.norm(np.roll(q, k, axis=0)[::d] - t, axis=1).max())
               for k in range(4) for d in (1, -1))


def cause(rec, img, card, truth, off_px=6.0):
    """Why a photo did not read `card`: None (it did), or one of not found / outline off /
    colour / index / face / deck check, with a detail."""
    t = rec.t
    quads = find_cards(img, t.card_size) or find_cards(img)
    if not quads:
        return "not found", ""
    cards = [rec.read_quad(img, q)[0] for q in quads]
    if [c for c in cards if c] == [card]:
        return None
    if any(c and c != card for c in cards):
        return "WRONG", str(cards)
    q = min(quads, key=lambda q: _off(q, truth))
    off = _off(q, truth)
    if off > off_px:
        return "outline off", f"{off:.1f}px"
    reads, detail = [], []
    for c in both_corners(q):
        short = []
        patch = ix.corner(img, c, t.box, ix.SEARCH)
        if ix._ink(patch[ix.SEARCH:-ix.SEARCH, ix.SEARCH:-ix.SEARCH])[2] is None:
            return "colour", f"off {off:.1f}px"
        r, cf = rec.read_corner(img, c, short=short)
        reads.append(r)
        detail.append(f"{r} {cf:.2f}{' short' if short else ''}")
    if not all(r == card for r in reads):
        return "index", f"off {off:.1f}px " + ", ".join(detail)
    face_min = ix.FACE_MIN if t.card_size[0] >= SMALL else ix.FACE_MIN_SMALL
    f = ix.face_score(ix.face(img, q), t.faces[card])
    if f < face_min:
        return "face", f"{f:.3f} off {off:.1f}px"
    rd = rounding(img, q, (ix.CW, ix.CH))
    sh = [tp.index_shift(t, img, c, card) for c in both_corners(q)]
    return "deck check", (f"rounding {rd:.2f} (learned {t.print.rounding:.2f}+-{t.print.rounding_tol:.2f}) "
                          f"shifts {sh[0]:.2f} {sh[1]:.2f} (tol {t.print.shift_tol:.2f}) off {off:.1f}px")


def _where():
    """--where SUBSTR (only photos whose "surface/condition" holds it), or ''."""
    return sys.argv[sys.argv.index("--where") + 1] if "--where" in sys.argv else ""


def causes(folder, deck):
    rec = v.VisualRecognizer(tp.Templates.load(os.path.join(folder, deck, "templates")))
    base = os.path.join(folder, deck, "held_out")
    with open(os.path.join(base, "truth.json")) as f:
        truth = json.load(f)
    count = {}
    with open(os.path.join(base, "labels.csv")) as f:
        for row in csv.DictReader(f):
            if _where() not in row["condition"]:
                continue
            card = row["rank"] + row["suit"]
            w = cause(rec, read_image(os.path.join(base, row["image"])), card, truth[row["image"]])
            if w:
                count[w[0]] = count.get(w[0], 0) + 1
                print(f"{deck} {row['image']} {row['condition']}: {w[0]}: {w[1]}")
    print(f"{deck} causes: " + ", ".join(f"{k} {n}" for k, n in sorted(count.items())))


def main():
    folder, deck = sys.argv[1], sys.argv[2]
    if "--causes" in sys.argv:
        return causes(folder, deck)
    rec = v.VisualRecognizer(tp.Templates.load(os.path.join(folder, deck, "templates")))
    base = os.path.join(folder, deck, "held_out")
    with open(os.path.join(base, "labels.csv")) as f:
        for row in csv.DictReader(f):
            if _where() not in row["condition"]:
                continue
            card = row["rank"] + row["suit"]
            w = why(rec, read_image(os.path.join(base, row["image"])), card)
            if w or "--all" in sys.argv:
                print(f"{row['image']} {row['condition']}: {w or 'read'}")


if __name__ == "__main__":
    main()
