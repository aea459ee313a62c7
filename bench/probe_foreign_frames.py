"""Another deck of the same artwork, read per frame as the daemon reads (issue 17): each deck's
scenes read with the other deck's templates (every read a foreign read) and with its own (a read
not the card lying there is wrong), every surface and condition, fresh sensor noise in every
frame, and the daemon's tracker over each scene's frames (what it would report). The sweep reads
each scene once without noise and under-counts foreign reads (docs/camera.md).

Per pair SCENES:TEMPLATES it prints counts: frames, own reads (right, wrong, of the cards laid),
foreign reads (single frames, and cards the tracker reported), and with --roundings the corners'
rounding of every card that reached the fingerprint (whole cards: DeckPrint.matches), own and
foreign, for looking at where the two decks' measures lie.

Usage: nice -n 10 .venv/bin/python bench/probe_foreign_frames.py --pairs responsive:cardsjs,cardsjs:responsive \
       --scenes 2 --frames 3 --cpu 1 [--surfaces white] [--conditions defocus] [--roundings FILE.jsonl]"""
import argparse
import collections
import json
import os
import sys

import cv2
import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "bench"))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from bench.hunt_wrong import judge, templates  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import deckprint, rounding as rounding_mod, scene as scene_mod, visual  # noqa: E402
from drivers.camera.driver import CameraDriver, Zones  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402

SEEN = []          # (rounding, shifts, verdict, corners) of each fingerprint judged in the current read
CORNERS = []       # each corner's rounding of the card whose fingerprint is judged next


def _instrument():
    orig = deckprint.DeckPrint.matches

    def matches(self, r, shifts, *more):
        v = orig(self, r, shifts, *more)
        per = CORNERS.pop() if CORNERS else []
        SEEN.append((float(r), float(min(shifts)), bool(v), [round(float(x), 3) for x in per]))
        return v
    deckprint.DeckPrint.matches = matches
    # each corner measured beside the reader's rounding() (wherever the reader calls it from)
    for mod in (visual, scene_mod, deckprint):
        if hasattr(mod, "rounding") and hasattr(rounding_mod, "corners_rounding"):
            def wrapped(bgr, quad, canon, _orig=mod.rounding):
                CORNERS[:] = [rounding_mod.corners_rounding(bgr, quad, canon)]
                return _orig(bgr, quad, canon)
            mod.rounding = wrapped


def scene_frames(sd, si, table, cond, k, nframes, seed):
    """The frames of scene `k` of deck `sd` on `table` under `cond`: (cards, true quads, frames),
    drawn from their own seed (replayable)."""
    rng = np.random.default_rng([33, seed, cm.DECKS.index(sd), si, cm.CONDITIONS.index(cond), k])
    cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
    base, where = cm.table_frame(sd, cards, ZONES, table, cond, rng)
    return cards, where, [noisy(base, rng) for _ in range(nframes)]


def run_pair(sd, td, recs, a, out):
    c = collections.Counter()
    found = []
    for si, table in enumerate(cm.SURFACES):
        if table not in a.surfaces.split(","):
            continue
        for cond in a.conditions.split(","):
            for k in range(a.scenes):
                cards, where, frames = scene_frames(sd, si, table, cond, k, a.frames, a.seed)
                drivers = {d: CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=recs[d])
                           for d in (sd, td)}
                reported = {sd: set(), td: set()}
                for i, f in enumerate(frames):
                    c["frames"] += 1
                    c["laid"] += len(cards)
                    for d in (sd, td):
                        SEEN.clear()
                        got = recs[d].read_image(f)
                        for r, sh, ok, per in SEEN:
                            if out:
                                out.write(json.dumps({"scenes": sd, "templates": d, "surface": table,
                                                      "condition": cond, "scene": k, "frame": i,
                                                      "rounding": round(r, 3), "shift": round(sh, 3),
                                                      "passed": ok, "corners": per}) + "\n")
                        for card, there, z in judge(got, cards, where):
                            if d == sd:
                                c["own_right" if card == there else "own_WRONG"] += 1
                            else:
                                c["foreign_reads"] += 1
                                found.append({"surface": table, "condition": cond, "scene": k, "frame": i,
                                              "read": card, "there": there})
                        if a.no_tracker:
                            continue
                        # the daemon: its driver's zones and the tracker's events over the frames
                        zs = drivers[d].read_frame(f)
                        for z, cs in zs.items():
                            for ev, card in drivers[d].tracker.update(z, cs):
                                if ev == "seen":
                                    reported[d].add((z, card, ev))
                own_cards = {(z, cd) for z, cd, ev in reported[sd]}
                c["own_tracked"] += len(own_cards)
                c["own_tracked_wrong"] += sum(cards[z] != cd for z, cd in own_cards)
                c["foreign_tracked"] += len({(z, cd) for z, cd, ev in reported[td]})
                for z, cd, ev in reported[td]:
                    found.append({"tracker": ev, "surface": table, "condition": cond, "scene": k,
                                  "zone": z, "read": cd, "there": cards[z]})
    print(json.dumps({"pair": f"{sd}:{td}", **c, "foreign": found[:30]}), flush=True)
    return c


def main():
    ap = argparse.ArgumentParser()
    from cli_args import cpu, names, pairs, parse, positive   # strict: a typo is a usage error
    ap.add_argument("--pairs", type=pairs(cm.DECKS, "deck"), default="responsive:cardsjs,cardsjs:responsive",
                    help="SCENES:TEMPLATES,... decks")
    ap.add_argument("--scenes", type=positive, default=2, help="scenes per surface and condition")
    ap.add_argument("--frames", type=positive, default=3, help="frames per scene, each with fresh noise")
    ap.add_argument("--conditions", type=names(cm.CONDITIONS, "condition"), default=",".join(cm.CONDITIONS))
    ap.add_argument("--surfaces", type=names(cm.SURFACES, "surface"), default=",".join(cm.SURFACES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--roundings", default="", help="write each judged fingerprint here (jsonl)")
    ap.add_argument("--no-tracker", action="store_true", help="single-frame reads only (half the cost)")
    ap.add_argument("--cpu", type=cpu, default=None)
    a = parse(ap)
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    cv2.setNumThreads(1)
    _instrument()
    out = open(a.roundings, "w") if a.roundings else None
    recs = {}
    for pair in a.pairs.split(","):
        sd, td = pair.split(":")
        for d in (sd, td):
            if d not in recs:
                recs[d] = VisualRecognizer(templates(d))
        run_pair(sd, td, recs, a, out)
    if out:
        out.close()


if __name__ == "__main__":
    main()
