"""Why cards under defocus are missed at the table's scale (issue 17), and how well the blur is
estimated from the card: the deck sweep's defocus frames (bench_camera.deck_sweep: the same
seeds), each card's true blur (the camera model's sigma, recorded as it draws the frame), its
estimate (visual.VisualRecognizer.defocus_of), and for each card not reported within five
frames the first step of its blurred read that failed on its first frame, on the outline found
(or the true one), at the reader's blur and at a grid of blurs. Diagnosis only.

  corners   the two corners do not read one card against the blurred indexes
  WRONG     they read another card (the face and fingerprint decide after)
  twin      the face is not more like the card than like its twin suit's by FACE_SUIT
  deck      the face or the fingerprint refuses it
  ok        the blurred read passes

Usage: .venv/bin/python bench/diag_defocus.py --decks cardsjs,tigullio [--verbose] [--out F.json]"""
import argparse
import collections
import json
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES  # noqa: E402
from bench import diag_motion  # noqa: E402
from bench.diag_motion import classify, five_frames, found_quad, templates  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import index as V  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402

diag_motion.CACHE = "/tmp/diag_defocus_templates"    # its own: templates of this branch's code
REF = 0.65                  # the reference photos' blur: camera_model draws 0.4-0.9
GRID = (0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)


class _Cv2:
    """camera_model's cv2, its GaussianBlur's sigmas recorded (the last is the camera's)."""

    def __init__(self, real):
        self.real, self.sigmas = real, []

    def __getattr__(self, k):
        return getattr(self.real, k)

    def GaussianBlur(self, img, k, sigma, *a, **kw):   # noqa: N802
        self.sigmas.append(sigma)
        return self.real.GaussianBlur(img, k, sigma, *a, **kw)


def blurred_stage(rec, bgr, quad, card, sigma):
    """The first step of a blurred read at `sigma` (image pixels) that fails, or 'ok'."""
    grays = {}
    a, b = (rec.read_corner(bgr, q, keep=grays, streak=float(sigma))[0] for q in both_corners(quad))
    if not (a and a == b):
        return "corners"
    if a != card:
        return "WRONG"
    f = V.face(bgr, quad)
    if not rec._face_over_twin(f, a, V.FACE_SUIT):
        return "twin"
    if not rec._of_deck(bgr, quad, a, grays, f):
        return "deck"
    return "ok"


def run(deck, trials, verbose, cond="defocus"):
    proxy = _Cv2(cm.cv2)
    cm.cv2 = proxy
    rec = VisualRecognizer(templates(deck))
    rows = []
    try:
        for si, table in enumerate(cm.SURFACES):
            rng = np.random.default_rng(1000 * si + cm.CONDITIONS.index(cond))
            for k in range(trials):
                cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
                proxy.sigmas.clear()
                base, where = cm.table_frame(deck, cards, ZONES, table, cond, rng)
                sigma = float(proxy.sigmas[-1])
                reported, first, wrong = five_frames(rec, base, cards, where, rng)
                for z in ZONES:
                    tq = np.float32(where[z])
                    q = found_quad(rec, first, tq)
                    row = {"deck": deck, "table": table, "zone": z, "card": cards[z], "sigma": sigma,
                           "read": z in reported, "wrong_frame": wrong,
                           "estimate": rec.defocus_of(first, q if q is not None else tq)
                           if hasattr(rec, "defocus_of") else None}
                    if z not in reported:
                        row["plain"] = classify(rec, first, tq, cards[z], 125)
                        use = q if q is not None else tq
                        row["grid"] = {s: blurred_stage(rec, first, use, cards[z], s) for s in GRID}
                        row["true_grid"] = {s: blurred_stage(rec, first, tq, cards[z], s) for s in GRID}
                    rows.append(row)
                    if verbose and z not in reported:
                        print(json.dumps(row), flush=True)
    finally:
        cm.cv2 = proxy.real
    return rows


