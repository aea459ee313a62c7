"""Cards read by the occluded path (scene._read_occluded: a card refused where another card found in
the frame lies over it, judged again on what shows of its face) and by the hand path's retry of a
whole card under part of a card that passed (visual._of_deck with `hidden`): how far each stands
from its twin suit (the other suit of its colour, the same rank), the measures twins.py asks of
every other path. Per read, one JSON a line: deck, kind, read card and the card that lies there,
the index's suit over the twin's at the weaker corner that read (twins._index_over_twin), and
the face over the twin's face where it shows (occluded.masked_face_score, or the retry's own mask).

Usage: nice -n 10 .venv/bin/python bench/diag_occluded_twins.py --seeds 50000:50300 \
         --decks cardsjs,svgcards,kennard,responsive,synth --out FILE --cpu 1
       .venv/bin/python bench/diag_occluded_twins.py --summary FILE"""
import argparse
import json
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench_hands import noisy  # noqa: E402
from hunt_hands import WIDTH, _place, render, scene  # noqa: E402
from hunt_wrong import templates  # noqa: E402
from drivers.camera import scene as scene_mod, visual  # noqa: E402
from drivers.camera.deckprint import visible_face_score  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.index import FACE_H, FACE_W, TWIN, face  # noqa: E402
from drivers.camera.occluded import masked_face_score, occluders, visible  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402

LOG = []       # the current frame's occluded reads: (card, quad, kind, index margin, face margin)


def _instrument():
    read_occluded, plain_of_deck = scene_mod.SceneReader._read_occluded, visual.VisualRecognizer._of_deck

    def wrapped(self, bgr, quad, shapes):
        card, q, kind = read_occluded(self, bgr, quad, shapes)
        if card is not None:
            vis = visible(quad, occluders(quad, shapes, self.t.card_size[0]), (FACE_W, FACE_H))
            f, twin, grays = face(bgr, quad), card[0] + TWIN[card[1]], {}
            corners = both_corners(quad) if kind == "whole" else [q]
            for c in corners:
                self.read_corner(bgr, c, keep=grays)
            LOG.append((card, q, "occluded-" + kind, self._index_over_twin(card, grays, corners),
                        masked_face_score(f, self.t.faces[card], vis) - masked_face_score(f, self.t.faces[twin], vis)))
        return card, q, kind

    def of_deck(self, bgr, quad, card, grays, f=None, hidden=(), corners=None):
        ok = plain_of_deck(self, bgr, quad, card, grays, f, hidden, corners)
        if ok and hidden:
            f, twin = face(bgr, quad), card[0] + TWIN[card[1]]
            shows = scene_mod._shows(quad, hidden)
            LOG.append((card, quad, "retry-hidden", self._index_over_twin(card, grays, both_corners(quad)),
                        visible_face_score(f, self.t.faces[card], shows) - visible_face_score(f, self.t.faces[twin], shows)))
        return ok
    scene_mod.SceneReader._read_occluded = wrapped
    visual.VisualRecognizer._of_deck = of_deck


def run(seeds, frames, decks, out):
    recs = {}
    for seed in seeds:
        deck = scene(seed)[0]
        if deck not in decks:
            continue
        deck, table, cond, kind, truth, base, rng = render(seed)
        rec = recs.setdefault(deck, VisualRecognizer(templates(deck)))
        for i in range(frames):
            LOG.clear()
            got = rec.read_image(noisy(base, rng))
            kept = {(c, np.float32(q).tobytes()) for c, q in got}
            for card, q, how, im, fm in LOG:
                there = _place(q, truth)
                out.write(json.dumps({"seed": seed, "frame": i, "deck": deck, "surface": table, "condition": cond,
                                      "scene": kind, "how": how, "read": card, "there": there and there[0],
                                      "kept": (card, np.float32(q).tobytes()) in kept,
                                      "index": None if im is None else round(float(im), 4),
                                      "face": round(float(fm), 4)}) + "\n")
            out.flush()
        print("scene", seed, deck, cond, kind, flush=True)


def summary(path):
    rows = [json.loads(x) for x in open(path)]
    by = {}
    for r in rows:
        right = "right" if r["read"] == r["there"] else f"WRONG({r['there']})"
        by.setdefault((r["deck"], r["how"], right), []).append(r)
    for (deck, how, right), v in sorted(by.items()):
        thin = [r for r in v if r["index"] is None or r["index"] < 0.1]
        fm = sorted(r["face"] for r in thin)
        print(f"{deck:11} {how:17} {right:10} {len(v):4} reads, {len(thin):3} thin at the index;"
              f" thin ones' face over twin: {fm[:6]}{' ...' if len(fm) > 6 else ''}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="50000:50300")
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--decks", default="cardsjs,svgcards,kennard,responsive,synth")
    ap.add_argument("--out")
    ap.add_argument("--summary")
    ap.add_argument("--cpu", type=int, default=None)
    a = ap.parse_args()
    if a.summary:
        return summary(a.summary)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {a.cpu if a.cpu is not None else min(os.sched_getaffinity(0))})
    cv2.setNumThreads(1)
    _instrument()
    lo, hi = (int(x) for x in a.seeds.split(":"))
    with open(a.out, "w") as out:
        run(range(lo, hi), a.frames, a.decks.split(","), out)


if __name__ == "__main__":
    main()
