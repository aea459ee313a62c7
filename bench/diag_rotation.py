"""Why rotated cards are missed (issue 17): the bench_hands "rotation" scenes, and for each card
not reported within five frames, its cause in the first frame:

- cut: the card reaches beyond the frame (refused by design: half a card)
- not_found: no whole outline and no merged blob at the card
- whole_off: an outline was found, but one of its index corners lies > 3 px from the card's
- whole_refused: an outline within 3 px, yet refused (score, margin, face or fingerprint check)
- blob_no_hyp: inside a merged blob, no corner hypothesis within 4 px of either index corner
- blob_refused: a hypothesis within 4 px, refused (score below STRICT or margin)
- blob_dropped: a hypothesis within 4 px reads the card at its corner (STRICT), yet the frame
  does not report it: a later check dropped it (the covered card's strips' face, no card of the
  deck vouching in its blob, an overlapping card that failed, the whole card's deck check, or a
  second copy)
- other: read in some frames, not three in a row

Usage: .venv/bin/python bench/diag_rotation.py --frames 15 --decks cardsjs,responsive"""
import argparse
import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_hands import ZONES as DEFAULT_ZONES, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera.find import find_cards  # noqa: E402
from drivers.camera.hands import hand_corners  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.tracker import ZoneTracker  # noqa: E402


def classify(rec, img, tq, card, width):
    h, w = img.shape[:2]
    if tq[:, 0].min() < 2 or tq[:, 1].min() < 2 or tq[:, 0].max() > w - 3 or tq[:, 1].max() > h - 3:
        return "cut"
    t = rec.t
    quads, blobs = find_cards(img, t.card_size, with_blobs=True)
    c = tq.mean(axis=0)
    idx = (tq[0], tq[2])       # the face's tl and br: its index corners
    for q in quads:
        if np.linalg.norm(q.mean(axis=0) - c) < 0.2 * width:
            off = min(max(np.linalg.norm(q[i] - idx[0]), np.linalg.norm(q[(i + 2) % 4] - idx[1]))
                      for i in range(4))
            return "whole_off" if off > 3 else "whole_refused"
    import cv2
    inblob = any(cv2.pointPolygonTest(b.reshape(-1, 1, 2), (float(c[0]), float(c[1])), False) >= 0
                 for b in blobs)
    if not inblob:
        return "not_found"
    hyps = hand_corners(img, blobs, quads, t.card_size)
    # hand_corners gives (quad, located) pairs: the hypothesis' index corner is its quad's tl
    # (taking the pair's quad for its corner measured every quad's four corners against the
    # card's one: nothing was ever near, every merged-blob card was called blob_no_hyp)
    near = [q for q, _ in hyps if min(np.linalg.norm(q[0] - p) for p in idx) < 4]
    if not near:
        return "blob_no_hyp"
    return "blob_dropped" if any(rec.read_corner(img, q, strict=True)[0] == card for q in near) else "blob_refused"


def run(deck, frames, width, seed, unframed=False):
    zones = DEFAULT_ZONES if unframed else cm.framed(DEFAULT_ZONES, width)
    rec = VisualRecognizer(cm.reference_templates(deck, seed=seed, width=width))
    rng = np.random.default_rng(11 + seed)
    causes, wrong, recognitions = collections.Counter(), 0, 0
    for k in range(frames):
        cards = {z: CARDS[int(rng.integers(52))] for z in zones}
        base, where = cm.table_frame(deck, cards, zones, cm.SURFACES[k % len(cm.SURFACES)], "rotation",
                                     rng, width=width)
        tracker = ZoneTracker(3, 8)
        reported, first = set(), None
        for f in range(5):
            img = noisy(base, rng)
            first = img if first is None else first
            got = rec.read_image(img)
            recognitions += len(got)
            for z in zones:
                tq = np.float32(where[z])
                cs = [c for c, q in got if np.linalg.norm(tq.mean(axis=0) - q.mean(axis=0)) < 0.2 * width]
                wrong += sum(c != cards[z] for c in cs)
                for ev, c in tracker.update(z, cs):
                    if ev == "seen" and c == cards[z]:
                        reported.add(z)
        for z in zones:
            if z in reported:
                causes["read"] += 1
            else:
                cause = classify(rec, first, np.float32(where[z]), cards[z], width)
                causes[cause] += 1
                causes[f"{cause}@{z}"] += 1
    return causes, wrong, recognitions


def main():
    ap = argparse.ArgumentParser()
    from cli_args import names, parse, positive   # strict: a typo is a usage error
    ap.add_argument("--frames", type=positive, default=15)
    ap.add_argument("--decks", type=names(cm.DECKS, "deck"), default="cardsjs,svgcards,kennard,responsive")
    ap.add_argument("--width", type=int, default=125)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--unframed", action="store_true", help="the default zones (cards cut by the frame)")
    a = parse(ap)
    for i, deck in enumerate(a.decks.split(",")):
        causes, wrong, n = run(deck, a.frames, a.width, a.seed + i, a.unframed)
        total = a.frames * len(DEFAULT_ZONES)
        print(f"{deck}: read {causes['read']}/{total}, wrong {wrong} in {n} recognitions; missed: "
              + ", ".join(f"{k} {v}" for k, v in causes.most_common() if k != "read" and "@" not in k)
              + "; by zone: " + ", ".join(f"{k} {v}" for k, v in sorted(causes.items()) if "@" in k),
              flush=True)


if __name__ == "__main__":
    main()
