"""Whether gapblob.py's gap test (a top-hat blob with no paper outside the whole cards found in
it is the table between them, not a hand: its hand search skipped) changes any read: every
frame read twice, with the test and without it (gapblob.GAP_TEST), on grey tables, where top-hat
blobs are searched as hands: the deck sweep's grey scenes (every condition) and hands of 2-4
cards on grey, each frame with fresh sensor noise. Prints per deck the frames whose reads
differ (should be none), the top-hat blobs skipped and kept, and the least paper (as a
fraction of a card's area) a kept blob held outside the found cards, against GAP_PAPER.

    nice -n 10 taskset -c 1 .venv/bin/python bench/diag_gap_blobs.py --decks cardsjs,svgcards
"""
import argparse
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_hands import _lay_hands, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import gapblob  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.synth import default_zones  # noqa: E402

ZONES = default_zones()


def frames(deck, scenes, hands, surface):
    """(name, frame): `scenes` sweep scenes per condition, then `hands` frames of three hands."""
    rng = np.random.default_rng(37)
    for cond in cm.CONDITIONS:
        for k in range(scenes):
            cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
            base, _ = cm.table_frame(deck, cards, ZONES, surface, cond, rng)
            yield f"{cond}/{k}", noisy(base, rng)
    for k in range(hands):
        frame = cm.surface(surface, 1280, 720, rng)
        _lay_hands(frame, deck, 125, rng)
        yield f"hands/{k}", noisy(cm.camera(frame, rng), rng)


def reads(rec, frame):
    return sorted((c, tuple(np.round(np.float32(q).mean(axis=0), 1))) for c, q in rec.read_image(frame))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decks", default="cardsjs,svgcards,kennard,responsive,synth")
    ap.add_argument("--surface", default="grey")
    ap.add_argument("--scenes", type=int, default=4, help="sweep scenes per condition")
    ap.add_argument("--hands", type=int, default=20, help="frames of three hands")
    args = ap.parse_args()
    cv2.setNumThreads(1)
    for deck in args.decks.split(","):
        rec = VisualRecognizer(cm.reference_templates(deck, seed=cm.DECKS.index(deck)))
        differ, n, kept, skipped, least, most = [], 0, 0, 0, [], 0.0
        for name, frame in frames(deck, args.scenes, args.hands, args.surface):
            gapblob.GAP_TEST, gapblob.GAP_STATS = False, None
            before = reads(rec, frame)
            gapblob.GAP_TEST, gapblob.GAP_STATS = True, []
            after = reads(rec, frame)
            for s in gapblob.GAP_STATS:
                left = s["left"] / s["card"]
                if left < gapblob.GAP_PAPER:
                    skipped += 1
                    most = max(most, left)
                else:
                    kept += 1
                    least.append((left, name))
            n += 1
            if before != after:
                differ.append((name, sorted(set(before) - set(after)), sorted(set(after) - set(before))))
        least.sort()
        print(f"{deck} on {args.surface}: {n} frames, {len(differ)} read differently; top-hat blobs "
              f"skipped {skipped} (most paper {most:.4f}), kept {kept}; least paper of a kept one "
              f"{least[:3]}", flush=True)
        for d in differ:
            print("   ", d, flush=True)
    gapblob.GAP_TEST, gapblob.GAP_STATS = True, None


if __name__ == "__main__":
    main()
