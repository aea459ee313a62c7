"""The learned deck (Templates): captured from one photo per card of the studio's own deck and
checked (every card's index like its rank's and suit's, both corners as labelled, the
deck's fingerprint), saved and loaded strictly (deck.json, one index and one face a card)."""
import json
import os

import cv2
import numpy as np

from controller.cards import CARDS
from . import deckcheck
from .deckprint import DeckPrint
from .outline import card_size_of
from .hands import both_corners
from .index import (
    CH, CW, FACE_H, FACE_W, INK, MATCH, REGION, S, SEARCH, TWIN, _best_over_shifts, _ink,
    _match_gray, _peak, _unit, corner, face, index_patch, learn_box)
from .contact import contact_sheet
from .labelcheck import (
    consistent_mislabels, court_check, index_suit_check, ink_mislabels, mixed_up, narrow_courts,
    same_photo)
from .template_files import FORMAT, load_parts, write_manifest



class BadReference(ValueError):
    """Reference images to take again: `cards`."""

    def __init__(self, cards, message, why=None):
        super().__init__(message)
        self.cards = cards
        self.why = why or {}        # {card: why its image was refused}, when said per card


class OtherDeck(BadReference):
    """Reference photos of cards unlike the rest of the deck (deckcheck.py): `odd` {card: why},
    or `mixed` (the smaller group, why) when the set splits into two designs. Not photos to take
    again: cards to replace with the studio's own."""

    def __init__(self, cards, odd, mixed):
        self.odd, self.mixed = odd, mixed
        super().__init__(cards, self.say(lambda c: f"the reference image of {c}"))

    def say(self, name):
        return deckcheck.say(self.odd, self.mixed, name)


