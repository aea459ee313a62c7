"""Cards at any angle with a neighbour over them (issue 17, the bench's rotation scenes): a card
whose far index corner lies under a neighbour's corner, or whose face a neighbour partly covers,
is judged on what shows of its face (occluded.py), never on less; and a found outline a few pixels
off at one index corner is rebuilt from the corners' own edges (`_relocated`). Another deck's
cards stay refused either way. Small samples; the figures are bench/bench_hands.py's."""
import numpy as np
import pytest

from bench.bench_hands import ZONES, noisy
from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.occluded import masked_face_score, occluders, visible
from drivers.camera.hands import corner_gray
from drivers.camera.index import FACE_H, FACE_W, face, face_score
from drivers.camera.visual import VisualRecognizer

SIZE = (640, 400)


@pytest.fixture(scope="module")
def rec():
    return VisualRecognizer(cm.reference_templates("cardsjs", seed=5, size=SIZE))


def _scene(deck, card, other, seed, over=0.3):
    """`card` turned any way at the frame's middle, `other` laid over its far (br) index corner,
    `over` of a card's width and height onto it."""
    rng = np.random.default_rng(seed)
    frame = cm.surface(cm.SURFACES[seed % 7], *SIZE, rng)
    face_img = cm.load_deck(deck)[card]
    ratio = face_img.shape[0] / face_img.shape[1]
    q = cm.card_quad((320, 200), 125, rng.uniform(0, 360), 0, ratio)
    cm.lay(frame, face_img, q)
    right, down = q[1] - q[0], q[3] - q[0]
    centre = q[2] + (0.5 - over) * (right + down)
    o = cm.card_quad(tuple(centre), 125, rng.uniform(0, 360), 0, ratio)
    cm.lay(frame, cm.load_deck(deck)[other], o)
    return cm.camera(frame, rng), np.float32(q), np.float32(o)


def test_the_face_where_nothing_covers_it_is_the_whole_faces_score(rec):
    img, q, o = _scene("cardsjs", "7h", "Ks", 1)
    f = face(img, q)
    everywhere = np.ones((FACE_H, FACE_W), bool)
    assert abs(masked_face_score(f, rec.t.faces["7h"], everywhere) - face_score(f, rec.t.faces["7h"])) < 1e-4
    vis = visible(q, [o], (FACE_W, FACE_H))
    assert 0.6 < vis.mean() < 0.97 and not vis[-1, -1] and vis[0, 0]      # its br corner hidden
    assert occluders(q, [q + 1, o, o + 500], 125) == [o]      # itself (moved a pixel) and a card apart are not
    assert masked_face_score(f, rec.t.faces["7h"], np.zeros_like(vis)) == -1.0


def test_a_card_with_a_neighbour_over_its_far_index_corner_is_read(rec):
    read = 0
    for seed in range(8):
        a, b = (CARDS[int(i)] for i in np.random.default_rng(100 + seed).choice(52, 2, replace=False))
        img, q, o = _scene("cardsjs", a, b, seed)
        card, quad, kind = rec._read_occluded(img, q, [o])
        assert card in (None, a), (seed, card, a)
        read += card == a
        # with nothing found over it the refusal stands
        assert rec._read_occluded(img, q, [])[0] is None
    assert read >= 6, read


def test_another_decks_card_under_a_neighbour_is_refused(rec):
    for seed in range(8):
        a, b = (CARDS[int(i)] for i in np.random.default_rng(200 + seed).choice(52, 2, replace=False))
        img, q, o = _scene("kennard", a, b, seed)
        assert rec._read_occluded(img, q, [o])[0] is None, seed
        assert [c for c, _ in rec.read_image(img) if c == a] == [], seed


def test_an_outline_off_at_one_index_corner_is_rebuilt_from_its_edges(rec):
    rng = np.random.default_rng(4)
    read = 0
    for k in range(6):
        frame = cm.surface(cm.SURFACES[(k + 3) % 7], *SIZE, rng)
        card = CARDS[int(rng.integers(52))]
        face_img = cm.load_deck("cardsjs")[card]
        q = np.float32(cm.card_quad((320, 200), 125, rng.uniform(0, 360), 0, face_img.shape[0] / face_img.shape[1]))
        cm.lay(frame, face_img, q)
        img = cm.camera(frame, rng)
        off = q.copy()
        off[2] += 7 * (q[2] - q[0]) / np.linalg.norm(q[2] - q[0])   # the br corner 7 pixels out
        got = rec._relocated(img, corner_gray(img), off)
        if got is not None:
            assert got[0] == card and np.abs(got[1] - q).max() < 3, (k, got, card)
            read += 1
    assert read >= 5, read


# A turned card whose far index corner lies under a neighbour's corner (issue 17): read as a
# covered card when its near index reads at the covered card's standard (STRICT and the likeness
# rule), as every covered corner is read. bench_hands' own scene replayed (`--rotation-only`,
# the held-out KDE Standard at its place in the seven-deck run: templates seed 5, scene 2): its
# 5c at seat 4, its far index under seat 5's 7c, read 0.99 at its near index but short of the
# plain suit margin (its club and spade alike at 125 px), was read nowhere on main
# (bench/trace_turned.py).


def _bench_scene(deck, scene, seed=0, width=125):
    """bench_hands.rotation's scene `scene` (its rng draws replayed): the first of its five
    frames, {zone: card} and {zone: true quad}."""
    rng = np.random.default_rng(11 + seed)
    zones = cm.framed(ZONES, width)
    for k in range(scene + 1):
        cards = {z: CARDS[int(rng.integers(52))] for z in zones}
        base, where = cm.table_frame(deck, cards, zones, cm.SURFACES[k % len(cm.SURFACES)], "rotation",
                                     rng, width=width)
        frames = [noisy(base, rng) for _ in range(5)]
    return frames[0], cards, {z: np.float32(q) for z, q in where.items()}


@pytest.fixture(scope="module")
def kde():
    return VisualRecognizer(cm.reference_templates("kdestandard", seed=5, width=125))


def test_a_turned_card_with_its_far_index_under_a_neighbour_is_read_covered_and_nothing_wrong(kde):
    img, cards, where = _bench_scene("kdestandard", 2)
    assert cards["seat_4"] == "5c"
    got = kde.read_image(img)
    at = where["seat_4"].mean(axis=0)
    here = [(c, k) for (c, q), k in zip(got, kde.kinds) if np.linalg.norm(q.mean(axis=0) - at) < 25]
    assert here == [("5c", "covered")]
    # every card read is the card lying there
    for c, q in got:
        assert any(cards[z] == c and np.linalg.norm(where[z].mean(axis=0) - q.mean(axis=0)) < 25
                   for z in where), c
