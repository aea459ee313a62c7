"""A suit read clear of its twin (VisualRecognizer's mixin): at the table's scale a streak or a
defocus runs a club's three lobes together toward a spade's outline (and a heart's and a
diamond's), and the plain read can pass the wrong one of the two suits of a colour at both index
corners by just over the reader's margin. The face then decides: a suit the index leaves thin
must be the face's by FACE_SUIT, what a suit read from a blurred index must show."""
import numpy as np

from .defocus import GRID
from .deckprint import CORNER_FACE, corner_face_score
from .index import CH, CW, FACE_H, FACE_SUIT, FACE_W, INK, S, TWIN, _product, _unit, _windows

# the read suit's index score over its twin's at the weaker corner under which the face must
# also be the suit's: twice the reader's margin (the wrong reads found passed by 0.050-0.052;
# spades and clubs are so alike at 125 pixels that nearly every black card's index is under it)
TWIN_INDEX = 0.1
# a covered card (one index corner, the face strips along its top and left sides) whose suit the
# index leaves thin: its strips may be its twin's by no more than this. The strips do not part the
# twins as a whole face does (the index takes most of them: correct reads' strips are the twin's
# by up to 0.056 on the five tuned decks, 1,055 thin reads of bench/hunt_hands.py --margins, seeds
# 50000-50146), so no positive margin can be asked; a blurred club read as a spade at one corner
# had the twin's (its true card's) strips by 0.107-0.124 (the held-out Tigullio deck's 3c, 4c, 6c,
# bench/hunt_hands.py scenes 165, 175, 201, 234)
COVERED_TWIN = -0.06
# ... and strips that are the twin's at all (by more than STRIPS_TWIN) say nothing for the read
# suit: the suit is then judged as a bare card's is, by its glyph under matched blurs
# (SUIT_BLURRED), and a club the blur has merged toward a spade is refused there. The held-out
# Tigullio's covered 6c, its far index under the 6s beside it, read 6s in frames 1, 3 and 4 of
# bench/hunt_hands.py scene 180446 (red felt, defocus; the index 0.026-0.035 over the club, the
# strips the club's by 0.037-0.045, inside COVERED_TWIN; its glyph under matched blurs -0.013 to
# -0.007: refused now; measured, not tuned on). The five tuned decks' correct thin reads whose
# strips carry pips (bench/diag_covered_twins.py, seeds 50000-50300 and 60000-60300, 3 frames,
# 1,613 reads): 6 have strips the twin's (by 0.005-0.060: Kennard's 7c in motion at 0.060,
# Responsive's 9c in motion and 7c under defocus), and their glyphs under matched blurs beat
# the twin by 0.021-0.034, all over SUIT_BLURRED. Strips alone do not part the two kinds (the
# tuned Kennard 7c's strips are the twin's by more than the wrong 6c's), nor the strips' and the
# index's margins summed (that 7c -0.026, the 6c -0.007 to -0.014).
STRIPS_TWIN = 0.0
# ... and the strips are evidence of the suit only where the deck prints something there outside
# the index: where the learned strips, the index box masked out, carry under this share of the
# index's own ink (the mean square of the face's edges), they are bare paper and border (an ace,
# its one pip in the middle; the drawn deck, whose pips lie inside its strips nowhere), and a suit
# the index leaves thin is refused: the strips' score is then the index's own blur again. The
# held-out Tigullio's covered Ac was read As in all five frames of bench/hunt_hands.py scene 683
# (index 0.054 over the club, strips the spade's by 0.075). Learned strips on all seven decks:
# aces and the drawn deck 0.01-0.04, twos and threes 0.10-0.18, every other card 0.27 and more.
# Twos and threes count as bare too (0.2, in the gap): their strips carry one pip's edge, too
# little to part the twins: the held-out Tigullio's covered 3c was read 3s in one frame with
# strips the club's by only 0.037, inside COVERED_TWIN's allowance (hunt_hands.py scene 135312,
# index 0.042 over the club); their suit glyph is judged under matched blurs instead.
STRIPS_BARE = 0.2
# ... unless its index's suit glyph, compared with the read card's and its twin card's learned
# suit glyphs blurred alike by each round blur of defocus.GRID (and unblurred), beats the twin's
# by this at every blur: the suit parted under any blur the card may carry, the rank glyph's and
# the twins' alike. The plain read compares a blurred glyph with sharp ones, and a blurred club
# looks more like a sharp spade than a sharp club does: the held-out Tigullio's covered Ac read As
# by 0.05-0.06 at the index, but at the blur its rank glyph fits (1.5-1.8 px) the two suits score
# within 0.013 of each other and the As's least margin over the grid is -0.013 to +0.001 (scene
# 683, all five frames). The five tuned decks' correct thin bare reads (bench/diag_bare_twins.py,
# seeds 50000-50175, 3 frames, 147 reads): least margin 0.005-0.058 (the drawn deck's 100 reads
# 0.028 and more, all passing; svg-cards 6 of 15, Kennard 9 of 20); a read of the twin scores the
# negative of its true card's; the same card's margin moves by a standard deviation of 0.0014
# (median) to 0.0045 from frame to frame (fresh noise): 0.02 is over four of the largest.
SUIT_BLURRED = 0.02
# ... asked only at the blurs the card may carry: the blur (of the plain templates and GRID's)
# whose rank glyph fits the index best, and its neighbours one step either side. Asked at every
# blur, a sharp card's suit was compared with templates blurred far past it (2.1 px), where every
# two suits run together: the tuned decks' sharp covered aces, read rightly at 0.96-0.99, have
# their suit over the twin's by 0.025-0.047 at the blur their rank fits (unblurred) and its
# neighbour, but 0.000-0.017 at 2.1, and were refused in every frame (bench_hands' scenes:
# svg-cards' As and Ac, Responsive's As; bench/diag_covered.py). The rank glyph tells the blur
# whatever the suit (the two twins share their rank), and it is as sharp a measure as the grid:
# the held-out Tigullio's covered Ac read As (scene 683) fits best at 1.5-1.8, where its least
# margin is -0.013 to +0.001 (all ten reads): refused as before (measured, not tuned on). The
# tuned decks' 147 correct thin bare reads above all keep or gain margin (a subset of the blurs).
FIT_STEPS = 1
# A rank read from a blurred index (visual._read_streaked) must be the face's too: the face no more
# like the learned face of another rank than like the read card's (its margin over the likest
# other rank's above FACE_RANK). Blurred indexes are all alike, and a moving svg-cards Td, its
# streaked index split between T and 8 at its two corners, read 8d at both against the indexes
# under defocus.FLOOR's round blur (8 over the runner-up by 0.058 and 0.113) and passed the deck
# check's face at 0.752 (FACE_MIN_SMALL 0.75), while its face is the Td's at 0.872 (a margin of
# -0.120; bench/hunt_hands.py scene 145290, frame 2). The four published tuned decks' correct
# blurred reads stand 0.016 (svg-cards) to 0.046-0.054 (the others) clear at the least, 491 reads
# (bench/diag_blurred_ranks.py --seeds 50000:50400, motion and defocus, 3 frames).
FACE_RANK = 0.0
# ... on a deck whose faces tell its ranks apart: where two ranks of a suit, their index corners
# masked out, are mostly (the median pair) less alike than this. The drawn deck prints one pip a
# card: its two ranks of a suit are 0.909-0.997 alike there (median 0.972), its face tells no rank
# and its correct blurred reads were another rank's face by up to 0.059 (asked there, the guard
# cost it a read of the white sweep); the published decks' median pairs 0.05-0.21 (at most 0.93).
RANK_FACES_ALIKE = 0.6


