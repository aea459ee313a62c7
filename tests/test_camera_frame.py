"""A court card's printed frame found for its outline (issue 17, drivers/camera/frame.py): the
held-out Tigullio deck's courts on a light-grey table at the photo scale were found ~20 pixels
inside the card (its frame line), and the capture refused all twelve. Moved out to the card's
edge; a card found at its edge, or of another deck, is left as found. The reader, which knows the
card's size from its templates, does the same in find_cards (frame.to_size) when the moved
outline is more of a paper edge than the found one."""
import numpy as np
import pytest

from calibration.camera_tools import framed, one_card
from drivers.camera import camera_model as cm
from drivers.camera.find import find_cards
from drivers.camera.frame import sides, to_card_edge, to_size


def off(q, truth):
    """The farthest found corner from the card's, in pixels (any of the four turns)."""
    q, t = np.float32(q), np.float32(truth)
    return min(float(np.linalg.norm(np.roll(q, k, axis=0) - t, axis=1).max()) for k in range(4))


def shot(deck, card, seed):
    img, truth = cm.webcam_photo(deck, card, "light_grey", np.random.default_rng(seed), "rotation")
    return img, one_card(find_cards(img)), truth


@pytest.mark.parametrize("card,seed", [("Qh", 0), ("Kc", 1)])
def test_a_court_found_at_its_frame_is_moved_to_the_cards_edge(card, seed):
    img, q, truth = shot("tigullio", card, seed)
    assert off(q, truth) > 15                     # the finder's outline: the frame
    assert off(to_card_edge(img, q, sides(truth)), truth) < 5


@pytest.mark.parametrize("deck,card", [("tigullio", "7s"), ("cardsjs", "Qh"), ("svgcards", "Js")])
def test_a_card_found_at_its_edge_is_left_as_found(deck, card):
    img, q, truth = shot(deck, card, 1)
    assert to_card_edge(img, q, sides(truth)) is q


def test_the_capture_moves_only_the_outlines_smaller_than_the_decks():
    # the deck's size from the other photos' median: three pip cards and one court at its frame
    samples = [shot("tigullio", c, 2)[:2] + (c,) for c in ("7s", "2h", "9d", "Qh")]
    truth = shot("tigullio", "Qh", 2)[2]
    out = framed(samples)
    assert all(a[1] is b[1] for a, b in zip(samples[:3], out[:3]))
    assert off(out[3][1], truth) < 5 < off(samples[3][1], truth)


@pytest.mark.parametrize("card,seed", [("Qh", 0), ("Kc", 1)])
def test_the_reader_finds_a_court_at_its_edge_not_at_its_frame(card, seed):
    img, q, truth = shot("tigullio", card, seed)
    assert off(q, truth) > 15                     # found at its frame when the size is not known
    found = find_cards(img, sides(truth))         # the reader's search: the templates' card size
    assert len(found) == 1 and off(found[0], truth) < 5


@pytest.mark.parametrize("deck,card,seed", [("tigullio", "7s", 1), ("tigullio", "Kc", 1),
                                            ("cardsjs", "Qh", 1), ("svgcards", "Js", 1)])
def test_a_card_found_at_its_edge_is_not_moved_out_however_small(deck, card, seed):
    # measured 6% larger than it shows (a card of another deck, a card lying nearer the table):
    # nothing beyond its edge is more of a card's edge than the edge itself
    img, _, truth = shot(deck, card, seed)
    q = find_cards(img, sides(truth))[0]
    w, h = sides(truth)
    assert to_size(img, q, (1.06 * w, 1.06 * h)) is q
