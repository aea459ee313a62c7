"""Why a webcam photo was refused (bench_webcam.py --keep FOLDER): for each photo of a deck's
held-out set that did not read, which step failed: no outline, a corner's index (its scores), the
face check, or the fingerprint (rounding, index shift). Usage:
    diag_webcam.py FOLDER DECK [--all]"""
import csv
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from calibration.camera_tools import read_image  # noqa: E402
from drivers.camera import index as ix  # noqa: E402
from drivers.camera import templates as tp  # noqa: E402
from drivers.camera import visual as v  # noqa: E402
from drivers.camera.deckprint import rounding  # noqa: E402
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


def main():
    folder, deck = sys.argv[1], sys.argv[2]
    rec = v.VisualRecognizer(tp.Templates.load(os.path.join(folder, deck, "templates")))
    base = os.path.join(folder, deck, "held_out")
    with open(os.path.join(base, "labels.csv")) as f:
        for row in csv.DictReader(f):
            card = row["rank"] + row["suit"]
            w = why(rec, read_image(os.path.join(base, row["image"])), card)
            if w or "--all" in sys.argv:
                print(f"{row['image']} {row['condition']}: {w or 'read'}")


if __name__ == "__main__":
    main()
