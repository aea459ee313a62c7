"""The shoe tracker: what has left one shoe, in order, and what remains.

Immutable: every method returns a new Shoe. The read log is a cons list (O(1) append, shared
between versions) so that stepping the engine never copies the history of a whole shoe.
"""
from .cards import CARDS, INDEX


class Shoe:
    __slots__ = ("number", "decks", "counts", "drawn", "unknown", "log", "log_len",
                 "exposed", "burn_required", "burned", "cut_at")

    def __init__(self, number, decks, counts=None, drawn=0, unknown=0, log=None, log_len=0,
                 exposed=None, burn_required=None, burned=0, cut_at=None):
        self.number = number            # shoes loaded at this table, from 1
        self.decks = decks
        self.counts = counts if counts is not None else (0,) * 52  # reads per card, from the shoe
        self.drawn = drawn              # cards that left the shoe: read, or unreadable
        self.unknown = unknown          # unreadable cards never identified
        self.log = log                  # (entry, previous) cons cells, newest first
        self.log_len = log_len
        self.exposed = exposed          # the burn procedure's first (face-up) card
        self.burn_required = burn_required
        self.burned = burned
        self.cut_at = cut_at            # `drawn` when the cut card came out

    def _copy(self, **kw):
        s = Shoe.__new__(Shoe)
        s.number = self.number
        s.decks = self.decks
        s.counts = self.counts
        s.drawn = self.drawn
        s.unknown = self.unknown
        s.log = self.log
        s.log_len = self.log_len
        s.exposed = self.exposed
        s.burn_required = self.burn_required
        s.burned = self.burned
        s.cut_at = self.cut_at
        for k, v in kw.items():
            setattr(s, k, v)
        return s

    @property
    def total(self):
        return 52 * self.decks

    @property
    def remaining(self):
        return self.total - self.drawn

    def count(self, card):
        return self.counts[INDEX[card]]

    def is_foreign(self, card):
        """True when one more `card` would be more copies than the shoe holds."""
        return self.counts[INDEX[card]] >= self.decks

    def read(self, card, source, dest):
        """Record a card taken from the shoe and where it went."""
        i = INDEX[card]
        c = self.counts
        entry = (self.log_len + 1, card, source, dest)
        return self._copy(counts=c[:i] + (c[i] + 1,) + c[i + 1:], drawn=self.drawn + 1,
                          log=(entry, self.log), log_len=self.log_len + 1)

    def record(self, card, source, dest, drawn=True):
        """Record a read that is not a card of this shoe (foreign) or not a card at all
        (unreadable, card None): it goes into the log, not into the counts."""
        entry = (self.log_len + 1, card, source, dest)
        return self._copy(drawn=self.drawn + (1 if drawn else 0),
                          unknown=self.unknown + (1 if card is None else 0),
                          log=(entry, self.log), log_len=self.log_len + 1)

    def identify(self, card, source, dest):
        """An unreadable card identified later (manual entry, camera): count and log it; it has
        already left the shoe, so `drawn` does not change."""
        i = INDEX[card]
        c = self.counts
        entry = (self.log_len + 1, card, source, dest)
        return self._copy(counts=c[:i] + (c[i] + 1,) + c[i + 1:], unknown=self.unknown - 1,
                          log=(entry, self.log), log_len=self.log_len + 1)

    def redirect(self, n, dest):
        """Read number `n` went to `dest` after all (a card taken back and burned): the log's
        entry is rewritten, the cells after it copied, the rest shared."""
        newer = []
        node = self.log
        while node is not None and node[0][0] != n:
            newer.append(node[0])
            node = node[1]
        if node is None:
            raise KeyError(n)
        n_, card, source, _ = node[0]
        log = ((n_, card, source, dest), node[1])
        for x in reversed(newer):
            log = (x, log)
        return self._copy(log=log)

    def entries(self):
        """The read log oldest first: (seq, card, source, destination)."""
        out = []
        node = self.log
        while node is not None:
            out.append(node[0])
            node = node[1]
        out.reverse()
        return out

    def remaining_counts(self):
        return {c: self.decks - n for c, n in zip(CARDS, self.counts)}

    def summary(self):
        return {"shoe": self.number, "decks": self.decks, "cards": self.total, "drawn": self.drawn,
                "remaining": self.remaining, "unknown": self.unknown,
                "burn_required": self.burn_required, "burned": self.burned,
                "cut_card_at": self.cut_at}