class Templates:
    """The learned deck: the card size in the camera's pixels, the index box, and the index of
    each of the 52 cards as a gray patch (rank part above `split`, suit part below)."""

    def __init__(self, card_size, box, split, patches, faces, deck_print=None):
        self.card_size, self.box, self.split, self.patches = card_size, tuple(box), split, patches
        self.faces = faces
        self.colour = None             # {card: its index in colour}: for contact.png, at capture
        self.print = deck_print        # DeckPrint; None only while capture() learns it
        self.warnings = []             # [(cards, why)]: photos captured that may read less well
        self.cut = round((split - self.box[1]) * MATCH)
        # split into rank and suit, compared separately: a 6 of spades never passes for a 6 of
        # clubs on the strength of the rank alone
        small = {c: cv2.resize(p, None, fx=MATCH, fy=MATCH, interpolation=cv2.INTER_AREA)
                 for c, p in patches.items()}
        self.cards = list(small)
        # transposed and contiguous: a product with a transposed view is 10x slower
        self.rank_m = np.ascontiguousarray(_unit(np.stack([small[c][:self.cut] for c in self.cards])).T)
        self.suit_m = np.ascontiguousarray(_unit(np.stack([small[c][self.cut:] for c in self.cards])).T)
        self.part_shapes = (small[self.cards[0]][:self.cut].shape, small[self.cards[0]][self.cut:].shape)

    @classmethod
    def capture(cls, samples):
        """samples: [(image, quad, card)], every card of the deck once (one photo per card)."""
        seen = {c for _, _, c in samples}
        missing = [c for c in CARDS if c not in seen]
        if missing:
            raise ValueError(f"templates missing for {', '.join(missing)}")
        same = same_photo(samples)
        if same:
            raise BadReference(same, f"the reference images of {' and '.join(same)} are the same "
                               f"photo (one file listed or copied for two cards): one photo per card")
        region = (0, 0) + REGION
        box, split = learn_box([corner(img, q, region, 0) for img, q, _ in samples])
        patches, failed = {}, []
        # a red card must show red ink and a black card black: a camera that sends grey (its
        # saturation down, a monochrome mode) makes templates that cannot tell a diamond from a
        # spade
        inks = {card: _ink(corner(img, q, box, 0)) for img, q, card in samples}
        blank = [c for c in CARDS if np.count_nonzero(inks[c][1]) < 15]
        if blank:       # no ink at all where the index is: not a colour question
            raise BadReference(blank, f"no index found in the corner of the reference images of "
                               f"{', '.join(blank)} (a blank card, or a white sheet taken for the card?)")
        wrong = ink_mislabels({card: ink[2] for card, ink in inks.items()})
        if wrong:
            raise BadReference(*wrong)
        unclear = [c for c in CARDS if inks[c][2] is None]
        for img, q, card in samples:
            if card in patches:
                continue
            patch = index_patch(img, q, box, split)
            if patch is None:
                failed.append(card)
            else:
                patches[card] = patch
        if failed:
            raise BadReference(failed, f"no index found at both corners of the reference images of "
                               f"{', '.join(failed)} (is the card whole in the picture, flat and sharp?)")
        faces = {}
        for img, q, card in samples:
            faces.setdefault(card, face(img, q))
        t = cls(card_size_of([q for _, q, _ in samples]), box, split, patches, faces)
        t.colour = {c: corner(img, q, box, 0) for img, q, c in samples}
        if unclear:
            t.warnings.append((unclear, "its index shows no clear ink colour (a colour cast, or the "
                                        "light clipped): captured; take it again under white light "
                                        "if `accuracy` refuses that card"))
        # each card's proportions, corners and index place against the rest of the deck: a card of
        # another deck passes the label checks (its index is its label's), and its template then
        # never reads the studio's card; said before the checks below, which say "take it again"
        measured, other = deckcheck.refusal(samples, t)
        if other:
            raise OtherDeck(*other)
        bad = t.inconsistent()
        # each corner read against the rest of the deck: a photo of another card than its label,
        # or a card whose corners show two cards (A at one, K at the other), passed every test
        # above, and its template read the wrong card. Said first for a card unlike its
        # neighbours too: "a wrong outline?" was said of a photo of another card
        why = {c: w for img, q, c in samples if (not bad or c in bad) and (w := t.misread(img, q, c))}
        if why:
            raise BadReference(list(why), "; ".join(f"the reference image of {c} {w}" for c, w in why.items())
                               + ": take it again with the card its label names", why)
        if bad:
            raise BadReference(bad, f"the reference images of {', '.join(bad)} show no index like "
                               f"the other cards' (a wrong outline?): take them again")
        # what load() checks of the learned set, said here of the photos
        shows = narrow_courts(mixed_up(t), t.patches, t.split - t.box[1])
        if shows:
            raise BadReference(list(shows), "; ".join(f"the reference image of {c} shows {w}"
                                                      for c, w in shows.items())
                               + ": take it again with the card its label names")
        # labels wrong alike across the deck (labelcheck.py); the index's suit glyph as load() checks it
        wrong = consistent_mislabels(samples, t) or index_suit_check(t.patches, t.split - t.box[1], "photos")
        if wrong:
            raise BadReference(*wrong)
        # the fingerprint: each photo's rounding, and its far index corner's shift from the
        # template its near corner gave (the outline's error at this camera's scale)
        t.print = DeckPrint.learn([measured[c][1] for _, _, c in samples],
                                  [index_shift(t, img, both_corners(q)[1], c) for img, q, c in samples],
                                  t.card_size[0])
        return t

    def misread(self, bgr, quad, card):
        """Why the reference photo of `card` is not that card, or None: each index corner compared
        with every other card's template (its own was learned from this photo), its rank part must
        be most like `card`'s rank in the other suits, its suit part most like `card`'s suit on the
        other cards (those of its colour: the colour was checked). Most like a rank or suit by the
        median over its cards: one mislabelled photo's template (a 5 labelled 6c) is one vote
        among its rank's, not the best match of every other 5."""
        seen = []
        for q in both_corners(quad):
            gray = _match_gray(corner(bgr, q, self.box, SEARCH))
            s = self.cut + S
            rs = _best_over_shifts(gray[:s + S], self.part_shapes[0], self.rank_m)
            us = _best_over_shifts(gray[s - S:], self.part_shapes[1], self.suit_m)
            seen.append(_most_like(rs, self.cards, card, 0) + _most_like(us, self.cards, card, 1))
        if seen[0] == seen[1] == card:
            return None
        if seen[0] != seen[1]:
            return f"shows {seen[0]} at one index corner and {seen[1]} at the other"
        return f"shows {seen[0]}, not {card}"

    def inconsistent(self):
        """Cards whose learned index disagrees with the deck: a suit glyph is the same on every
        card of the suit, a rank glyph the same in every suit. A template learned from a wrong
        outline (a white area inside the card) matches neither."""
        shapes = self.part_shapes
        pad = lambda x: np.pad(x, 3, mode="edge")     # noqa: E731  (slack for the outline)
        bad = []
        for i, c in enumerate(self.cards):
            r, u = self.rank_m[:, i].reshape(shapes[0]), self.suit_m[:, i].reshape(shapes[1])
            rs = _best_over_shifts(pad(r), shapes[0], self.rank_m)
            us = _best_over_shifts(pad(u), shapes[1], self.suit_m)
            same_rank = [rs[j] for j, d in enumerate(self.cards) if d[0] == c[0] and d != c]
            same_suit = [us[j] for j, d in enumerate(self.cards) if d[1] == c[1] and d != c]
            # a suit glyph is more like its own suit's than the other suit of its colour's: two
            # photos labelled with their suits swapped (2s and 2c) pass every other test
            twin = [us[j] for j, d in enumerate(self.cards) if d[1] == TWIN[c[1]]]
            if max(same_rank) < 0.75 or float(np.median(same_suit)) < max(
                    0.75, float(np.median(twin))):
                bad.append(c)
        return bad

    def save(self, folder):
        """deck.json, the PNGs and contact.png, then manifest.sha256 over them (template_files.py)."""
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "deck.json"), "w") as f:
            json.dump({"format": FORMAT, "card_size": list(self.card_size), "box": list(self.box),
                       "split": self.split, "print": self.print.to_json()}, f)
        for c, p in self.patches.items():
            f = self.faces[c]
            # 16 bits: at 8 the faint edges of a face fell to zero (the self-score was 0.94)
            for name, img in ((f"index_{c}.png", np.uint8(np.clip(p * 200, 0, 255))),
                              (f"face_{c}.png", np.uint16(np.clip((f - f.min()) / max(
                                  float(np.ptp(f)), 1e-9) * 65535, 0, 65535)))):
                if not cv2.imwrite(os.path.join(folder, name), img):      # a full card, a read-only one
                    raise OSError(f"cannot write {os.path.join(folder, name)}")
        # for the eye: labels, and red or black ink (the photos' colours, when captured here)
        if not cv2.imwrite(os.path.join(folder, "contact.png"), contact_sheet(self.patches, self.colour)):
            raise OSError(f"cannot write {os.path.join(folder, 'contact.png')}")
        write_manifest(folder)

    @classmethod
    def load(cls, folder):
        """The templates in `folder`, checked: every file against the manifest, deck.json's keys,
        and each card's index against the rest of the deck (a set edited by hand must not read
        the wrong card)."""
        card_size, box, split, patches, faces, fp = load_parts(folder)
        try:
            deck_print = DeckPrint.from_json(fp)
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{os.path.join(folder, 'deck.json')}: no valid deck fingerprint "
                             f"('print'): capture the templates again") from None
        t = cls(card_size, box, split, {c: g.astype(np.float32) / 200 for c, g in patches.items()},
                {c: _unit(f.astype(np.float32)[None])[0].reshape(f.shape) for c, f in faces.items()},
                deck_print)
        shows = narrow_courts(mixed_up(t), t.patches, t.split - t.box[1])
        if shows:
            raise ValueError(f"{folder}: {', '.join(f'index_{c}.png shows {w}' for c, w in shows.items())}"
                             f" (files renamed or swapped by hand?): capture the templates again")
        # a consistent rename (every Q a K, every spade a club) passes mixed_up: the letters' and
        # suit glyphs' shapes (a rank shift or 7<->8 everywhere only `accuracy` finds)
        wrong = court_check(t.patches, t.split - t.box[1]) or index_suit_check(t.patches, t.split - t.box[1])
        if wrong:
            raise ValueError(f"{folder}: {wrong[1].replace('photos', 'templates')} (files renamed "
                             f"by hand?): capture the templates again")
        return t


