"""A top-hat blob that is the table between whole cards, not a hand (find_cards: its hand search
skipped on grey tables, where it cost 10-15 ms a frame and led to no read)."""
import cv2
import numpy as np

# the gap test on; off only to compare with it (bench/diag_gap_blobs.py, tests)
GAP_TEST = True
GAP_STATS = None    # a list to append each top-hat blob's figures to (bench/diag_gap_blobs.py)
# of a card's width: how far past a found card's outline its own pixels may lie in the blob (the
# blob's edge and the fitted outline are a pixel or two apart at half size)
GAP_GROW = 0.05
# of a card's area: the least paper a blob must hold outside the found cards to be searched as a
# hand. On grey (bench/diag_gap_blobs.py, the five tuned decks' sweep scenes and hands, 60 frames
# each) the gap blobs skipped held at most 0.016, the blobs kept 0.050 and more; a covered
# card's index strip alone is 0.2 x 0.25 of a card (0.05)
GAP_PAPER = 0.03


def gap_blob(white, level, blob, quads, card_size):
    """Whether a top-hat blob (`blob`, a contour at the masks' scale) is the table between whole
    cards found (`quads`), not a hand: outside their outlines it holds less than GAP_PAPER of a
    card of paper (pixels of `white`, the masks' whiteness, above `level`: find_cards gives
    halfway from the table's median to the brightest paper). The top-hat's opening (a square
    larger than a card) is pulled down by the cards' ink, so the grey table between two cards a
    few pixels apart stands above it and joins their paper: such a blob cost 10-15 ms a frame
    of hand search on grey and led to no read (bench/diag_gap_blobs.py). A hand's covered cards
    are paper outside any whole card."""
    x, y, bw, bh = cv2.boundingRect(blob)
    m = np.zeros((bh, bw), np.uint8)
    cv2.drawContours(m, [blob], -1, 255, -1, offset=(-x, -y))
    grow = max(2, int(round(GAP_GROW * card_size[0])))
    for q in quads:
        cv2.fillConvexPoly(m, np.int32(np.round(_grown(q, grow) - (x, y))), 0)
    paper = white[y:y + bh, x:x + bw] > level
    left = int(np.count_nonzero(m & paper))
    if GAP_STATS is not None:
        GAP_STATS.append({"left": left, "card": float(card_size[0] * card_size[1]),
                          "outside": int(np.count_nonzero(m)), "bbox": (x, y, bw, bh)})
    return left < GAP_PAPER * card_size[0] * card_size[1]


def _grown(q, d):
    """The quad `q` with each corner moved `d` px farther from its centre."""
    c = q.mean(axis=0)
    v = q - c
    return c + v * (1 + d / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-6))
