"""Another deck's whole cards at the table's scale (cards 125 pixels wide, issue 17): the table
camera's cardsJS templates refuse Kennard's cards, never read them, while reading their own deck
in the same scenes. Such cards were read from one index corner as if covered in a hand (no face
or fingerprint check: five of these scenes), and Kennard's Ad passed the whole-card checks at the
learned index tolerance (3.6 against 3.8: light_grey, white_balance; at this scale the tolerance
is now 3.0 and the face must score 0.75). A small sample; the full sweep is bench/bench_camera.py."""
import numpy as np
import pytest

from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.visual import VisualRecognizer

SIZE = (640, 400)
ZONES = {"a": [(100, 120), (220, 120), (220, 280), (100, 280)],
         "b": [(420, 120), (540, 120), (540, 280), (420, 280)]}
# (table, condition, seed): scenes in which the cardsJS templates read a Kennard card before the
# fix (seed 1: Qh and Ad); seed 0 lays Kennard's Kc (read as Ks at 1280 x 720 on wood under glare)
SCENES = [("green_felt", "shadow", 1), ("grey", "glare", 1), ("wood", "noise", 1),
          ("light_grey", "white_balance", 1), ("white", "glare", 1),
          ("wood", "glare", 0), ("green_felt", "clean", 0)]


@pytest.fixture(scope="module")
def rec():
    return VisualRecognizer(cm.reference_templates("cardsjs", seed=5, size=SIZE))


def scene(deck, table, cond, seed):
    rng = np.random.default_rng(seed)
    cards = {"a": CARDS[int(rng.integers(52))], "b": CARDS[int(rng.integers(52))]}
    if seed == 0:
        cards["a"] = "Kc"
    return cm.table_frame(deck, cards, ZONES, table, cond, rng, size=SIZE)[0], cards


def test_another_decks_whole_cards_at_the_table_scale_are_refused(rec):
    read = {s: [c for c, _ in rec.read_image(scene("kennard", *s)[0])] for s in SCENES}
    assert {s: r for s, r in read.items() if r} == {}


def test_the_decks_own_cards_in_the_same_scenes_are_read(rec):
    right = wrong = 0
    for s in SCENES:
        frame, cards = scene("cardsjs", *s)
        got = [c for c, _ in rec.read_image(frame)]
        right += sum(c in cards.values() for c in got)
        wrong += sum(c not in cards.values() for c in got)
    assert wrong == 0 and right >= 6         # of 14, one frame each (7 as measured)


def test_a_card_cut_by_the_frames_edge_is_no_card():
    """bench_camera's sweep frame where a turned cardsJS 3s reaches 6 pixels beyond the frame
    (one corner cut off): its outline was found, and Responsive's templates (the same artwork)
    read it (docs/camera.md). No outline found may leave the frame."""
    from drivers.camera.find import find_cards
    from drivers.camera.synth import default_zones
    zones = default_zones()
    rng = np.random.default_rng(1000 * cm.SURFACES.index("blue_felt") + cm.CONDITIONS.index("rotation"))
    cards = {z: CARDS[int(rng.integers(52))] for z in zones}
    frame, _ = cm.table_frame("cardsjs", cards, zones, "blue_felt", "rotation", rng)
    quads = find_cards(frame, (125, 175))
    assert len(quads) >= 5
    assert all(q.min() >= -2 and q[:, 0].max() <= 1281 and q[:, 1].max() <= 721 for q in quads)


def _sweep_frame(table):
    from drivers.camera.synth import default_zones
    zones = default_zones()
    rng = np.random.default_rng(1000 * cm.SURFACES.index(table) + cm.CONDITIONS.index("rotation"))
    cards = {z: CARDS[int(rng.integers(52))] for z in zones}
    frame, where = cm.table_frame("cardsjs", cards, zones, table, "rotation", rng)
    return frame, cards, {z: np.float32(q) for z, q in where.items()}


def test_a_turned_card_whose_corner_grazes_the_frames_edge_is_read(rec):
    """bench_camera's sweep frame (light grey, rotation) where a turned cardsJS Jh at seat 7 lies
    wholly inside the frame, its corner 1.8 px from the edge, touching seat 6's card: the one
    blob they make touched the frame's border and was passed over as a card cut by the edge (not
    found in five frames). Read now; and the 3s that reaches 7 px beyond the frame (blue felt) is
    still no card: built from its hand corners in the blob that grazes the edge, it was read."""
    for table, zone, card, read in (("light_grey", "seat_7", "Jh", True), ("blue_felt", "seat_1", "3s", False)):
        frame, cards, where = _sweep_frame(table)
        assert cards[zone] == card
        got = rec.read_image(frame)
        for c, q in got:
            z = min(where, key=lambda z: np.linalg.norm(where[z].mean(axis=0) - q.mean(axis=0)))
            assert c == cards[z] and q.min() >= -2 and q[:, 0].max() <= 1281 and q[:, 1].max() <= 721, (c, z)
        assert read == any(c == card and np.linalg.norm(q.mean(axis=0) - where[zone].mean(axis=0)) < 25
                           for c, q in got), table


def test_a_defocused_responsive_queen_on_white_is_not_read_by_cardsjs_templates():
    """The sweep's Responsive scene 0 on the white table under defocus (bench_camera.py: the
    surface's and the condition's seed, the sweep's cardsJS templates): a retry of a card the deck
    check refused on its edges' middle, merged for moving cards, let cardsJS's templates read
    Responsive's Qd at seat 4 (the same artwork; the final sweep found it, the retry is out).
    Responsive's 2d at seat 6 in the same frame is read by them on older code too (docs/camera.md:
    another deck with the same artwork), so only the queen is asserted."""
    from drivers.camera.driver import CameraDriver, Zones
    from drivers.camera.synth import default_zones
    zones = default_zones()
    tmpl = cm.reference_templates("cardsjs", seed=cm.DECKS.index("cardsjs"))
    d = CameraDriver(iter([]), Zones(zones), "visual", recognizer=VisualRecognizer(tmpl))
    rng = np.random.default_rng(1000 * cm.SURFACES.index("white") + cm.CONDITIONS.index("defocus"))
    cards = {z: CARDS[int(rng.integers(52))] for z in zones}
    base, _ = cm.table_frame("responsive", cards, zones, "white", "defocus", rng)
    assert cards["seat_4"] == "Qd"
    assert "Qd" not in d.read_frame(base).get("seat_4", []), d.read_frame(base)
