"""Light tables' hand search (find.py's blobs; issue 17's speed, bench_camera.py --speed-only
--speed-surface S): bench_camera's speed frame (cardsJS, eight separate cards, one per zone) on a
light grey or white table has no hand of overlapping cards, so no blob to search as one. The
top-hat's blobs there were table between two cards joined to their paper (its opening takes the
cards' ink for the table): 1-4 a frame, 11-48 corner hypotheses, half a white frame's time, none
read. A hand on a light table still makes blobs (of the other masks) and is read."""
import numpy as np
import pytest

from bench.bench_camera import ZONES, noisy
from bench.bench_hands import _lay_hands
from drivers.camera import camera_model as cm
from drivers.camera.find import find_cards
from drivers.camera.hands import hand_corners
from drivers.camera.visual import VisualRecognizer

CARDS = dict(zip(ZONES, ["As", "Td", "7h", "Qc", "2d", "9s", "Jh", "Kd"]))   # bench_camera's


@pytest.fixture(scope="module")
def rec():
    return VisualRecognizer(cm.reference_templates("cardsjs", seed=0))


def speed_frames(surface, n=2):
    """bench_camera.visual_speed's frame on `surface` (its seed), with fresh sensor noise."""
    rng = np.random.default_rng(0)
    base, _ = cm.table_frame("cardsjs", CARDS, ZONES, surface, "clean", rng)
    return [noisy(base, rng) for _ in range(n)]


@pytest.mark.parametrize("surface", ["light_grey", "white"])
def test_separate_cards_on_a_light_table_are_no_hand(rec, surface):
    for frame in speed_frames(surface):
        quads, blobs = find_cards(frame, rec.t.card_size, with_blobs=True)
        assert len(quads) == 8
        assert blobs == []
        assert hand_corners(frame, blobs, quads, rec.t.card_size) == []
        assert sorted(c for c, _ in rec.read_image(frame)) == sorted(CARDS.values())


@pytest.mark.parametrize("surface", ["light_grey", "white"])
def test_a_hand_on_a_light_table_is_still_searched(rec, surface):
    """Three hands of 2-4 overlapping cards (bench_hands' scene) on a light table: blobs remain,
    and the covered cards are read (never a card that is not there)."""
    rng = np.random.default_rng(5)
    frame = cm.surface(surface, 1280, 720, rng)
    truth = [cq for h in _lay_hands(frame, "cardsjs", 125, rng) for cq in h]
    image = noisy(cm.camera(frame, rng), rng)
    quads, blobs = find_cards(image, rec.t.card_size, with_blobs=True)
    assert blobs
    got = rec.read_image(image)
    names = {c for c, _ in truth}
    assert {c for c, _ in got} <= names
    covered = [c for c, k in zip((c for c, _ in got), rec.kinds) if k == "covered"]
    assert covered
    assert len(got) >= len(truth) - 2


@pytest.mark.parametrize("table,cond", [("white", "defocus"), ("light_grey", "clean")])
def test_the_deck_checks_blur_from_the_kept_corners_is_the_blur_measured_afresh(rec, table, cond):
    """defocus.estimate on the reader's kept corner patches (read_corner's `keep`, as the deck
    check passes them on a light table) gives the blur it measures warping them again, to the
    bit (bench_camera's sweep frame of that table and condition, its seed)."""
    from controller.cards import CARDS as ALL
    from drivers.camera.hands import both_corners
    rng = np.random.default_rng(1000 * cm.SURFACES.index(table) + cm.CONDITIONS.index(cond))
    cards = {z: ALL[int(rng.integers(52))] for z in ZONES}
    frame, _ = cm.table_frame("cardsjs", cards, ZONES, table, cond, rng)
    quads = find_cards(frame, rec.t.card_size)
    assert len(quads) >= 6
    for q in quads:
        grays = {}
        for c in both_corners(q):
            rec.read_corner(frame, c, keep=grays)
        assert grays
        assert rec.defocus_of(frame, q, grays) == rec.defocus_of(frame, q)
