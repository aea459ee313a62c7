"""Why cards on one table surface are missed (issue 17): bench_camera.py's deck sweep frames (the
same seeds) of one surface, and for each card not reported within five frames its cause in the
first frame:

- cut: the card reaches beyond the frame (refused by design: part of a card)
- not_found: no outline centred on the card (nor a blob holding it)
- outline_off: an outline, but an index corner of it lies > 3 px from the card's (the detail
  gives what that outline's read stopped at: svg-cards' outline lies on the inside of its printed
  border, 1.8 px in at each side on every surface, 2.5-3.8 px at the corners)
- colour: an index corner's ink colour undecided
- index: an index corner scores under the threshold
- margin: an index corner scores, but another rank or suit comes within the margin
- face: both corners read the card, its face is under the deck's face threshold
- deck: the face passes, the fingerprint (rounding, index shift) does not (the detail gives the
  card's rounding against the learned window, and the index shift's tolerance)
- other: the first frame's outline reads the card (missed in later frames)

With the card's true outline the same steps are tried ("truth: ..."): what a perfect finder
would leave. Usage:
    diag_surface.py --surface white --decks cardsjs,svgcards [--conditions clean,rotation] [-v]
    (--surface all: every surface in turn, the deck sweep's frames)"""
import argparse
import collections
import functools
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import index as ix  # noqa: E402
from drivers.camera.driver import CameraDriver, Zones  # noqa: E402
from drivers.camera.deckprint import SMALL  # noqa: E402
from drivers.camera.rounding import rounding  # noqa: E402
from drivers.camera.find import find_cards  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.tracker import ZoneTracker  # noqa: E402


def _off(q, tq):
    """The larger of the two index corners' distances (either way round)."""
    return min(max(np.linalg.norm(q[i] - tq[0]), np.linalg.norm(q[(i + 2) % 4] - tq[2])) for i in range(4))


def steps(rec, img, q, card):
    """The first step refusing `card` on outline `q`, or 'other' when it reads."""
    got, _ = rec.read_quad(img, q)
    if got == card:
        return "other", ""
    detail = []
    reads = []
    for c in both_corners(q):
        patch = ix.corner(img, c, rec.t.box, ix.SEARCH)
        colour = ix._ink(patch[ix.SEARCH:-ix.SEARCH, ix.SEARCH:-ix.SEARCH])[2]
        r, conf = rec.read_corner(img, c)
        reads.append((r, conf, colour))
        detail.append(f"{r}/{conf:.2f}/{colour}")
    for r, conf, colour in reads:
        if colour is None:
            return "colour", " ".join(detail)
    for r, conf, colour in reads:
        if r is None and conf < rec.threshold:
            return "index", " ".join(detail)
    for r, conf, colour in reads:
        if r is None:
            return "margin", " ".join(detail)
    if any(r != card for r, _, _ in reads):
        return "wrong_corner", " ".join(detail)
    face_min = ix.FACE_MIN if rec.t.card_size[0] >= SMALL else ix.FACE_MIN_SMALL
    fs = ix.face_score(ix.face(img, q), rec.t.faces[card])
    detail.append(f"face {fs:.3f}")
    if fs < face_min:
        return "face", " ".join(detail)
    p = rec.t.print
    detail.append(f"rounding {rounding(img, q, (ix.CW, ix.CH)):.2f} (learned {p.rounding:.2f} +- {p.rounding_tol:.2f}),"
                  f" shift tolerance {p.shift_tol:.2f}")
    return "deck", " ".join(detail)


