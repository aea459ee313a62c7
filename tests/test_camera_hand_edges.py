"""A hand card's corners located on its own edges where the card below shows around them
(hands.py): a stronger edge of the card below's picture near one end of a side, and paper over
paper that barely falls at all. Drawn grey images (no deck, no templates): fast."""
import cv2
import numpy as np

from drivers.camera.hands import refine_corner, whole_card

SIZE = (100, 140)       # the card's width and height in pixels


def _card(tl):
    x, y = tl
    return np.float32([[x, y], [x + SIZE[0], y], [x + SIZE[0], y + SIZE[1]], [x, y + SIZE[1]]])


def test_a_picture_edge_near_one_end_of_a_side_does_not_pull_the_corner():
    """The card below's picture frame runs just outside the first third of the top card's top
    side and falls harder than the paper's edge: a least-squares line through all the places
    turned onto it and left too few on the true edge (the corner unlocated; a top card's hand
    refused in some frames)."""
    true = _card((100, 100))
    # the frame line along different stretches of the side (a least-squares line through every
    # place put the corner 13-14 px off in the last two: "located")
    for x0, x1, y in ((115, 140, 90), (118, 145, 91), (120, 150, 92), (60, 152, 92)):
        g = np.full((300, 300), 40, np.float32)         # the table
        g[40:260, 40:260] = 150                         # the card below (its picture's light part)
        g[y - 3:y, x0:x1] = 20                          # its frame line, 8-10 px above the top side
        g[100:240, 100:200] = 230                       # the top card, tl (100, 100)
        g = cv2.GaussianBlur(g, (0, 0), 1.0)
        for off in ((2, -3), (1, 2)):                   # laid a few pixels off
            r = refine_corner(g, true + np.float32(off), SIZE)
            assert r is not None and np.abs(r[0] - true[0]).max() < 1.0, (x0, x1, y, off, r)


def test_a_far_corner_on_paper_over_paper_is_placed_by_its_sides_offsets():
    """The top card's far corner over the card below: paper on paper falls 3-5 and a picture edge
    pulls a free fit; the corner placed on sides parallel to the located near corner's, by the
    places that agree, then every whole card's check."""
    g = np.full((400, 400), 40, np.float32)
    g[20:230, 20:180] = 200                         # the card below, under the far corner
    g[60:200, 60:160] = 205                         # the top card, far corner (60, 60) on paper
    g[60, 60:160], g[60:200, 60] = 180, 180         # its cut edge: a faint line
    g[48:55, 70:80], g[70:80, 50:54] = 10, 10       # glyphs of the card below beside its sides
    g[200:, :] = 40
    g = cv2.GaussianBlur(g, (0, 0), 1.0)
    true = _card((60, 60))
    near = true[[2, 3, 0, 1]]                       # the card seen from its located br corner
    assert refine_corner(g, true, SIZE) is None     # too faint for a free fit
    for parallel in (False, True):
        w = whole_card(g, near, SIZE, parallel=parallel)
        assert w is not None and np.abs(w[2] - true[0]).max() < 1.0, (parallel, w)
    # a bare face (no edge there, sensor noise): no corner
    flat = np.full((400, 400), 200, np.float32)
    flat[200:, :] = 40
    flat += np.random.default_rng(1).normal(0, 1.5, flat.shape).astype(np.float32)
    assert whole_card(cv2.GaussianBlur(flat, (0, 0), 1.0), near, SIZE, parallel=True) is None


def test_a_printed_frame_inside_the_edge_leaves_a_corner_on_the_card_edge():
    """A court card whose frame is printed 6 px inside its edge (the held-out Tigullio deck) lying
    over a card below: along its sides the frame's dark line falls harder than the paper's edge
    over the paper below, so the corner refined on the steepest fall lies on the frame (6 px in:
    its index unread, the hand's top card refused and the hand with it). The corner beyond the
    frame's lines is the card's own; a card with no frame has none."""
    true = _card((100, 100))
    base = np.full((300, 300), 40, np.float32)          # the table
    base[60:270, 60:250] = 225                          # the card below, paper
    for framed in (True, False):
        g = base.copy()
        g[98:100, 98:230], g[98:240, 98:100] = 205, 205     # the top card's edge: a faint line
        g[100:240, 100:200] = 235                           # the top card
        if framed:
            g[106:108, 106:194], g[106:234, 106:108] = 120, 120     # its frame's line
        g = cv2.GaussianBlur(g, (0, 0), 1.0)
        for off in ((2, -2), (-1, 2)):
            laid = true + np.float32(off)
            plain, outer = refine_corner(g, laid, SIZE), refine_corner(g, laid, SIZE, outer=True)
            if framed:
                assert plain is not None and np.abs(plain[0] - true[0]).max() > 4, (off, plain)
                assert outer is not None and np.abs(outer[0] - true[0]).max() < 1.0, (off, outer)
            else:
                assert plain is not None and np.abs(plain[0] - true[0]).max() < 1.0, (off, plain)
                assert outer is None, (off, outer)


def test_a_side_whose_steepest_falls_split_between_frame_and_edge_is_located():
    """A covered court card with a frame printed 6 px inside its edge (Tigullio's courts), its
    top side over three things: the paper of the card below (the frame's line falls hardest),
    the table (the edge falls hardest) and a glyph of the card below 8 px out (the glyph's edge
    falls hardest). The steepest fall alone put five places on the frame, five on the edge and
    two on the glyph: no line kept six places, the corner was not located at all (plain or
    beyond the frame) and its index, read only as laid from the hand's outline, was refused.
    Each place's two steepest falls: the edge's line through every place."""
    true = _card((100, 100))
    g = np.full((300, 300), 40, np.float32)             # the table
    g[60:98, 60:150] = 225                              # the card below's paper, above the side's start
    g[60:98, 170:230] = 225                             # and near its end, where a glyph lies
    g[91:94, 170:230] = 20                              # the glyph, 6-8 px out
    g[98:250, 60:98] = 225                              # the card below's paper beside the left side
    g[98:100, 98:150], g[98:240, 98:100] = 205, 205     # the top card's edge over the paper: faint
    g[100:240, 100:200] = 235                           # the top card
    g[105:107, 105:195], g[105:235, 105:107] = 120, 120     # its frame's line, 5 px inside
    g = cv2.GaussianBlur(g, (0, 0), 1.0)
    # (laid exactly on it, the steepest falls' own staircase let a line 8 degrees turned pass
    # within a pixel of six places: that refusal is left to the reader)
    for off in ((1, -1), (-1, 1)):
        laid = true + np.float32(off)
        got = [r for r in (refine_corner(g, laid, SIZE), refine_corner(g, laid, SIZE, outer=True))
               if r is not None]
        assert any(np.abs(r[0] - true[0]).max() < 1.0 for r in got), (off, got)
        for r in got:       # and nothing else than the edge's corner or the frame's, square to the card
            side = (r[1] - r[0]) / np.linalg.norm(r[1] - r[0])
            assert abs(side[1]) < 0.02 and np.abs(r[0] - true[0]).max() < 8, (off, r)
