"""A third published deck design (tests/data/decks): Adrian Kennard's cards (CC0), a condensed
index font close to a rounded corner inside a thin printed outline (the fourth, the Responsive
Playing Cards with the index almost at the edge, is in bench/bench_webcam.py). Templates from one
webcam photo per card; other photos, also under a real photo's faults the table conditions lack
(a bowed card, a glossy card's streak), read at least 95% and never wrongly; a deck whose index
font is close to this one's (the Vectorized Playing Cards) is refused, never misread."""
import json

import numpy as np
import pytest

from calibration.cli import main
from drivers.camera import camera_model as cm
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


def test_a_deck_with_a_like_index_font_is_refused_not_misread(kennard, tmp_path, capsys):
    """The Vectorized Playing Cards' index glyphs pass Kennard's index templates for about half
    the cards (a four of diamonds scores 0.93): the whole face (pip size, the printed outline,
    the court pictures) is what refuses them."""
    labels = write_photos(tmp_path / "cardsjs", "cardsjs", np.random.default_rng(15), ["clean", "rotation"],
                          ["green_felt", "light_grey", "wood"], n=10)
    r = _accuracy(kennard, labels, capsys)
    assert r["wrong"] == 0 and r["correct"] <= 1, r
