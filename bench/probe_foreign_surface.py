"""Per-frame foreign reads on one surface, cardsJS and Responsive (the same artwork, the corners cut
otherwise) each read with the other's templates, every condition, as the daemon reads
(CameraDriver and its tracker, fresh noise each of five frames): per-frame reads, tracker reports,
and each read listed. Scene s of a condition is probe_foreign_tracked.py's seed pattern
([32, s, deck, surface, condition]: scene 0 is its scene). Templates: the sweep's, from hunt_wrong's
cache of main's capture code at 4a82a88 when present (the capture never runs find.py's sized paths),
else captured.
Usage: nice -n 10 taskset -c 1 .venv/bin/python bench/probe_foreign_surface.py white 3 [CONDS] [SCENES:TEMPLATES]"""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np, cv2
cv2.setNumThreads(1)
from bench.bench_camera import ZONES, noisy
from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.driver import CameraDriver, Zones
from drivers.camera.recognize import VisualRecognizer
table, scenes = sys.argv[1], int(sys.argv[2])
only = sys.argv[3].split(",") if len(sys.argv) > 3 else cm.CONDITIONS
pairs_arg = sys.argv[4] if len(sys.argv) > 4 else None
pairs = [("responsive", "cardsjs"), ("cardsjs", "responsive")]
if pairs_arg: pairs = [tuple(pairs_arg.split(":"))]
import pickle
tm = {}
for d in ("cardsjs", "responsive"):     # the sweep's templates (main's capture code, cached)
    path = f"/tmp/diag_motion_templates/{d}-capture-2e4691f8a4d3.pickle"
    if os.path.exists(path):
        with open(path, "rb") as f:
            tm[d] = pickle.load(f)
    else:
        tm[d] = cm.reference_templates(d, seed=cm.DECKS.index(d))
si = cm.SURFACES.index(table)
for sd, td in pairs:
    frames = reads = seen = 0
    events = []
    for ci, cond in enumerate(cm.CONDITIONS):
        if cond not in only: continue
        for s in range(scenes):
            rng = np.random.default_rng([32, s, cm.DECKS.index(sd), si, ci])
            cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
            base, where = cm.table_frame(sd, cards, ZONES, table, cond, rng)
            d = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=VisualRecognizer(tm[td]))
            r2 = np.random.default_rng([5, s, ci])
            for i in range(5):
                got = d.read_frame(noisy(base, r2))
                frames += 1
                for z, cs in got.items():
                    reads += len(cs)
                    if cs:
                        events.append((cond, s, i, z, cs))
                    for ev, c in d.tracker.update(z, cs):
                        if ev == "seen":
                            seen += 1
    print(f"{sd} scenes by {td} templates on {table}: {frames} frames, {reads} foreign reads per frame, "
          f"{seen} tracker reports; {events}", flush=True)
