"""Covered cards whose suit the index leaves thin and whose strips are bare (twins.STRIPS_BARE):
what a second opinion on the suit would see. For each such read (the guard's refusal in
hunt_hands.py's scenes), per round blur of defocus.GRID: the read card's rank part's best score
(the blur's fit, the same for both twin suits) and the suit part's score against the read card's
learned suit and its twin card's, all from the read's kept patch (nothing warped again). One JSON a
line, with the card that lies there (its truth).

Usage: nice -n 10 .venv/bin/python bench/diag_bare_twins.py --seeds 0:300 --decks cardsjs,svgcards,kennard,responsive,synth --out FILE --cpu 1
       .venv/bin/python bench/diag_bare_twins.py --summary FILE    (per deck and truth: the least
       margin over the blurs, twins.SUIT_BLURRED's measure, and how many pass it)"""
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
from drivers.camera.index import INK, S, TWIN, _product, _windows  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.twins import Twins  # noqa: E402


def features(rec, card, grays, quad):
    """Per blur of defocus.GRID (and 0: the plain templates): rank fit, suit score of card, of twin."""
    kept = grays.get(np.float32(quad).tobytes())
    colour = INK[card[1]]
    if kept is None or kept[1] is not rec._by_colour[colour][0]:
        return None
    gray, cards = kept[0], kept[1]
    twin = card[0] + TWIN[card[1]]
    ci, ti = cards.index(card), cards.index(twin)
    s = rec.t.cut + S
    top, bottom = _windows(gray[:s + S], rec.t.part_shapes[0]), _windows(gray[s - S:], rec.t.part_shapes[1])
    out = {}
    banks = [(0, rec._by_colour[colour][1:3])] + [(g, rec._defocused[g][colour]) for g in defocus.GRID]
    for g, (rank_m, suit_m) in banks:
        r = _product(top, rank_m[:, [ci, ti]]).max(axis=0)
        sc = _product(bottom, suit_m[:, [ci, ti]]).max(axis=0)
        out[str(g)] = [round(float(r.max()), 4), round(float(sc[0]), 4), round(float(sc[1]), 4)]
    return out


def summary(path):
    """Per deck and truth ('right', or the card that lay there): the least margin over the blurs
    (twins._suit_blurred_apart's measure), how many reach SUIT_BLURRED; and how much the same
    card's margin moves from frame to frame."""
    from drivers.camera.twins import SUIT_BLURRED
    rows = [json.loads(line) for line in open(path)]
    least, same = {}, {}
    for r in rows:
        if r["f"] is None:
            continue
        m = min(v[1] - v[2] for v in r["f"].values())
        least.setdefault((r["deck"], "right" if r["there"] == r["read"] else f"wrong ({r['there']})"), []).append(m)
        same.setdefault((r["seed"], r["read"]), []).append(m)
    for (deck, truth), v in sorted(least.items()):
        print(f"{deck:12} {truth:14} {len(v):4} reads: least margin {min(v):+.4f} to {max(v):+.4f}, "
              f"{sum(x >= SUIT_BLURRED for x in v)} at {SUIT_BLURRED} or more")
    sd = [float(np.std(v)) for v in same.values() if len(v) >= 3]
    if sd:
        print(f"the same card over frames: sd median {np.median(sd):.4f}, max {max(sd):.4f} ({len(sd)} cards)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:100")
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--decks", default="cardsjs,svgcards,kennard,responsive,synth")
    ap.add_argument("--all-thin", action="store_true", help="every thin covered read, bare strips or not")
    ap.add_argument("--out")
    ap.add_argument("--summary", help="a file --out wrote: its figures")
    ap.add_argument("--cpu", type=int, default=None)
    a = ap.parse_args()
    if a.summary:
        return summary(a.summary)
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    cv2.setNumThreads(1)
    decks = a.decks.split(",")
    log, recs, rows = open(a.out, "w"), {}, []
    orig = Twins._covered_twins_apart

    def spy(self, card, grays, quad, f, mine):
        index = self._index_over_twin(card, grays, [quad])
        if index is not None and index < 0.1 and (a.all_thin or self._strips_bare(card)):
            rows.append((card, np.float32(quad).copy(), index, self._strips_bare(card),
                         features(self, card, grays, quad)))
        return orig(self, card, grays, quad, f, mine)
    Twins._covered_twins_apart = spy
    lo, hi = (int(x) for x in a.seeds.split(":"))
    for seed in range(lo, hi):
        if scene(seed)[0] not in decks:
            continue
        deck, table, cond, kind, truth, base, rng = render(seed)
        if deck not in recs:
            recs[deck] = VisualRecognizer(templates(deck))
        for i in range(a.frames):
            rows.clear()
            recs[deck].read_image(noisy(base, rng))
            for card, q, index, bare, feat in rows:
                there = _place(q, truth)
                log.write(json.dumps({"seed": seed, "frame": i, "deck": deck, "table": table, "condition": cond,
                                      "read": card, "there": there and there[0], "index": round(index, 4),
                                      "bare": bool(bare), "f": feat}) + "\n")
        log.flush()
        print("scene", seed, deck, cond, flush=True)


if __name__ == "__main__":
    main()
