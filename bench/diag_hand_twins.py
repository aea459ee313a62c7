"""Whole cards found through the hand search ('hand-whole', scene.py) and their twin-suit margins:
for each such read in hunt_hands.py's scenes, how the deck check judged it (hidden: the face
compared where it shows, a card lying over part of it) and what the whole-card twin guard
(twins._twins_apart) sees: the index's suit over its twin's at the weaker corner, the face's score
over its twin card's (whole face, and where it shows when hidden), and the least margin of the
index's suit glyph over its twin's under matched blurs (twins._suit_blurred_apart's measure) at
each corner. One JSON a line, with the card that lies there (its truth).

Usage: nice -n 10 .venv/bin/python bench/diag_hand_twins.py --seeds 0:2000 --decks cardsjs,svgcards,kennard,responsive,synth --out FILE --cpu 1
       .venv/bin/python bench/diag_hand_twins.py --summary FILE"""
import argparse
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
from drivers.camera import defocus  # noqa: E402
from drivers.camera.deckprint import visible_face_score  # noqa: E402
from drivers.camera.index import INK, S, TWIN, _product, _windows, face, face_score  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.scene import _shows  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.visual import VisualRecognizer as V  # noqa: E402


def blurred_least(rec, card, grays, quad):
    """The least suit-glyph margin over the blurs at `quad` (as _suit_blurred_apart), or None."""
    colour = INK[card[1]]
    kept = grays.get(np.float32(quad).tobytes())
    if kept is None or kept[1] is not rec._by_colour[colour][0]:
        return None
    cards = kept[1]
    pair = [cards.index(card), cards.index(card[0] + TWIN[card[1]])]
    windows = _windows(kept[0][rec.t.cut:], rec.t.part_shapes[1])  # s - S = cut
    banks = [rec._by_colour[colour][2]] + [rec._defocused[g][colour][1] for g in defocus.GRID]
    return min(float(np.subtract(*_product(windows, m[:, pair]).max(axis=0))) for m in banks)


def summary(path):
    rows = [json.loads(line) for line in open(path)]
    by = {}
    for r in rows:
        key = (r["deck"], "right" if r["there"] == r["read"] else f"wrong ({r['there']})", r["hidden"])
        by.setdefault(key, []).append(r)
    for (deck, truth, hidden), v in sorted(by.items()):
        idx = [r["index"] for r in v if r["index"] is not None]
        thin = [r for r in v if r["index"] is not None and r["index"] < 0.1]
        fm = [r["face"] for r in thin]
        bl = [min(b for b in r["blurred"] if b is not None) for r in thin if any(b is not None for b in r["blurred"])]
        print(f"{deck:12} {truth:14} hidden={hidden!s:5} {len(v):5} reads, thin {len(thin):4}"
              + (f"; index {min(idx):+.3f}..{max(idx):+.3f}" if idx else "")
              + (f"; thin face {min(fm):+.3f}..{max(fm):+.3f}, <0.1: {sum(x < 0.1 for x in fm)}" if fm else "")
              + (f"; thin blurred least {min(bl):+.3f}..{max(bl):+.3f}, <0.02: {sum(x < 0.02 for x in bl)}" if bl else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:100")
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--decks", default="cardsjs,svgcards,kennard,responsive,synth")
    ap.add_argument("--out")
    ap.add_argument("--summary")
    ap.add_argument("--turned", action="store_true", help="only the turned-card scenes (where cards touch)")
    ap.add_argument("--cpu", type=int, default=None)
    a = ap.parse_args()
    if a.summary:
        return summary(a.summary)
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    cv2.setNumThreads(1)
    decks = a.decks.split(",")
    log, recs, calls = open(a.out, "w"), {}, []
    orig = V._of_deck

    def spy(self, bgr, quad, card, grays, f=None, hidden=(), corners=None):
        ok = orig(self, bgr, quad, card, grays, f, hidden, corners)
        if ok:
            cs = corners or both_corners(quad)
            fa = face(bgr, quad)
            twin = card[0] + TWIN[card[1]]
            row = {"hidden": bool(len(hidden)), "index": self._index_over_twin(card, grays, cs),
                   "face": face_score(fa, self.t.faces[card]) - face_score(fa, self.t.faces[twin]),
                   "blurred": [blurred_least(self, card, grays, q) for q in cs]}
            if len(hidden):
                m = _shows(quad, hidden)
                row["shown_face"] = visible_face_score(fa, self.t.faces[card], m) - \
                    visible_face_score(fa, self.t.faces[twin], m)
            calls.append((np.float32(quad).copy(), card, row))
        return ok
    V._of_deck = spy
    lo, hi = (int(x) for x in a.seeds.split(":"))
    for seed in range(lo, hi):
        if scene(seed)[0] not in decks or a.turned and scene(seed)[3] != "turned":
            continue
        deck, table, cond, kind, truth, base, rng = render(seed)
        if deck not in recs:
            recs[deck] = VisualRecognizer(templates(deck))
        rec = recs[deck]
        for i in range(a.frames):
            calls.clear()
            got = rec.read_image(noisy(base, rng))
            for (card, q), k in zip(got, rec.kinds):
                if k != "hand-whole":
                    continue
                row = next((r for p, c, r in reversed(calls) if c == card and np.abs(p - q).max() < 0.5), None)
                if row is None:
                    continue
                there = _place(q, truth)
                row = {k2: (round(v, 4) if isinstance(v, float) else
                            [None if b is None else round(b, 4) for b in v] if isinstance(v, list) else v)
                       for k2, v in row.items()}
                log.write(json.dumps(dict(seed=seed, frame=i, deck=deck, table=table, condition=cond,
                                          read=card, there=there and there[0], **row)) + "\n")
        log.flush()
        print("scene", seed, deck, cond, flush=True)


if __name__ == "__main__":
    main()
