"""Which part of the deck check refuses a surface's missed cards (issue 17): bench_camera.py's
deck sweep frames (the same seeds and noise) of one surface; for each card not reported within
five frames, in each frame, the outline nearest the card and what it measured: both corners'
reads, the face score, the proportions, the corners' rounding (per corner, and the deck's learned
value and tolerance) and the index shifts against the deck's tolerance. Usage:
    diag_deckcheck.py --surface white --decks svgcards [--conditions clean,shadow]"""
import argparse
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import rounding as rd  # noqa: E402
from drivers.camera.deckprint import aspect  # noqa: E402
from drivers.camera.driver import CameraDriver, Zones  # noqa: E402
from drivers.camera.find import find_cards  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.index import CH, CW, face, face_score  # noqa: E402
from drivers.camera.indexplace import placed_shift  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.tracker import ZoneTracker  # noqa: E402


def corners_of(bgr, quad):
    """The four corners' roundings as rounding() measures them at its first (gray) pass."""
    patches = []
    for k in range(4):
        q = np.float32(quad)[rd._TURNED[k]]
        w, h = (CW, CH) if k % 2 == 0 else (CH, CW)
        dst = np.float32([[rd.P, rd.P], [w + rd.P, rd.P], [w + rd.P, h + rd.P], [rd.P, h + rd.P]])
        m = cv2.getPerspectiveTransform(q, dst)
        patches.append(cv2.warpPerspective(bgr, m, (rd.L + 2 * rd.P,) * 2, flags=cv2.INTER_LINEAR,
                                           borderMode=cv2.BORDER_REPLICATE))
    g = cv2.cvtColor(np.concatenate(patches), cv2.COLOR_BGR2GRAY).astype(np.float32)
    mended = {}
    per = rd._corner_roundings(g.reshape(4, rd.L + 2 * rd.P, -1), mended)
    return per, mended


def detail(rec, img, q, card):
    t = rec.t
    reads = [rec.read_corner(img, c) for c in both_corners(q)]
    fs = face_score(face(img, q), t.faces[card])
    asp = aspect(q) / (max(t.card_size) / min(t.card_size)) - 1
    r = rd.rounding(img, q, (CW, CH))
    per, mended = corners_of(img, q)
    sh = [placed_shift(t, img, c, card) for c in both_corners(q)]
    p = t.print
    bad = []
    if abs(asp) > 0.05:
        bad.append("aspect")
    if fs < 0.75:
        bad.append("face")
    if np.isnan(r) or abs(r - p.rounding) > p.rounding_tol:
        bad.append("rounding")
    if min(sh) > p.shift_tol:
        bad.append("shift")
    return (f"reads {[(a, round(c, 2)) for a, c in reads]} face {fs:.2f} aspect {asp:+.3f} "
            f"round {r:.2f} (deck {p.rounding:.2f}+-{p.rounding_tol:.2f}; gray corners "
            f"{[round(v, 1) for v in per]} mended {({k: round(v, 1) for k, v in mended.items()})}) "
            f"shift {[round(s, 1) for s in sh]} (tol {p.shift_tol:.1f}) -> {','.join(bad) or 'passes'}")


def run(deck, surface, conditions):
    rec = VisualRecognizer(cm.reference_templates(deck, seed=cm.DECKS.index(deck)))
    d = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=rec)
    si = cm.SURFACES.index(surface)
    for cond in conditions:
        rng = np.random.default_rng(1000 * si + cm.CONDITIONS.index(cond))
        cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
        base, where = cm.table_frame(deck, cards, ZONES, surface, cond, rng)
        tracker = ZoneTracker(3, 8)
        reported, frames = set(), []
        for i in range(5):
            img = noisy(base, rng)
            frames.append(img)
            got = d.read_frame(img)
            for z in ZONES:
                reported |= {z for ev, c in tracker.update(z, got.get(z, [])) if ev == "seen" and c == cards[z]}
        for z in ZONES:
            if z in reported:
                continue
            tq = np.float32(where[z])
            print(f"{deck} {cond} {z} {cards[z]}:", flush=True)
            for i, img in enumerate(frames):
                quads = find_cards(img, rec.t.card_size)
                near = [q for q in quads if np.linalg.norm(q.mean(axis=0) - tq.mean(axis=0)) < 25]
                if not near:
                    print(f"   frame {i}: no outline")
                    continue
                q = near[0]
                off = np.abs(q[:, None] - tq[None]).sum(-1).min(1).max()
                print(f"   frame {i}: off {off:.1f} got {rec.read_quad(img, q)[0]} " + detail(rec, img, q, cards[z]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--surface", default="white", choices=cm.SURFACES)
    ap.add_argument("--decks", default="svgcards")
    ap.add_argument("--conditions", default=",".join(cm.CONDITIONS))
    a = ap.parse_args()
    cv2.setNumThreads(1)
    for deck in a.decks.split(","):
        run(deck, a.surface, a.conditions.split(","))


if __name__ == "__main__":
    main()
