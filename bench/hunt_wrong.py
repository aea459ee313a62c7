"""A hunt for wrong reads (issue 17) on scenes the sweep does not draw: every deck (the held-out
ones too), every surface and condition, weighted to motion and defocus and to the cards whose
suit differs from its twin's (spades/clubs, hearts/diamonds) in little but the pip (aces and
low numbers). Each scene is drawn from its own seed (`scene(seed)`), so any wrong card can be
replayed: `--replay SEED`. Recognitions are single frames (no tracker): every card the reader
reports in any frame counts, and one that is not the card lying there is wrong.

Usage: nice -n 10 .venv/bin/python bench/hunt_wrong.py --seeds 0:2000 --cpu 1 [--frames 2]
       .venv/bin/python bench/hunt_wrong.py --replay 1234 --verbose"""
import argparse
import collections
import json
import os
import sys
import time

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from bench import diag_motion  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.index import TWIN, face, face_score  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402

# a third of scenes in motion, a third defocused, the rest over every condition
COND_WEIGHTS = {c: 1.0 for c in cm.CONDITIONS}
COND_WEIGHTS.update(motion=6.5, defocus=6.5)
# half the cards from those whose twin suit's card differs most in its pip: aces and 2-4
TWIN_PRONE = [c for c in CARDS if c[0] in "A234"]


def templates(deck):
    """The sweep's templates of `deck` (diag_motion's cache), keyed on the camera code but the
    reader's visual.py and twins.py, which the capture does not use: a change to the reader is
    measured on the same templates without building them again (7 decks, about 4 minutes)."""
    code = diag_motion._code
    try:
        diag_motion._code = lambda: _capture_code()
        return diag_motion.templates(deck)
    finally:
        diag_motion._code = code


def _capture_code():
    import glob
    import hashlib
    h = hashlib.sha256()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "drivers", "camera")
    for name in sorted(glob.glob(os.path.join(here, "*.py"))):
        if os.path.basename(name) not in ("visual.py", "twins.py"):
            with open(name, "rb") as f:
                h.update(f.read())
    return "capture-" + h.hexdigest()[:12]


def scene(seed):
    """(deck, surface, condition, {zone: card}, rng) of scene `seed`; the rng then draws the
    frame (cm.table_frame) and its sensor noise."""
    rng = np.random.default_rng([17, seed])
    deck = cm.DECKS[int(rng.integers(len(cm.DECKS)))]
    table = cm.SURFACES[int(rng.integers(len(cm.SURFACES)))]
    p = np.float64([COND_WEIGHTS[c] for c in cm.CONDITIONS])
    cond = cm.CONDITIONS[int(rng.choice(len(p), p=p / p.sum()))]
    cards = {z: (TWIN_PRONE[int(rng.integers(len(TWIN_PRONE)))] if rng.random() < 0.5
                 else CARDS[int(rng.integers(52))]) for z in ZONES}
    return deck, table, cond, cards, rng


def frames(seed, n):
    """Scene `seed` rendered: (deck, surface, condition, cards, true quads, n frames with fresh
    sensor noise)."""
    deck, table, cond, cards, rng = scene(seed)
    base, where = cm.table_frame(deck, cards, ZONES, table, cond, rng)
    return deck, table, cond, cards, where, [noisy(base, rng) for _ in range(n)]


def judge(got, cards, where):
    """Each read (card, quad) against the card lying nearest its centre: [(card read, card
    there or None, zone)]."""
    out = []
    for card, q in got:
        c = np.float32(q).mean(axis=0)
        z, d = min(((z, float(np.linalg.norm(np.float32(w).mean(axis=0) - c))) for z, w in where.items()),
                   key=lambda x: x[1])
        out.append((card, cards[z] if d < 25 else None, z))
    return out


