"""The white table's speed (issue 17, bench_camera.py --speed-only --speed-surface white): the same
arithmetic done faster, so the same reads. find._cut_spurs opens each streak-joined blob by
OpenCV's ellipse as the union of its centred rectangles (morph.py), checked against OpenCV's own
opening over generated masks and light tables' frames, to the bit."""
import cv2
import numpy as np
import pytest

from bench.bench_camera import ZONES, noisy
from drivers.camera import camera_model as cm
from drivers.camera import find
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
