"""Why cards under motion blur and defocus are missed at the table's scale (issue 17): the deck
sweep's frames (bench_camera.deck_sweep: the same seeds), and for each card not reported within
five frames, the first step that failed in its first frame. Diagnosis only.

  not_found   no outline found at the card
  outline_off an outline, but an index corner more than 3 px from the card's
  colour      an index corner's ink colour undecided
  score       a corner's best rank or suit under the threshold
  margin      a corner's rank or suit within the margin of the next
  disagree    the two corners read two cards
  face        both corners read the card, its face under the face check
  deck_check  the face passed, the fingerprint (rounding, index place) did not
  other       read in the first frame, yet not in three of five
'true:' the same classes when the card's true outline is read.

Usage: .venv/bin/python bench/diag_motion.py --decks cardsjs --conditions motion"""
import argparse
import collections
import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from bench.diag_hands import corner_detail  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import index as V  # noqa: E402
from drivers.camera.deckprint import SMALL, rounding  # noqa: E402
from drivers.camera.find import find_cards  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.templates import index_shift  # noqa: E402
from drivers.camera.tracker import ZoneTracker  # noqa: E402

CACHE = "/tmp/diag_motion_templates"


def _code():
    """A digest of the camera code: templates cached by other code (another branch, an older
    commit) are not these (a stale cache once made this disagree with the sweep: 49 vs 43)."""
    import glob
    import hashlib
    h = hashlib.sha256()
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "drivers", "camera")
    for name in sorted(glob.glob(os.path.join(here, "*.py"))):
        with open(name, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:12]


def templates(deck):
    """reference_templates(deck, seed as the sweep's), kept on disk between runs for this camera
    code (pickled: the saved format rounds the indexes to bytes)."""
    path = os.path.join(CACHE, f"{deck}-{_code()}.pickle")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    t = cm.reference_templates(deck, seed=cm.DECKS.index(deck))
    os.makedirs(CACHE, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(t, f)
    return t


def found_quad(rec, bgr, tq):
    """The outline find_cards finds at the card's true quad `tq`, its corners in the card's order."""
    c = tq.mean(axis=0)
    near = [q for q in find_cards(bgr, rec.t.card_size) if np.linalg.norm(q.mean(axis=0) - c) < 25]
    if not near:
        return None
    q = near[0]
    k = min(range(4), key=lambda k: max(np.linalg.norm(q[k] - tq[0]), np.linalg.norm(q[(k + 2) % 4] - tq[2])))
    return np.roll(q, -k, axis=0)


def whole(rec, bgr, quad, card):
    """The cause a whole card at `quad` is refused, or 'reads'."""
    got = [corner_detail(rec, bgr, q, need=rec.threshold) for q in both_corners(quad)]
    for k in ("colour", "score", "margin"):
        if any(g[0] == k for g in got):
            return k
    if got[0][1] != got[1][1]:
        return "disagree"
    face_min = V.FACE_MIN if rec.t.card_size[0] >= SMALL else V.FACE_MIN_SMALL
    if V.face_score(V.face(bgr, quad), rec.t.faces[got[0][1]]) < face_min:
        return "face"
    c = got[0][1]
    if not rec.t.print.matches(rounding(bgr, quad, (V.CW, V.CH)),
                               [index_shift(rec.t, bgr, q, c) for q in both_corners(quad)]):
        return "deck_check"
    return "reads" if c == card else "WRONG"


def classify(rec, bgr, tq, card, width):
    quads = find_cards(bgr, rec.t.card_size)
    c = tq.mean(axis=0)
    near = [q for q in quads if np.linalg.norm(q.mean(axis=0) - c) < 0.2 * width]
    if not near:
        return "not_found"
    q = near[0]
    # the outline's corner order matched to the card's: the rotation putting its index corners nearest
    k = min(range(4), key=lambda k: max(np.linalg.norm(q[k] - tq[0]), np.linalg.norm(q[(k + 2) % 4] - tq[2])))
    off = max(np.linalg.norm(q[k] - tq[0]), np.linalg.norm(q[(k + 2) % 4] - tq[2]))
    if off > 3:
        return "outline_off"
    return whole(rec, bgr, np.roll(q, -k, axis=0), card)


def five_frames(rec, base, cards, where, rng):
    """The sweep's five frames of one scene (fresh sensor noise each), read by `rec` and tracked
    per zone as the driver does: (the zones whose card was reported, the first frame, the cards
    read wrongly near a zone's card)."""
    tracker = ZoneTracker(3, 8)
    reported, first, wrong = set(), None, 0
    for i in range(5):
        img = noisy(base, rng)
        first = img if first is None else first
        got = rec.read_image(img)
        for z in ZONES:
            tq = np.float32(where[z])
            cs = [c for c, q in got if np.linalg.norm(tq.mean(axis=0) - q.mean(axis=0)) < 25]
            wrong += sum(c != cards[z] for c in cs)
            reported |= {z for ev, c in tracker.update(z, cs) if ev == "seen" and c == cards[z]}
    return reported, first, wrong


def run(deck, conditions, trials, verbose):
    rec = VisualRecognizer(templates(deck))
    causes = collections.Counter()
    for si, table in enumerate(cm.SURFACES):
        for cond in conditions:
            rng = np.random.default_rng(1000 * si + cm.CONDITIONS.index(cond))
            for k in range(trials):
                cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
                base, where = cm.table_frame(deck, cards, ZONES, table, cond, rng)
                reported, first, wrong = five_frames(rec, base, cards, where, rng)
                causes[cond, "WRONG"] += wrong
                for z in ZONES:
                    causes[cond, "cards"] += 1
                    if z in reported:
                        causes[cond, "read"] += 1
                        continue
                    tq = np.float32(where[z])
                    why = classify(rec, first, tq, cards[z], 125)
                    why = "other" if why == "reads" else why
                    true = whole(rec, first, tq, cards[z])
                    causes[cond, why] += 1
                    causes[cond, "true:" + true] += 1
                    if verbose:
                        print(deck, table, cond, z, cards[z], why, "true:", true, flush=True)
    return causes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decks", default="cardsjs,svgcards,kennard,responsive,synth")
    ap.add_argument("--conditions", default="motion,defocus")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    conds = a.conditions.split(",")
    for deck in a.decks.split(","):
        causes = run(deck, conds, a.trials, a.verbose)
        for cond in conds:
            got = {k[1]: v for k, v in causes.items() if k[0] == cond}
            print(f"{deck} {cond}: read {got.get('read', 0)}/{got['cards']}, wrong {got.get('WRONG', 0)}; missed: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(got.items(), key=lambda x: -x[1])
                              if k not in ("read", "cards", "WRONG")), flush=True)


if __name__ == "__main__":
    main()
