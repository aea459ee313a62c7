"""The grey table's gap blobs (gapblob.py; issue 17's speed, bench_camera.py --speed-only
--speed-surface grey): on bench_camera's speed frame (cardsJS, eight separate cards) the top-hat
joins the grey table between the 9s and the Jh to their paper, one blob a frame that was searched
as a hand (10-15 ms, no read). It holds no paper outside the two whole cards found in it, so it
is no hand now; a hand's blob holds its covered cards' paper and is still searched, and every
frame reads what it read with the blob searched."""
import numpy as np
import pytest

from bench.bench_camera import ZONES, noisy
from bench.bench_hands import _lay_hands
from drivers.camera import camera_model as cm
from drivers.camera import gapblob
from drivers.camera.find import find_cards
from drivers.camera.visual import VisualRecognizer

CARDS = dict(zip(ZONES, ["As", "Td", "7h", "Qc", "2d", "9s", "Jh", "Kd"]))   # bench_camera's


@pytest.fixture(scope="module")
def rec():
    return VisualRecognizer(cm.reference_templates("cardsjs", seed=0))


@pytest.fixture
def gap_test():
    """Runs `f(frame)` with the gap test off, then on: (its result off, on, the blobs judged)."""
    def both(f, frame):
        try:
            gapblob.GAP_TEST, gapblob.GAP_STATS = False, None
            off = f(frame)
            gapblob.GAP_TEST, gapblob.GAP_STATS = True, []
            on = f(frame)
            return off, on, gapblob.GAP_STATS
        finally:
            gapblob.GAP_TEST, gapblob.GAP_STATS = True, None
    return both


def reads(rec):
    return lambda frame: sorted((c, tuple(np.round(np.float32(q).mean(axis=0), 2))) for c, q in rec.read_image(frame))


def test_the_table_between_two_cards_on_grey_is_no_hand(rec, gap_test):
    rng = np.random.default_rng(0)          # bench_camera.visual_speed's frame on grey
    base, _ = cm.table_frame("cardsjs", CARDS, ZONES, "grey", "clean", rng)
    for _ in range(2):
        frame = noisy(base, rng)
        quads, blobs = find_cards(frame, rec.t.card_size, with_blobs=True)
        assert len(quads) == 8
        assert blobs == []          # the gap blob was one (its hand search 10-15 ms a frame)
        off, on, judged = gap_test(reads(rec), frame)
        assert judged and all(j["left"] == 0 for j in judged)
        assert on == off
        assert sorted(c for c, _ in on) == sorted(CARDS.values())


@pytest.mark.parametrize("deck,seed", [("cardsjs", 2), ("svgcards", 3)])
def test_hands_on_grey_keep_their_blobs_and_reads(deck, seed, gap_test):
    """bench_hands' three hands of 2-4 overlapping cards on grey: the top-hat blobs that hold a
    hand are kept (its covered cards' paper lies outside every whole card), and the frame reads
    the same cards at the same places as with every top-hat blob searched."""
    rec = VisualRecognizer(cm.reference_templates(deck, seed=cm.DECKS.index(deck)))
    rng = np.random.default_rng(seed)
    frame = cm.surface("grey", 1280, 720, rng)
    truth = {c for h in _lay_hands(frame, deck, 125, rng) for c, _ in h}
    image = noisy(cm.camera(frame, rng), rng)
    off, on, judged = gap_test(reads(rec), image)
    kept = [j for j in judged if j["left"] >= gapblob.GAP_PAPER * j["card"]]
    assert kept
    assert on == off
    assert {c for c, _ in on} <= truth
    assert any(k == "covered" for k in rec.kinds)
