"""Reference sets labelled wrongly in a consistent way (issue 17, drivers/camera/labelcheck.py):
how many correct sets the check refuses (false refusals), and whether each consistent
mislabelling is refused, per deck and scale: webcam photos (the card 300 px wide, 800x600) and
table frames (125 px, 1280x720), every surface in turn, several seeds. Also the check's CPU time.

    .venv/bin/python bench/bench_labelcheck.py --seeds 3 [--decks cardsjs,kennard] [--json]
"""
import argparse
import json
import os
import sys
import time
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera.find import find_cards  # noqa: E402
from drivers.camera import labelcheck as lc  # noqa: E402
from drivers.camera.labelcheck import consistent_mislabels  # noqa: E402
from drivers.camera.templates import BadReference, Templates  # noqa: E402

RANKS = "A23456789TJQK"
SWAP = {"s": "c", "c": "s", "h": "d", "d": "h"}
# each: the label a photo of card c gets
MISLABELS = {
    "Q<->K": lambda c: ({"Q": "K", "K": "Q"}.get(c[0], c[0])) + c[1],
    "J<->K": lambda c: ({"J": "K", "K": "J"}.get(c[0], c[0])) + c[1],
    "s<->c": lambda c: c[0] + (SWAP[c[1]] if c[1] in "sc" else c[1]),
    "h<->d": lambda c: c[0] + (SWAP[c[1]] if c[1] in "hd" else c[1]),
    "shift-1": lambda c: RANKS[(RANKS.index(c[0]) - 1) % 13] + c[1],     # the photo of 2x labelled A
    "shift+1": lambda c: RANKS[(RANKS.index(c[0]) + 1) % 13] + c[1],
    "5<->6": lambda c: ({"5": "6", "6": "5"}.get(c[0], c[0])) + c[1],
}


def photos(deck, kind, seed):
    """One photo per card, each on the next surface: (image, quad, card)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, c in enumerate(CARDS):
        for a in range(6):
            table = cm.SURFACES[(i + a + seed) % len(cm.SURFACES)]
            if kind == "webcam":
                img, _ = cm.webcam_photo(deck, c, table, rng, ("clean", "rotation", "perspective",
                                                                "defocus", "jpeg")[(i + a) % 5])
            else:
                img = cm.surface(table, 1280, 720, rng)
                face = cm.load_deck(deck)[c]
                cm.lay(img, face, cm.pose(rng, "clean", (640, 360), 125, face.shape[0] / face.shape[1]))
                img = cm.camera(img, rng)
            qs = find_cards(img)
            if len(qs) == 1:
                break
        out.append((img, qs[0], c))
    return out


def learned(samples, retake):
    """Templates from the samples, a photo the capture refuses taken again (as on site)."""
    for _ in range(4):
        try:
            return samples, Templates.capture(samples)
        except BadReference as e:
            fresh = retake()
            samples = [fresh[i] if c in e.cards else s for i, (s, c) in
                       enumerate(zip(samples, [c for *_, c in samples]))]
    return samples, Templates.capture(samples)


def one(deck, kind, seed):
    samples, t = learned(photos(deck, kind, seed), lambda: photos(deck, kind, seed + 1000))
    t0 = time.process_time()
    ok = consistent_mislabels(samples, t)
    cpu = time.process_time() - t0
    caught = {}
    for name, f in MISLABELS.items():
        s = [(img, q, f(c)) for img, q, c in samples]
        tt = SimpleNamespace(box=t.box, split=t.split, patches={f(c): t.patches[c] for c in CARDS})
        caught[name] = consistent_mislabels(s, tt) is not None
    return {"deck": deck, "kind": kind, "seed": seed, "false_refusal": ok[1] if ok else None,
            "caught": caught, "cpu_s": round(cpu, 3), "margins": margins(samples, t)}


def margins(samples, t):
    """How far a correct set is from each refusal: the number cards whose pips miscount, the
    suit shapes' differences (positive: the right way round), the median hole depth of
    the Js, Qs and Ks, the J's ink less the K's (negative: the right way round)."""
    faces = {c: lc.pips(lc.canonical(img, q), t.box) for img, q, c in samples}
    miscount = [c for c, p in faces.items() if c[0] in lc.VALUE and len(p) != lc.VALUE[c[0]]]
    suit = {}
    for (a, b), score in lc._SHAPE.items():
        med = {u: np.median([np.median([score(p) for p in faces[c]]) for c in CARDS
                             if c[1] == u and c[0] in "23456789T" and faces[c]]) for u in (a, b)}
        suit[a + "-" + b] = round(float(med[a] - med[b]), 3)
    cut = t.split - t.box[1]
    holes = {r: round(float(np.median([lc.hole_depth(t.patches[r + u][:cut]) for u in "shdc"])), 3)
             for r in "JQK"}
    ink = {r: np.median([(t.patches[r + u][:cut] < 0.6).mean() for u in "shdc"]) for r in "JK"}
    return {"miscount": miscount, "suit": suit, "holes": holes,
            "ink_J-K": round(float(ink["J"] - ink["K"]), 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--decks", default=",".join(cm.DECKS))
    ap.add_argument("--kinds", default="webcam,table")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    for deck in a.decks.split(","):
        for kind in a.kinds.split(","):
            for seed in range(a.first, a.first + a.seeds):
                r = one(deck, kind, seed)
                rows.append(r)
                if not a.json:
                    missed = [k for k, v in r["caught"].items() if not v]
                    print(f"{deck:10} {kind:6} seed {seed}: false refusal: {r['false_refusal']}; "
                          f"missed: {missed or 'none'}; check {r['cpu_s'] * 1000:.0f} ms CPU; "
                          f"margins {r['margins']}", flush=True)
    if a.json:
        print(json.dumps(rows))
    else:
        print(f"{len(rows)} correct sets, {sum(1 for r in rows if r['false_refusal'])} refused; "
              f"check CPU median {np.median([r['cpu_s'] for r in rows]) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
