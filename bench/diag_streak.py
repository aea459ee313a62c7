"""Motion blur's misses by cause (issue 17): the sweep's motion scenes (bench_camera.deck_sweep's
seeds, as diag_motion), the model's true streak recorded as it draws it. Diagnosis only.

  estimate   each moving card's estimated streak against the true one (streak.estimate on the
             true outline): the error as the distance of the two vectors (up to sign), the
             length's and the angle's error
  oracle     the same five frames read with streak.estimate replaced by the true streak: what
             a perfect estimate would read
  causes     each card missed, its first frame classified as diag_motion's (not_found,
             outline_off, score, margin, face, deck_check, ...), 'streak' when the found
             outline reads with the true streak (the estimate is what failed), 'reads1' when
             the first frame reads (the other frames failed), 'outline<3px' when the true outline
             reads (an outline off by less than diag_motion's 3 px); then after a '/' the step of
             the blurred read that refused it on the found outline (refused_at)

Usage: .venv/bin/python bench/diag_streak.py --decks svgcards --trials 1"""
import argparse
import collections
import copy
import math
import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES  # noqa: E402
from bench.diag_motion import classify, five_frames, found_quad  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import streak as S  # noqa: E402
from drivers.camera import index as V  # noqa: E402
from drivers.camera import webcam_model  # noqa: E402
from drivers.camera.deckprint import SMALL  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402

TRUE = {}
_blur = webcam_model.motion_blur


def _recording(f, rng):
    """webcam_model.motion_blur with its draws recorded (the same draws, the same frame)."""
    state = copy.deepcopy(rng)
    n = int(state.integers(4, 8))
    a = math.radians(state.uniform(0, 180))
    TRUE["streak"] = (n * math.cos(a), -n * math.sin(a))
    return _blur(f, rng)


webcam_model.motion_blur = _recording
_estimate = S.estimate


def error(e, t):
    """(vector error up to sign, length error, angle error in degrees)."""
    e, t = np.float32(e), np.float32(t)
    d = min(np.linalg.norm(e - t), np.linalg.norm(e + t))
    da = abs(math.degrees(math.atan2(e[1], e[0]) - math.atan2(t[1], t[0]))) % 180
    return float(d), float(np.linalg.norm(e) - np.linalg.norm(t)), min(da, 180 - da)


def refused_at(rec, bgr, q, card):
    """The step of the blurred read that refused the card at outline `q` (the estimated streak):
    'corners' (the two index corners do not both read it), 'face' (under the face minimum),
    'twin' (its face not clear of the other suit's), 'fingerprint' (rounding or index place), or
    'passes'."""
    st = S.estimate(bgr, q)
    if any(rec.read_corner(bgr, cq, streak=st)[0] != card for cq in both_corners(q)):
        return "corners"
    f = V.face(bgr, q)
    if V.face_score(f, rec.t.faces[card]) < (V.FACE_MIN if rec.t.card_size[0] >= SMALL else V.FACE_MIN_SMALL):
        return "face"
    if not rec._face_over_twin(f, card, V.FACE_SUIT):
        return "twin"
    if not rec._of_deck(bgr, q, card, {}, f):
        return "fingerprint"
    return "passes"


def templates(deck, cache):
    """reference_templates(deck, seed as the sweep's), kept in `cache` when given (pickled). Not
    diag_motion's shared cache: templates built by older code read otherwise than the sweep's."""
    path = os.path.join(cache, deck + ".pickle") if cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    t = cm.reference_templates(deck, seed=cm.DECKS.index(deck))
    if path:
        os.makedirs(cache, exist_ok=True)
        with open(path, "wb") as f:
            pickle.dump(t, f)
    return t


def run(deck, trials, verbose, surfaces, seed=0, cache=None):
    rec = VisualRecognizer(templates(deck, cache))
    c = collections.Counter()
    errs = []
    cond = "motion"
    for si, table in enumerate(cm.SURFACES):
        if surfaces and table not in surfaces:
            continue
        rng = np.random.default_rng(seed + 1000 * si + cm.CONDITIONS.index(cond))
        for _ in range(trials):
            cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
            base, where = cm.table_frame(deck, cards, ZONES, table, cond, rng)
            true = TRUE["streak"]
            r2 = copy.deepcopy(rng)
            reported, first, wrong = five_frames(rec, base, cards, where, rng)
            S.estimate = lambda bgr, quad: true
            try:
                oracle, _, owrong = five_frames(rec, base, cards, where, r2)
            finally:
                S.estimate = _estimate
            c["cards"] += len(ZONES)
            c["read"] += len(reported)
            c["oracle_read"] += len(oracle)
            c["WRONG"] += wrong
            c["oracle_WRONG"] += owrong
            for z in ZONES:
                tq = np.float32(where[z])
                e = error(_estimate(first, tq), true)
                errs.append(e)
                if z in reported:
                    continue
                why = classify(rec, first, tq, cards[z], 125)
                q = found_quad(rec, first, tq)
                if q is not None and why not in ("not_found", "outline_off"):
                    plain = rec.read_quad(first, q)[0]
                    S.estimate = lambda bgr, quad: true
                    try:
                        fixed = rec.read_quad(first, q)[0]
                    finally:
                        S.estimate = _estimate
                    with_true = rec.read_quad(first, tq)[0]         # the true outline, estimated streak
                    why = ("reads1" if plain == cards[z] else "streak" if fixed == cards[z]
                           else "outline<3px" if with_true == cards[z] else why)
                    if verbose and why in ("score", "margin"):
                        for qq, name in ((q, "found"), (tq, "true")):
                            cands = ([], [])
                            S.estimate = lambda bgr, quad: true
                            try:
                                for cq, cand in zip(both_corners(qq), cands):
                                    rec.read_corner(first, cq, streak=true, cand=cand)
                            finally:
                                S.estimate = _estimate
                            print("   ", name, "corner off %.1f" % np.abs(qq - tq).max(), cands)
                why = "other" if why == "reads" else why
                if q is not None and why not in ("reads1", "streak"):
                    why += "/" + refused_at(rec, first, q, cards[z])
                c["miss:" + why] += 1
                if verbose:
                    print(deck, table, z, cards[z], why, "true %.1f,%.1f" % true,
                          "err %.1f len %+.1f ang %.0f" % e, "oracle" if z in oracle else "", flush=True)
    return c, np.float32(errs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decks", default="cardsjs,svgcards,kennard,responsive,drawn")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--surfaces", default="")
    ap.add_argument("--seed", type=int, default=0, help="added to the sweep's seeds (0: the sweep's scenes)")
    ap.add_argument("--cache", default=None, help="a directory keeping the templates between runs (of the same code)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    for deck in a.decks.split(","):
        c, e = run(deck, a.trials, a.verbose, a.surfaces.split(",") if a.surfaces else [], a.seed, a.cache)
        print(f"{deck}: read {c['read']}/{c['cards']} (wrong {c['WRONG']}), with the true streak "
              f"{c['oracle_read']} (wrong {c['oracle_WRONG']}); estimate within 1 px {np.mean(e[:, 0] <= 1):.0%}, "
              f"median error {np.median(e[:, 0]):.2f} px, |length| {np.median(abs(e[:, 1])):.2f}, "
              f"angle {np.median(e[:, 2]):.0f} deg; missed: "
              + ", ".join(f"{k[5:]} {v}" for k, v in sorted(c.items(), key=lambda x: -x[1])
                          if k.startswith("miss:")), flush=True)


if __name__ == "__main__":
    main()
