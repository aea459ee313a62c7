"""What the deck check's rounding saw, per corner, on every whole card it judged (foreign37):
scenes of deck S read by deck T's templates through the daemon's CameraDriver, fresh noise each
frame (probe_foreign_surface.py's scenes and seeds), each call of DeckPrint.card_matches logged
as one JSON line: the card read, the card there, each corner's rounding and its paper-over-table
contrast in the channel it came from, its (table, beside the edge, paper) grey levels
(diag_foreign_corners.levels), the card's rounding, its blur (canonical pixels, asked of every
card here), the verdict.
S == T gives the deck's own reads (the thresholds' material), S != T the foreign ones.
Usage: nice -n 10 .venv/bin/python bench/diag_cut_corners.py --pairs responsive:cardsjs \
       --surfaces white --scenes 3 --frames 5 --cpu 1 > out.jsonl"""
import argparse
import json
import math
import os
import pickle
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import deckprint, rounding  # noqa: E402
from drivers.camera.driver import CameraDriver, Zones  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.visual import VisualRecognizer as _VR  # noqa: E402
from bench.diag_foreign_corners import levels  # noqa: E402

LOG = {"calls": []}


def _instrument():
    orig_m = deckprint.DeckPrint.matches

    def matches(self, r, shifts, sigma=None):
        ok = orig_m(self, r, shifts, sigma)
        LOG["last"] = (None if np.isnan(r) else round(float(r), 2), sigma and round(float(sigma), 2),
                       round(float(min(shifts)), 2), bool(ok))
        return ok
    deckprint.DeckPrint.matches = matches

    orig_cm = deckprint.DeckPrint.card_matches

    def card_matches(self, bgr, quad, canon, shifts, blur=None, streak=None):
        LOG["last"] = (None, None, None, None)
        b = [] if blur is None else [blur()]        # asked always here (logged), once
        ok = orig_cm(self, bgr, quad, canon, shifts, None if blur is None else (lambda: b[0]), streak)
        con = []
        per = rounding.corners_rounding(bgr, quad, canon, con)
        q = np.float32(quad)
        scale = canon[0] / max(float(min(np.linalg.norm(q[[1, 2, 3, 0]] - q, axis=1))), 1.0)
        LOG["calls"].append({"card": LOG.get("card"), "quad": q.tolist(),
                             "per": [None if math.isnan(v) else round(float(v), 2) for v in per],
                             "con": [round(float(c), 1) for c in con], "levels": levels(bgr, quad),
                             "blur": None if not b or b[0] is None else round(float(min(b[0] * scale, deckprint.BLUR_MAX * scale)), 2),
                             "r": LOG["last"][0], "sigma": LOG["last"][1], "shift": LOG["last"][2], "ok": bool(ok)})
        return ok
    deckprint.DeckPrint.card_matches = card_matches

    orig_od = _VR._of_deck

    def of_deck(self, bgr, quad, card, *a, **k):
        LOG["card"] = card
        return orig_od(self, bgr, quad, card, *a, **k)
    _VR._of_deck = of_deck


def _templates(deck):
    path = f"/tmp/diag_motion_templates/{deck}-capture-2e4691f8a4d3.pickle"
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    return cm.reference_templates(deck, seed=cm.DECKS.index(deck))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--surfaces", default="white")
    ap.add_argument("--conditions", default=",".join(cm.CONDITIONS))
    ap.add_argument("--scenes", type=int, default=3)
    ap.add_argument("--first", type=int, default=0, help="first scene")
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=None)
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    cv2.setNumThreads(1)
    _instrument()
    for pair in a.pairs.split(","):
        sd, td = pair.split(":")
        tm = _templates(td)
        for table in a.surfaces.split(","):
            si = cm.SURFACES.index(table)
            for ci, cond in enumerate(cm.CONDITIONS):
                if cond not in a.conditions.split(","):
                    continue
                for s in range(a.first, a.first + a.scenes):
                    rng = np.random.default_rng([32, s, cm.DECKS.index(sd), si, ci])
                    cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
                    base, where = cm.table_frame(sd, cards, ZONES, table, cond, rng)
                    d = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=VisualRecognizer(tm))
                    r2 = np.random.default_rng([5, s, ci])
                    for i in range(a.frames):
                        LOG["calls"] = []
                        got = d.read_frame(noisy(base, r2))
                        reported = []
                        for z, cs in got.items():
                            for ev, c in d.tracker.update(z, cs):
                                if ev == "seen":
                                    reported.append(c)
                        for call in LOG["calls"]:
                            c = np.float32(call["quad"]).mean(axis=0)
                            z = min(where, key=lambda z: float(np.linalg.norm(np.float32(where[z]).mean(axis=0) - c)))
                            call.update(pair=pair, surface=table, cond=cond, scene=s, frame=i, zone=z,
                                        there=cards[z], read=any(call["card"] in cs for cs in got.values()),
                                        reported=reported)
                            del call["quad"]
                            print(json.dumps(call), flush=True)


if __name__ == "__main__":
    main()
