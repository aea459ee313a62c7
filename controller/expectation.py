"""What the table waits for, and what it holds while paused: small typed tuples.

Each is a NamedTuple whose first field names its kind, so it still equals (and hashes like) the
positional tuple it replaces: ('card', to, seat, hand, face), ('decision', seat, hand),
('insurance',), ('result',). The daemon compares the expectation it armed a timer for with the
current one; that comparison is unchanged. Build them through `Expect`:

    Expect.card("seat", 3, 0, "up")   Expect.decision(3, 0)   Expect.INSURANCE   Expect.RESULT
"""
from typing import NamedTuple, Optional


class AwaitCard(NamedTuple):
    what: str                   # "card"
    to: str                     # burn | dealer | seat | player | banker
    seat: Optional[int]
    hand: Optional[int]
    face: str                   # up | down

    @property
    def zone(self):
        """The camera zone where this card lands."""
        return f"seat_{self.seat}" if self.to == "seat" else self.to

    @property
    def dest(self):
        """The destination written in the shoe's read log."""
        return f"seat:{self.seat}:{self.hand}" if self.to == "seat" else self.to

    def describe(self):
        return f"a card to {self.to}" + (f" seat {self.seat} hand {self.hand}"
                                         if self.to == "seat" else "")


class AwaitDecision(NamedTuple):
    what: str                   # "decision"
    seat: int
    hand: int

    def describe(self):
        return f"a decision of seat {self.seat} hand {self.hand}"


class AwaitInsurance(NamedTuple):
    what: str                   # "insurance"

    def describe(self):
        return "insurance to close"


class AwaitResult(NamedTuple):
    what: str                   # "result"

    def describe(self):
        return "the winning number"


_new = tuple.__new__     # one C call where NamedTuple's generated __new__ would add a frame


class Expect:
    """Constructors: the kind is filled in, so it cannot be misspelt."""
    INSURANCE = AwaitInsurance("insurance")
    RESULT = AwaitResult("result")

    @staticmethod
    def card(to, seat=None, hand=None, face="up"):
        return _new(AwaitCard, ("card", to, seat, hand, face))

    @staticmethod
    def decision(seat, hand):
        return _new(AwaitDecision, ("decision", seat, hand))


def describe(e):
    """Words for an error message: what the table waits for."""
    return "nothing" if e is None else e.describe()


class Pending(NamedTuple):
    """An irregular read (or sighting, or result) held while the table is paused, settled by
    resume (discarded, removed) or void."""
    kind: str                   # unexpected | foreign | misread | seen | burn_incomplete | result
    card: object                # the card (a winning number for `result`), None if unknown
    expect: object              # misread: what the table expected when the card came, else None


class Sighting(NamedTuple):
    """A card the camera saw in a zone."""
    zone: str
    card: str


class Finished(NamedTuple):
    """The round that just ended with a result, kept so the camera may still confirm its cards."""
    round: int
    zones: tuple                # ((zone, (cards...)), ...)
    seen: tuple                 # Sighting, ...