def margins(rec, f, card, quad):
    """(whether both index corners read `card` plainly, the read suit over its twin at the
    weaker corner, the face over the twin card's) of a card read at `quad`: how thin the
    difference between the twin suits was (VisualRecognizer._twins_apart)."""
    grays, corners = {}, both_corners(np.float32(quad))
    plain = [rec.read_corner(f, q, keep=grays)[0] for q in corners]
    im = rec._index_over_twin(card, grays, corners)
    fa, twin = face(f, np.float32(quad)), card[0] + TWIN[card[1]]
    fm = face_score(fa, rec.t.faces[card]) - face_score(fa, rec.t.faces[twin])
    return plain == [card, card], im, fm


def hunt(seeds, n, verbose=False, log=None, decks=None, conditions=None):
    """Scenes `seeds` (those of `decks` and `conditions` only, when given: the same seeds draw
    the same scenes), `n` frames each: (counts, [wrong reads])."""
    recs, c, wrong = {}, collections.Counter(), []
    for seed in seeds:
        deck, _, cond, _, _ = scene(seed)
        if decks and deck not in decks or conditions and cond not in conditions:
            continue
        deck, table, cond, cards, where, fs = frames(seed, n)
        if deck not in recs:
            recs[deck] = VisualRecognizer(templates(deck))
        for i, f in enumerate(fs):
            reads = recs[deck].read_image(f)
            got = judge(reads, cards, where)
            c["frames"] += 1
            c["cards"] += len(cards)
            c["recognitions"] += len(got)
            c["recognitions:" + deck] += len(got)
            c["recognitions:" + cond] += len(got)
            for (card, there, z), (_, q) in zip(got, reads):
                if log is not None:
                    plain, im, fm = margins(recs[deck], f, card, q)
                    log.write(json.dumps({"seed": seed, "frame": i, "deck": deck, "condition": cond,
                                          "surface": table, "read": card, "there": there, "plain": plain,
                                          "index": None if im is None else round(im, 4),
                                          "face": round(fm, 4)}) + "\n")
                    log.flush()
                if card != there:
                    w = {"seed": seed, "frame": i, "deck": deck, "surface": table, "condition": cond,
                         "zone": z, "read": card, "there": there}
                    wrong.append(w)
                    print("WRONG", json.dumps(w), flush=True)
            if verbose:
                print(seed, i, deck, table, cond, sorted(got, key=lambda x: x[2]), flush=True)
        print("scene", seed, "recognitions", c["recognitions"], "wrong", len(wrong), flush=True)
    return c, wrong


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0:200", help="A:B, the scenes' seeds")
    ap.add_argument("--replay", type=int, default=None, help="one scene, verbose")
    ap.add_argument("--frames", type=int, default=2, help="frames a scene (fresh sensor noise each)")
    ap.add_argument("--cpu", type=int, default=None)
    ap.add_argument("--decks", default="", help="only the scenes of these decks (comma-separated)")
    ap.add_argument("--conditions", default="", help="only the scenes of these conditions (comma-separated)")
    ap.add_argument("--margins", default=None, help="a file: every read card's twin-suit margins, one JSON a line")
    ap.add_argument("--no-guard", action="store_true",
                    help="without the twin-suit guard (VisualRecognizer._twins_apart): the code before it")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {a.cpu if a.cpu is not None else min(os.sched_getaffinity(0))})
    cv2.setNumThreads(1)
    if a.replay is not None:
        seeds, verbose = [a.replay], True
    else:
        lo, hi = (int(x) for x in a.seeds.split(":"))
        seeds, verbose = range(lo, hi), a.verbose
    t0 = time.time()
    if a.no_guard:
        VisualRecognizer._twins_apart = lambda self, *args: True
    log = open(a.margins, "w") if a.margins else None
    c, wrong = hunt(seeds, a.frames, verbose, log, [d for d in a.decks.split(",") if d],
                    [x for x in a.conditions.split(",") if x])
    print(json.dumps({"seeds": a.seeds if a.replay is None else str(a.replay), "frames": c["frames"],
                      "cards_shown": c["cards"], "recognitions": c["recognitions"], "wrong": len(wrong),
                      "by": {k.split(":", 1)[1]: v for k, v in sorted(c.items()) if ":" in k},
                      "wrong_reads": wrong, "seconds": round(time.time() - t0)}))


if __name__ == "__main__":
    main()
