"""Cards at any angle at the table's scale (issue 17): cards turned so that they touch are one
blob, yet each is read whole; an outline is never laid across a card; a second copy of a card
elsewhere in the frame is a card too; a suit the index leaves open is decided by the face, and
refused when the face does not decide it. Small samples; the issue's figures are
bench/bench_hands.py (its rotation part) and bench/diag_rotation.py."""
import math

import numpy as np
import pytest

from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.find import find_cards
from drivers.camera.hands import corner_gray, refine_corner, whole_card
from drivers.camera.index import face, face_score
from drivers.camera.recognize import VisualRecognizer
from drivers.camera.synth import default_zones

SIZE = (640, 400)
ZONES = default_zones()


@pytest.fixture(scope="module")
def rec():
    return VisualRecognizer(cm.reference_templates("responsive", seed=5, size=SIZE))


def _lay(frame, deck, card, centre, angle, width=125):
    face = cm.load_deck(deck)[card]
    q = cm.card_quad(centre, width, angle, 0, face.shape[0] / face.shape[1])
    cm.lay(frame, face, q)
    return q


def _touching(centre, angle, width=125):
    """The centre of a card at `angle` whose bl corner touches the tr corner of one at `centre`
    (a plain index corner of neither): as turned neighbours touch at the table."""
    a = math.radians(angle)
    right, down = np.float32([math.cos(a), math.sin(a)]), np.float32([-math.sin(a), math.cos(a)])
    return np.float32(centre) + (width + 1) * right - (1.4 * width + 1) * down


def test_the_bench_layout_keeps_a_card_at_any_angle_inside_the_frame():
    zones = cm.framed(ZONES, 125)
    reach = 1.05 * 125 * math.hypot(1, 1.45) / 2 + 5 * math.sqrt(2)
    for poly in zones.values():
        c = np.float32(poly).mean(axis=0)
        assert reach < c[0] < 1280 - reach and reach < c[1] < 720 - reach, c
    # the default layout does not: seats 1 and 7 reach beyond the frame
    assert min(np.float32(p).mean(axis=0)[0] for p in ZONES.values()) < reach


def test_outlines_of_touching_turned_cards_lie_on_the_cards():
    """svg-cards at any angle, neighbours touching: every outline found has its index corners
    within 4 pixels of the card's (a coarse polygon laid a side 14-18 pixels across the card
    for 16 of 200 cards before)."""
    rng = np.random.default_rng(11)
    zones = cm.framed(ZONES, 125)
    found = 0
    for k in range(3):
        cards = {z: CARDS[int(rng.integers(52))] for z in zones}
        img, where = cm.table_frame("svgcards", cards, zones, cm.SURFACES[(k + 3) % 7], "rotation", rng)
        for q in find_cards(img, (121, 178)):
            true = min((np.float32(t) for t in where.values()),
                       key=lambda t: np.linalg.norm(t.mean(axis=0) - q.mean(axis=0)))
            off = min(max(np.linalg.norm(q[i] - true[0]), np.linalg.norm(q[(i + 2) % 4] - true[2]))
                      for i in range(4))
            assert off < 4, (k, off)
            found += 1
    assert found >= 10, found


