"""A foreign card read per frame (bench/probe_foreign_surface.py's scenes: SCENES deck's cards read
with TEMPLATES deck's templates, fresh noise each of five frames): which path read it, and what the
deck check's corners' cut saw. Per frame and per card found near ZONE: the path (VisualRecognizer
.kinds), each corner's rounding (rounding.corners_rounding), the median the check judges, the
card's estimated blur and the check's verdict; and each corner patch's grey levels as rounding.py
takes them (the table beyond the card, the paper) with the darkest level just beyond the edge
(the card's contact shadow on the table): where that lies far under the table's level, the mid
level rounding.py crosses sits high on the edge's rise, where a blurred square corner looks round.

Usage: nice -n 10 .venv/bin/python bench/diag_foreign_corners.py responsive cardsjs white shadow 1 seat_6 [--cpu 1]
(issue 17: the one per-frame foreign tracker report, docs/camera.md "per-frame foreign")"""
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm, deckprint, rounding as R  # noqa: E402
from drivers.camera.driver import CameraDriver, Zones  # noqa: E402
from drivers.camera.index import CH, CW  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402


def levels(bgr, quad):
    """Per corner (as rounding.corners_rounding turns it): (table beyond, darkest just beyond the
    edge, paper), grey levels as rounding.py samples them."""
    out = []
    for k in range(4):
        q = np.float32(quad)[R._TURNED[k]]
        w, h = (CW, CH) if k % 2 == 0 else (CH, CW)
        m = cv2.getPerspectiveTransform(q, np.float32([[R.P, R.P], [w + R.P, R.P], [w + R.P, h + R.P], [R.P, h + R.P]]))
        g = cv2.cvtColor(cv2.warpPerspective(bgr, m, (R.L + 2 * R.P, R.L + 2 * R.P), flags=cv2.INTER_LINEAR,
                                             borderMode=cv2.BORDER_REPLICATE), cv2.COLOR_BGR2GRAY).astype(np.float32)
        paper = float(np.percentile(g[R.P + 2:, R.P + 2:], 90))
        table = float(np.median(np.concatenate([g[:, :R.P - 3].ravel(), g[:R.P - 3].ravel()])))
        # along each side, away from the corner: the darkest column/row profile between table and paper
        halo = min(float(np.median(g[R.P + 6:, R.P - 4:R.P + 3], axis=0).min()),
                   float(np.median(g[R.P - 4:R.P + 3, R.P + 6:], axis=1).min()))
        out.append((round(table), round(halo), round(paper)))
    return out


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("scenes", "templates", "surface", "condition"):
        ap.add_argument(name)
    ap.add_argument("scene", type=int)
    ap.add_argument("zone")
    ap.add_argument("--cpu", type=int, default=None)
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    sd, td, table, cond, s, zone = a.scenes, a.templates, a.surface, a.condition, a.scene, a.zone
    cv2.setNumThreads(1)
    ci, si = cm.CONDITIONS.index(cond), cm.SURFACES.index(table)
    rng = np.random.default_rng([32, s, cm.DECKS.index(sd), si, ci])
    cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
    base, where = cm.table_frame(sd, cards, ZONES, table, cond, rng)
    from bench.hunt_wrong import templates
    rec = VisualRecognizer(templates(td))
    p = rec.t.print
    print(f"{sd}'s {cards[zone]} at {zone} read with {td}'s templates: learned rounding {p.rounding:.2f} "
          f"+- {p.rounding_tol:.2f}, cut {p.cut()}")
    centre = np.float32(where[zone]).mean(axis=0)
    seen = []
    plain = deckprint.DeckPrint.matches

    def matches(self, r, shifts, sigma=None):
        v = plain(self, r, shifts, sigma)
        seen.append((r, sigma, v, [round(float(x), 2) for x in shifts]))
        return v
    deckprint.DeckPrint.matches = matches
    d = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=rec)
    r2 = np.random.default_rng([5, s, ci])
    for i in range(5):
        f = noisy(base, r2)
        seen.clear()
        got = d.read_frame(f)
        kinds = [(c, k) for (c, q), k in zip(rec.read_image(f), rec.kinds)
                 if np.linalg.norm(np.float32(q).mean(axis=0) - centre) < 30]
        events = d.tracker.update(zone, got.get(zone, []))
        print(f"frame {i}: read at {zone} {got.get(zone, [])} by {kinds}; tracker {events}")
        from drivers.camera.find import find_cards
        for q in find_cards(f, rec.t.card_size):
            if np.linalg.norm(np.float32(q).mean(axis=0) - centre) < 30:
                per = R.corners_rounding(f, q, (CW, CH))
                print(f"  outline: corners {[round(float(x), 2) for x in per]}, median {R.rounding(f, q, (CW, CH)):.2f}; "
                      f"blur {rec.defocus_of(f, q)}; (table, beside the edge, paper) {levels(f, q)}")


if __name__ == "__main__":
    main()
