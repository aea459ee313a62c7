"""The speed changes of the finder and reader (issue 17) keep numpy's and OpenCV's answers to
the bit: a quad's centre (outline._centre) is q.mean(axis=0), a vector's length (_norm) is
np.linalg.norm, and a centre right of, above or below a quad's corners is outside it as
cv2.pointPolygonTest says (find_cards' duplicate test skips the call there)."""
import cv2
import numpy as np
from hypothesis import given, settings, strategies as st

from drivers.camera.outline import _centre, _norm

coord = st.floats(-2000, 2000, allow_nan=False, width=32) | st.sampled_from(
    [0.0, 0.5, -0.5, 1e-30, -1e-30, 3e-38, 1279.0, 719.5])
quad = st.lists(st.tuples(coord, coord), min_size=4, max_size=4).map(np.float32)


@settings(max_examples=400, deadline=None)
@given(quad)
def test_centre_and_norm_are_numpys(q):
    assert _centre(q).tobytes() == q.mean(axis=0).tobytes()
    q64 = q.astype(np.float64)
    assert _centre(q64).tobytes() == q64.mean(axis=0).tobytes()
    for v in (q[0] - q[1], q[2] - q[3], q64[0] - q64[2]):
        assert np.asarray(_norm(v)).tobytes() == np.asarray(np.linalg.norm(v)).tobytes()


@settings(max_examples=400, deadline=None)
@given(quad, st.integers(0, 3), st.floats(0, 50, width=32), st.booleans(), st.integers(0, 2))
def test_beyond_a_quads_corners_is_outside(q, k, d, on_corner, side):
    # points just beyond the corners' right edge or rows, some level with a corner
    x, y = (float(v) for v in q[k])
    x1, y0, y1 = float(q[:, 0].max()), float(q[:, 1].min()), float(q[:, 1].max())
    step = float(np.float32(d)) or float(np.nextafter(np.float32(x1), np.float32(np.inf))) - x1
    pt = [(x1 + step, y if on_corner else (y0 + y1) / 2),
          (x, y0 - (step if d else float(np.spacing(np.float32(y0))))),
          (x, y1 + (step if d else float(np.spacing(np.float32(y1)))))][side]
    pt = tuple(float(np.float32(v)) for v in pt)
    skipped = pt[0] > x1 or pt[1] < y0 or pt[1] > y1
    if skipped:
        assert cv2.pointPolygonTest(q, pt, False) < 0
