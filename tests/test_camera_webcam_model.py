"""The real webcam's faults in the camera model (drivers/camera/webcam_model.py) and the reader made
to survive them: each fault is there (and deterministic), and what it broke reads again."""
import cv2
import numpy as np
import pytest

from drivers.camera import camera_model as cm
from drivers.camera import webcam_model as wm
from drivers.camera.find import find_cards
from drivers.camera.index import _ink


def test_a_webcam_photo_is_the_same_from_the_same_seed_and_another_from_another():
    a, qa = cm.webcam_photo("cardsjs", "Qh", "light_grey", np.random.default_rng(3), "clean")
    b, qb = cm.webcam_photo("cardsjs", "Qh", "light_grey", np.random.default_rng(3), "clean")
    c, _ = cm.webcam_photo("cardsjs", "Qh", "light_grey", np.random.default_rng(4), "clean")
    assert np.array_equal(a, b) and np.array_equal(qa, qb)
    assert not np.array_equal(a, c)


def test_printed_stock_is_off_white_and_ink_not_pure_black_or_red():
    face = cm.load_deck("kennard")["Ah"]
    p = wm.printed(face, np.random.default_rng(1))
    opaque = p[..., 3] > 200
    paper = np.percentile(p[..., :3][opaque], 90, axis=0)
    assert paper[0] < paper[2] - 5 and paper.max() < 252          # cream: less blue than red
    assert p[..., :3][opaque].min() >= 15                           # no ink is a perfect absorber
    assert np.array_equal(p[..., 3], face[..., 3])                  # the card's shape untouched


def test_the_lens_bends_straight_lines_and_project_inverts_it():
    lens = wm.Lens(np.random.default_rng(2), (800, 600), "wide_lens")
    pts = np.float32([[100, 80], [400, 300], [700, 520], [250, 500]])
    assert np.abs(lens.source(lens.project(pts)) - pts).max() < 0.05
    # a straight table line through three points: its middle bows off the chord in the photo
    line = lens.project(np.float32([[150, 60], [400, 60], [650, 60]]))
    chord_mid = (line[0] + line[2]) / 2
    assert abs(float(line[1][1] - chord_mid[1])) > 1.0


def test_the_bayer_sensor_puts_colour_fringes_on_a_grey_edge():
    """A neutral black-to-white edge: after the mosaic and its demosaicing some pixels along it
    carry colour (a single noise sample per channel, the first model, left none so ordered)."""
    frame = np.full((600, 800, 3), 60, np.uint8)
    frame[:, 400:] = 230
    photo, _ = wm.photograph(frame, np.random.default_rng(5), "clean", lambda f, *a: f)
    rows = photo[250:350, 390:410].astype(int)
    chroma = np.abs(rows[..., 2] - rows[..., 0])
    assert chroma.max() >= 12


def test_black_ink_under_a_warm_light_that_clips_the_papers_red_is_black():
    """Measured on a tungsten photo: the paper (187, 251, 255) with red clipped, the ink a
    little red once divided by it; the old threshold (black under 0.08) left it unclear and the
    card refused."""
    patch = np.full((60, 40, 3), (187, 251, 255), np.uint8)
    patch[15:45, 12:28] = (55, 80, 105)
    assert _ink(patch)[2] == "black"
    patch[15:45, 12:28] = (40, 45, 200)
    assert _ink(patch)[2] == "red"


@pytest.mark.parametrize("deck,table", [("synth", "light_grey"), ("cardsjs", "white")])
def test_a_cream_card_on_a_light_table_is_outlined_at_its_edge_not_its_shadows(deck, table):
    """Before: on 12 such photos the outline lay on the drop shadow's outer edge, up to 9.7
    pixels out, in 3 of them (the card's faint edge refused on every side)."""
    rng = np.random.default_rng(5)
    worst = 0.0
    for i in range(6):
        img, true = cm.webcam_photo(deck, ["8h", "Ks", "2d"][i % 3], table, rng, "clean")
        (q,) = find_cards(img, (296, 414))
        worst = max(worst, max(min(float(np.linalg.norm(t - c)) for c in q) for t in true))
    assert worst < 4.5


def test_a_lamps_streak_across_card_and_light_table_still_outlines_the_card():
    """The streak joins the card to the table at every threshold; the paper inside the card's
    sharp outline is found on its own. Before: none of these 12 photos; now 6."""
    found = 0
    for seed in range(12):
        img, true = cm.webcam_photo("kennard", "2h", "light_grey", np.random.default_rng(100 + seed), "gloss")
        qs = find_cards(img, (295, 413))
        centre = tuple(map(float, qs[0].mean(axis=0))) if len(qs) == 1 else None
        if centre and cv2.pointPolygonTest(np.float32(true), centre, False) > 0:
            found += 1
    assert found >= 5


def test_the_corners_rounding_shows_for_cream_stock_on_a_white_table():
    """In gray a cream card stands under 12 levels above a white table: no rounding was
    measured and the card was refused (2 of these 13 cardsJS photos; 3 of 32 in the bench).
    Measured in red there, it still tells rounded corners from square ones. (Three of the four
    noisy photos are found only since the finder fills the card's sharp outline: one of them
    measures -0.5, within 3.5 pixels of the card; refused by the deck check, not misread.)"""
    from drivers.camera.deckprint import rounding
    from drivers.camera.index import CH, CW
    rng = np.random.default_rng(8)
    got = []
    for i in range(16):
        img, _ = cm.webcam_photo("cardsjs", ["7c", "Qd", "2h", "9s"][i % 4], "white", rng,
                                 ["clean", "motion", "curl", "noise"][i % 4])
        got += [rounding(img, q, (CW, CH)) for q in find_cards(img, (296, 414))]
    assert len(got) >= 12 and not np.isnan(got).any()
    assert sum(abs(r - 3.3) < 1.5 for r in got) >= len(got) - 2
    for c in ("7c", "Qd", "2h"):
        img, _ = cm.webcam_photo("responsive", c, "white", rng, "clean")
        (q,) = find_cards(img, (296, 414))
        assert abs(rounding(img, q, (CW, CH))) < 1.2, c


@pytest.mark.parametrize("seed,cond,card", [(1000, "gloss", "8d"), (1001, "gloss", "5c"), (1003, "gloss", "2s"),
                                            (1100, "shadow", "8d"), (1101, "shadow", "5c"), (1103, "shadow", "2s")])
def test_a_gloss_or_a_shadows_edge_across_a_corner_does_not_set_the_cards_rounding(seed, cond, card):
    """svg-cards' corners round about 1.7 canonical pixels. A lamp's streak or a shadow's edge
    across a corner moved the mid level its crossings are taken at, and that corner measured -10
    to +15: these photos on the light-grey table measured -1.3 to -0.05 (the median of two good
    and two spoiled corners), and the deck check refused the card. A corner whose two sides round
    it unlike each other, or whose side lies far from the outline, is now left out."""
    from drivers.camera.deckprint import rounding
    from drivers.camera.index import CH, CW
    img, _ = cm.webcam_photo("svgcards", card, "light_grey", np.random.default_rng(seed), cond)
    (q,) = find_cards(img, (300, 420))
    assert abs(rounding(img, q, (CW, CH)) - 1.7) < 0.5
