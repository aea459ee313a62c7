"""A hunt for wrong reads (issue 17) in overlapping hands and turned cards, which hunt_wrong.py
(single cards, one frame each) does not draw: a covered card is read at one index corner and
judged by the face strips along its top and left sides (scene.py, deckprint.py), not by the
twin-suit guard (twins.py). Every deck (the held-out ones too), every surface and condition,
weighted to motion and defocus and to the cards a blur or a likeness could swap: the twin suits
(clubs/spades, hearts/diamonds) of every rank, and the ranks 6/9, 3/8, Q/K, 5/6, 7/T ...
dealt side by side in one hand.

A scene is `scene(seed)`: hands (three hands of 2-4 cards, bench_hands' layout) or turned
cards (eight cards at any angle, one per zone of the blackjack layout, neighbours touching), read
over `--frames` frames with fresh sensor noise through the tracker (ZoneTracker(3, 8)) as the
daemon reads. Counted: every recognition in every frame whose card does not lie at its place
(its quad's centre within a fifth of a card's width of that card's), each with its seed, frame
and kind (VisualRecognizer.kinds), and every card the tracker reports that is not the card
there. Any wrong card is replayed with `--replay SEED`.

Usage: nice -n 10 .venv/bin/python bench/hunt_hands.py --seeds 0:2000 --cpu 1
       .venv/bin/python bench/hunt_hands.py --replay 1234"""
import argparse
import collections
import json
import os
import sys
import time

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench_hands import ZONES, _hand_places, noisy  # noqa: E402
from hunt_wrong import templates  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera.deckprint import corner_face_score  # noqa: E402
from drivers.camera.index import TWIN, face  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.tracker import ZoneTracker  # noqa: E402

WIDTH = 125
# a third of scenes in motion, a third defocused, the rest over every condition ('perspective'
# tilts nothing in a hand: its cards are laid flat; turned cards are at any angle anyway)
COND_WEIGHTS = {c: 1.0 for c in cm.CONDITIONS}
COND_WEIGHTS.update(motion=6.5, defocus=6.5)
TWIN_SUIT = {"s": "c", "c": "s", "h": "d", "d": "h"}
# ranks a blur or a likeness could swap (index glyphs alike, or courts' pictures alike)
RANK_PAIRS = ("69", "38", "QK", "56", "7T", "JQ", "A4", "89", "23")


def _deal(rng, n):
    """`n` distinct cards, mostly in confusable pairs: a card and its twin-suit card, or a card
    and the like rank in its suit or its twin's; the rest uniformly."""
    out = []
    while len(out) < n:
        r = rng.random()
        if r < 0.45:
            c = CARDS[int(rng.integers(52))]
            pair = [c, c[0] + TWIN_SUIT[c[1]]]
        elif r < 0.85:
            a, b = RANK_PAIRS[int(rng.integers(len(RANK_PAIRS)))]
            s = "shdc"[int(rng.integers(4))]
            pair = [a + s, b + (s if rng.random() < 0.5 else TWIN_SUIT[s])]
        else:
            pair = [CARDS[int(rng.integers(52))]]
        if rng.random() < 0.5:
            pair = pair[::-1]
        out += [c for c in pair if c not in out]
    return out[:n]


def scene(seed):
    """(deck, surface, condition, kind, rng) of scene `seed`: kind 'hands' or 'turned'; the rng
    then draws the cards (render)."""
    rng = np.random.default_rng([33, seed])
    deck = cm.DECKS[int(rng.integers(len(cm.DECKS)))]
    table = cm.SURFACES[int(rng.integers(len(cm.SURFACES)))]
    p = np.float64([COND_WEIGHTS[c] for c in cm.CONDITIONS])
    cond = cm.CONDITIONS[int(rng.choice(len(p), p=p / p.sum()))]
    kind = "hands" if rng.random() < 0.6 else "turned"
    return deck, table, cond, kind, rng


def render(seed):
    """Scene `seed` drawn: (deck, surface, condition, kind, truth [(card, quad, zone)], base
    frame, rng for the frames' sensor noise)."""
    deck, table, cond, kind, rng = scene(seed)
    frame = cm.surface(table, 1280, 720, rng)
    truth = []
    if kind == "hands":
        deal = _deal(rng, 12)
        for x in _hand_places(WIDTH):
            n = int(rng.integers(2, 5))
            cs, deal = deal[:n], deal[n:]
            qs = cm.hand(frame, deck, cs, (x, 360), WIDTH, rng.uniform(0, 360), rng)
            truth += [(c, q, "table") for c, q in zip(cs, qs)]
    else:
        faces = cm.load_deck(deck)
        zones = cm.framed(ZONES, WIDTH)
        for z, c in zip(zones, _deal(rng, len(zones))):
            face = faces[c]
            q = cm.pose(rng, "rotation", np.float32(zones[z]).mean(axis=0), WIDTH, face.shape[0] / face.shape[1])
            cm.lay(frame, face, q)
            truth.append((c, q, z))
    return deck, table, cond, kind, truth, cm.camera(frame, rng, cond), rng


def _place(quad, truth):
    """The truth entry whose card's centre lies within a fifth of a width of `quad`'s, or None."""
    c = np.float32(quad).mean(axis=0)
    d = [float(np.linalg.norm(np.float32(q).mean(axis=0) - c)) for _, q, _ in truth]
    i = int(np.argmin(d))
    return truth[i] if d[i] < 0.2 * WIDTH else None


