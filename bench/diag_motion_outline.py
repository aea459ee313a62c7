"""Moving cards refused at the table's scale (issue 17): per card the first frame's outlines (the
one found, the one refined to its edges' middle, the true one), how far each lies off the true
one at its index corners, what each reads, and the deck check's measures on the blurred path
(rounding against the learned, index shifts against the tolerance). Diagnosis only.

Usage: .venv/bin/python bench/diag_motion_outline.py --decks svgcards --trials 5"""
import argparse
import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench import diag_streak as DS  # noqa: E402  (records the model's true streak)
from bench.bench_camera import ZONES, noisy  # noqa: E402
from bench.diag_motion import found_quad  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import streak as S  # noqa: E402
from drivers.camera.deckprint import rounding  # noqa: E402
from drivers.camera.hands import both_corners, corner_gray  # noqa: E402
from drivers.camera.index import CH, CW  # noqa: E402
from drivers.camera.indexplace import placed_shift  # noqa: E402
from drivers.camera.outline import _refine_in  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402


def off(q, tq):
    return max(np.linalg.norm(q[0] - tq[0]), np.linalg.norm(q[2] - tq[2]))


def measures(rec, bgr, q, card):
    grays = {}
    for cq in both_corners(q):
        rec.read_corner(bgr, cq, keep=grays, streak=S.estimate(bgr, q))
    r = rounding(bgr, q, (CW, CH))
    sh = [placed_shift(rec.t, bgr, cq, card, grays.get(np.float32(cq).tobytes())) for cq in both_corners(q)]
    return r, sh


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decks", default="svgcards")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--cache", default="/tmp/m4/tcache")
    a = ap.parse_args()
    for deck in a.decks.split(","):
        rec = VisualRecognizer(DS.templates(deck, a.cache))
        p = rec.t.print
        print(deck, "learned rounding %.2f +-%.2f, shift tol %.2f" % (p.rounding, p.rounding_tol, p.shift_tol))
        c = collections.Counter()
        for si, table in enumerate(cm.SURFACES):
            rng = np.random.default_rng(1000 * si + cm.CONDITIONS.index("motion"))
            for _ in range(a.trials):
                cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
                base, where = cm.table_frame(deck, cards, ZONES, table, "motion", rng)
                true = DS.TRUE["streak"]
                img = noisy(base, rng)
                got = rec.read_image(img)
                for z in ZONES:
                    tq = np.float32(where[z])
                    if any(cc == cards[z] and np.linalg.norm(qq.mean(0) - tq.mean(0)) < 25 for cc, qq in got):
                        c["read"] += 1
                        continue
                    q = found_quad(rec, img, tq)
                    if q is None:
                        c["nofind"] += 1
                        print(deck, table, z, cards[z], "not found")
                        continue
                    qm = _refine_in(img, q, middle=True)
                    w = rec._read_quad(img, q)
                    rel = rec._relocated(img, corner_gray(img), q)
                    sm = rec._smeared(img, q)
                    print("   path: found %s relocated %s smeared %s" % (
                        w[::2], rel and (rel[0], rel[2]), sm and (sm[0], sm[2])))
                    rt = [rec.read_quad(img, x)[0] for x in (q, qm, tq)]
                    rr, sh = measures(rec, img, tq, cards[z])
                    rf, shf = measures(rec, img, qm, cards[z])
                    c["true_reads" if rt[2] == cards[z] else "true_refuses"] += 1
                    print(deck, table, z, cards[z], "streak %.1f,%.1f" % true,
                          "off found %.1f mid %.1f" % (off(q, tq), off(qm, tq)),
                          "reads", [x or "-" for x in rt],
                          "| true: round %.2f shifts %s" % (rr, ["%.1f" % s for s in sh]),
                          "| mid: round %.2f shifts %s" % (rf, ["%.1f" % s for s in shf]), flush=True)
        print(deck, dict(c), flush=True)


if __name__ == "__main__":
    main()
