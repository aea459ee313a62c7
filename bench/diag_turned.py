"""Why bench_hands' turned cards are missed, on the bench's own scenes (the same seeds as
`bench_hands.py --rotation-only`, so its figures and this agree): for each card not reported
within five frames, diag_rotation's cause on the first frame, then what the card's outline
gives (the one found at it when there is one; else the drawn quad, the face image's bounds, a
few px outside where the finder puts the edge): each index corner's read (card, score), the face score, the corners' rounding (each
corner and the median, against the learned value and tolerance), the index place's shifts,
the proportions, and which neighbours' true outlines overlap it. Diagnosis only.

Usage: .venv/bin/python bench/diag_turned.py --decks cardsjs,svgcards,kennard,responsive --cards 100
(`--place I`: the deck's place in bench_hands' --decks, its templates' seed; default its place here)"""
import argparse
import math
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_hands import ZONES, noisy  # noqa: E402
from bench.diag_deckcheck import corners_of  # noqa: E402
from bench.diag_rotation import classify  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import rounding as R  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.index import CH, CW, face, face_score  # noqa: E402
from drivers.camera.indexplace import placed_shift  # noqa: E402
from drivers.camera.deckprint import aspect  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.tracker import ZoneTracker  # noqa: E402


def per_corner(bgr, quad):
    """Each corner's rounding (nan where left out), as rounding.rounding measures them in gray."""
    v, mended = corners_of(bgr, quad)
    return [round(x, 1) if not math.isnan(x) else (f"m{mended[k]:.1f}" if k in mended else "nan")
            for k, x in enumerate(v)]


def detail(rec, img, tq, card, truth):
    t = rec.t
    # the drawn quad is the face image's bounds: on svg-cards 1-3 px outside the edge the finder
    # takes (a well-read card's found outline lies that far inside it: the face scored 0.57-0.77
    # on the drawn quad against 0.99 on the found one). The found outline at the card when there
    # is one (turned to start at the drawn quad's first index corner), else the drawn quad
    from drivers.camera.find import find_cards
    at = [q for q in find_cards(img, t.card_size)
          if np.linalg.norm(q.mean(axis=0) - tq.mean(axis=0)) < 0.2 * t.card_size[0]]
    if at:
        q = at[0]
        tq = min((np.roll(q, k, axis=0) for k in range(4)), key=lambda r: float(np.abs(r - tq).max()))
    grays = {}
    reads = [rec.read_corner(img, q, keep=grays) for q in both_corners(tq)]
    fs = face_score(face(img, tq), t.faces[card])
    rnd = R.rounding(img, tq, (CW, CH))
    shifts = [placed_shift(t, img, q, card, grays.get(np.float32(q).tobytes())) for q in both_corners(tq)]
    over = [i for i, q in enumerate(truth) if q is not tq and cv2.intersectConvexConvex(tq, q)[0] > 1]
    return (f"corners {[(c, round(s, 3)) for c, s in reads]} face {fs:.3f} rounding {rnd:.2f} "
            f"(learned {t.print.rounding:.2f}+-{t.print.rounding_tol:.2f}) per corner {per_corner(img, tq)} "
            f"shifts {[round(s, 2) for s in shifts]} (tol {t.print.shift_tol:.2f}) aspect "
            f"{aspect(tq) / (max(t.card_size) / min(t.card_size)):.3f} overlaps {over}")


def run(deck, n_cards, place, seed, width=125):
    rec = VisualRecognizer(cm.reference_templates(deck, seed=seed + place, width=width))
    rng = np.random.default_rng(11 + seed)
    zones = cm.framed(ZONES, width)
    total = read = k = 0
    while total < n_cards:
        cards = {z: CARDS[int(rng.integers(52))] for z in zones}
        table = cm.SURFACES[k % len(cm.SURFACES)]
        base, where = cm.table_frame(deck, cards, zones, table, "rotation", rng, width=width)
        truth = [np.float32(where[z]) for z in zones]
        tracker, reported, first = ZoneTracker(3, 8), set(), None
        for _ in range(5):
            img = noisy(base, rng)
            first = img if first is None else first
            got = rec.read_image(img)
            for z, tq in zip(zones, truth):
                cs = [c for c, q in got if np.linalg.norm(tq.mean(axis=0) - q.mean(axis=0)) < 0.2 * width]
                for ev, c in tracker.update(z, cs):
                    if ev == "seen" and c == cards[z]:
                        reported.add(z)
        for z, tq in zip(zones, truth):
            if z in reported:
                read += 1
                continue
            cause = classify(rec, first, tq, cards[z], width)
            print(f"{deck} scene {k} ({table}) {z} {cards[z]}: {cause}; {detail(rec, first, tq, cards[z], truth)}",
                  flush=True)
        total += len(zones)
        k += 1
    print(f"{deck}: read {read} of {total}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decks", default="cardsjs,svgcards,kennard,responsive")
    ap.add_argument("--cards", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--place", type=int, help="the deck's place in bench_hands' --decks")
    ap.add_argument("--cpu", type=int)
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    for i, deck in enumerate(a.decks.split(",")):
        run(deck, a.cards, a.place if a.place is not None else i, a.seed)


if __name__ == "__main__":
    main()