def estimates(deck, n, seed=0):
    """The estimate on `n` single cards of `deck` (any surface, the sweep's pose) each under a
    round blur drawn from 0.3-2.5 px (the camera model's clean photo otherwise: sensor noise and
    JPEG): [(the frame's sigma, the estimate on the true outline)]."""
    rec = VisualRecognizer(templates(deck))
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        sigma = float(rng.uniform(0.3, 2.5))
        frame = cm.surface(cm.SURFACES[i % len(cm.SURFACES)], 400, 300, rng)
        face = cm.load_deck(deck)[CARDS[int(rng.integers(52))]]
        q = cm.pose(rng, "clean", (200, 150), 125, face.shape[0] / face.shape[1])
        cm.lay(frame, face, q)
        f = cv2.GaussianBlur(frame, (0, 0), sigma).astype(np.float32)
        f = np.clip(f + rng.normal(0, rng.uniform(1.5, 3.5), f.shape), 0, 255).astype(np.uint8)
        f = cv2.imdecode(cv2.imencode(".jpg", f, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(60, 91))])[1], 1)
        est = rec.defocus_of(f, q)
        if est is not None:
            out.append((sigma, est))
    return out


def report_estimates(deck, pairs):
    e = np.float32(pairs)
    rel = np.sqrt(np.maximum(e[:, 0] ** 2 - REF ** 2, 0))
    print(f"{deck}: estimate on {len(e)} cards, sigma 0.3-2.5: estimate - sqrt(sigma^2 - {REF}^2)")
    for lo in np.arange(0.3, 2.5, 0.4):
        m = (e[:, 0] >= lo) & (e[:, 0] < lo + 0.4)
        err = e[m, 1] - rel[m]
        print(f"  sigma {lo:.1f}-{lo + 0.4:.1f} ({m.sum()}): mean {err.mean():+.2f}, sd {err.std():.2f}, "
              f"max |err| {abs(err).max():.2f}; estimate {e[m, 1].min():.2f}-{e[m, 1].max():.2f}")
    m = (e[:, 0] >= 1.2) & (e[:, 0] <= 1.8)
    err = e[m, 1] - rel[m]
    print(f"  the model's defocus (sigma 1.2-1.8, {m.sum()}): mean {err.mean():+.2f}, sd {err.std():.2f}, "
          f"|err| < 0.2 {np.mean(abs(err) < 0.2):.0%}, < 0.3 {np.mean(abs(err) < 0.3):.0%}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decks", default=",".join(cm.DECKS))
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--out", default=None, help="every card's row as JSON lines")
    ap.add_argument("--estimate", type=int, default=0,
                    help="only the estimate's error on this many single cards a deck, blur drawn 0.3-2.5")
    a = ap.parse_args()
    if a.estimate:
        for deck in a.decks.split(","):
            report_estimates(deck, estimates(deck, a.estimate))
        return
    out = open(a.out, "w") if a.out else None
    for deck in a.decks.split(","):
        rows = run(deck, a.trials, a.verbose)
        if out:
            out.writelines(json.dumps(r) + "\n" for r in rows)
            out.flush()
        missed = [r for r in rows if not r["read"]]
        plain = collections.Counter(r["plain"] for r in missed)
        print(f"{deck}: read {len(rows) - len(missed)}/{len(rows)}, wrong frames "
              f"{sum({(r['table'], r['wrong_frame']) for r in rows if r['wrong_frame']} and [1])}; "
              f"plain cause: {dict(plain)}")
        for s in GRID:
            print(f"  sigma {s}: found outline {dict(collections.Counter(r['grid'][s] for r in missed))}; "
                  f"true outline {dict(collections.Counter(r['true_grid'][s] for r in missed))}")
        est = [(r["sigma"], r["estimate"]) for r in rows if r["estimate"] is not None]
        if est:
            e = np.float32(est)
            # the blur left between the frame and the reference photos (theirs 0.4-0.9, mean REF)
            rel = np.sqrt(np.maximum(e[:, 0] ** 2 - REF ** 2, 0))
            err = e[:, 1] - rel
            print(f"  estimate of {len(e)} cards: frame sigma {e[:, 0].min():.2f}-{e[:, 0].max():.2f}; "
                  f"estimate - sqrt(sigma^2 - {REF}^2): mean {err.mean():+.2f}, sd {err.std():.2f}, "
                  f"|err| < 0.2 {np.mean(abs(err) < 0.2):.0%}, < 0.3 {np.mean(abs(err) < 0.3):.0%}; "
                  f"corr with sigma {np.corrcoef(e[:, 0], e[:, 1])[0, 1]:.2f}")


if __name__ == "__main__":
    main()