def test_a_card_touching_another_is_rebuilt_whole_from_both_index_corners():
    rng = np.random.default_rng(3)
    for angle in (20, 75, 140, 250, 330):
        frame = cm.surface(cm.SURFACES[angle % 7], 900, 700, rng)
        true = _lay(frame, "cardsjs", "9s", (450, 350), angle, width=128)   # 2% over the size given
        _lay(frame, "cardsjs", "4h", _touching((450, 350), angle, 128), angle)
        gray = corner_gray(cm.camera(frame, rng))
        size = (125, 125 * 335 / 240)
        a = math.radians(2)
        rot = np.float32([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        laid = ((true - true[0]) * 125 / 128) @ rot.T + true[0] + np.float32([2, -2])
        r = refine_corner(gray, laid, size)
        assert r is not None, angle
        w = whole_card(gray, r, size)
        assert w is not None and np.abs(w - true).max() < 2.5, (angle, w, true)
        # a corner with no opposite corner at the measured size: nothing
        assert whole_card(gray, r, (90, 126)) is None


def test_cards_turned_so_that_they_touch_are_read_and_a_second_copy_too(rec):
    """A card alone, a second copy of it with another card touching it (one blob, not
    card-shaped), all turned any way: each read at its place, nothing else."""
    rng = np.random.default_rng(8)
    read = 0
    for k in range(5):
        frame = cm.surface(cm.SURFACES[k % 7], 1100, 700, rng)
        c1, c2 = (CARDS[int(i)] for i in rng.choice(52, 2, replace=False))
        a = rng.uniform(0, 360)
        truth = [(c1, _lay(frame, "responsive", c1, (150, 350), rng.uniform(0, 360))),
                 (c1, _lay(frame, "responsive", c1, (620, 350), a)),
                 (c2, _lay(frame, "responsive", c2, _touching((620, 350), a), a))]
        got = rec.read_image(cm.camera(frame, rng))
        for c, q in got:
            assert any(c == tc and np.linalg.norm(q.mean(axis=0) - tq.mean(axis=0)) < 25 for tc, tq in truth), (c, k)
        read += sum(any(c == tc and np.linalg.norm(q.mean(axis=0) - tq.mean(axis=0)) < 25 for c, q in got)
                    for tc, tq in truth)
    assert read >= 14, read


def test_a_suit_the_index_leaves_open_is_the_faces_and_never_guessed(rec):
    """Responsive's spade and club indexes correlate 0.95 at this scale: most black cards' suit
    falls short of the margin at one corner or both. The face decides it; a face that is not
    the card's refuses."""
    rng = np.random.default_rng(6)
    black = [c for c in CARDS if c[1] in "sc"]
    read = 0
    for k, card in enumerate(rng.choice(black, 12, replace=False)):
        frame = cm.surface(cm.SURFACES[k % 7], *SIZE, rng)
        q = _lay(frame, "responsive", str(card), (320, 200), rng.uniform(0, 360))
        img = cm.camera(frame, rng)
        got, _ = rec.read_quad(img, q)
        assert got in (None, card), (card, got)
        read += got == card
        other = card[0] + ("c" if card[1] == "s" else "s")
        assert rec._suit_by_face(rec.t.faces[other], None, None, [(card, other)] * 2) is None
    assert read >= 10, read


def test_the_face_of_an_outline_turned_half_round_is_the_face_turned_half_round():
    """A card's outline may be found in either order (its tl at either index corner); the face
    compared with the learned one either way round must not depend on it. Laid on the face's
    pixel centres it was a pixel off each way: 0.67 alike, and svg-cards' fine court and pip
    lines at 125 pixels scored 0.75 one way and 0.97 the other."""
    rng = np.random.default_rng(4)
    frame = cm.surface("green_felt", *SIZE, rng)
    q = _lay(frame, "svgcards", "Qd", (320, 200), 33)
    img = cm.camera(frame, rng)
    f0, f2 = face(img, q), face(img, np.roll(q, 2, axis=0))
    assert float((f0[::-1, ::-1] * f2).sum()) > 0.999
    assert abs(face_score(f0, f2) - face_score(f2, f0)) < 1e-4


def test_a_turned_svgcards_card_reads_whichever_way_its_outline_is_ordered():
    """svg-cards cards alone, at an angle and at that angle turned half round (the outline's
    tl at one index corner, then at the other), templates captured once: the face scores alike
    both ways (before: 0.97-0.99 one way, 0.71-0.88 the other, and a king of diamonds refused
    at 0.708 under the table scale's 0.75), and each is read."""
    rec = VisualRecognizer(cm.reference_templates("svgcards", seed=40, size=SIZE))
    rng = np.random.default_rng(40)
    read = 0
    for k, card in enumerate(("Qd", "Th", "9h", "2s", "Kd")):
        a = rng.uniform(0, 180)
        for turn in (0, 180):
            frame = cm.surface(cm.SURFACES[k % 7], *SIZE, rng)
            _lay(frame, "svgcards", card, (320, 200), a + turn)
            img = cm.camera(frame, rng)
            quads = find_cards(img, rec.t.card_size)
            assert len(quads) == 1
            assert face_score(face(img, quads[0]), rec.t.faces[card]) > 0.9, (card, turn)
            got = rec.read_image(img)
            assert all(c == card for c, _ in got), (card, got)
            read += any(c == card for c, _ in got)
    assert read >= 9, read


def test_a_turned_svgcards_cards_rounding_is_not_taken_from_its_index():
    """svg-cards print the index close to the edge: at 125 pixels the paper between them blurs
    under the mid level, and a 5's or 7's straight top then stood where the side's place was
    taken (rows 10-20 of the corner patch). Such a corner measured -3.9 to -4.6 against the
    deck's 1.9 and a clean card failed its fingerprint (2 of these 12 measured -1.2 and -1.4,
    the median of four corners); the side is now the edge's own tight group further out."""
    from drivers.camera.deckprint import rounding
    from drivers.camera.index import CH, CW
    faces = cm.load_deck("svgcards")
    got = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        face = faces[["5h", "5d", "7d", "5c", "5s", "7h"][seed % 6]]
        frame = cm.surface(cm.SURFACES[seed % 7], 400, 300, rng)
        cm.lay(frame, face, cm.card_quad((200, 150), 125, rng.uniform(0, 360), 0.0, face.shape[0] / face.shape[1]))
        img = cm.camera(frame, rng)
        got += [rounding(img, q, (CW, CH)) for q in find_cards(img, (125, 175))]
    assert len(got) == 12 and all(abs(r - 1.9) < 0.8 for r in got), np.round(got, 1)