def margins(rec, f, card, quad):
    """A covered card's distance from its twin-suit card (the guard twins.py gives whole cards):
    (its suit's index score over the twin suit's at the read corner, None when not kept; the
    face strips' score (deckprint.corner_face_score) for the card and for its twin)."""
    grays = {}
    rec.read_corner(f, quad, strict=True, keep=grays)
    fa, twin = face(f, np.float32(quad)), card[0] + TWIN[card[1]]
    return (rec._index_over_twin(card, grays, [quad]), corner_face_score(fa, rec.t.faces[card]),
            corner_face_score(fa, rec.t.faces[twin]))


def hunt(seeds, n, recs, count, wrong, decks=(), conditions=(), verbose=False, log=None):
    """Scenes `seeds` (only those of `decks` and `conditions` when given), `n` frames each,
    read with `recs` ({deck: VisualRecognizer}, filled as needed); counts into `count`, each
    wrong read appended to `wrong`; `log`: a file, each covered card's margins (one JSON a line)."""
    for seed in seeds:
        deck, _, cond, kind, _ = scene(seed)
        if decks and deck not in decks or conditions and cond not in conditions:
            continue
        deck, table, cond, kind, truth, base, rng = render(seed)
        if deck not in recs:
            recs[deck] = VisualRecognizer(templates(deck))
        rec, tracker, reported = recs[deck], ZoneTracker(3, 8), set()
        for i in range(n):
            f = noisy(base, rng)
            got = rec.read_image(f)
            by_zone = collections.defaultdict(list)
            for (card, q), k in zip(got, rec.kinds):
                there = _place(q, truth)
                count["recognitions"] += 1
                count["recognitions:" + deck] += 1
                count["recognitions:" + cond] += 1
                count["recognitions:" + kind] += 1
                count["kind:" + k] += 1
                if log is not None and k == "covered":
                    im, mine, twin = margins(rec, f, card, q)
                    log.write(json.dumps({"seed": seed, "frame": i, "deck": deck, "condition": cond,
                                          "read": card, "there": there and there[0],
                                          "index": None if im is None else round(im, 4),
                                          "strips": round(mine, 4), "twin_strips": round(twin, 4)}) + "\n")
                    log.flush()
                if there is None or there[0] != card:
                    w = {"seed": seed, "frame": i, "deck": deck, "surface": table, "condition": cond,
                         "scene": kind, "read": card, "there": there and there[0], "how": k,
                         "at": np.float32(q).mean(axis=0).round(1).tolist()}
                    wrong.append(w)
                    print("WRONG", json.dumps(w), flush=True)
                # the tracker's zone: a hand's whole table, or the turned card's zone it lies in
                by_zone["table" if kind == "hands" else (there[2] if there else "elsewhere")].append(card)
            for z in ({"table"} if kind == "hands" else {t[2] for t in truth} | {"elsewhere"}):
                for ev, c in tracker.update(z, by_zone.get(z, [])):
                    if ev == "seen":
                        reported.add((z, c))
            if verbose:
                print(seed, i, deck, table, cond, kind, sorted(zip((c for c, _ in got), rec.kinds)), flush=True)
        names = {(z, c) for c, _, z in truth} if kind == "turned" else {("table", c) for c, _, _ in truth}
        count["cards"] += len(truth)
        count["cards:" + deck] += len(truth)
        count["read"] += len(reported & names)
        count["read:" + deck] += len(reported & names)
        for z, c in reported - names:
            w = {"seed": seed, "deck": deck, "surface": table, "condition": cond, "scene": kind,
                 "reported": c, "zone": z}
            wrong.append(w)
            count["reported_wrong"] += 1
            print("REPORTED WRONG", json.dumps(w), flush=True)
        count["scenes"] += 1
        count["frames"] += n
        print("scene", seed, deck, cond, kind, "recognitions", count["recognitions"], "wrong", len(wrong),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from cli_args import cpu, names, parse, positive, seed_range   # strict: a typo is a usage error
    ap.add_argument("--seeds", type=seed_range, default="0:200", help="A:B, the scenes' seeds")
    ap.add_argument("--replay", type=int, default=None, help="one scene, verbose")
    ap.add_argument("--frames", type=positive, default=5, help="frames a scene (fresh sensor noise each)")
    ap.add_argument("--cpu", type=cpu, default=None)
    ap.add_argument("--decks", type=names(cm.DECKS, "deck"), default=None,
                    help="only the scenes of these decks (comma-separated)")
    ap.add_argument("--conditions", default="", help="only the scenes of these conditions (comma-separated)")
    ap.add_argument("--margins", default=None, help="a file: each covered card's twin-suit margins, one JSON a line")
    ap.add_argument("--verbose", action="store_true")
    a = parse(ap)
    a.decks = a.decks or ""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {a.cpu if a.cpu is not None else min(os.sched_getaffinity(0))})
    cv2.setNumThreads(1)
    if a.replay is not None:
        seeds, verbose = [a.replay], True
    else:
        lo, hi = (int(x) for x in a.seeds.split(":"))
        seeds, verbose = range(lo, hi), a.verbose
    t0 = time.time()
    count, wrong = collections.Counter(), []
    try:
        hunt(seeds, a.frames, {}, count, wrong, [d for d in a.decks.split(",") if d],
             [x for x in a.conditions.split(",") if x], verbose, open(a.margins, "w") if a.margins else None)
    except KeyboardInterrupt:       # a long hunt stopped by hand still says what it checked
        pass
    print(json.dumps({"seeds": a.seeds if a.replay is None else str(a.replay), "scenes": count["scenes"],
                      "frames": count["frames"], "cards": count["cards"], "read_within_frames": count["read"],
                      "recognitions": count["recognitions"], "wrong": len(wrong),
                      "by": {k: v for k, v in sorted(count.items()) if ":" in k},
                      "wrong_reads": wrong, "seconds": round(time.time() - t0)}))


if __name__ == "__main__":
    main()
