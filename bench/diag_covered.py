"""Which stage of the reader refused a missed hand card (issue 17), frame by frame: the saved
misses of `diag_hands.py --bench --save DIR` (each a scene's five noisy frames and the card's
true quad) read again with the reader's steps wrapped, and every call whose quad's index corner
lies within 0.15 of a card width of one of the card's two true index corners logged with its
answer: read_corner (card, score; strict or not), _read_quad (whole-card path), _of_deck (a top
card's deck check), _corner_of_deck (the covered card's strips: its score against
CORNER_FACE_MIN) and its twin guard (_covered_twins_apart, _suit_blurred_apart), and the
frame's final answer. Diagnosis only.

Usage: .venv/bin/python bench/diag_covered.py --deck svgcards --place 1 DIR/*.npz"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import scene  # noqa: E402
from drivers.camera.deckprint import CORNER_FACE_MIN, corner_face_score  # noqa: E402
from drivers.camera.index import face  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402


def wrap(rec, log, near):
    """Wraps the reader's steps of `rec` (its instance attributes) to append to `log` what they
    answered for quads `near(quad)` names (a label) or all when near is None."""
    def hook(name, fmt, at=1):
        f = getattr(rec, name)

        def inner(*a, **k):
            r = f(*a, **k)
            quad = a[at] if len(a) > at else k.get("quad")
            lab = near(quad) if quad is not None else None
            if lab:
                log.append((lab, name, fmt(r, a, k)))
            return r
        setattr(rec, name, inner)
    hook("read_corner", lambda r, a, k: f"{r[0]} {r[1]:.3f} strict={k.get('strict', False)}")
    hook("_read_quad", lambda r, a, k: f"card={r[0]} foreign={r[2]}")
    hook("_of_deck", lambda r, a, k: f"{a[2]} -> {r} hidden={len(k.get('hidden', ()))}")

    def cod(r, a, k):
        card = a[2]
        f = face(a[0], a[1])
        return f"{card} strips {corner_face_score(f, rec.t.faces[card]):.3f} (min {CORNER_FACE_MIN}) -> {r}"
    hook("_corner_of_deck", cod)
    hook("_covered_twins_apart", lambda r, a, k: f"{a[0]} -> {r} bare={rec._strips_bare(a[0])}", 2)
    hook("_suit_blurred_apart", lambda r, a, k: f"{a[0]} -> {r}", 2)
    # _read_occluded: its first argument after bgr is the quad
    hook("_read_occluded", lambda r, a, k: f"-> {r[0]} {r[2]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deck", required=True)
    ap.add_argument("--place", type=int, default=0, help="the deck's place in bench_hands' --decks")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--width", type=int, default=125)
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    rec = VisualRecognizer(cm.reference_templates(a.deck, seed=a.seed + a.place, width=a.width))
    w = rec.t.card_size[0]
    for path in a.files:
        d = np.load(path)
        card, tq = str(d["card"]), np.float32(d["quad"])
        ends = {"tl": tq[0], "br": tq[2]}

        def near(q):
            c = np.float32(q)[0]
            for lab, p in ends.items():
                if np.linalg.norm(c - p) < 0.15 * w:
                    return f"{lab}@{np.linalg.norm(c - p):.1f}px"
            return None
        print(f"== {os.path.basename(path)} {card} {'top' if bool(d['top']) else 'cov'}", flush=True)
        for i, img in enumerate(d["frames"][:a.frames]):
            log = []
            r2 = VisualRecognizer.__new__(VisualRecognizer)
            r2.__dict__.update(rec.__dict__)
            wrap(r2, log, near)
            calls = []
            orig = scene.on_another

            def spy(quad, c, wholes, width):
                res = orig(quad, c, wholes, width)
                if near(quad):
                    calls.append(f"on_another {c} -> {res}")
                return res
            scene.on_another = spy
            try:
                got = r2.read_image(img)
            finally:
                scene.on_another = orig
            mine = [(c, k) for (c, q), k in zip(got, r2.kinds) if near(q) or np.linalg.norm(
                q.mean(axis=0) - tq.mean(axis=0)) < 0.2 * w]
            print(f" frame {i}: at its place {mine}")
            seen = set()
            for lab, name, what in log + [("", "", c) for c in calls]:
                key = (lab.split("@")[0], name, what)
                if key in seen:
                    continue
                seen.add(key)
                print(f"   {lab:10s} {name:22s} {what}")


if __name__ == "__main__":
    main()
