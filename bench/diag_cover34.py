"""Diagnosis of one covered read (hunt_hands scene SEED, frame N): which path read it (the hand
corners' covered list or _read_occluded), its index margin over the twin suit, its face strips
vs the twin card's, and the whole cards read in the same frame whose outlines it lies on.
Usage: .venv/bin/python bench/diag_cover34.py 260 3"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench_hands import noisy  # noqa: E402
from hunt_hands import margins, render  # noqa: E402
from hunt_wrong import templates  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera import scene as sc  # noqa: E402


def frame_of(seed, n):
    deck, table, cond, kind, truth, base, rng = render(seed)
    f = None
    for _ in range(n + 1):
        f = noisy(base, rng)
    return deck, truth, f


def main():
    seed, n = int(sys.argv[1]), int(sys.argv[2])
    deck, truth, f = frame_of(seed, n)
    rec = VisualRecognizer(templates(deck))
    calls = []
    orig = sc.SceneReader._read_occluded

    def spy(self, bgr, quad, shapes):
        r = orig(self, bgr, quad, shapes)
        if r[0] is not None:
            calls.append(r)
        return r
    sc.SceneReader._read_occluded = spy
    got = rec.read_image(f)
    sc.SceneReader._read_occluded = orig
    print("truth", [(c, np.float32(q).mean(axis=0).round(1).tolist()) for c, q, _ in truth])
    for (card, q), k in zip(got, rec.kinds):
        print(k, card, np.float32(q).mean(axis=0).round(1).tolist(), np.float32(q).round(1).tolist())
    print("from _read_occluded:", [(c, k, np.float32(q).mean(axis=0).round(1).tolist()) for c, q, k in calls])
    area = rec.t.card_size[0] * rec.t.card_size[1]
    for (card, q), k in zip(got, rec.kinds):
        if k != "covered":
            continue
        im, mine, twin = margins(rec, f, card, q)
        print("covered", card, "index over twin", im, "strips", mine, "twin strips", twin, "diff", mine - twin)
        for (c2, p), k2 in zip(got, rec.kinds):
            if k2 == "covered":
                continue
            inter = cv2.intersectConvexConvex(np.float32(q), np.float32(p))[0] / area
            inside = cv2.pointPolygonTest(np.float32(p).reshape(-1, 1, 2), tuple(map(float, q[0])), False)
            x, y = q[0] + 0.15 * (q[1] - q[0]) + 0.12 * (q[3] - q[0])
            idx_in = cv2.pointPolygonTest(np.float32(p).reshape(-1, 1, 2), (float(x), float(y)), False)
            if inter > 0:
                print("   over whole", c2, k2, "overlap %.3f" % inter, "corner inside", inside, "index inside", idx_in)


if __name__ == "__main__":
    main()
