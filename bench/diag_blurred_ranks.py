"""The face's rank margin (twins._face_rank_margin: the read card's face score over the likest
face of another rank) of every whole card whose rank came from a blurred index
(visual._read_streaked), on bench/hunt_hands.py's scenes: how far the tuned decks' correct blurred
reads stand from the guard (FACE_RANK), and where a wrong one falls. Also, for comparison, the
margin of every whole card read at all (plain reads too), on its read outline. A deck whose
faces do not tell its ranks (twins.RANK_FACES_ALIKE: the drawn deck) has no margin.

Usage: nice -n 10 .venv/bin/python bench/diag_blurred_ranks.py --seeds 50000:50300 --cpu 1 \\
           --decks cardsjs,svgcards,kennard,responsive,synth"""
import argparse
import collections
import json
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench_hands import noisy  # noqa: E402
from hunt_hands import _place, render, scene, templates  # noqa: E402
from drivers.camera import twins  # noqa: E402
from drivers.camera.index import face  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402


def main():
    from cli_args import cpu, names, parse, positive, seed_range   # strict: a typo is a usage error
    from drivers.camera import camera_model as cm
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=seed_range, default="50000:50100", help="A:B, hunt_hands' scenes")
    ap.add_argument("--decks", type=names(cm.DECKS, "deck"), default="cardsjs,svgcards,kennard,responsive,synth")
    ap.add_argument("--conditions", default="motion,defocus", help="only the scenes of these conditions")
    ap.add_argument("--frames", type=positive, default=3, help="frames a scene (fresh sensor noise each)")
    ap.add_argument("--cpu", type=cpu, default=None)
    ap.add_argument("--off", action="store_true", help="the guard off (FACE_RANK -inf): every margin logged")
    a = parse(ap)
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    cv2.setNumThreads(1)
    if a.off:
        twins.FACE_RANK = -np.inf
    decks, conds = a.decks.split(","), a.conditions.split(",")
    blurred = []        # (margin, card) logged by the guard on the blurred path
    orig = twins.Twins._face_rank_margin

    def logged(self, f, card):
        m = orig(self, f, card)
        blurred.append((m, card, self._diag_quad))
        return m
    twins.Twins._face_rank_margin = logged
    orig_rq = VisualRecognizer._read_quad

    def rq(self, bgr, quad, need_both=True):
        self._diag_quad = quad
        return orig_rq(self, bgr, quad, need_both)
    VisualRecognizer._read_quad = rq
    recs, out = {}, collections.defaultdict(list)
    lo, hi = (int(x) for x in a.seeds.split(":"))
    for seed in range(lo, hi):
        deck, _, cond, kind, _ = scene(seed)
        if deck not in decks or cond not in conds:
            continue
        deck, table, cond, kind, truth, base, rng = render(seed)
        rec = recs.setdefault(deck, VisualRecognizer(templates(deck)))
        for i in range(a.frames):
            f = noisy(base, rng)
            blurred.clear()
            got = rec.read_image(f)
            for m, card, q in blurred:
                if m is None:       # a deck whose faces do not tell its ranks: not asked
                    continue
                there = _place(q, truth)
                out["blurred"].append({"seed": seed, "frame": i, "deck": deck, "cond": cond, "card": card,
                                       "there": there and there[0], "margin": round(m, 4)})
            for (card, q), k in zip(got, rec.kinds):
                if k == "covered":
                    continue
                there = _place(q, truth)
                m = orig(rec, face(f, np.float32(q)), card)
                if m is None:
                    continue
                out["read"].append({"seed": seed, "deck": deck, "cond": cond, "card": card, "kind": k,
                                    "there": there and there[0], "margin": round(m, 4)})
        print("scene", seed, deck, cond, kind, len(out["blurred"]), len(out["read"]), flush=True)
    summary = {}
    for key, rows in out.items():
        for deck in decks:
            right = [r["margin"] for r in rows if r["deck"] == deck and r["there"] == r["card"]]
            wrong = [r for r in rows if r["deck"] == deck and r["there"] != r["card"]]
            summary[f"{key}:{deck}"] = {
                "right": len(right), "least": min(right) if right else None,
                "under_0.02": sum(m <= 0.02 for m in right), "under_0": sum(m <= 0 for m in right),
                "wrong": [(r["seed"], r["card"], r["there"], r["margin"]) for r in wrong]}
    print(json.dumps({"seeds": a.seeds, "summary": summary, "rows": out}))


if __name__ == "__main__":
    main()
