"""The deck check's corner rounding on a white or light table under glare (issue 17). A branch
measured a card none of whose corners measured at the card's one paper-to-table middle again at
each side's own middle; under glare that measured a cardsJS card's round corners as square, and
Responsive's templates (the same artwork, square-cut corners: the rounding is what tells them
apart) read its 5c (review31). A card no corner of which is measured stays refused."""
import numpy as np

from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.recognize import VisualRecognizer


def _frame(seed, k):
    """The review's k-th frame of seed `seed`: one cardsJS card on a white or light grey table
    under glare, 125 pixels wide (the random draws of the frames before it replayed)."""
    rng = np.random.default_rng(seed)
    for i in range(k + 1):
        table = ("white", "light_grey")[i % 2]
        card = CARDS[int(rng.integers(52))]
        face = cm.load_deck("cardsjs")[card]
        frame = cm.surface(table, 1280, 720, rng)
        q = cm.pose(rng, "rotation" if i % 2 else "clean", (640, 360), 125, face.shape[0] / face.shape[1])
        cm.lay(frame, face, q)
        frame = cm.camera(frame, rng, "glare")
    return frame, card


def test_a_cardsjs_card_under_glare_is_refused_by_responsives_templates():
    frame, card = _frame(21, 62)
    assert card == "5c"
    rec = VisualRecognizer(cm.reference_templates("responsive", seed=5))
    assert rec.read_image(frame) == []