def classify(rec, img, tq, card, width):
    h, w = img.shape[:2]
    beyond = max(-tq.min(), tq[:, 0].max() - (w - 1), tq[:, 1].max() - (h - 1))
    if tq.min() < -2 or tq[:, 0].max() > w + 1 or tq[:, 1].max() > h + 1:
        # beyond the frame: no card, by design (find_cards)
        return "cut", "", f"beyond the frame by {beyond:.0f} px"
    quads, blobs = find_cards(img, rec.t.card_size, with_blobs=True)
    c = tq.mean(axis=0)
    near = [q for q in quads if np.linalg.norm(q.mean(axis=0) - c) < 0.2 * width]
    truth = steps(rec, img, tq, card)[0]
    if not near:
        inblob = any(cv2.pointPolygonTest(b.reshape(-1, 1, 2), (float(c[0]), float(c[1])), False) >= 0
                     for b in blobs)
        return ("not_found_blob" if inblob else "not_found"), truth, ""
    q = min(near, key=lambda q: _off(q, tq))
    off = _off(q, tq)
    if off > 3:
        found, detail = steps(rec, img, q, card)
        return "outline_off", truth, f"off {off:.1f} (on it: {found} {detail})"
    cause, detail = steps(rec, img, q, card)
    return cause, truth, f"off {off:.1f} " + detail


@functools.lru_cache(maxsize=None)
def _templates(deck, seed):
    """A deck's templates, captured once for every surface."""
    return cm.reference_templates(deck, seed=seed)


def run(deck, seed, surface, conditions, trials, verbose, scenes=None):
    rec = VisualRecognizer(_templates(deck, seed))
    d = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=rec)
    si = cm.SURFACES.index(surface)
    out = {}
    for cond in conditions:
        # the sweep's seed, or (--scenes N) other scenes than the sweep's, to fix on without its frames
        key = 1000 * si + cm.CONDITIONS.index(cond)
        rng = np.random.default_rng(key if scenes is None else (scenes, key))
        causes = collections.Counter()
        for k in range(trials):
            cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
            base, where = cm.table_frame(deck, cards, ZONES, surface, cond, rng)
            tracker = ZoneTracker(3, 8)
            reported, first = set(), None
            for i in range(5):
                img = noisy(base, rng)
                first = img if first is None else first
                got = d.read_frame(img)
                for z in ZONES:
                    cs = got.get(z, [])
                    causes["WRONG"] += sum(c != cards[z] for c in cs)
                    reported |= {z for ev, c in tracker.update(z, cs) if ev == "seen" and c == cards[z]}
            for z in ZONES:
                if z in reported:
                    causes["read"] += 1
                    continue
                cause, truth, detail = classify(rec, first, np.float32(where[z]), cards[z], 125)
                causes[cause] += 1
                causes["truth:" + truth] += 1
                if verbose:
                    print(f"  {deck} {cond} {z} {cards[z]}: {cause} (truth {truth}) {detail}", flush=True)
        out[cond] = causes
        print(f"{deck} {surface} {cond}: " + ", ".join(f"{k} {v}" for k, v in sorted(causes.items())), flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--surface", default="white", choices=cm.SURFACES + ("all",))
    from cli_args import names, parse, positive   # strict: a typo is a usage error
    ap.add_argument("--decks", type=names(cm.DECKS, "deck"), default=",".join(cm.DECKS))
    ap.add_argument("--conditions", type=names(cm.CONDITIONS, "condition"), default=",".join(cm.CONDITIONS))
    ap.add_argument("--trials", type=positive, default=1)
    ap.add_argument("--scenes", type=int, default=None, help="other scenes than the sweep's (a seed)")
    ap.add_argument("-v", action="store_true")
    a = parse(ap)
    cv2.setNumThreads(1)
    total = collections.Counter()
    for deck in a.decks.split(","):
        mine = collections.Counter()
        for surface in cm.SURFACES if a.surface == "all" else (a.surface,):
            res = run(deck, cm.DECKS.index(deck), surface, a.conditions.split(","), a.trials, a.v, a.scenes)
            mine = sum(res.values(), mine)
        total.update(mine)
        print(f"{deck} total: " + ", ".join(f"{k} {v}" for k, v in sorted(mine.items())), flush=True)
    print("all: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))


if __name__ == "__main__":
    main()
