"""Drive a table through a whole shoe: cards from a given order, decisions from a given function.

Pure (the caller supplies the shuffled cards and the decision function), so the benchmark, the
property tests and the game-math simulation all play through the very engine that runs the table.
"""
from .blackjack import allowed
from .expectation import Expect
from .table import expect, new_table, step


_ANY_CARD = Expect.card(None)     # a card is awaited (where does not matter to the dealer here)


class AutoplayError(RuntimeError):
    """The engine refused an input that autoplay believed legal: a bug on one side or the other."""


def play_shoe(profile, cards, decide, seats=None, cut_at=None, max_rounds=None, table=None):
    """Yield (input, outputs) for one shoe dealt from `cards`.

    decide(round, seat, hand, allowed) -> action, for every awaited decision.
    seats: the seats in play each round (blackjack), default every seat.
    cut_at: how many cards leave the shoe before the cut card comes out; default from the
    profile's cut-card position. The shoe ends at shuffle_due, after max_rounds, or when the
    cards run out (a round may then stop half dealt).
    """
    t = table if table is not None else new_table(profile)
    game = t.game
    if seats is None and game.takes_seats:
        seats = list(range(1, profile.seats + 1))
    if cut_at is None and profile.cut_card_from_back is not None:
        cut_at = len(cards) - profile.cut_card_from_back
    ev = {"type": "shoe_loaded"}
    i = 0
    rounds = 0
    while True:
        t, out = step(t, ev)
        if out and out[0]["type"] == "rejected":
            raise AutoplayError(f"{ev} rejected: {out[0]['reason']}")
        yield ev, out
        last = out[-1] if out else None
        kind = last["type"] if last else None
        # the last output announces what the table waits for (cheaper than asking it again)
        if kind == "awaiting_card":
            e = _ANY_CARD
        elif kind == "awaiting_decision":
            e = Expect.decision(last["seat"], last["hand"])
        elif kind == "insurance_offered":
            e = Expect.INSURANCE
        else:
            e = expect(t)
        if e is None:
            if t.phase != "ready" or (max_rounds is not None and rounds >= max_rounds):
                return
            rounds += 1
            ev = game.betting_closed(seats)
        elif e.what == "card":
            if i == cut_at:
                ev = {"type": "cut_card"}
                cut_at = None
            elif i >= len(cards):
                return
            else:
                ev = {"type": "card", "card": cards[i]}
                i += 1
        elif e.what == "decision":
            allowed_now = last["allowed"] if kind == "awaiting_decision" else _allowed(t, e)
            ev = {"type": "decision", "seat": e.seat, "hand": e.hand,
                  "action": decide(t.round, e.seat, e.hand, allowed_now)}
        else:
            ev = {"type": "insurance_closed"}


def _allowed(t, e):
    rnd = t.round
    s = rnd.seats[rnd.cur_s]
    return allowed(rnd, s, s.hands[e.hand])


def hit_below_17(rnd, seat, hand, allowed):
    """The simplest player: hit below 17, else stand."""
    s = rnd.seats[rnd.seat_pos(seat)]
    return "hit" if s.hands[hand].total < 17 else "stand"
