"""Review probe (review32): what the smeared re-read of a card refused by the deck check
(scene.py, the `elif foreign:` branch) lets through. Scenes of deck S read with deck T's
templates (T != S: every read is a foreign read) and with S's own (a read not the card there is
wrong), noisy frames, every condition and surface. Counts, per pair: outlines refused by the deck
check at both corners (`refused`), of them re-read on the smeared outline (`smeared`), and
accepted by the new branch (`new_accept`, each listed with its scene).

Usage: nice -n 10 .venv/bin/python bench/probe_smeared_foreign.py --pairs responsive:cardsjs \
       --scenes 2 --frames 2 --cpu 1"""
import argparse
import collections
import json
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from bench.hunt_wrong import judge, templates  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera import scene as scene_mod  # noqa: E402

NEW_LINE = None
EVENTS = []
TWIN_REFUSED = []
TWIN_ALL = []


def _instrument():
    global NEW_LINE
    src = open(scene_mod.__file__).read().split("\n")
    # the line of the new branch's call (`elif foreign:` then the _smeared call)
    at = next((i for i, ln in enumerate(src) if ln.strip() == "elif foreign:"), None)
    NEW_LINE = -1 if at is None else next(i for i in range(at, at + 12) if "self._smeared(" in src[i]) + 1
    orig = VisualRecognizer._smeared

    def smeared(self, bgr, quad):
        r = orig(self, bgr, quad)
        if sys._getframe(1).f_lineno == NEW_LINE:
            prev = self._prev[2]
            EVENTS.append(None if r is None else ("accepted" if r[0] == prev else "other", r[0], prev,
                                                  "twin-guard" if prev in self._prev_twin else "deck"))
        return r
    VisualRecognizer._smeared = smeared

    ot = VisualRecognizer._twins_apart

    def twins(self, *args):
        r = ot(self, *args)
        if not r:
            TWIN_REFUSED.append(args[0])
            TWIN_ALL.append(args[0])
        return r
    VisualRecognizer._twins_apart = twins
    oq = VisualRecognizer._read_quad

    def read_quad(self, bgr, quad, need_both=True):
        TWIN_REFUSED.clear()
        r = oq(self, bgr, quad, need_both)
        if sys._getframe(1).f_code.co_name == "read_image":
            self._prev = r
            self._prev_twin = list(TWIN_REFUSED)
            if r[2]:
                EVENTS.append(("refused", r[2]))
        return r
    VisualRecognizer._read_quad = read_quad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True, help="SCENES:TEMPLATES,... decks")
    ap.add_argument("--scenes", type=int, default=2, help="scenes per surface and condition")
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--conditions", default=",".join(cm.CONDITIONS))
    ap.add_argument("--surfaces", default=",".join(cm.SURFACES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cards", default="", help="draw only these cards (comma separated)")
    ap.add_argument("--cpu", type=int, default=None)
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    cv2.setNumThreads(1)
    _instrument()
    recs = {}
    for pair in a.pairs.split(","):
        sd, td = pair.split(":")
        if td not in recs:
            recs[td] = VisualRecognizer(templates(td))
        rec = recs[td]
        c = collections.Counter()
        accepted = []
        for si, table in enumerate(cm.SURFACES):
            if table not in a.surfaces.split(","):
                continue
            for cond in a.conditions.split(","):
                rng = np.random.default_rng([32, a.seed, cm.DECKS.index(sd), si, cm.CONDITIONS.index(cond)])
                for k in range(a.scenes):
                    pool = a.cards.split(",") if a.cards else CARDS
                    cards = {z: pool[int(rng.integers(len(pool)))] for z in ZONES}
                    base, where = cm.table_frame(sd, cards, ZONES, table, cond, rng)
                    for i in range(a.frames):
                        f = noisy(base, rng)
                        EVENTS.clear()
                        TWIN_ALL.clear()
                        got = rec.read_image(f)
                        for e in EVENTS:
                            if e is None:
                                c["smeared_none"] += 1
                            elif e[0] == "refused":
                                c["refused"] += 1
                            else:
                                c["smeared_" + e[0]] += 1
                        new = [e[1:] for e in EVENTS if e and e[0] == "accepted"]
                        c["frames"] += 1
                        c["twin_guard_refusals"] += len(TWIN_ALL)
                        TWIN_ALL.clear()
                        c["reads"] += len(got)
                        for card, there, z in judge(got, cards, where):
                            bad = sd != td or card != there
                            c["bad"] += bad
                            if bad:
                                print("BAD", json.dumps({"scenes": sd, "templates": td, "surface": table,
                                                          "condition": cond, "scene": k, "frame": i,
                                                          "read": card, "there": there, "zone": z,
                                                          "new_branch_cards": [x[0] for x in new]}), flush=True)
                        if new:
                            c["new_accept"] += len(new)
                            accepted.append({"surface": table, "condition": cond, "scene": k, "frame": i,
                                             "cards": [x[0] for x in new], "refused_by": [x[2] for x in new]})
        print(json.dumps({"pair": pair, **c, "accepted": accepted[:20]}), flush=True)


if __name__ == "__main__":
    main()