def index_shift(t, bgr, quad, card, gray=None):
    """How far `card`'s learned rank and suit lie from where they show at the tl corner of `quad`:
    the largest of their x and y shifts, in canonical pixels (the deck fingerprint). `gray`: the
    corner's patch as the reader compared it, when it has it (the same warp, not done twice), or
    (patch, cards, rank scores, suit scores) as read_corner keeps it (the products not done twice)."""
    return max(abs(v) for v in index_offsets(t, bgr, quad, card, gray))


def index_offsets(t, bgr, quad, card, gray=None):
    """index_shift's parts: (rank dx, rank dy, suit dx, suit dy), canonical pixels, x and y
    growing into the card."""
    rsc = usc = None
    if isinstance(gray, tuple):
        gray, cards, rs, us = gray
        if card in cards:
            j = cards.index(card)
            rsc, usc = rs[:, j], us[:, j]
    if gray is None:
        gray = _match_gray(corner(bgr, quad, t.box, SEARCH))
    s, i = t.cut + S, t.cards.index(card)
    r = _peak(gray[:s + S], t.part_shapes[0], t.rank_m[:, i], rsc)
    u = _peak(gray[s - S:], t.part_shapes[1], t.suit_m[:, i], usc)
    return tuple(v / MATCH for v in r + u)


def _most_like(scores, cards, card, j):
    """The rank (j 0) or suit (j 1) whose cards, other than `card`, score highest by their
    median; suits only of `card`'s colour."""
    by = {}
    for v, d in zip(scores.tolist(), cards):
        if d != card and (j == 0 or INK[d[1]] == INK[card[1]]):
            by.setdefault(d[j], []).append(v)
    return max(by, key=lambda k: float(np.median(by[k])))

