"""Cards on a white or light table (find.py's masks): card stock is only 5-15% brighter than
such a table, in the light as in a shadow's band, and the table's own light varies by more than
that across the frame (a gradient, a shadow, a glare), so no level below the brightest pixels
parts every card from it. The whiteness over the table's own level there (a ratio, not a
difference) outlines each card where it lies."""
import math

import cv2
import numpy as np

RATIO = (1.05, 1.08)              # card stock over the table: cardsJS's on the white table 1.10-1.25
LIGHT = 1.3                       # a table whose level comes within this of the cards' somewhere
_CLOSE = np.ones((5, 5), np.uint8)


def table_level(small, card_size):
    """The table's whiteness at `small` (the frame's at an eighth of the size): the cards' dark
    ink closed over first (an opening alone took a court card's picture or a row of indexes for
    the table, and every card near it stood out of nothing), then opened by a square larger than
    a card (a card is brighter than the table: the opening takes it away)."""
    k = int(1.05 * math.hypot(*card_size) / 8) if card_size else int(0.8 * min(small.shape))
    k = max(3, min(k, min(small.shape) - 1)) | 1
    kc = (max(3, int(card_size[0] / 16)) if card_size else 3) | 1
    bg = cv2.morphologyEx(small, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_RECT, (kc, kc)))
    return cv2.morphologyEx(bg, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (k, k)))


def light_table(small, card_size, top):
    """Whether the table's level somewhere comes within LIGHT of the cards' (`top`): a white or
    light table, not felt, wood or grey."""
    return float(table_level(small, card_size).max()) * LIGHT >= top


def ratio_masks(w, small, card_size, top):
    """Masks of what is RATIO brighter than the table's level (`w` the whiteness, `small` it at
    an eighth, `top` its brightest pixels' level); none on a table far darker than card stock
    everywhere (felt, wood, grey: the levels part them, and the masks would cost a frame's time
    for nothing)."""
    bg = table_level(small, card_size)
    if float(bg.max()) * LIGHT < top:
        return
    h, wd = w.shape
    bg = cv2.resize(cv2.GaussianBlur(bg, (0, 0), 1), (wd, h), interpolation=cv2.INTER_LINEAR)
    ratio = w.astype(np.float32) / np.maximum(bg, 1).astype(np.float32)
    for r in RATIO:
        # closed: an index or a court card's picture cuts a card's thin white margin apart
        yield "ratio", cv2.morphologyEx((ratio > r).astype(np.uint8) * 255, cv2.MORPH_CLOSE, _CLOSE)
