"""Card notation and card values (RULES.md, "Cards").

A card is its two-character notation string (`As`, `Td`, `7h`, `Kc`): cheap to hash, compare and
publish. Everything about a card is looked up in tables built once at import.
"""

RANKS = "A23456789TJQK"
SUITS = "shdc"
CARDS = tuple(r + s for s in SUITS for r in RANKS)
INDEX = {c: i for i, c in enumerate(CARDS)}

# Blackjack value with the ace as 1 (the soft 11 is decided per hand); also the burn count.
BJ_VALUE = {c: min(10, RANKS.index(c[0]) + 1) for c in CARDS}
# Baccarat points: A = 1, 2-9 face value, T J Q K = 0.
BAC_VALUE = {c: (RANKS.index(c[0]) + 1) % 10 if c[0] not in "TJQK" else 0 for c in CARDS}
RED = frozenset(c for c in CARDS if c[1] in "hd")


class CardError(ValueError):
    """Not a card in RULES.md notation."""


def parse_card(text):
    """Return the card for `text`, or raise CardError saying why not. No guessing: `as`, `10s`,
    `AS` are refused, the notation is exact."""
    if isinstance(text, str) and text in INDEX:
        return text
    raise CardError(f"not a card: {text!r} (rank A 2-9 T J Q K then suit s h d c, e.g. 'As', 'Td')")


def hand_total(cards):
    """Blackjack total of `cards` and whether it is soft (an ace counted as 11)."""
    hard = 0
    ace = False
    for c in cards:
        v = BJ_VALUE[c]
        hard += v
        if v == 1:
            ace = True
    if ace and hard <= 11:
        return hard + 10, True
    return hard, False


def is_ten(card):
    return BJ_VALUE[card] == 10


def is_ace(card):
    return card[0] == "A"


def baccarat_points(cards):
    return sum(BAC_VALUE[c] for c in cards) % 10
