"""Where the steepest-rise measure of the corners' cut (drivers/camera/edgeround.py) puts a
square-cut deck's own cards and another deck's cards under its templates (issue 17: the
thresholds of DeckPrint._square_by_edges, EDGE_SQUARE and EDGE_SHARP).

Scenes of deck S laid as the deck sweep lays them (camera_model.table_frame, 8 zones), read with
deck T's templates as the daemon reads them (CameraDriver, fresh noise each frame); every whole
card that reaches the fingerprint (DeckPrint.card_matches) is recorded: the plain verdict, the
level-crossing rounding (rounding.py), the edge measure and its blur, whether the card moves
(smear.streaked), and whether the second opinion (DeckPrint._square_by_edges) was asked and what
it answered (`ok` is the plain verdict: without it). With T == S these are the deck's own cards; with T != S every one is another
deck's card (the sample that must stay refused). Only square-cut templates ask the second opinion.

Usage: nice -n 10 .venv/bin/python bench/diag_edge_cut.py --pairs responsive:responsive,cardsjs:responsive \
       [--surfaces white,light_grey] [--scenes 3] [--frames 3] [--seed 0] [--cpu 1] [--jsonl FILE]"""
import argparse
import collections
import json
import math
import os
import sys

import cv2
import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "bench"))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import deckprint, edgeround  # noqa: E402
from drivers.camera.driver import CameraDriver, Zones  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.rounding import rounding  # noqa: E402
from drivers.camera.smear import streaked  # noqa: E402

CALLS = []
SIGMA = []         # the blurs the cut rule was judged under (canonical pixels, or None)


def _instrument():
    orig = deckprint.DeckPrint.card_matches

    second = deckprint.DeckPrint._square_by_edges
    asked = []

    def square_by_edges(self, *a):
        asked.append(second(self, *a))
        return asked[-1]

    near = deckprint.DeckPrint.nearer_other_cut

    def nearer_other_cut(self, r, sigma):
        SIGMA.append(sigma)
        return near(self, r, sigma)
    deckprint.DeckPrint.nearer_other_cut = nearer_other_cut

    def card_matches(self, bgr, quad, canon, shifts, blur=None, streak=None):
        asked.clear()
        SIGMA.clear()
        ok = orig(self, bgr, quad, canon, shifts, blur, streak)
        CALLS.append((bgr, np.float32(quad), canon, shifts, ok, self, list(asked), SIGMA[-1] if SIGMA else None))
        return ok
    deckprint.DeckPrint.card_matches = card_matches
    deckprint.DeckPrint._square_by_edges = square_by_edges


def run(src, tmpl, surfaces, conditions, scenes, frames, seed, rows):
    rec = VisualRecognizer(cm.reference_templates(tmpl, seed=cm.DECKS.index(tmpl)))
    d = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=rec)
    for table in surfaces:
        for cond in conditions:
            for s in range(scenes):
                rng = np.random.default_rng([41, seed, s, cm.DECKS.index(src), cm.SURFACES.index(table),
                                             cm.CONDITIONS.index(cond)])
                cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
                base, where = cm.table_frame(src, cards, ZONES, table, cond, rng)
                for f in range(frames):
                    img = noisy(base, rng)
                    CALLS.clear()
                    d.read_frame(img)
                    for bgr, q, canon, shifts, ok, p, asked, sigma in CALLS:
                        c = q.mean(axis=0)
                        zone = min(where, key=lambda z: np.linalg.norm(where[z].mean(axis=0) - c))
                        r = rounding(bgr, q, canon)
                        e, blur = edgeround.edge_rounding(bgr, q, canon)
                        edgeround.WIDTH = lambda b: sum(b) / len(b)
                        blur_mean = edgeround.edge_rounding(bgr, q, canon)[1]
                        edgeround.WIDTH = max
                        rows.append(dict(src=src, tmpl=tmpl, table=table, cond=cond, scene=s, frame=f,
                                         zone=zone, there=cards[zone], ok=bool(ok) and not any(asked),
                                         second=asked[0] if asked else None, level=_f(r), edge=_f(e),
                                         blur=_f(blur), blur_mean=_f(blur_mean), sigma=_f(sigma),
                                         shift=_f(min(shifts)), shift_tol=p.shift_tol,
                                         rounding=p.rounding, rounding_tol=p.rounding_tol,
                                         moving=bool(streaked(rec, bgr, q)), cut=p.cut()))


def _f(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 3)


def summary(rows):
    out = []
    by = collections.defaultdict(list)
    for r in rows:
        by[(r["src"], r["tmpl"])].append(r)
    for (src, tmpl), rs in by.items():
        kind = "own" if src == tmpl else "foreign"
        out.append(f"{src} under {tmpl}'s templates ({kind}): {len(rs)} fingerprints, {sum(r['ok'] for r in rs)} pass "
                   f"the plain check; the edges asked {sum(r['second'] is not None for r in rs)}, "
                   f"say square {sum(bool(r['second']) for r in rs)}")
        for label, sel in (("all", rs), ("still (not streaked)", [r for r in rs if not r["moving"]]),
                           ("refused, shift passing, still", [r for r in rs if not r["ok"] and not r["moving"]
                                                                and r["shift"] is not None and r["shift"] <= r["shift_tol"]])):
            e = np.float64([r["edge"] for r in sel if r["edge"] is not None])
            b = np.float64([r["blur"] for r in sel if r["blur"] is not None])
            if len(e):
                q = np.percentile(e, [0, 1, 5, 50, 95, 99, 100])
                out.append(f"    {label}: n {len(sel)}, edge min/1/5/50/95/99/max " + " ".join(f"{v:.2f}" for v in q)
                           + (f"; blur 5/50/95 " + " ".join(f"{v:.2f}" for v in np.percentile(b, [5, 50, 95])) if len(b) else ""))
    return "\n".join(out)


def main():
    from cli_args import cpu, names, pairs, parse, positive
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=pairs(cm.DECKS, "deck"), default="responsive:responsive,cardsjs:responsive",
                    help="SCENES:TEMPLATES decks, comma-separated")
    ap.add_argument("--surfaces", type=names(cm.SURFACES, "surface"), default=",".join(cm.SURFACES))
    ap.add_argument("--conditions", type=names(cm.CONDITIONS, "condition"), default=",".join(cm.CONDITIONS))
    ap.add_argument("--scenes", type=positive, default=2, help="scenes per surface and condition")
    ap.add_argument("--frames", type=positive, default=3, help="frames a scene, fresh noise each")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu", type=cpu, default=None)
    ap.add_argument("--jsonl", default=None, help="every fingerprint, one JSON line each")
    a = parse(ap)
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    cv2.setNumThreads(1)
    _instrument()
    rows = []
    for pair in a.pairs.split(","):
        src, tmpl = pair.split(":")
        run(src, tmpl, a.surfaces.split(","), a.conditions.split(","), a.scenes, a.frames, a.seed, rows)
        print(summary([r for r in rows if (r["src"], r["tmpl"]) == (src, tmpl)]), flush=True)
    if a.jsonl:
        with open(a.jsonl, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
