"""A third and a fourth published deck design (tests/data/decks): Adrian Kennard's cards (CC0), a
condensed index font close to a rounded corner inside a thin printed outline, and the Responsive
Playing Cards (square-cut, the index almost at the edge, the Vectorized Playing Cards' artwork).
Templates from one webcam photo per card; other photos, also under a real photo's faults the
table conditions lack (a bowed card, a glossy card's streak), read at least 95% and never
wrongly; a deck whose index font and face are close to the templates' deck is refused, never
read: its corners are cut otherwise or its index sits elsewhere (the deck fingerprint)."""
import json

import cv2
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from calibration.cli import main
from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.deckprint import rounding
from drivers.camera.index import CH, CW
from drivers.camera.recognize import VisualRecognizer
from drivers.camera.templates import Templates
from test_camera_decks import write_photos

CONDS = ["clean", "rotation", "curl", "gloss", "jpeg", "perspective", "defocus", "white_balance"]


def _templates(tmp_path_factory, deck, seed):
    d = tmp_path_factory.mktemp(deck)
    labels = write_photos(d / "reference", deck, np.random.default_rng(seed), ["rotation"], ["light_grey"])
    assert main(["camera", "templates", "--labels", labels, "--out", str(d / "t")]) == 0
    return str(d / "t")


@pytest.fixture(scope="module")
def kennard(tmp_path_factory):
    return _templates(tmp_path_factory, "kennard", 11)


@pytest.fixture(scope="module")
def responsive(tmp_path_factory):
    return _templates(tmp_path_factory, "responsive", 21)


def _accuracy(templates, labels, capsys):
    capsys.readouterr()
    main(["camera", "accuracy", "--templates", templates, "--labels", labels, "--json"])
    return json.loads(capsys.readouterr().out)


def test_kennard_deck_reads_other_photos_under_real_photo_faults(kennard, tmp_path, capsys):
    labels = write_photos(tmp_path / "other", "kennard", np.random.default_rng(12), CONDS,
                          list(cm.SURFACES), n=16)
    r = _accuracy(kennard, labels, capsys)
    assert r["wrong"] == 0, r["wrong_as"]
    assert r["correct"] >= 15, r


def test_a_curled_card_reads_its_index_placed_from_the_edge_beside_it(kennard):
    """A bowed card's long sides curve: beside its index the edge lies inside the outline's
    straight fitted side, and the index measured from that side lay 3.1-3.2 canonical pixels off
    the deck's place (tolerance 3): these two curled Kennard cards on the wooden table were
    refused as another design. Measured from the edge beside the index (indexplace.py) they read;
    a like deck's index placed otherwise is still refused (the test below)."""
    rec = VisualRecognizer(Templates.load(kennard))
    for seed, card in ((14, "8s"), (38, "Ks")):
        rng = np.random.default_rng(seed)
        assert CARDS[int(rng.integers(52))] == card
        img, _ = cm.webcam_photo("kennard", card, "wood", rng, "curl")
        img = cv2.imdecode(cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 85])[1], cv2.IMREAD_COLOR)
        assert [c for c, _ in rec.read_image(img)] == [card]


def test_a_deck_with_a_like_index_font_is_refused_not_misread(kennard, tmp_path, capsys):
    """The Vectorized Playing Cards' index glyphs pass Kennard's index templates for about half
    the cards (a four of diamonds scores 0.93): the whole face (pip size, the printed outline,
    the court pictures) is what refuses them."""
    labels = write_photos(tmp_path / "cardsjs", "cardsjs", np.random.default_rng(15), ["clean", "rotation"],
                          ["green_felt", "light_grey", "wood"], n=10)
    r = _accuracy(kennard, labels, capsys)
    assert r["wrong"] == 0 and r["correct"] == 0, r


def test_the_same_artwork_cut_square_is_another_deck(responsive, tmp_path, capsys):
    """The Responsive Playing Cards and cardsJS share the Vectorized Playing Cards' artwork and
    index font (Responsive's templates read 102 of 168 cardsJS photos with the face check alone);
    cardsJS's corners are rounded, Responsive's cut square. Kennard's cards (rounded too, and
    their index a few pixels lower and narrower: 44 of 168 read before) are refused as well, while
    Responsive's own photos read."""
    for deck, seed in (("cardsjs", 22), ("kennard", 23)):
        labels = write_photos(tmp_path / deck, deck, np.random.default_rng(seed), ["clean", "rotation", "curl"],
                              ["green_felt", "grey", "wood"], n=12)
        r = _accuracy(responsive, labels, capsys)
        assert r["wrong"] == 0 and r["correct"] == 0, (deck, r)
    labels = write_photos(tmp_path / "own", "responsive", np.random.default_rng(24), CONDS, list(cm.SURFACES), n=12)
    r = _accuracy(responsive, labels, capsys)
    assert r["wrong"] == 0 and r["correct"] >= 11, r


@settings(max_examples=12, deadline=None)
@given(st.floats(0, 360), st.sampled_from(cm.SURFACES), st.integers(0, 2**16))
def test_corner_rounding_is_the_decks_whatever_the_angle_and_table(angle, table, seed):
    """The fingerprint's rounding, measured against the card's own sides near each corner (the
    outline's error falls out): about 3.7 canonical pixels for cardsJS's rounded corners and 0
    for Responsive's square ones, at any angle on any table."""
    from drivers.camera.find import find_cards
    rng = np.random.default_rng(seed)
    for deck, expect in (("cardsjs", 3.7), ("responsive", 0.0)):
        frame = cm.surface(table, 800, 600, rng)
        face = cm.load_deck(deck)["7c"]
        quad = cm.card_quad((400, 300), 300, angle, 0.0, face.shape[0] / face.shape[1])
        cm.lay(frame, face, quad)
        photo = cm.camera(frame, rng, "clean", webcam=True)
        (q,) = find_cards(photo)
        # 1.25: the webcam's auto exposure clips the card's white on a dark felt, and the
        # rounded corner's dimmer blur then measures up to 4.9 (square corners: 0.0-0.24)
        assert abs(rounding(photo, q, (CW, CH)) - expect) < 1.25, deck


def test_templates_of_the_earlier_format_are_refused_with_a_clear_message(kennard, tmp_path):
    import shutil
    old = tmp_path / "t"
    shutil.copytree(kennard, old)
    meta = json.loads((old / "deck.json").read_text())
    (old / "deck.json").write_text(json.dumps({**meta, "format": 3}))
    with pytest.raises(ValueError, match="format 3, expected 5.*capture them again"):
        Templates.load(str(old))
    del meta["print"]
    (old / "deck.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="no valid deck fingerprint"):
        Templates.load(str(old))
