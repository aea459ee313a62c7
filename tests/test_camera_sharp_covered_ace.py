"""A sharp covered ace (issue 17, hands): an ace's face strips carry nothing but its index, so a
covered ace whose suit the index leaves thin over its twin is read only when its suit glyph beats
the twin's under the blurs it may carry (twins._suit_blurred_apart). Asked at every blur up to
2.1 px, a sharp spade and club compared with templates blurred far past the card run together
(margin 0.000-0.017 at 2.1 px), and the covered aces of bench/bench_hands.py's hands were refused
in every frame: svg-cards' As (scene 3, grey; and its Ac of scene 5 and As of scene 8) and
Responsive's As (scenes 3 and 8), each read rightly at 0.96-0.99 at its index. Now the margin is
asked at the blur the ace's rank glyph fits and one step either side (twins.FIT_STEPS): read. The
held-out Tigullio's blurred Ac read As (scene 683) stays refused (test_camera_twin_suit.py)."""
import pytest

from drivers.camera import camera_model as cm
from drivers.camera.visual import VisualRecognizer
from hunt_scenes import bench_hand_scene, judged_reads

pytestmark = pytest.mark.camera_decks      # issue 17's group (tests/conftest.py), by marker


@pytest.mark.parametrize("deck", ["svgcards", "responsive"])
def test_a_sharp_covered_ace_is_read(deck):
    rec = VisualRecognizer(cm.reference_templates(deck, seed=cm.DECKS.index(deck)))
    table, truth, frames = bench_hand_scene(deck, 3)
    assert table == "grey"
    assert [c for c, _ in truth].count("As") == 1
    wrong, right = judged_reads(rec, frames, truth)
    reads = [kind for card, kind in right if card == "As"]
    assert wrong == []
    # read covered in all five frames (the tracker needs three agreeing): in none on main
    assert reads == ["covered"] * 5, reads
