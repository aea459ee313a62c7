"""What the moving card's rounding (deckprint.DeckPrint._moving, streakround.py) lets through,
per frame as the daemon reads (issue 17): scenes of deck S read with deck T's templates (S != T:
every read is a foreign read; S == T: a read not the card there is wrong), fresh sensor noise in
every frame, moving cards by default. Counts per pair: frames, reads (right, wrong or foreign),
the fingerprints the moving rounding was asked for (`asked`), those it passed whose four-corner
rounding had failed (`passed`), and every foreign or wrong read, listed with its scene.

Usage: nice -n 10 .venv/bin/python bench/probe_streak_rounding.py --pairs svgcards:svgcards,cardsjs:svgcards \
       --scenes 2 --frames 5 --cpu 1 [--conditions motion] [--seed 0]"""
import argparse
import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from bench.diag_motion import templates  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import deckprint  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402

COUNT = collections.Counter()
_orig = deckprint.DeckPrint._moving


def _spy(self, bgr, quad, canon, streak, r):
    out = _orig(self, bgr, quad, canon, streak, r)
    if out is not r:
        COUNT["asked"] += 1
        if not np.isnan(out) and abs(out - self.rounding) <= self.rounding_tol:
            COUNT["passed"] += 1
    return out


deckprint.DeckPrint._moving = _spy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True, help="SCENES:TEMPLATES,... decks")
    ap.add_argument("--scenes", type=int, default=2, help="scenes per surface and condition")
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--conditions", default="motion")
    ap.add_argument("--surfaces", default=",".join(cm.SURFACES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu", type=int, default=None)
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    for pair in a.pairs.split(","):
        sd, td = pair.split(":")
        rec = VisualRecognizer(templates(td))
        COUNT.clear()
        n = right = bad = 0
        listed = []
        for si, table in enumerate(cm.SURFACES):
            if table not in a.surfaces.split(","):
                continue
            for cond in a.conditions.split(","):
                rng = np.random.default_rng([71, a.seed, cm.DECKS.index(sd), si, cm.CONDITIONS.index(cond)])
                for k in range(a.scenes):
                    cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
                    base, where = cm.table_frame(sd, cards, ZONES, table, cond, rng)
                    for i in range(a.frames):
                        n += 1
                        for c, q in rec.read_image(noisy(base, rng)):
                            z = min(where, key=lambda z: np.linalg.norm(np.float32(where[z]).mean(axis=0)
                                                                       - q.mean(axis=0)))
                            if sd == td and c == cards[z]:
                                right += 1
                            else:
                                bad += 1
                                listed.append((table, cond, k, i, z, cards[z], c))
        print(f"{sd} scenes, {td} templates: frames {n}, right {right}, "
              f"{'wrong' if sd == td else 'foreign'} {bad}, moving rounding asked {COUNT['asked']}, "
              f"passed {COUNT['passed']}", flush=True)
        for x in listed:
            print("   ", *x, flush=True)


if __name__ == "__main__":
    main()
