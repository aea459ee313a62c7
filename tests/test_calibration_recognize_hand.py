"""`shoe-calibrate camera recognize` reads a photo as the daemon's camera driver reads a frame
(VisualRecognizer.read_image): in a photo of a dealt blackjack hand it reads the covered cards
from their index corners, as the table does, and says which were read covered. Before, it read
one card per outline (the top card) and no covered card: 0 of 154 in an independent black-box
trial (docs/camera.md), 0 of 12 here."""
import json

import cv2
import numpy as np
import pytest

from calibration.cli import main
from controller.cards import CARDS
from drivers.camera import camera_model as cm

SIZE = (640, 400)


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """The table camera's templates of a real deck design (cardsJS), saved as the tool writes them."""
    d = tmp_path_factory.mktemp("templates") / "t"
    cm.reference_templates("cardsjs", seed=5, size=SIZE).save(str(d))
    return str(d)


@pytest.fixture(scope="module")
def hands(tmp_path_factory):
    """Six photos of a hand of three cards dealt over one another (each index corner below left
    showing), at any angle, on the table surfaces in turn: {path: (cards bottom first, quads)}."""
    d = tmp_path_factory.mktemp("hands")
    rng = np.random.default_rng(21)
    out = {}
    for k in range(6):
        frame = cm.surface(cm.SURFACES[k % len(cm.SURFACES)], *SIZE, rng)
        cards = [CARDS[int(i)] for i in rng.choice(52, 3, replace=False)]
        quads = cm.hand(frame, "cardsjs", cards, (320, 200), 125, rng.uniform(0, 360), rng)
        path = str(d / f"hand{k}.png")
        cv2.imwrite(path, cm.camera(frame, rng))
        out[path] = (cards, quads)
    return out


def test_recognize_reads_the_covered_cards_of_a_hand_as_the_daemon_does(templates, hands, capsys):
    capsys.readouterr()
    assert main(["camera", "recognize", "--templates", templates, "--json", *hands]) == 0
    top = covered = fallback = 0
    for line in capsys.readouterr().out.splitlines():
        r = json.loads(line)
        cards, quads = hands[r["image"]]
        for f in r["cards"]:
            # read only at another size than the templates': not as the daemon reads
            fallback += f["fallback"]
            if f["card"] == "unknown" or f["fallback"]:
                continue
            # never a card that is not in the hand, nor one read at another card's place
            assert f["card"] in cards, (cards, f)
            i = cards.index(f["card"])
            centre = np.float32(f["corners"]).mean(axis=0)
            assert np.linalg.norm(centre - quads[i].mean(axis=0)) < 25, (cards, f)
            # the top card is whole; the cards under it show only their index corner
            assert f.get("covered", False) == (i < len(cards) - 1), (cards, f)
            top += i == len(cards) - 1
            covered += i < len(cards) - 1
    # before: (4, 0, 1): one hand read nothing, one only at any size (`fallback`), none covered
    assert (top, covered, fallback) == (6, 12, 0), (top, covered, fallback)

def test_recognize_says_which_cards_were_read_covered(templates, hands, capsys):
    path = next(iter(hands))
    cards, _ = hands[path]
    capsys.readouterr()
    assert main(["camera", "recognize", "--templates", templates, path]) == 0
    line = capsys.readouterr().out.strip()
    for c in cards[:-1]:
        assert f"{c} (" in line and line.count(", covered)") == len(cards) - 1, line
    assert f"{cards[-1]} (" in line, line
