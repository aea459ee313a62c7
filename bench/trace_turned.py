"""One of bench_hands' turned cards traced through the reader (issue 17): the scene replayed on
bench_hands' own seeds (`--rotation-only`, the same rng draws, so diag_turned's scene numbers
hold), then for the card at ZONE: what each of the five frames read there, the outlines found at
it (each index corner's distance from the true one), and on each outline every stage of the
whole card's check (corners, face, twin guard, proportions, rounding per corner, index place),
and the merged-blob hypotheses near its index corners. Diagnosis only.

Usage: .venv/bin/python bench/trace_turned.py --deck svgcards --place 1 --scene 4 --zone seat_1
(`--save F.npz`: the first frame and the truth, for a test)"""
import argparse
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_hands import ZONES, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import rounding as R  # noqa: E402
from drivers.camera.deckprint import proportioned  # noqa: E402
from drivers.camera.find import find_cards, in_frame  # noqa: E402
from drivers.camera.hands import both_corners, corner_gray, hand_corners, whole_card  # noqa: E402
from drivers.camera.index import CH, CW, face, face_score  # noqa: E402
from drivers.camera.indexplace import placed_shift  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402


def replay(deck, place, scene, seed=0, width=125):
    """(recognizer, the scene's five frames, {zone: card}, {zone: true quad})."""
    rec = VisualRecognizer(cm.reference_templates(deck, seed=seed + place, width=width))
    rng = np.random.default_rng(11 + seed)
    zones = cm.framed(ZONES, width)
    for k in range(scene + 1):
        cards = {z: CARDS[int(rng.integers(52))] for z in zones}
        base, where = cm.table_frame(deck, cards, zones, cm.SURFACES[k % len(cm.SURFACES)], "rotation",
                                     rng, width=width)
        frames = [noisy(base, rng) for _ in range(5)]
    return rec, frames, cards, {z: np.float32(q) for z, q in where.items()}, cm.SURFACES[scene % len(cm.SURFACES)]


def stages(rec, img, q, card):
    grays = {}
    reads = [rec.read_corner(img, c, keep=grays) for c in both_corners(q)]
    got = rec._read_quad(img, q)
    f = face(img, q)
    fs = face_score(f, rec.t.faces[card])
    twins = rec._twins_apart(card, grays, both_corners(q), f)
    shifts = [placed_shift(rec.t, img, c, card, grays.get(np.float32(c).tobytes())) for c in both_corners(q)]
    rnd = R.rounding(img, q, (CW, CH))
    per = R.corners_rounding(img, q, (CW, CH)) if hasattr(R, "corners_rounding") else None
    p = rec.t.print
    return (f"read_quad {got} corners {[(c, round(s, 3)) for c, s in reads]} face {fs:.3f} twins {twins} "
            f"proportioned {proportioned(q, rec.t.card_size)} rounding {rnd:.2f} (learned {p.rounding:.2f}"
            f"+-{p.rounding_tol:.2f}) per {per} shifts {[round(float(s), 2) for s in shifts]} "
            f"(tol {p.shift_tol:.2f}) in_frame {in_frame(q, img.shape)}")


def crop(img, quads, centre, path, half=130, scale=3):
    """A crop of `img` around `centre`, `quads` drawn (green the first, red the rest), enlarged."""
    x, y = int(centre[0]), int(centre[1])
    x0, y0 = max(0, x - half), max(0, y - half)
    c = img[y0:y + half, x0:x + half].copy()
    c = cv2.resize(c, None, fx=scale, fy=scale, interpolation=cv2.INTER_NEAREST)
    for i, q in enumerate(quads):
        p = np.int32(np.round((np.float32(q) - [x0, y0]) * scale))
        cv2.polylines(c, [p], True, (0, 255, 0) if i == 0 else (0, 0, 255), 1)
    cv2.imwrite(path, c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deck", required=True)
    ap.add_argument("--place", type=int, required=True)
    ap.add_argument("--scene", type=int, required=True)
    ap.add_argument("--zone", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save")
    ap.add_argument("--every", action="store_true", help="the outline's stages in every frame")
    ap.add_argument("--png", help="a crop around the card (truth green, outlines found red)")
    a = ap.parse_args()
    rec, frames, cards, where, table = replay(a.deck, a.place, a.scene, a.seed)
    tq, card, w = where[a.zone], cards[a.zone], rec.t.card_size[0]
    print(f"{a.deck} scene {a.scene} ({table}) {a.zone} {card}; true quad {np.round(tq, 1).tolist()}")
    for z, q in where.items():
        if z != a.zone and cv2.intersectConvexConvex(tq, q)[0] > 1:
            print(f"  touches {z} {cards[z]} (overlap {cv2.intersectConvexConvex(tq, q)[0]:.0f} px2)")
    for i, img in enumerate(frames):
        got = rec.read_image(img)
        here = [(c, k, np.round(q.mean(axis=0), 1).tolist()) for (c, q), k in zip(got, rec.kinds)
                if np.linalg.norm(q.mean(axis=0) - tq.mean(axis=0)) < 0.2 * w]
        print(f"frame {i}: read here {here}; refused in frame {rec.refused}")
        if a.every:
            for q in find_cards(img, rec.t.card_size):
                if np.linalg.norm(q.mean(axis=0) - tq.mean(axis=0)) < 0.2 * w:
                    q = min((np.roll(q, k, axis=0) for k in range(4)), key=lambda r: float(np.abs(r - tq).max()))
                    print(f"  outline: {stages(rec, img, q, card)}")
    img = frames[0]
    quads, blobs = find_cards(img, rec.t.card_size, with_blobs=True)
    idx = (tq[0], tq[2])
    for q in quads:
        if np.linalg.norm(q.mean(axis=0) - tq.mean(axis=0)) < 0.5 * w:
            q = min((np.roll(q, k, axis=0) for k in range(4)), key=lambda r: float(np.abs(r - tq).max()))
            off = [round(float(np.linalg.norm(q[0] - idx[0])), 1), round(float(np.linalg.norm(q[2] - idx[1])), 1)]
            print(f"outline found, index corners off {off} px: {stages(rec, img, q, card)}")
            print(f"  on the true quad: {stages(rec, img, tq, card)}")
    gray = corner_gray(img)
    inblob = [b for b in blobs if cv2.pointPolygonTest(b.reshape(-1, 1, 2), tuple(map(float, tq.mean(axis=0))), False) >= 0]
    print(f"in {len(inblob)} merged blobs")
    for q, located in hand_corners(img, blobs, quads, rec.t.card_size, gray):
        d = min(np.linalg.norm(q[0] - p) for p in idx)
        if d < 6:
            wc = whole_card(gray, q, rec.t.card_size) if located else None
            print(f"  hypothesis {d:.1f} px from an index corner, located {located}: corner "
                  f"{rec.read_corner(img, q, strict=True)}; whole_card {'none' if wc is None else stages(rec, img, wc, card)}")
    if a.save:
        np.savez_compressed(a.save, frame=img, quad=tq, card=card, truth=np.float32(list(where.values())),
                            cards=np.array(list(cards.values())))
    if a.png:
        crop(img, [tq] + [q for q in quads if np.linalg.norm(q.mean(axis=0) - tq.mean(axis=0)) < 0.5 * w],
             tq.mean(axis=0), a.png)


if __name__ == "__main__":
    main()
