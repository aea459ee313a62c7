"""Whether a card's blur is a measured streak (issue 17), for the re-read of a card the deck
check refused on its edges' middle (scene.py): that retry read more moving cards, but on a
defocused card on a white table it let cardsJS's templates read Responsive's Qd
(tests/test_camera_table_foreign.py). So it is taken only when the card's own index corners say
it moves: they match the learned indexes blurred by the card's streak (streak.estimate) better,
by FIT, than blurred by any round blur (defocus.GRID, 0.6-2.1 px: sharp to out of focus).

Measured on the sweep's scenes (noisy frames, true outlines; own deck and cardsJS<->Responsive):
the streak's excess over the best round blur was at most -0.002 on 336 defocused cards and at
most 0.015 on 1,680 clean, shadowed or glared ones; on 335 moving cards above 0.02 for 58%."""
import numpy as np

from . import streak as motion
from .defocus import GRID
from .hands import both_corners
from .index import S, SEARCH, _ink, _match_gray, _product, _windows, corner

FIT = 0.03      # the streak's fit over the best round blur's (twice the most a still card showed)


def fits(rec, bgr, quad):
    """(streak's fit, best round blur's fit) of the card's two index corners, each the best
    rank's plus the best suit's score against the learned indexes of the corner's ink colour
    (`rec`: a VisualRecognizer, its indexes at the comparison's size and its round-blur bank),
    averaged over the corners; None when no corner's ink colour is clear."""
    t = rec.t
    v = motion.estimate(bgr, np.float32(quad))
    s = t.cut + S
    lin, rnd, n = 0.0, np.zeros(len(GRID)), 0
    for q in both_corners(quad):
        patch = corner(bgr, q, t.box, SEARCH)
        colour = _ink(patch[SEARCH:-SEARCH, SEARCH:-SEARCH])[2]
        if colour is None:
            continue
        gray = _match_gray(patch)
        parts = (_windows(gray[:s + S], t.part_shapes[0]), _windows(gray[s - S:], t.part_shapes[1]))
        streaked = motion.blurred(rec._small[colour], t.cut, motion.kernel(q, t.box, v))
        lin += sum(float(_product(w, streaked[j]).max()) for j, w in enumerate(parts))
        for i, sigma in enumerate(GRID):
            rnd[i] += sum(float(_product(w, rec._defocused[sigma][colour][j]).max())
                          for j, w in enumerate(parts))
        n += 1
    return (lin / n, float(rnd.max()) / n) if n else None


def streaked(rec, bgr, quad):
    """Whether the card at `quad` is smeared by a streak: its index corners fit its streak's
    blur better than any round blur by FIT (module doc)."""
    f = fits(rec, bgr, quad)
    return f is not None and f[0] - f[1] >= FIT
