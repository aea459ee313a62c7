"""A blackjack round's state (a part of blackjack.py): `Hand`, `Seat` and `Round`, immutable
`__slots__` classes; `but` builds a changed copy sharing the rest (path copying)."""
from .cards import hand_total


class Hand:
    __slots__ = ("cards", "total", "soft", "split", "split_aces", "doubled", "surrendered",
                 "stood", "auto", "want")

    def __init__(self, cards=(), split=False, split_aces=False, doubled=False,
                 surrendered=False, stood=False, auto=False, want=False):
        self.cards = cards
        self.total, self.soft = hand_total(cards)
        self.split = split                # made by a split: never a blackjack
        self.split_aces = split_aces      # one card each, no decision
        self.doubled = doubled
        self.surrendered = surrendered
        self.stood = stood
        self.auto = auto                  # decision timed out: auto-play (hit to 12)
        self.want = want                  # a hit or double asked for, its card not yet here

    def but(self, **kw):
        # Explicit copies: several times faster than a loop over __slots__ (hot path).
        h = Hand.__new__(Hand)
        h.cards = self.cards
        h.total = self.total
        h.soft = self.soft
        h.split = self.split
        h.split_aces = self.split_aces
        h.doubled = self.doubled
        h.surrendered = self.surrendered
        h.stood = self.stood
        h.auto = self.auto
        h.want = self.want
        for k, v in kw.items():
            setattr(h, k, v)
        return h

    def add(self, card):
        cards = self.cards + (card,)
        h = self.but(cards=cards, want=False)
        h.total, h.soft = hand_total(cards)
        return h

    @property
    def natural(self):
        return len(self.cards) == 2 and self.total == 21 and not self.split

    @property
    def needs_card(self):
        return len(self.cards) < 2 or self.want

    @property
    def done(self):
        return (self.surrendered or self.stood or self.total >= 21
                or (self.doubled and not self.want) or (self.split_aces and len(self.cards) >= 2))

    def public(self):
        return {"cards": list(self.cards), "total": self.total, "soft": self.soft}


class Seat:
    __slots__ = ("seat", "hands", "dealt")

    def __init__(self, seat, hands, dealt):
        self.seat = seat      # seat number on the table, 1-7
        self.hands = hands    # tuple of Hand, in playing order
        self.dealt = dealt    # every card dealt to this seat, in dealing order


class Round:
    __slots__ = ("number", "profile", "seats", "dealer", "order", "deal_i", "phase", "cur_s",
                 "cur_h", "revealed", "pre")

    def but(self, **kw):
        r = Round.__new__(Round)
        r.number = self.number
        r.profile = self.profile
        r.seats = self.seats
        r.dealer = self.dealer
        r.order = self.order
        r.deal_i = self.deal_i
        r.phase = self.phase
        r.cur_s = self.cur_s
        r.cur_h = self.cur_h
        r.revealed = self.revealed
        r.pre = self.pre
        for k, v in kw.items():
            setattr(r, k, v)
        return r

    @property
    def hole_index(self):
        return 1 if self.profile.dealer_order == "up_hole" else 0

    @property
    def up_card(self):
        i = 1 - self.hole_index
        return self.dealer[i] if len(self.dealer) > i else None

    def seat_pos(self, seat):
        for i, s in enumerate(self.seats):
            if s.seat == seat:
                return i
        return None
