"""Another deck of the same artwork where the paper barely stands above the table (issue 17,
foreign37): cardsJS' templates (corners cut round) read Responsive's Kc (cut square) on the white
table in three frames in a row and the daemon's tracker reported it
(bench/probe_foreign_surface.py white, shadow scene 1, seat 6). Two of its corners stood 12-14
grey levels above the table and measured round (2.4-3.8), the two others square (1.4-1.6 at 37
levels, -0.6 to -0.9 at 17); their plain median passed the round cut. Now a cut deck's corners
measured at half the card's best-measured corner's contrast or more (rounding.roundings) must tell
its cut too."""
import numpy as np
import pytest

from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.driver import CameraDriver, Zones
from drivers.camera.rounding import WELL, well_measured
from drivers.camera.synth import default_zones
from drivers.camera.visual import VisualRecognizer

ZONES = default_zones()


def _frames(deck, table, cond, scene, n=5):
    """bench/probe_foreign_surface.py's scene `scene` and its n noisy frames (the same seeds)."""
    ci = cm.CONDITIONS.index(cond)
    rng = np.random.default_rng([32, scene, cm.DECKS.index(deck), cm.SURFACES.index(table), ci])
    cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
    base, where = cm.table_frame(deck, cards, ZONES, table, cond, rng)
    r2 = np.random.default_rng([5, scene, ci])
    frames = [np.clip(base.astype(np.int16) + r2.integers(-3, 4, base.shape), 0, 255).astype(np.uint8)
              for _ in range(n)]
    return cards, frames


def test_responsives_kc_in_shadow_on_white_is_not_read_by_cardsjs_templates():
    cards, frames = _frames("responsive", "white", "shadow", 1)
    assert cards["seat_6"] == "Kc"
    d = CameraDriver(iter([]), Zones(ZONES), "visual",
                     recognizer=VisualRecognizer(cm.reference_templates("cardsjs", seed=cm.DECKS.index("cardsjs"))))
    read, reported = [], []
    for f in frames:
        got = d.read_frame(f)
        read += [c for cs in got.values() for c in cs]
        for z, cs in got.items():
            reported += d.tracker.update(z, cs)
    assert read == [] and reported == [], (read, reported)     # Kc in frames 2-4 and reported before


@pytest.mark.parametrize("seed", range(200))
def test_corners_measured_alike_give_the_plain_median_and_worse_ones_say_nothing(seed):
    """Corners whose contrasts lie within WELL of the best give the plain median (a light grey or
    felt table: nothing changes there); a corner under WELL of the best changes nothing
    whatever it measures."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    v = list(rng.normal(2, 2, n))
    best = float(rng.uniform(30, 110))
    alike = list(rng.uniform(WELL * best, best, n))
    alike[0] = best
    assert well_measured(v, alike) == pytest.approx(float(np.median(v)))
    worse = float(rng.uniform(12, WELL * best - 1e-6))
    for odd in rng.normal(2, 4, 5):
        assert well_measured(v + [float(odd)], alike + [worse]) == well_measured(v, alike)