class Twins:
    """Needs the recognizer's _by_colour, _groups, _defocused, _face_over_twin and t (its templates)."""

    def _twins_apart(self, card, grays, corners, f):
        """Whether the card's suit stands clear of the other suit of its colour: at the index
        (by TWIN_INDEX at the weaker corner) or, when the index leaves it thin, at the face (by
        FACE_SUIT, what a suit read from a blurred index must show). Blurred by a streak or a
        defocus, a club's three lobes run together toward a spade's outline: the plain read
        passed the held-out Tigullio deck's Ac and 3c as As and 3s by 0.050-0.052 over the club
        at the index, their faces the club's by 0.09-0.16 (bench/hunt_wrong.py scene 0); a
        review's moving Ac read As at both corners, its face the spade's by only 0.024. The five
        tuned decks' correct reads: the face over the twin's by 0.046 at the least (cardsJS' As
        under defocus, refused now), most by 0.1 and more (docs/camera.md)."""
        index = self._index_over_twin(card, grays, corners)
        return index is None or index >= TWIN_INDEX or self._face_over_twin(f, card, FACE_SUIT)

    def _face_rank_clear(self, f, card):
        """Whether the card's face `f` is `card`'s more than any other rank's by FACE_RANK, on a
        deck whose faces tell its ranks apart (_face_rank_margin)."""
        m = self._face_rank_margin(f, card)
        return m is None or m > FACE_RANK

    def _face_rank_margin(self, f, card):
        """How much more the card's face `f` is like `card`'s learned face than like the likest
        learned face of another rank (any suit), in one product; None on a deck whose faces
        do not tell its ranks apart (RANK_FACES_ALIKE)."""
        cache = self.__dict__.setdefault("_rank_faces", {})
        if not cache:
            cards = sorted(self.t.faces)
            # the learned faces with both index corners masked out, each way round, unit rows:
            # how alike two ranks of a suit are where the deck prints its pips
            keep = np.ones((FACE_H, FACE_W), bool)
            x1, y1 = int(self.t.box[2] * FACE_W / CW) + 3, int(self.t.box[3] * FACE_H / CH) + 3
            keep[:y1, :x1] = keep[-y1:, -x1:] = False
            rows = [_unit(np.stack([(self.t.faces[c][::-1, ::-1] if flip else self.t.faces[c])[keep]
                                    for c in cards])) for flip in (False, True)]
            alike = np.maximum(rows[0] @ rows[0].T, rows[0] @ rows[1].T)
            pairs = [alike[i, j] for i, a in enumerate(cards) for j, b in enumerate(cards)
                     if a[1] == b[1] and a[0] != b[0]]
            cache.update(cards=cards, tells=bool(np.median(pairs) < RANK_FACES_ALIKE),
                         m=np.stack([self.t.faces[c].ravel() for c in cards]).astype(np.float32))
        if not cache["tells"]:
            return None
        cards = cache["cards"]
        sc = (np.stack([f.ravel(), f[::-1, ::-1].ravel()]).astype(np.float32) @ cache["m"].T).max(axis=0)
        return float(sc[cards.index(card)]) - max(float(v) for c, v in zip(cards, sc) if c[0] != card[0])

    def _shown_twins_apart(self, card, grays, corners, score):
        """_twins_apart for a card partly under another (scene._read_occluded; _of_deck's
        `hidden`): the face compared only where it shows (`score(learned face)`: the likeness
        over what shows), by the same FACE_SUIT when the index leaves the suit thin at the
        weaker of `corners` that read. Those paths passed a card the whole card's check had
        refused for its twin: the held-out Tigullio's defocused Ac, read As at both corners
        (0.053 over the club), its face the spade's by 0.005, refused whole, was taken by the
        occluded path (bench/hunt_hands.py scene 8667), its face where it shows the spade's by
        0.003. The five tuned decks' correct occluded reads thin at the index:
        bench/diag_occluded_twins.py (docs/camera.md)."""
        index = self._index_over_twin(card, grays, corners)
        if index is None or index >= TWIN_INDEX:
            return True
        return score(self.t.faces[card]) - score(self.t.faces[card[0] + TWIN[card[1]]]) > FACE_SUIT

    def _covered_twins_apart(self, card, grays, quad, f, mine):
        """Whether a covered card read at the index corner of `quad` stands clear of its twin
        suit: at the index (by TWIN_INDEX) or, when the index leaves it thin, in the face strips
        that show (`f`: its face; `mine`: the strips' score for `card`), which must not be the
        twin card's by more than COVERED_TWIN's allowance, and when they are the twin's at all
        (STRIPS_TWIN) the suit glyph under matched blurs decides, as for bare strips."""
        index = self._index_over_twin(card, grays, [quad])
        if index is None or index >= TWIN_INDEX:
            return True
        twin = card[0] + TWIN[card[1]]
        if self._strips_bare(card):
            # nothing in the strips but the index: its suit glyph again under matched blurs
            return self._suit_blurred_apart(card, grays, quad)
        strips = mine - corner_face_score(f, self.t.faces[twin])
        if strips <= COVERED_TWIN:
            return False
        # strips that lean to the twin vouch for nothing: the suit glyph under matched blurs decides
        return strips >= STRIPS_TWIN or self._suit_blurred_apart(card, grays, quad)

    def _suit_blurred_apart(self, card, grays, quad):
        """Whether the index read at `quad` (its patch kept in `grays`) has `card`'s suit glyph
        over its twin card's by SUIT_BLURRED at the blurs it may carry (FIT_STEPS around the one
        its rank glyph fits best, of the plain templates and defocus.GRID's), both templates
        blurred alike (the reader's own blurred banks). Only a covered card's thin read with bare
        strips comes here: two template columns at seven blurs, rank and suit."""
        colour = INK[card[1]]
        kept = grays.get(np.float32(quad).tobytes())
        if kept is None or kept[1] is not self._by_colour[colour][0]:
            return False
        cards = kept[1]
        pair = [cards.index(card), cards.index(card[0] + TWIN[card[1]])]
        s = self.t.cut + S
        ranks = _windows(kept[0][:s + S], self.t.part_shapes[0])
        windows = _windows(kept[0][s - S:], self.t.part_shapes[1])
        banks = [self._by_colour[colour][1:3]] + [self._defocused[g][colour] for g in GRID]
        # the blur the rank glyph fits best (the plain templates, then GRID's), one step either side
        fit = int(np.argmax([float(_product(ranks, r[:, pair]).max()) for r, _ in banks]))
        near = banks[max(0, fit - FIT_STEPS):fit + FIT_STEPS + 1]
        least = min(float(np.subtract(*_product(windows, m[:, pair]).max(axis=0))) for _, m in near)
        return least >= SUIT_BLURRED

    def _strips_bare(self, card):
        """Whether `card`'s learned face strips carry, outside the index box, under STRIPS_BARE of
        the index's ink; learned once a card from the templates' faces."""
        cache = self.__dict__.setdefault("_bare", {})
        if card not in cache:
            strips = np.zeros((FACE_H, FACE_W), bool)
            strips[:int(CORNER_FACE[1] * FACE_H)], strips[:, :int(CORNER_FACE[0] * FACE_W)] = True, True
            index = np.zeros_like(strips)
            index[:int(self.t.box[3] * FACE_H / CH) + 3, :int(self.t.box[2] * FACE_W / CW) + 3] = True
            f = self.t.faces[card] - self.t.faces[card].mean()
            cache[card] = (f[strips & ~index] ** 2).mean() < STRIPS_BARE * (f[strips & index] ** 2).mean()
        return cache[card]

    def _index_over_twin(self, card, grays, corners):
        """The read suit's best index score over its twin suit's at the weaker of `corners`, from
        the scores the read kept in `grays` (nothing is compared again); None when none was kept."""
        m = []
        colour = INK[card[1]]
        suits, sp, sat = self._groups[colour][1]
        for q in corners:
            kept = grays.get(np.float32(q).tobytes())
            if kept is None or kept[1] is not self._by_colour[colour][0]:
                continue        # not read, or read in the other colour
            best = dict(zip(suits, np.maximum.reduceat(kept[3].max(axis=0)[sp], sat).tolist()))
            m.append(best[card[1]] - best[TWIN[card[1]]])
        return min(m) if m else None
