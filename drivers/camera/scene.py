"""A frame's cards (VisualRecognizer.read_image): whole cards, overlapping hands, cards turned
so that they touch or lie partly under another; each read only as its kind may be read
(both corners and the deck check, a covered card vouched for in its blob)."""
import cv2
import numpy as np

from .deckprint import SMALL
from .find import find_cards, in_frame
from .hands import both_corners, corner_gray, hand_corners, refine_corner, whole_card
from .index import CH, CW, FACE_H, FACE_MIN, FACE_MIN_SMALL, FACE_W, LAID, STRICT, face
from .occluded import masked_face_score, occluders, on_another, visible
# _centre and _norm: q.mean(axis=0) and np.linalg.norm's arithmetic, without their overhead
from .outline import _centre, _norm, _refine_in
from .indexplace import placed_shift
from .smear import streaked

_SHOW_KERNEL = np.ones((9, 9), np.uint8)
VISIBLE = 0.6                     # a whole card partly under another is judged on what shows: most of it
RELOCATE_REFUSED = True           # a card refused by the deck check, again on its located corners
HIDDEN = 0.25                     # of a covered index corner's box under another card (_read_occluded)


class SceneReader:
    """VisualRecognizer's reading of a whole frame (a mixin: the reader's own methods read
    each corner and card)."""

    def _relocated(self, bgr, gray, quad):
        """(card, quad, foreign) of a found card whose outline failed at an index corner: each
        index corner located on its two edges (hands.refine_corner), the card measured from it
        and its opposite corner (hands.whole_card), read as any whole card; None when no such
        card differs from the outline or reads."""
        for v in both_corners(quad):
            r = refine_corner(gray, v, self.t.card_size)
            whole = whole_card(gray, r, self.t.card_size) if r is not None else None
            if whole is None or np.abs(whole - v).max() < 1.5:
                continue
            card, _, foreign = self._read_quad(bgr, whole)
            if card or foreign:
                return card, whole, foreign
        return None

    def _smeared(self, bgr, quad):
        """(card, quad, foreign) of a found card refused on its outline, read on its outline
        refined to the middle of its edges' fall (outline.refine, `middle`: a card moving or out
        of focus smears its edge into a ramp; the steepest step of it is 2-4 pixels off at
        random); None when that outline is the found one or reads nothing."""
        moved = _refine_in(bgr, quad, middle=True)
        if np.abs(moved - quad).max() < 0.5:
            return None
        card, _, foreign = self._read_quad(bgr, moved)
        return (card, moved, foreign) if card or foreign else None

    def _read_occluded(self, bgr, quad, shapes):
        """(card, quad, 'whole' or 'covered') of a card refused where other cards found in the
        frame (`shapes`) lie over it, or (None, None, None): its face compared only where it
        shows (occluded.py; most of it must), at the whole card's threshold. Both index corners
        reading the card: then its fingerprint, as any whole card's. One corner reading it at
        the covered card's score, the other under a neighbour: a covered card (the quad from
        that corner), read only as covered cards are (vouched for in its blob)."""
        others = occluders(quad, shapes, self.t.card_size[0])
        if not others:
            return None, None, None          # nothing over it: the refusal stands
        grays, corners = {}, both_corners(quad)
        (a, ca), (b, cb) = (self.read_corner(bgr, q, keep=grays) for q in corners)
        vis = visible(quad, others, (FACE_W, FACE_H))
        if a and b:
            if a != b:
                return None, None, None
            card, kind, q = a, "whole", quad
        else:
            # one corner reading the card at the covered card's score, the other not; when
            # neither read by the plain margin, one read as every covered corner is (strict:
            # STRICT and the likeness rule for a suit alike its twin: KDE Standard's 5c, 3s, 2s
            # turned, the far index under a neighbour's corner, read 0.97-0.99 at the near one,
            # short of the plain suit margin, and were read nowhere)
            plain = [c if c and s >= STRICT else None for c, s in ((a, ca), (b, cb))]
            if not (a or b):
                plain = [self.read_corner(bgr, q, strict=True, keep=grays)[0] for q in corners]
            if bool(plain[0]) == bool(plain[1]):
                return None, None, None
            i = 0 if plain[0] else 1
            # the corner that did not read lies under the other card (its index box hidden)
            x0, y0, x1, y1 = (np.float32(self.t.box) * np.float32([FACE_W, FACE_H, FACE_W, FACE_H])
                              / np.float32([CW, CH, CW, CH])).astype(int)
            hidden = ~(vis[y0:y1, x0:x1] if i == 1 else vis[::-1, ::-1][y0:y1, x0:x1])
            if hidden.mean() < HIDDEN:
                return None, None, None
            card, kind, q = plain[i], "covered", corners[i]
        face_min = FACE_MIN if self.t.card_size[0] >= SMALL else FACE_MIN_SMALL
        f = face(bgr, quad)
        if masked_face_score(f, self.t.faces[card], vis) < face_min:
            return None, None, None
        # its suit clear of its twin, as every other path asks (twins.py), on what shows
        if not self._shown_twins_apart(card, grays, corners if kind == "whole" else [q],
                                       lambda learned: masked_face_score(f, learned, vis)):
            return None, None, None
        if kind == "whole" and not self.t.print.card_matches(
                bgr, quad, (CW, CH),
                [placed_shift(self.t, bgr, c, card, grays.get(np.float32(c).tobytes())) for c in corners],
                blur=self._blur_for_cut(bgr, quad, grays)):
            return None, None, None
        return card, q, kind

    def read_image(self, bgr, inside=None):
        """[(card, quad)] read in an image; `inside(x, y)` keeps cards whose centre lies in the
        zone. Whole cards must read at both corners and pass the deck check; in a blob of
        overlapping cards, each corner hypothesis reads at one, and one card is reported once
        however many corners read it. A hand card that reads at both corners (its top card) gets
        the whole card's deck check; a covered card is refused under a card that failed it (a
        hand whose top card is another deck's is another deck's), and read only in a blob where
        a whole card passed it, and when it passes the covered card's own deck check. A card that
        failed on one outline and passed on another at the same place refuses nothing; a whole
        card under part of one that passed is judged on what shows of its face. A card refused
        where another card found in the frame lies over it (turned cards touching) is judged
        again on what shows of its face (_read_occluded)."""
        quads, blobs = find_cards(bgr, self.t.card_size, with_blobs=True)
        out, refused, kinds, judged, blank = [], 0, [], [], []
        # every card outline found (for what covers what), and the refused ones to look at
        # again where another card lies over them (_read_occluded): (quad, its judged entry)
        shapes, again = list(quads), []
        gray = None
        for q in quads:
            blank.append(False)         # an outline that read nothing at all, not even a foreign card
            if inside is None or inside(*_centre(q)):
                card, _, foreign = self._read_quad(bgr, q)
                if not card and not foreign:
                    # one index corner unread: the outline may lie a few pixels off there (a
                    # threshold's outline on a grey table, 6-8 pixels at one corner); the card
                    # again from its index corners located on their own edges
                    gray = corner_gray(bgr) if gray is None else gray
                    moved = self._relocated(bgr, gray, q)
                    if moved is not None:
                        card, q, foreign = moved
                    if not card and not foreign:
                        moved = self._smeared(bgr, q)
                        if moved is not None:
                            card, q, foreign = moved
                elif foreign:
                    # read at both corners, refused by the deck check: a moving card's outline
                    # lies on its smeared edges' steepest step, 2-4 px off at random, and its
                    # index place and corners with it; the same card again on the edges' middle,
                    # every check as on any outline. Only a measured streak (smear.py): on a
                    # defocused card on a white table this let cardsJS's templates read
                    # Responsive's Qd (tests/test_camera_table_foreign.py). At the table's
                    # scale only, where it was measured (the photos' foreign check was not run)
                    moving = self.t.card_size[0] < SMALL and streaked(self, bgr, q)
                    moved = self._smeared(bgr, q) if moving else None
                    if moved is not None and moved[0] == foreign:
                        card, q, foreign = moved
                    if not card and moving and RELOCATE_REFUSED:
                        # then on its index corners located on their own edges (as an unread
                        # outline is): on a white table a moving card's smeared edge falls too
                        # little to be refined onto, its outline stays 3-5 px off, and the face,
                        # index place or proportions fail (bench/diag_white_refusals.py). Kept
                        # only when it reads the card the outline read, every check as on any
                        # outline. A moving card only, as above: without it a defocused
                        # Responsive 9c on white read with cardsJS's templates
                        # (probe_foreign_surface.py white 3, defocus scene 0, frame 0)
                        gray = corner_gray(bgr) if gray is None else gray
                        moved = self._relocated(bgr, gray, q)
                        if moved is not None and moved[0] == foreign:
                            card, q, foreign = moved
                if card:
                    out.append((card, q))
                    kinds.append("whole")
                else:
                    refused += 1
                    again.append((q, len(judged) if foreign else None))
                    blank[-1] = not foreign
                if card or foreign:
                    judged.append((q, not foreign, card or foreign))
        w = self.t.card_size[0]

        def copy(card, q):      # read already here; a second copy elsewhere (a multi-deck shoe) is a card
            return any(c == card and _norm(_centre(p) - _centre(q)) < 0.5 * w for c, p in out)

        def read_whole(whole):  # a card built on its own located corners: as any whole card
            shapes.append(whole)
            card, _, foreign = self._read_quad(bgr, whole)
            if not card:
                again.append((whole, len(judged) if foreign else None))
            if card or foreign:
                judged.append((whole, not foreign, card or foreign))
            if card and not copy(card, whole):
                out.append((card, whole))
                kinds.append("whole")
        gray = corner_gray(bgr) if blobs and gray is None else gray
        centres = [_centre(q) for q in quads]
        covered, retry = [], []
        for q, located in hand_corners(bgr, blobs, quads, self.t.card_size, gray):
            if inside is not None and not inside(*_centre(q)):
                continue
            near = [i for i, c in enumerate(centres) if _norm(_centre(q) - c) < 0.25 * w]
            if near:
                # a whole card found there: its two corners, face and fingerprint decide (a
                # corner located 6 pixels off on a turned card read 7h for a 7d at 0.89); when
                # its outline read nothing (it took in a touching neighbour), the card on its
                # own located corners, as any whole card, and nothing less
                whole = whole_card(gray, q, self.t.card_size) if located and all(
                    blank[i] for i in near) else None
                if whole is not None:
                    read_whole(whole)
                continue
            grays = {}
            card, conf = self.read_corner(bgr, q, strict=True, keep=grays)
            if card and not located and conf < LAID:
                continue
            if not card:
                # in a blob of cards turned so that they touch, most are whole: both corners
                # and the deck check, as any whole card
                whole = whole_card(gray, q, self.t.card_size) if located else None
                if whole is not None:
                    read_whole(whole)
                continue
            if copy(card, q):
                continue
            # the far corner read as strictly as this one (the likeness rule: Responsive's spade and
            # club, 0.95 alike at 125 pixels, left a top card's far index short of the plain margin)
            far, _ = self.read_corner(bgr, both_corners(q)[1], strict=True, keep=grays)
            # a card turned so that it touches another: its far corner where its own edges put it
            # (the measured size laid from this corner is a few pixels off: its face and
            # fingerprint fail), then as any whole card
            whole = whole_card(gray, q, self.t.card_size) if located else None
            if whole is not None:
                shapes.append(whole)
            if far == card:         # the whole card shows (a hand's top card): as any whole card
                ok = self._of_deck(bgr, q, card, grays)
                if not ok and whole is not None and self._read_quad(bgr, whole)[0] == card:
                    ok, q = True, whole
                if not ok and located:
                    # its far corner on sides parallel to this one's (a free fit was pulled onto
                    # the picture of the card below), then as any whole card
                    alt = whole_card(gray, q, self.t.card_size, parallel=True)
                    if alt is not None and (whole is None or np.abs(alt - whole).max() > 1.5) \
                            and self._read_quad(bgr, alt)[0] == card:
                        ok, q = True, alt
                if not ok and whole is not None:
                    again.append((whole, len(judged)))
                judged.append((q, ok, card))
                if ok:
                    out.append((card, q))
                    kinds.append("hand-whole")
                elif located:
                    retry.append((card, q, grays))
                continue
            if whole is not None:
                got, _, foreign = self._read_quad(bgr, whole)
                if got != card:
                    again.append((whole, len(judged) if foreign else None))
                if got == card or foreign:
                    judged.append((whole, not foreign, got or foreign))
                if got == card:
                    out.append((card, whole))
                    kinds.append("whole")
                    continue
            if self._corner_of_deck(bgr, q, card, grays):
                covered.append((card, q))
        for q, j in again:
            card, q, kind = self._read_occluded(bgr, q, shapes)
            if card is None or copy(card, q):
                continue
            if j is not None:       # not another deck's after all: its judgement goes
                judged[j] = None
            if kind == "whole":
                out.append((card, q))
                kinds.append("occluded")
                judged.append((q, True, card))
            else:
                covered.append((card, q))
        # a card the frame's edge cuts (dropped below) vouches for nothing, nor clears a
        # failure at its place (review31: only its own read was dropped)
        judged = [(q, ok and in_frame(q, bgr.shape), c) for q, ok, c in (j for j in judged if j is not None)]
        area = self.t.card_size[0] * self.t.card_size[1]
        # a whole card that failed the deck check where a card of the deck that passed it lies over
        # part of it (cards turned so that they touch): its face judged where it shows
        for card, q, grays in retry:
            over = [p for p, ok, c in judged
                    if ok and c != card and cv2.intersectConvexConvex(p, q)[0] > 0.02 * area]
            if over and not copy(card, q) and self._of_deck(bgr, q, card, grays, hidden=over):
                judged.append((q, True, card))
                out.append((card, q))
                kinds.append("hand-whole")
        # a card that failed the deck check on one outline (laid a few pixels off, or taking in a
        # neighbour) and passed it on another at the same place is the deck's: its failure does
        # not refuse the cards under it
        judged = [(q, ok) for q, ok, c in judged if ok or not any(
            k and d == c and _norm(_centre(p) - _centre(q)) < 0.25 * w
            for p, k, d in judged)]
        hands = [_in_blobs(blobs, q) for q, _ in judged]
        wholes = list(out)      # read whole: a covered read on one naming another card is refused
        for card, q in covered:
            mine = _in_blobs(blobs, q)
            if copy(card, q) or on_another(q, card, wholes, w):
                continue
            # another deck's card over it (overlapping: the same hand, not a card beside it)
            # refuses it; a card of the deck in its blob vouches for the blob
            if any(not ok and cv2.intersectConvexConvex(q, j)[0] > 0.1 * area for j, ok in judged) \
                    or not any(ok for (_, ok), h in zip(judged, hands) if h & mine):
                continue
            out.append((card, q))
            kinds.append("covered")
        # one card read covered at its two index corners naming two cards conflicts with itself:
        # neither guess is taken (hunt_hands scene 6246: the drawn deck's moving Ad read Ad at one
        # corner and 4d at the other, centres 2 px apart, the 4d reported by the tracker)
        cov = [(c, q) for (c, q), k in zip(out, kinds) if k == "covered"]
        keep = [i for i, ((c, q), k) in enumerate(zip(out, kinds))
                if k != "covered" or not on_another(q, c, cov, w)]
        if len(keep) < len(out):
            refused += len(out) - len(keep)
            out, kinds = [out[i] for i in keep], [kinds[i] for i in keep]
        # a card built from a hand's corners in a blob that grazes the frame's edge (find_cards)
        # may be one the edge cuts: no card, as a cut outline is none
        keep = [i for i, (_, q) in enumerate(out) if in_frame(q, bgr.shape)]
        if len(keep) < len(out):
            refused += len(out) - len(keep)
            out, kinds = [out[i] for i in keep], [kinds[i] for i in keep]
        self.refused, self.kinds = refused, kinds     # kinds: per card read, for the benches
        return out


def _shows(quad, hidden):
    """Where the card `quad` shows on its face (FACE_W x FACE_H, bool): not under the outlines
    `hidden`, nor within a few pixels of their edges (the edge and its shadow are ink)."""
    m = cv2.getPerspectiveTransform(np.float32(quad), np.float32([[0, 0], [FACE_W, 0], [FACE_W, FACE_H],
                                                                  [0, FACE_H]]))
    cover = np.zeros((FACE_H, FACE_W), np.uint8)
    for p in hidden:
        cv2.fillConvexPoly(cover, np.int32(np.round(cv2.perspectiveTransform(np.float32(p)[None], m)[0])), 1)
    return cv2.dilate(cover, _SHOW_KERNEL) == 0


def _in_blobs(blobs, quad):
    """The blobs (indexes) holding the card's index (a covered card's visible part): the same
    hand is a blob at several thresholds."""
    x, y = quad[0] + 0.15 * (quad[1] - quad[0]) + 0.12 * (quad[3] - quad[0])
    return {i for i, b in enumerate(blobs) if cv2.pointPolygonTest(b, (float(x), float(y)), False) >= 0}

