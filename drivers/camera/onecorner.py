"""A whole card at the photo's scale read at one index corner, when a gloss's streak, a glare,
overexposure or a shadow washed the other out (VisualRecognizer's mixin): the other corner must
say no other rank or suit, weighed over all 52 learned indexes when its ink colour is unclear."""
from .deckprint import SMALL
from .hands import both_corners
from .index import BLURRED_MIN, FACE_SUIT, S, STRICT, _product, _scores, _windows, face


class OneCorner:
    """Needs the recognizer's t, _by_colour, _face_over_twin and _of_deck."""

    def _any_colour(self, gray):
        """(rank, its score, suit, its score): the best of each over all 52 learned indexes, for
        a corner whose ink colour is unclear (a washed corner's 8d is still an 8 and a diamond
        by shape: a review read a doctored 3c whose far corner showed it, washed, as a 3c)."""
        s, best = self.t.cut + S, []
        for cards, rank_m, suit_m, *_ in self._by_colour.values():
            rs = _scores(gray[:s + S], self.t.part_shapes[0], rank_m).max(axis=0)
            ss = _product(_windows(gray[s - S:], self.t.part_shapes[1]), suit_m).max(axis=0)
            i, j = int(rs.argmax()), int(ss.argmax())
            best.append((float(rs[i]), cards[i][0], float(ss[j]), cards[j][1]))
        (r, k), (q, j) = max(b[:2] for b in best), max(b[2:] for b in best)
        return k, r, j, q

    def _one_corner(self, bgr, quad, ra, rb, cands, grays):
        """(card, confidence, False) of a whole card at the photo's scale that read at one index
        corner only, or (None, its lower confidence, False): a gloss's or glare's streak, an
        overexposed or a shadow's corner washes one index out (at 300 pixels, 6 of Kennard's
        and Responsive's 14 refusals in 448 photos, bench_webcam.py seed 0) where the other reads
        clearly. The corner that read must score STRICT (a covered card's single corner), the
        other must not say another rank or suit: its best rank and its best suit (over all 52
        when its colour is unclear) each the card's, or under BLURRED_MIN (nothing index-like);
        then the face over its twin's by FACE_SUIT, and the deck check with the reading
        corner's index place alone."""
        (a, ca), (b, cb) = ra, rb
        i = 0 if a else 1
        card, conf = (a, ca) if a else (b, cb)
        said = cands[1 - i][0] if cands[1 - i] else None
        if self.t.card_size[0] < SMALL or conf < STRICT or said and (
                said[0] != card[0] and said[1] >= BLURRED_MIN or said[2] != card[1] and said[3] >= BLURRED_MIN):
            return None, min(ca, cb), False
        f = face(bgr, quad)
        if not self._face_over_twin(f, card, FACE_SUIT) or \
                not self._of_deck(bgr, quad, card, grays, f, corners=(both_corners(quad)[i],)):
            return None, 0.0, False
        return card, conf, False
