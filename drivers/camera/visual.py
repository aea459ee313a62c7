"""Visual rank and suit that learns the deck: where the index sits on this deck's cards (position,
size and colour vary from deck to deck) and what each card's index looks like, from one
photo (or live frame) per card of the studio's own deck. A card is read from its index corners,
each compared with all 52 learned indexes; refused when a match is weak or ambiguous, when the
ink's colour is unclear, or when two readable corners disagree. A corner of another deck's design
matches none of them well: such cards are refused."""
import cv2
import numpy as np

from . import defocus
from . import streak as motion
from .deckprint import CORNER_FACE_MIN, SMALL, corner_face_score, proportioned, visible_face_score
from .hands import both_corners
from .index import (
    BLURRED_MIN, CH, CW, FACE_MIN, FACE_MIN_SMALL, FACE_SUIT, MATCH, NEAR, S, SEARCH, STRICT, TWIN,
    _best_over_shifts, _ink, _match_gray, _product, _scores, _windows, corner, face, face_score)
from .onecorner import OneCorner
from .twins import Twins
from .scene import SceneReader, VISIBLE, _shows
from .smear import streaked
from .indexplace import placed_shift


def _groups(keys):
    """(the distinct keys, the order that groups equal keys, where each group starts): the
    arguments of np.maximum.reduceat for the best of each key."""
    order = sorted(range(len(keys)), key=lambda j: keys[j])
    names = sorted(set(keys))
    starts = [[keys[j] for j in order].index(k) for k in names]
    return names, np.array(order), np.array(starts)


def _likeness(m, shape):
    """How alike each two learned templates (columns of `m`, of `shape`) are: the best
    correlation of one with the other over the reader's shifts (symmetric)."""
    out = np.stack([_best_over_shifts(np.pad(m[:, i].reshape(shape), S, mode="edge"), shape, m)
                    for i in range(m.shape[1])])
    return np.maximum(out, out.T)


def _clear(v1, v2, margin, like=None, way=0.5):
    """The best match beats the next by `margin`; or, for a corner that reads alone (`like`: how
    alike the two templates are), by at least half the way (`way`) from the next's template to
    its own and NEAR: a Responsive spade and club score 0.95 against each other at 125 pixels, so a
    spade read 0.994 beats the club's 0.948 by less than 0.05 though it is 0.9 of the way there
    (docs/camera.md: no wrong candidate of a located corner scored above 0.81)."""
    if v1 - v2 >= margin:
        return True
    return like is not None and v1 - v2 >= NEAR and (v1 - v2) / max(1 - float(like), 1e-3) >= way


def _like(m, shape, i, j):
    """How alike templates i and j (columns of `m`, of `shape`) are: _likeness for one pair."""
    pad = lambda k: np.pad(m[:, k].reshape(shape), S, mode="edge")    # noqa: E731
    return max(float(_best_over_shifts(pad(i), shape, m[:, [j]])[0]),
               float(_best_over_shifts(pad(j), shape, m[:, [i]])[0]))



WAY_STREAK = 0.7
FACE_SUIT_DEFOCUS = 0.1     # the face's margin over the other suit when it decides a defocused suit
FACE_SUIT_MOTION = 0.1      # and a moving card's (cardsJS' aces of spades and clubs under a streak: 0.03-0.09)


