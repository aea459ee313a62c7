"""What the re-read of a moving card refused by the deck check on its index corners located on
their own edges (scene.read_image, RELOCATE_REFUSED) lets through. Scenes of deck S read with deck
T's templates (T != S: every read is a foreign read) or with S's own (a read not the card there is
wrong), fresh noise each frame as the daemon reads. Counts per pair: outlines refused by the deck
check as moving cards and re-read on their located corners (`relocated`), and what that re-read
accepted (`relocated_read`; each listed: surface, condition, scene, frame, card read, card refused). Also every read of
the frame (`reads`) and those not the card there (`not_there`).

Usage: nice -n 10 .venv/bin/python bench/probe_relocated_foreign.py --pairs responsive:cardsjs,cardsjs:responsive \
       --surfaces white,light_grey --conditions motion --scenes 3 --frames 3 --cpu 1"""
import argparse
import collections
import json
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402

EVENTS = []


def _instrument(rec):
    """Record each _relocated call made from read_image's deck-check branch (the caller's
    `foreign` local is the card refused) and its answer."""
    orig = rec._relocated

    def relocated(bgr, gray, quad):
        r = orig(bgr, gray, quad)
        caller = sys._getframe(1)
        if caller.f_code.co_name == "read_image" and caller.f_locals.get("foreign"):
            EVENTS.append((caller.f_locals["foreign"], None if r is None else r[0]))
        return r
    rec._relocated = relocated


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True, help="SCENES:TEMPLATES,... decks")
    ap.add_argument("--scenes", type=int, default=3, help="scenes per surface and condition")
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--conditions", default=",".join(cm.CONDITIONS))
    ap.add_argument("--surfaces", default=",".join(cm.SURFACES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu", type=int, default=None)
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    cv2.setNumThreads(1)
    recs = {}
    for pair in a.pairs.split(","):
        sd, td = pair.split(":")
        if td not in recs:
            recs[td] = VisualRecognizer(cm.reference_templates(td, seed=cm.DECKS.index(td)))
            _instrument(recs[td])
        rec = recs[td]
        c, accepted = collections.Counter(), []
        for si, table in enumerate(cm.SURFACES):
            if table not in a.surfaces.split(","):
                continue
            for cond in a.conditions.split(","):
                rng = np.random.default_rng([47, a.seed, cm.DECKS.index(sd), si, cm.CONDITIONS.index(cond)])
                for k in range(a.scenes):
                    cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
                    base, where = cm.table_frame(sd, cards, ZONES, table, cond, rng)
                    for i in range(a.frames):
                        EVENTS.clear()
                        got = rec.read_image(noisy(base, rng))
                        c["frames"] += 1
                        c["reads"] += len(got)
                        c["not_there"] += sum(1 for card, _ in got if sd != td or card not in cards.values())
                        c["relocated"] += len(EVENTS)
                        for refused, r in EVENTS:
                            if r is not None:
                                c["relocated_read"] += 1
                                accepted.append((table, cond, k, i, r, refused))
        print(json.dumps({"scenes": sd, "templates": td, **c, "accepted": accepted}), flush=True)


if __name__ == "__main__":
    main()
