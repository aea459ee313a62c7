"""Whether a speed change left the reader's answers identical (issue 17: a faster pipeline
must read, refuse and place every card as before): every card read, its outline to the bit,
its kind and the refusals, over the deck sweep's scenes (one per surface and condition, two
noisy frames each, read with the deck's own templates and with another deck's) and blackjack
hands; printed as one digest per deck, and with --out the full record, to diff two trees'.

    .venv/bin/python bench/diag_identical.py --decks cardsjs,tigullio --out /tmp/a.txt
"""
import argparse
import hashlib
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.synth import default_zones  # noqa: E402

ZONES = default_zones()


def noisy(frame, rng):
    return np.clip(frame.astype(np.int16) + rng.integers(-3, 4, frame.shape), 0, 255).astype(np.uint8)


def record(rec, frame):
    """One line: each card read with its outline's float32 bytes, the kinds, the refusals."""
    out = rec.read_image(frame)
    cards = ";".join(f"{c}@{np.float32(q).tobytes().hex()}" for c, q in out)
    return f"{cards}|{','.join(rec.kinds)}|{rec.refused}"


def scenes(deck, foreign):
    rng = np.random.default_rng(17)
    for si, table in enumerate(cm.SURFACES):
        for cond in cm.CONDITIONS:
            cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
            base, _ = cm.table_frame(deck, cards, ZONES, table, cond, rng)
            for i in range(2):
                yield f"{table}/{cond}/{i}", noisy(base, rng)
    for k in range(len(cm.SURFACES)):
        table = cm.SURFACES[k]
        frame = cm.surface(table, 1280, 720, rng)
        deal = [CARDS[int(i)] for i in rng.choice(52, 9, replace=False)]
        for j in range(3):
            n = int(rng.integers(2, 5))
            cs, deal = deal[:n], deal[n:]
            cm.hand(frame, deck, cs, (250 + 390 * j, 360), 125, rng.uniform(0, 360), rng)
        yield f"hands/{table}", noisy(cm.camera(frame, rng), rng)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decks", default="cardsjs,tigullio")
    ap.add_argument("--foreign", default="responsive", help="another deck whose templates also read every frame")
    ap.add_argument("--out", help="the full record, a line a frame and templates")
    args = ap.parse_args()
    cv2.setNumThreads(1)
    lines = []
    for deck in args.decks.split(","):
        recs = {d: VisualRecognizer(cm.reference_templates(d, seed=cm.DECKS.index(d)))
                for d in dict.fromkeys([deck] + args.foreign.split(","))}
        h = hashlib.sha256()
        for name, frame in scenes(deck, args.foreign):
            for d, rec in recs.items():
                line = f"{deck} {name} templates={d} {record(rec, frame)}"
                h.update(line.encode())
                lines.append(line)
        print(deck, h.hexdigest()[:16], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
