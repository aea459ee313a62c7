"""Covered cards at the twin-suit guard (twins._covered_twins_apart): what each one the hand
search sends there measures, whatever the guard decides. For every call in hunt_hands.py's
scenes: the read card, the card that lies there (its truth), the index's suit over its twin's
(None when not kept), the face strips' score for the card and for its twin, whether the card's
learned strips are bare (STRIPS_BARE), the suit glyph's least margin over its twin under matched
blurs (_suit_blurred_apart's measure, at the blurs FIT_STEPS keeps) and the guard's verdict.
One JSON a line.

Usage: nice -n 10 .venv/bin/python bench/diag_covered_twins.py --seeds 50000:50200 --decks cardsjs,svgcards,kennard,responsive,synth --frames 3 --out FILE --cpu 1
       .venv/bin/python bench/diag_covered_twins.py --summary FILE"""
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
from hunt_hands import _place, render, scene  # noqa: E402
from hunt_wrong import templates  # noqa: E402
from drivers.camera import twins  # noqa: E402
from drivers.camera.defocus import GRID  # noqa: E402
from drivers.camera.deckprint import corner_face_score  # noqa: E402
from drivers.camera.index import INK, S, TWIN, _product, _windows  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402


def suit_blurred_least(rec, card, grays, quad):
    """_suit_blurred_apart's least margin (None when the read's patch was not kept)."""
    colour = INK[card[1]]
    kept = grays.get(np.float32(quad).tobytes())
    if kept is None or kept[1] is not rec._by_colour[colour][0]:
        return None
    cards = kept[1]
    pair = [cards.index(card), cards.index(card[0] + TWIN[card[1]])]
    s = rec.t.cut + S
    ranks = _windows(kept[0][:s + S], rec.t.part_shapes[0])
    windows = _windows(kept[0][s - S:], rec.t.part_shapes[1])
    banks = [rec._by_colour[colour][1:3]] + [rec._defocused[g][colour] for g in GRID]
    fit = int(np.argmax([float(_product(ranks, r[:, pair]).max()) for r, _ in banks]))
    near = banks[max(0, fit - twins.FIT_STEPS):fit + twins.FIT_STEPS + 1]
    return min(float(np.subtract(*_product(windows, m[:, pair]).max(axis=0))) for _, m in near), fit


def run(a):
    lo, hi = (int(x) for x in a.seeds.split(":"))
    decks = [d for d in a.decks.split(",") if d]
    out = open(a.out, "w")
    recs, ctx = {}, {}
    orig = twins.Twins._covered_twins_apart

    def traced(self, card, grays, quad, f, mine):
        verdict = orig(self, card, grays, quad, f, mine)
        there = _place(quad, ctx["truth"])
        sb = suit_blurred_least(self, card, grays, quad)
        out.write(json.dumps({
            "seed": ctx["seed"], "frame": ctx["frame"], "deck": ctx["deck"], "cond": ctx["cond"],
            "kind": ctx["kind"], "read": card, "there": there and there[0],
            "index": self._index_over_twin(card, grays, [quad]),
            "strips": round(mine, 4), "twin_strips": round(corner_face_score(f, self.t.faces[card[0] + TWIN[card[1]]]), 4),
            "bare": bool(self._strips_bare(card)), "blurred": sb and round(sb[0], 4), "fit": sb and sb[1],
            "ok": bool(verdict)}) + "\n")
        return verdict
    twins.Twins._covered_twins_apart = traced
    for seed in range(lo, hi):
        deck, _, cond, kind, _ = scene(seed)
        if decks and deck not in decks:
            continue
        deck, table, cond, kind, truth, base, rng = render(seed)
        if deck not in recs:
            recs[deck] = VisualRecognizer(templates(deck))
        ctx.update(seed=seed, deck=deck, cond=cond, kind=kind, truth=truth)
        for i in range(a.frames):
            ctx["frame"] = i
            recs[deck].read_image(noisy(base, rng))
        out.flush()
        print("scene", seed, deck, cond, kind, flush=True)


def summary(path):
    rows = [json.loads(x) for x in open(path)]
    by = collections.defaultdict(list)
    for r in rows:
        if r["there"] is None or r["index"] is None or r["index"] >= twins.TWIN_INDEX:
            continue
        right = "right" if r["there"] == r["read"] else ("twin" if r["there"] == r["read"][0] + TWIN[r["read"][1]] else "other")
        by[(r["deck"], right, "bare" if r["bare"] else "strips")].append(r)
    for k in sorted(by):
        rs = by[k]
        sm = [r["strips"] - r["twin_strips"] for r in rs]
        ix = [r["index"] for r in rs]
        print(k, len(rs), "passed", sum(r["ok"] for r in rs),
              "strips margin min %.3f" % min(sm), "index min %.3f" % min(ix),
              "index+strips min %.3f" % min(i + s for i, s in zip(ix, sm)))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="50000:50200")
    ap.add_argument("--decks", default="cardsjs,svgcards,kennard,responsive,synth")
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--cpu", type=int, default=None)
    ap.add_argument("--summary", default=None)
    a = ap.parse_args()
    if a.summary:
        summary(a.summary)
        sys.exit(0)
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    cv2.setNumThreads(1)
    run(a)
