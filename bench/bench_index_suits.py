"""The load-time suit-glyph check (labelcheck.index_suit_check, issue 17): on correct template
sets of every deck at both scales (table frames, 125 px; webcam photos, 300 px) how many it
refuses (false refusals: must be 0), how many whole-deck spades<->clubs and hearts<->diamonds
renames it refuses, and each set's margin (the right suit's median score minus the other's).

    .venv/bin/python bench/bench_index_suits.py [--seeds 2] [--decks cardsjs,kennard,...]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import bench_labelcheck as bl  # noqa: E402
from drivers.camera.labelcheck import _SHAPE, _glyph, index_suit_check  # noqa: E402

SWAP = {"s": "c", "c": "s", "h": "d", "d": "h"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--decks", default="cardsjs,kennard,responsive,svgcards,synth")
    a = ap.parse_args()
    refused = caught = n = 0
    for deck in a.decks.split(","):
        for kind in ("table", "webcam"):
            for seed in range(1, a.seeds + 1):
                _, t = bl.learned(bl.photos(deck, kind, seed), lambda: bl.photos(deck, kind, seed + 1000))
                # as load() sees them: 8-bit PNGs of patch * 200
                p = {c: np.uint8(np.clip(g * 200, 0, 255)).astype(np.float32) / 200
                     for c, g in t.patches.items()}
                cut = t.split - t.box[1]
                n += 1
                refused += index_suit_check(p, cut) is not None
                got = [index_suit_check({(c[0] + SWAP[c[1]] if c[1] in pair else c): g
                                         for c, g in p.items()}, cut) is not None for pair in ("sc", "hd")]
                caught += sum(got)
                margins = []
                for (x, y), score in _SHAPE.items():
                    med = {u: np.median([score(_glyph(g[cut:])[0]) for c, g in p.items() if c[1] == u])
                           for u in (x, y)}
                    margins.append(f"{x}-{y} {med[x] - med[y]:+.3f}")
                print(f"{deck:10} {kind:6} seed {seed}: renames refused {got}, margins {', '.join(margins)}")
    print(f"{n} correct sets: {refused} refused; {caught} of {2 * n} whole-deck renames refused")


if __name__ == "__main__":
    main()
