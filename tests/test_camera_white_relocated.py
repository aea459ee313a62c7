"""A whole card read at both index corners but refused by the deck check on its found outline is
read again on its index corners located on their own edges (scene.read_image,
RELOCATE_REFUSED), as an outline that read nothing already was, when the card moves
(smear.streaked, as the retry on its smeared edges asks). On a white table a moving card's
smeared edge falls too little to refine its outline onto, which stays 3-4 px off: the face, the
index place or the proportions failed on it in every frame (bench/diag_white_refusals.py). The
replayed frames are the deck sweep's (bench_camera.py --surfaces white, the motion condition:
its seed and templates)."""
import numpy as np
import pytest

from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera import scene
from drivers.camera.driver import CameraDriver, Zones
from drivers.camera.synth import default_zones
from drivers.camera.visual import VisualRecognizer

ZONES = default_zones()


def sweep_frame(deck, table, cond, frame):
    """bench_camera.deck_sweep's scene of `table` and `cond` (one trial), its noisy `frame`."""
    rng = np.random.default_rng(1000 * cm.SURFACES.index(table) + cm.CONDITIONS.index(cond))
    cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
    base, _ = cm.table_frame(deck, cards, ZONES, table, cond, rng)
    for _ in range(frame + 1):
        img = np.clip(base.astype(np.int16) + rng.integers(-3, 4, base.shape), 0, 255).astype(np.uint8)
    return img, cards


@pytest.mark.parametrize("deck,zone,card", [("svgcards", "seat_3", "Ac"), ("cardsjs", "seat_2", "Jc")])
def test_a_moving_card_refused_on_its_outline_is_read_on_its_located_corners(monkeypatch, deck, zone, card):
    rec = VisualRecognizer(cm.reference_templates(deck, seed=cm.DECKS.index(deck)))
    img, cards = sweep_frame(deck, "white", "motion", 0)
    assert cards[zone] == card

    def read():
        got = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=rec).read_frame(img)
        assert all(c == cards[z] for z, cs in got.items() for c in cs), got     # nothing wrong
        return got[zone]

    assert read() == [card]
    monkeypatch.setattr(scene, "RELOCATE_REFUSED", False)      # main's reading: refused
    assert read() == []
