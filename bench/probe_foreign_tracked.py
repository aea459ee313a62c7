"""Review probe (review32): one scene of bench/probe_smeared_foreign.py (seed 0, scene 0) through the
daemon's CameraDriver and tracker, five noisy frames: whether another deck's card is reported.
Usage: .venv/bin/python bench/probe_foreign_tracked.py responsive cardsjs white defocus"""
import sys, os
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, HERE); sys.path.insert(0, os.path.join(HERE, "bench"))
import numpy as np, cv2
cv2.setNumThreads(1)
from bench.bench_camera import ZONES, noisy
from bench.hunt_wrong import templates
from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.driver import CameraDriver, Zones
from drivers.camera.recognize import VisualRecognizer
sd, td, table, cond = sys.argv[1:5]
si = cm.SURFACES.index(table)
rng = np.random.default_rng([32, 0, cm.DECKS.index(sd), si, cm.CONDITIONS.index(cond)])
cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
base, where = cm.table_frame(sd, cards, ZONES, table, cond, rng)
d = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=VisualRecognizer(templates(td)))
rep = []
r2 = np.random.default_rng(5)
for i in range(5):
    got = d.read_frame(noisy(base, r2))
    for z, cs in got.items():
        for ev, c in d.tracker.update(z, cs):
            rep.append((i, ev, z, c))
    print(i, {z: cs for z, cs in got.items() if cs})
print("tracker events:", rep)
