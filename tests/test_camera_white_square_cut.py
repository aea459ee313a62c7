"""A square-cut deck's card on a white table whose corners the level-crossing measure finds round
is asked again by its edges' steepest rise (deckprint.DeckPrint._square_by_edges, edgeround.py):
card stock stands only 5-15% above a white table, and the rise to the middle between paper and
table comes late in the rows next to a side, where the side's own blur dims the paper. The
replayed frames are the deck sweep's (bench_camera.py --surfaces white: its seed and templates);
bench/diag_white_refusals.py found the Responsive 2s refused there by the cut, every other check
passing. cardsJS's cards (the same artwork, cut round) stay refused under Responsive's templates
with the second opinion asked."""
import numpy as np
import pytest

from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera import deckprint
from drivers.camera.driver import CameraDriver, Zones
from drivers.camera.index import CH, CW
from drivers.camera.rounding import P, L, corner_rounding
from drivers.camera.synth import default_zones
from drivers.camera.visual import VisualRecognizer

ZONES = default_zones()


def sweep_frame(deck, table, cond, frame, where=False):
    """bench_camera.deck_sweep's scene of `table` and `cond` (one trial), its noisy `frame`
    (and the cards' true outlines when `where`)."""
    rng = np.random.default_rng(1000 * cm.SURFACES.index(table) + cm.CONDITIONS.index(cond))
    cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
    base, quads = cm.table_frame(deck, cards, ZONES, table, cond, rng)
    for _ in range(frame + 1):
        img = np.clip(base.astype(np.int16) + rng.integers(-3, 4, base.shape), 0, 255).astype(np.uint8)
    return (img, cards, quads) if where else (img, cards)


def _templates(deck):
    return cm.reference_templates(deck, seed=cm.DECKS.index(deck))


def _asked(monkeypatch):
    """Count the second opinion's calls and answers."""
    calls = []
    orig = deckprint.DeckPrint._square_by_edges

    def spy(self, *a):
        calls.append(orig(self, *a))
        return calls[-1]
    monkeypatch.setattr(deckprint.DeckPrint, "_square_by_edges", spy)
    return calls


@pytest.mark.parametrize("frame", [2, 4])
def test_a_square_cut_card_measuring_round_on_white_is_read_by_its_edges(monkeypatch, frame):
    rec = VisualRecognizer(_templates("responsive"))
    img, cards = sweep_frame("responsive", "white", "clean", frame)
    assert cards["seat_7"] == "2s"
    calls = _asked(monkeypatch)

    def read():
        got = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=rec).read_frame(img)
        assert all(c == cards[z] for z, cs in got.items() for c in cs), got     # nothing wrong
        return got.get("seat_7", [])

    assert read() == ["2s"]
    assert True in calls                    # read by the second opinion, not by the plain check
    monkeypatch.setattr(deckprint.DeckPrint, "_square_by_edges", lambda *a: False)    # main's reading
    assert read() == []


def test_the_same_artwork_cut_round_stays_refused_with_the_edges_asked(monkeypatch):
    """cardsJS's cards on the white table (the same artwork as Responsive's, cut round): read with
    Responsive's templates, nothing; and the second opinion itself, asked of each of them on its
    true outline as of a still card, says round."""
    p = _templates("responsive").print
    for frame in range(2):
        img, _, quads = sweep_frame("cardsjs", "white", "clean", frame, where=True)
        for z, q in quads.items():
            if np.all((q >= 0) & (q < img.shape[1::-1])):
                assert not p._square_by_edges(img, q, (CW, CH), lambda: None), z
    rec = VisualRecognizer(_templates("responsive"))
    img, _ = sweep_frame("cardsjs", "white", "clean", 0)
    got = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=rec).read_frame(img)
    assert not any(got.values()), got
    img, cards, quads = sweep_frame("responsive", "white", "clean", 4, where=True)
    assert p._square_by_edges(img, quads["seat_7"], (CW, CH), lambda: None)     # its own 2s: square


def _corner(radius, sigma, table=222.0, paper=240.0, shadow=0.0):
    """A corner patch as rounding.py samples it (card at (P, P)) on a white table: cut round by
    `radius` canonical pixels, the table darkened by `shadow` next to the card (a contact
    shadow), blurred by `sigma`."""
    import cv2
    k = 8
    n = (L + 2 * P) * k
    yy, xx = (np.mgrid[0:n, 0:n] + 0.5) / k
    c = P + radius
    card = (xx >= P) & (yy >= P) & ~((xx < c) & (yy < c) & ((xx - c) ** 2 + (yy - c) ** 2 > radius ** 2))
    near = np.exp(-np.minimum(np.abs(xx - P), np.abs(yy - P)) / 3)
    img = np.where(card, paper, table * (1 - shadow * near)).astype(np.float32)
    img = cv2.resize(img, (L + 2 * P, L + 2 * P), interpolation=cv2.INTER_AREA)
    return cv2.GaussianBlur(img, (0, 0), sigma)


def test_the_steepest_rise_of_a_square_corner_lies_on_its_sides_under_blur():
    """The reason for the measure: a square corner blurred rises steepest on its sides' lines in
    every row (the levels and the blur do not move it), where the level crossing measures it
    rounder as the blur grows (deckprint.square_measure: 1.0 at sigma 3); a corner cut round (cardsJS' radius, about 11 canonical pixels)
    measures round by both."""
    from drivers.camera.edgeround import _corner as by_edges
    for sigma in (1.0, 1.5, 2.0):
        for shadow in (0.0, 0.1):
            square = _corner(0, sigma, shadow=shadow)
            assert abs(by_edges(square)[0]) < 0.3, (sigma, shadow)
            assert by_edges(_corner(11, sigma, shadow=shadow))[0] > 2.5, (sigma, shadow)
    blurred = _corner(0, 3.0, shadow=0.1)
    assert abs(by_edges(blurred)[0]) < 0.3 and corner_rounding(blurred) > 0.9
