"""Why moving and defocused cards are missed at the table's scale (issue 17), through the reader's
whole path (plain read, blurred reads, deck check), per frame: the deck sweep's scenes
(bench_camera.deck_sweep's seeds, five frames each with fresh noise), and for each card the
tracker does not report, each frame's cause at the outline found (and at the card's true one).

  read         the frame read the card (a miss with reads in 1-2 frames is 'flaky')
  not_found    no outline found at the card
  ink          neither index corner's ink colour is decided
  weak         the plain read's best corner under visual.BLURRED_MIN: no blurred read tried
  corners      the blurred reads do not read one card at both corners (`sub`: what each read)
  twin         read blurred, the face not the suit's by FACE_SUIT over its twin
  proportions, face, twins, rounding, cut, place: the deck check's step that refused it
  other        read by none of the above yet not in the frame's read (a retry's bookkeeping)

Usage: .venv/bin/python bench/diag_blur.py --decks svgcards --conditions motion [--verbose]"""
import argparse
import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from bench.diag_motion import found_quad, templates  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import index as V  # noqa: E402
from drivers.camera.deckprint import SMALL, proportioned, rounding  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera import smear  # noqa: E402
from drivers.camera.indexplace import placed_shift  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.tracker import ZoneTracker  # noqa: E402


def deck_step(rec, bgr, quad, card, grays):
    """The deck check's first step (visual._of_deck's order) that refuses `card` at `quad`, or None."""
    if not proportioned(quad, rec.t.card_size):
        return "proportions"
    f = V.face(bgr, quad)
    fmin = V.FACE_MIN if rec.t.card_size[0] >= SMALL else V.FACE_MIN_SMALL
    if V.face_score(f, rec.t.faces[card]) < fmin:
        return "face"
    if not rec._twins_apart(card, grays, both_corners(quad), f):
        return "twins"
    p = rec.t.print
    r = rounding(bgr, quad, (V.CW, V.CH))
    if np.isnan(r) or abs(r - p.rounding) > p.rounding_tol:
        return f"rounding:{r:.2f}/{p.rounding:.2f}+-{p.rounding_tol:.2f}"
    shifts = [placed_shift(rec.t, bgr, q, card, grays.get(np.float32(q).tobytes())) for q in both_corners(quad)]
    if not p.card_matches(bgr, quad, (V.CW, V.CH), [0.0, 0.0], blur=rec._blur_for_cut(bgr, quad)):
        return "cut"
    if min(shifts) > p.shift_tol:
        return "place"
    return None


def _retry(rec, bgr, quad):
    """The smear retry's gate (smear.fits: the streak's fit less the best round blur's) and what
    the card reads on its edges' middle (scene._smeared)."""
    f = smear.fits(rec, bgr, quad)
    m = rec._smeared(bgr, quad)
    return (f" fit={f[0] - f[1]:+.3f}" if f else " fit=-") + f" mid={m[0] if m else None}"


def why(rec, bgr, quad, card):
    """The cause `card` at `quad` is not read whole (module doc), with a detail string."""
    grays, short = {}, []
    (a, ca), (b, cb) = (rec.read_corner(bgr, q, keep=grays, short=short) for q in both_corners(quad))
    if a and b and a == b:
        step = deck_step(rec, bgr, quad, a, grays)
        step, _, det = (step or "other").partition(":")
        return step, f"plain {a} {det}{_retry(rec, bgr, quad) if step != 'other' else ''}" + ("" if a == card else " WRONG")
    if a and b:
        return "disagree", f"{a}/{b}"
    if max(ca, cb) < V.BLURRED_MIN:
        return ("ink" if ca == cb == 0.0 else "weak"), f"{ca:.2f}/{cb:.2f} plain {a}/{b}"
    g2 = {}
    got = rec._read_streaked(bgr, quad, g2)
    if not got:
        return "corners", f"plain {a}/{b} {ca:.2f}/{cb:.2f}"
    if (a or b) and got != (a or b):
        return "disagree", f"plain {a or b} blurred {got}"
    if not rec._face_over_twin(V.face(bgr, quad), got, V.FACE_SUIT):
        return "twin", got
    step = deck_step(rec, bgr, quad, got, g2)
    step, _, det = (step or "other").partition(":")
    return step, f"blurred {got} {det}{_retry(rec, bgr, quad) if step != 'other' else ''}" + ("" if got == card else " WRONG")


def run(deck, conditions, surfaces, trials, verbose):
    rec = VisualRecognizer(templates(deck))
    causes = collections.Counter()
    for si, table in enumerate(cm.SURFACES):
        if surfaces and table not in surfaces:
            continue
        for cond in conditions:
            rng = np.random.default_rng(1000 * si + cm.CONDITIONS.index(cond))
            for k in range(trials):
                cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
                base, where = cm.table_frame(deck, cards, ZONES, table, cond, rng)
                tracker = ZoneTracker(3, 8)
                reported, frames, reads = set(), [], collections.defaultdict(list)
                for i in range(5):
                    img = noisy(base, rng)
                    frames.append(img)
                    got = rec.read_image(img)
                    for z in ZONES:
                        tq = np.float32(where[z])
                        cs = [c for c, q in got if np.linalg.norm(tq.mean(axis=0) - q.mean(axis=0)) < 25]
                        reads[z].append(cs)
                        causes[cond, "WRONG"] += sum(c != cards[z] for c in cs)
                        reported |= {z for ev, c in tracker.update(z, cs) if ev == "seen" and c == cards[z]}
                for z in ZONES:
                    causes[cond, "cards"] += 1
                    if z in reported:
                        causes[cond, "read"] += 1
                        continue
                    tq = np.float32(where[z])
                    per = []
                    for i, img in enumerate(frames):
                        if cards[z] in reads[z][i]:
                            per.append(("read", ""))
                            continue
                        q = found_quad(rec, img, tq)
                        per.append(("not_found", "") if q is None else why(rec, img, q, cards[z]))
                    n_read = sum(p[0] == "read" for p in per)
                    main = collections.Counter(p[0] for p in per if p[0] != "read").most_common(1)[0][0]
                    main = "flaky:" + main if n_read else main
                    true = why(rec, frames[0], tq, cards[z])
                    causes[cond, main] += 1
                    causes[cond, "true:" + true[0]] += 1
                    if verbose:
                        print(deck, table, cond, k, z, cards[z], main, "|", "; ".join(
                            f"{c}({d})" if d else c for c, d in per), "| true:", *true, flush=True)
    return causes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decks", default="svgcards,responsive,synth")
    ap.add_argument("--conditions", default="motion,defocus")
    ap.add_argument("--surfaces", default="")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    conds = a.conditions.split(",")
    surfaces = [s for s in a.surfaces.split(",") if s]
    for deck in a.decks.split(","):
        causes = run(deck, conds, surfaces, a.trials, a.verbose)
        for cond in conds:
            got = {k[1]: v for k, v in causes.items() if k[0] == cond}
            print(f"{deck} {cond}: read {got.get('read', 0)}/{got['cards']}, wrong {got.get('WRONG', 0)}; missed: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(got.items(), key=lambda x: -x[1])
                              if k not in ("read", "cards", "WRONG")), flush=True)


if __name__ == "__main__":
    main()