class VisualRecognizer(OneCorner, Twins, SceneReader):
    """Reads cards: each index corner is compared with the 52 learned indexes (those of the ink's
    colour), rank part and suit part each; a corner reads as a card only if both parts score at
    least `threshold` and beat every other rank and suit by `margin`."""

    def __init__(self, templates, threshold=0.8, margin=0.05):
        # The index comparisons are small matrix products; OpenBLAS spreads them over every
        # core, and on a busy machine that made them 50x slower (measured): one thread.
        from threadpoolctl import threadpool_limits
        self._blas = threadpool_limits(1, user_api="blas")
        self.t = templates
        # an index is compared only with the learned indexes of its ink's colour: half the product
        self._by_colour = {}
        for colour, suits in (("red", "hd"), ("black", "sc")):
            i = [k for k, c in enumerate(templates.cards) if c[1] in suits]
            rank_m = np.ascontiguousarray(templates.rank_m[:, i])
            suit_m = np.ascontiguousarray(templates.suit_m[:, i])
            self._by_colour[colour] = ([templates.cards[k] for k in i], rank_m, suit_m,
                                       _likeness(rank_m, templates.part_shapes[0]),
                                       _likeness(suit_m, templates.part_shapes[1]))
        # per colour, the cards grouped by rank and by suit: each rank's and suit's best score
        # in one reduction (a dict filled card by card was a sixth of read_corner)
        self._groups = {colour: tuple(_groups([c[j] for c in cards]) for j in (0, 1))
                        for colour, (cards, *_) in self._by_colour.items()}
        # per colour, the learned indexes whole at the comparison's size: blurred by a moving
        # card's streak when its plain read failed (streak.py)
        self._small = {colour: np.stack([cv2.resize(templates.patches[c], None, fx=MATCH, fy=MATCH,
                                                    interpolation=cv2.INTER_AREA) for c in cards])
                       for colour, (cards, *_) in self._by_colour.items()}
        # and blurred round by each of defocus.GRID (a card out of focus: its blur estimated)
        self._defocused = defocus.bank(templates, self._small)
        self.threshold = threshold
        self.margin = margin

    def read_corner(self, bgr, quad, strict=False, keep=None, short=None, streak=None, cand=None):
        """(card or None, confidence) from the index at the tl corner of `quad`; `strict` for a
        corner that alone will decide (a covered card): a higher score (STRICT). A corner
        refused only because its suit's margin fell short adds (card, the runner-up suit's
        card) to the list `short` when one is given (read_quad lets the face decide). `streak`:
        the card's motion streak (image pixels, streak.estimate): compared with the learned
        indexes blurred by it, by the same threshold; the margin is the likeness rule at
        WAY_STREAK (blurred templates are alike), also for a corner that is not strict."""
        # the colour from the full-size patch (thin strokes shrunk lose their colour), the
        # comparison at half size (fast)
        patch = corner(bgr, quad, self.t.box, SEARCH)
        colour = _ink(patch[SEARCH:-SEARCH, SEARCH:-SEARCH])[2]   # not the table beyond the edge
        if colour is None:
            if cand is not None:        # what a washed corner still says, whatever its colour
                cand.append(self._any_colour(_match_gray(patch)))
            return None, 0.0
        gray = _match_gray(patch)
        cards, rank_m, suit_m, rank_like, suit_like = self._by_colour[colour]
        other_colour = "black" if colour == "red" else "red"
        other = self._by_colour[other_colour][2]
        if np.ndim(streak) == 0 and streak in self._defocused:    # blurred once, at the learned size
            rank_m, suit_m = self._defocused[streak][colour]
            other = self._defocused[streak][other_colour][1]
        elif streak is not None:
            k = motion.kernel(quad, self.t.box, streak)
            rank_m, suit_m = motion.blurred(self._small[colour], self.t.cut, k)
            other = motion.blurred(self._small[other_colour], self.t.cut, k)[1]
        s = self.t.cut + S
        top, bottom = gray[:s + S], gray[s - S:]
        rsc = _scores(top, self.t.part_shapes[0], rank_m)
        windows = _windows(bottom, self.t.part_shapes[1])
        ssc = _product(windows, suit_m)
        if keep is not None:        # the compared patch and its scores, for the fingerprint's index_shift
            keep[np.float32(quad).tobytes()] = (gray, cards, rsc, ssc)
        rs, ss = rsc.max(axis=0), ssc.max(axis=0)
        (ranks, rp, rat), (suits, sp, sat) = self._groups[colour]
        rank = zip(np.maximum.reduceat(rs[rp], rat).tolist(), ranks)     # (best score, rank)
        suit = zip(np.maximum.reduceat(ss[sp], sat).tolist(), suits)
        (r1, k1), (r2, k2) = sorted(rank, reverse=True)[:2]
        (s1, j1), (s2, j2) = sorted(suit, reverse=True)[:2]
        conf = min(r1, s1)
        if cand is not None:        # the best rank and suit, read or not (a corner read alone: _one_corner)
            cand.append((k1, r1, j1, s1))
        threshold, margin = self.threshold, self.margin
        if strict:      # a corner located on its two edges: a higher score
            threshold = max(threshold, STRICT)
        # the colour only narrows the comparison: no suit of the other colour may match the
        # shape better. "black" is the absence of red, so in a grey frame (saturation turned
        # down, a monochrome or IR mode) or a four-colour deck a diamond is "black", and among
        # spades and clubs alone it read as a spade. (Not by the margin: a spade and a heart are
        # alike at this size, and a margin over both colours refused half the good reads.)
        like_r = like_s = None
        way = 0.5
        if (strict or streak is not None) and conf >= threshold and (r1 - r2 < margin or s1 - s2 < margin):
            # how alike the two best templates are (_clear), by their cards' places
            best = lambda sc, key, j: max((float(sc[i]), i) for i, c in enumerate(cards)   # noqa: E731
                                          if c[j] == key)[1]
            if streak is None:
                like_r = rank_like[best(rs, k1, 0), best(rs, k2, 0)]
                like_s = suit_like[best(ss, j1, 1), best(ss, j2, 1)]
            else:
                # blurred by the same streak, every two indexes are more alike: the margin
                # measured against how alike the two blurred ones are, 0.7 of the way (on
                # 219 blurred corners of two decks, read with the estimated streak: no wrong
                # card of the deck passed at 0.5 either; another deck's corners read as
                # another card 7 times in 90 at 0.7, its face and fingerprint then refuse)
                way = WAY_STREAK
                like_r = _like(rank_m, self.t.part_shapes[0], best(rs, k1, 0), best(rs, k2, 0))
                like_s = _like(suit_m, self.t.part_shapes[1], best(ss, j1, 1), best(ss, j2, 1))
        if conf < threshold or not (_clear(r1, r2, margin, like_r, way) and _clear(s1, s2, margin, like_s, way)):
            if short is not None and conf >= threshold and r1 - r2 >= margin and s1 > s2 \
                    and float(_product(windows, other).max()) < s1:
                short.append((k1 + j1, k1 + j2))
            return None, conf
        if float(_product(windows, other).max()) >= s1:     # the same windows
            return None, conf
        return k1 + j1, conf

    def read_quad(self, bgr, quad, need_both=True):
        """(card or None, confidence): both index corners must read the same card; with
        `need_both` False (a card partly covered in a hand) one is enough if the other reads
        nothing."""
        return self._read_quad(bgr, quad, need_both)[:2]

    def _read_quad(self, bgr, quad, need_both=True):
        """read_quad's answer and the card it refused when that card read at both corners but
        failed the deck check (another deck: the hand it lies in is refused too), else False."""
        # each corner's best rank and suit, for a card read at one corner (photos only: _one_corner)
        cands = ([], []) if self.t.card_size[0] >= SMALL else (None, None)
        grays, corners, short = {}, both_corners(quad), []
        (a, ca), (b, cb) = (self.read_corner(bgr, q, strict=not need_both, keep=grays,
                                             short=short if need_both else None, cand=cand)
                            for q, cand in zip(corners, cands))
        if a and b and a != b:
            return None, 0.0, False
        f = None
        if need_both and not (a and b):
            card = None
            if short:
                f = face(bgr, quad)
                card = self._suit_by_face(f, a, b, short)
            blurred = False
            plain = dict(grays)         # the sharp reads' patches and scores (_one_corner's deck check)
            if not card and max(ca, cb) >= BLURRED_MIN:
                # a card photographed moving: both corners again against the learned indexes
                # blurred by its own streak (streak.py), only now (the plain read is the cost
                # of every frame)
                card = blurred = self._read_streaked(bgr, quad, grays)
            if not card and (a or b):
                return self._one_corner(bgr, quad, (a, ca), (b, cb), cands, plain)
            if not card or (a or b) and card != (a or b):   # never overrule a corner read sharp
                return None, min(ca, cb), False
            a = b = card
            # a suit read from a blurred or half-read index: the face must tell it from the
            # other suit of its colour (a blurred club's and spade's index are alike: the
            # held-out Tigullio deck's Ac read As, its 3c 3s, docs/camera.md)
            f = face(bgr, quad) if f is None else f
            if not self._face_over_twin(f, a, FACE_SUIT if blurred else 0.0):
                return None, 0.0, False
        if need_both and not self._of_deck(bgr, quad, a, grays, f):
            return None, 0.0, a
        return a or b, max(ca, cb) if (a or b) else 0.0, False

    def _read_streaked(self, bgr, quad, grays):
        """The card both index corners read against the learned indexes blurred by the card's
        streak, then by a round blur of defocus.FLOOR, then (a card out of focus) by the round
        blur estimated from its corners (defocus.py) (their patches kept in `grays` for the deck
        check), or None. The first two as before the estimate: a card they read is read as
        before (at the estimated blur alone the drawn deck lost cards the fixed blur read).
        Out of focus, a suit the index leaves open between the two of its colour is the face's
        (_suit_by_face, by FACE_SUIT_DEFOCUS): a blurred small club and spade are alike (the
        held-out deck's clubs beat its spades by 0.002-0.03 at the estimated blur), its faces'
        pips and pictures not. A card as sharp as the reference photos stops before it. Last,
        the same for the streak: a moving card whose suit the streaked index left open (svg-cards'
        6s: its spade 0.97 at one corner, under the club's margin) is the face's (by
        FACE_SUIT_MOTION); only when nothing above read it (what read before reads as before)."""
        short = None
        moving = None
        for streak in (motion.estimate(bgr, quad), defocus.FLOOR, None):
            if streak is None:
                sigma = self.defocus_of(bgr, quad)
                if sigma is None or sigma < defocus.SHARP:
                    short = None
                    break
                streak = defocus.nearest(sigma)
                if streak == defocus.FLOOR:     # read there already: its suit the face's
                    break
            short = []
            a, b = (self.read_corner(bgr, q, keep=grays, streak=streak, short=short)[0]
                    for q in both_corners(quad))
            if a and a == b:
                return a
            if moving is None:
                moving, short = (a, b, short), None      # the streak's: decided last
        f = face(bgr, quad) if short or moving[2] else None
        card = self._suit_by_face(f, a, b, short, FACE_SUIT_DEFOCUS) if short else None
        if card is None and moving[2]:
            card = self._suit_by_face(f, *moving, FACE_SUIT_MOTION)
        return card

    def defocus_of(self, bgr, quad, grays=None):
        """The card's round blur beyond the learned indexes' (sigma, image pixels; defocus.py),
        or None (no index ink of a clear colour). `grays`: read_corner's `keep` of its corners
        (their compared patches, not made again)."""
        known = None
        if grays:
            colour = {id(v[0]): c for c, v in self._by_colour.items()}     # a kept read's cards: its colour's
            known = {k: (v[0], colour[id(v[1])]) for k, v in grays.items() if id(v[1]) in colour}
        return defocus.estimate(bgr, both_corners(quad), self.t, self._defocused, known)

    def _blur_for_cut(self, bgr, quad, grays=None):
        """The card's blur for the deck check's cut (deckprint.nearer_other_cut), at the table's
        scale only: it was measured there (bench/probe_foreign_frames.py); the photo scale keeps
        its fixed window, measured on bench_webcam.py's photos, until it is measured too."""
        if self.t.card_size[0] >= SMALL:
            return None
        return lambda: self.defocus_of(bgr, quad, grays)

    def _streak_for_cut(self, bgr, quad):
        """The card's streak (image pixels) for the deck check's rounding (deckprint._moving),
        only when its index corners say it moves (smear.streaked: not a defocus), at the table's
        scale only (where it was measured); None otherwise."""
        if self.t.card_size[0] >= SMALL:
            return None
        return lambda: motion.estimate(bgr, quad) if streaked(self, bgr, quad) else None

    def _of_deck(self, bgr, quad, card, grays, f=None, hidden=(), corners=None):
        """The deck check of a whole card that read `card` at both corners: its face (`f` when
        the caller has it), then its fingerprint. `hidden`: the outlines of cards lying over part
        of it; its face is then compared where it shows (at least VISIBLE of it). `corners`: the
        index corners whose index place is checked (both when None)."""
        if not proportioned(quad, self.t.card_size):
            return False        # a card of another size: a bridge deck's under a poker deck's templates
        face_min = FACE_MIN if self.t.card_size[0] >= SMALL else FACE_MIN_SMALL
        f = face(bgr, quad) if f is None else f
        if hidden:
            shows = _shows(quad, hidden)
            if shows.mean() < VISIBLE or visible_face_score(f, self.t.faces[card], shows) < face_min:
                return False
            if not self._shown_twins_apart(card, grays, corners or both_corners(quad),
                                           lambda learned: visible_face_score(f, learned, shows)):
                return False        # its twin suit, on what shows (twins.py)
        elif face_score(f, self.t.faces[card]) < face_min:
            return False        # another deck whose index font is like this deck's
        elif not self._twins_apart(card, grays, corners or both_corners(quad), f):
            return False        # a blurred club read as a spade (docs/camera.md)
        # another deck with a like face: its corners or its index placed otherwise
        return self.t.print.card_matches(bgr, quad, (CW, CH),
                                         [placed_shift(self.t, bgr, q, card, grays.get(np.float32(q).tobytes()))
                                          for q in corners or both_corners(quad)],
                                         blur=self._blur_for_cut(bgr, quad, grays),
                                         streak=self._streak_for_cut(bgr, quad))

    def _face_over_twin(self, f, card, margin):
        """Whether the card's face `f` is more like `card`'s than like the same rank's in the
        other suit of its colour, by more than `margin`."""
        twin = card[0] + TWIN[card[1]]
        return face_score(f, self.t.faces[card]) - face_score(f, self.t.faces[twin]) > margin

    def _corner_of_deck(self, bgr, quad, card, grays=None):
        """The deck check of a covered card, on what shows of it: the strips along its top and
        left sides, and its suit clear of its twin (twins.py, from the read's scores in `grays`).
        (Its index's place and its corner's rounding are not checked: at 125 pixels the located
        corner is too rough for them; docs/camera.md.)"""
        f = face(bgr, quad)
        mine = corner_face_score(f, self.t.faces[card])
        return mine >= CORNER_FACE_MIN and (grays is None or self._covered_twins_apart(card, grays, quad, f, mine))

    def _suit_by_face(self, f, a, b, short, margin=FACE_SUIT):
        """The card when each index corner read it or read its rank with the suit short of its
        margin (every such corner the same card first, the same runner-up), and the whole face
        is that card's by `margin` (FACE_SUIT) more than the runner-up's: Responsive's spade and club
        indexes correlate 0.95 at the table's scale, its faces' pips and pictures far less
        (docs/camera.md). Else None."""
        if (a is not None) + (b is not None) + len(short) != 2 or not short:
            return None
        tops = {c for c in (a, b) if c} | {c for c, _ in short}
        alts = {x for _, x in short}
        if len(tops) != 1 or len(alts) != 1:
            return None
        card, alt = tops.pop(), alts.pop()
        mine, other = face_score(f, self.t.faces[card]), face_score(f, self.t.faces[alt])
        return card if mine >= FACE_MIN and mine - other >= margin else None

    def read(self, card_img):
        """(card or None, confidence) of an image holding one rectified card (the whole image)."""
        h, w = card_img.shape[:2]
        return self.read_quad(card_img, np.float32([[0, 0], [w, 0], [w, h], [0, h]]))
