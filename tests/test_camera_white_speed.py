"""The white table's speed (issue 17, bench_camera.py --speed-only --speed-surface white): the same
arithmetic done faster, so the same reads. find._cut_spurs opens each streak-joined blob by
OpenCV's ellipse as the union of its centred rectangles (morph.py); the deck check's blur estimate
(defocus.estimate) takes the windows read_corner laid out of the same corner patches. Each is
checked against the plain computation over generated masks and frames, to the bit."""
import cv2
import numpy as np
import pytest

from bench.bench_camera import ZONES, noisy
from drivers.camera import camera_model as cm
from drivers.camera import find
from drivers.camera.hands import both_corners
from drivers.camera.index import S, _windows
from drivers.camera.morph import ellipse_rects, open_ellipse
from drivers.camera.visual import VisualRecognizer

CARDS = dict(zip(ZONES, ["As", "Td", "7h", "Qc", "2d", "9s", "Jh", "Kd"]))   # bench_camera's


@pytest.fixture(scope="module")
def rec():
    return VisualRecognizer(cm.reference_templates("cardsjs", seed=0))


def _opened(m, k):
    return cv2.morphologyEx(m, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))


def test_the_ellipse_is_the_union_of_its_rectangles():
    for k in range(1, 52, 2):
        union = np.zeros((k, k), np.uint8)
        for r in ellipse_rects(k):
            h, w = r.shape
            union[(k - h) // 2:(k + h) // 2, (k - w) // 2:(k + w) // 2] = 1
        assert np.array_equal(union, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))), k


def test_the_opening_by_rectangles_is_opencvs_over_generated_masks():
    """Polygons, a card with a streak to the image's edge, speckle; blobs touching the border (where
    OpenCV erodes and dilates nothing beyond the image)."""
    rng = np.random.default_rng(17)
    for trial in range(150):
        k = int(rng.integers(1, 45)) | 1
        h, w = (int(v) for v in rng.integers(8, 260, 2))
        m = np.zeros((h, w), np.uint8)
        for _ in range(int(rng.integers(1, 5))):
            pts = rng.integers([-20, -20], [w + 20, h + 20], (int(rng.integers(3, 8)), 2))
            cv2.fillPoly(m, [pts.astype(np.int32)], 255)
        if trial % 3 == 0:
            m[rng.random((h, w)) < 0.05] = 255
        if trial % 4 == 0:
            m[:, :2] = 255
        assert np.array_equal(open_ellipse(m, k), _opened(m, k)), (trial, k, m.shape)


@pytest.mark.parametrize("surface,condition", [("white", "clean"), ("white", "glare"), ("light_grey", "glare")])
def test_find_cards_finds_what_opencvs_opening_finds(rec, monkeypatch, surface, condition):
    """find_cards on light tables' frames (the speed frame, and a glare frame: a lamp's streak
    joined to cards), with the opening by rectangles and with OpenCV's own: the same outlines and
    blobs, and the streak cutting ran."""
    rng = np.random.default_rng(3)
    base, _ = cm.table_frame("cardsjs", CARDS, ZONES, surface, condition, rng)
    size = rec.t.card_size
    cut = find._cut_spurs
    calls = []

    def counted(contour, card_size):
        calls.append(1)
        return cut(contour, card_size)
    monkeypatch.setattr(find, "_cut_spurs", counted)
    for frame in [noisy(base, rng) for _ in range(2)]:
        fast = find.find_cards(frame, size, with_blobs=True)
        with monkeypatch.context() as mp:
            mp.setattr(find, "open_ellipse", _opened)
            plain = find.find_cards(frame, size, with_blobs=True)
        for a, b in zip(fast, plain):
            assert len(a) == len(b)
            assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert calls


@pytest.mark.parametrize("surface,condition", [("white", "clean"), ("white", "defocus"), ("white", "motion"),
                                               ("light_grey", "defocus")])
def test_the_kept_windows_are_the_kept_patchs_and_the_blur_is_the_same(rec, surface, condition):
    """read_corner's keep (plain, and with a streak or a round blur): its windows are _windows of
    its own patch's rank and suit parts, bit for bit; the blur estimated from what it kept is the
    blur estimated afresh."""
    from controller.cards import CARDS as ALL
    rng = np.random.default_rng(1000 * cm.SURFACES.index(surface) + cm.CONDITIONS.index(condition))
    cards = {z: ALL[int(rng.integers(52))] for z in ZONES}
    frame, _ = cm.table_frame("cardsjs", cards, ZONES, surface, condition, rng)
    t = rec.t
    s = t.cut + S
    quads = find.find_cards(frame, t.card_size)
    assert len(quads) >= 6
    checked = 0
    for i, q in enumerate(quads[:4]):
        # plain; at a round blur of the bank's; by a streak (every learned index blurred: once)
        for streak in (None, 1.5) + (((3.0, 1.0),) if i == 0 else ()):
            grays = {}
            for c in both_corners(q):
                rec.read_corner(frame, c, keep=grays, streak=streak)
            for gray, _, _, _, (ranks, suits) in grays.values():
                for got, want in ((ranks, _windows(gray[:s + S], t.part_shapes[0])),
                                  (suits, _windows(gray[s - S:], t.part_shapes[1]))):
                    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
                    checked += 1
            if streak is None and grays:
                assert rec.defocus_of(frame, q, grays) == rec.defocus_of(frame, q)
    assert checked
