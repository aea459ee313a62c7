"""cv2.morphologyEx(m, MORPH_OPEN, the MORPH_ELLIPSE element of k x k) pixel for pixel, faster:
OpenCV erodes and dilates by a non-rectangular element point by point (its ~0.8 k^2 pixels for
every image pixel), by a rectangle in two one-dimensional passes. Its ellipse is a stack of
centred rows whose widths shrink away from the middle row, so it is the union of a few centred
rectangles (one per distinct width: 7 for k = 21), and
  erode(m, A u B) = erode(m, A) & erode(m, B),   dilate(m, A u B) = dilate(m, A) | dilate(m, B)
(min and max over the union's offsets; the image's border as OpenCV takes it for both: beyond it
no pixel erodes, none dilates). find._cut_spurs opens every streak-joined blob by a disc of a third
of a card's width (k = 21 at the table's scale): 0.45 -> 0.25 ms a blob, 4 blobs a white frame."""
import functools

import cv2
import numpy as np


@functools.lru_cache(maxsize=16)
def ellipse_rects(k):
    """The centred rectangles (uint8 kernels) whose union is getStructuringElement(MORPH_ELLIPSE,
    (k, k)); the anchor of each (its centre) is the ellipse's."""
    se = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    widths = se.sum(axis=1)
    out = []
    for w in sorted(set(widths.tolist()) - {0}):
        rows = np.flatnonzero(widths >= w)
        # the rows this wide or wider: one band about the middle row, each row centred in it
        assert rows[0] + rows[-1] == k - 1 and len(rows) == rows[-1] - rows[0] + 1, k
        out.append(np.ones((len(rows), w), np.uint8))
    for r in range(k):                   # every row centred: the union is the ellipse exactly
        xs = np.flatnonzero(se[r])
        assert len(xs) == 0 or xs[0] + xs[-1] == k - 1, k
    return tuple(out)


def open_ellipse(m, k):
    """cv2.morphologyEx(m, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    of a uint8 image `m`, the same pixels (k odd)."""
    rects = ellipse_rects(k)
    e = cv2.erode(m, rects[0])
    for r in rects[1:]:
        cv2.bitwise_and(e, cv2.erode(m, r), dst=e)
    d = cv2.dilate(e, rects[0])
    for r in rects[1:]:
        cv2.bitwise_or(d, cv2.dilate(e, r), dst=d)
    return d
