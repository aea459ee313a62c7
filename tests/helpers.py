"""Small helpers to drive the engine in tests."""
import random

from controller import expect, get_profile, new_table, step
from controller.blackjack import allowed
from controller.cards import CARDS


class Run:
    """A table plus every output it produced, fed one input (or card) at a time."""

    def __init__(self, profile):
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.table = new_table(self.profile)
        self.outputs = []

    def feed(self, *events):
        """Feed inputs (dicts, or card strings as shorthand); return this call's outputs."""
        got = []
        for ev in events:
            if isinstance(ev, str):
                ev = {"type": "card", "card": ev}
            self.table, out = step(self.table, ev)
            got.extend(out)
        self.outputs.extend(got)
        return got

    def load(self, *burn):
        """shoe_loaded then the burn cards."""
        return self.feed({"type": "shoe_loaded"}, *burn)

    def close(self, *seats):
        return self.feed(self.table.game.betting_closed(list(seats)))

    def decide(self, seat, action, hand=0):
        return self.feed({"type": "decision", "seat": seat, "hand": hand, "action": action})


def types(outputs):
    return [o["type"] for o in outputs]


def of(outputs, kind):
    return [o for o in outputs if o["type"] == kind]


def one(outputs, kind):
    found = of(outputs, kind)
    assert len(found) == 1, (kind, outputs)
    return found[0]


def ready(profile, burn=("As", "2c")):
    """A table of `profile` with a shoe loaded and the burn done (ace up: one card burned)."""
    r = Run(profile)
    r.load(*(burn if r.profile.burn else ()))
    return r


def shoe(profile, seed):
    """The cards of `profile`'s shoe, shuffled by `seed`."""
    cards = list(CARDS) * profile.decks
    random.Random(seed).shuffle(cards)
    return cards


def drive(profile, cards, rng, max_rounds=8, mischief=0.0):
    """Play rounds from `cards` with random legal decisions and random seat sets. With
    probability `mischief` per step, inject an irregular event (a card out of turn, an
    unreadable card, a pause) and then resume or void. Returns (table, [(input, outputs)])."""
    t = new_table(profile)
    log = []
    i = 0
    rounds = 0

    def feed(ev):
        nonlocal t
        t, out = step(t, ev)
        log.append((ev, out))
        return out

    feed({"type": "shoe_loaded"})
    while i < len(cards):
        e = expect(t)
        if t.paused:
            feed({"type": "resume"} if rng.random() < 0.7 else {"type": "void_round", "reason": "test"}
                 if t.round is not None else {"type": "resume"})
            continue
        if e is not None and rng.random() < mischief:
            kind = rng.choice(["card", "unreadable", "pause"])
            if kind == "card" and e.what != "card":
                feed({"type": "card", "card": cards[i]})
                i += 1
            elif kind == "unreadable":
                feed({"type": "card_unreadable"})
                i += 1  # that card left the shoe unread
                if rng.random() < 0.5 and i < len(cards):
                    feed({"type": "card", "card": cards[i - 1], "source": "manual"})
            else:
                feed({"type": "pause", "reason": "test"})
            continue
        if e is None:
            if t.phase != "ready" or rounds >= max_rounds:
                break
            rounds += 1
            seats = (sorted(rng.sample(range(1, profile.seats + 1), rng.randint(1, profile.seats)))
                     if t.game.takes_seats else None)
            feed(t.game.betting_closed(seats))
        elif e.what == "card":
            feed({"type": "card", "card": cards[i]})
            i += 1
        elif e.what == "decision":
            rnd = t.round
            s = rnd.seats[rnd.cur_s]
            if rng.random() < 0.1:
                feed({"type": "decision_timeout", "seat": e.seat, "hand": e.hand})
            else:
                feed({"type": "decision", "seat": e.seat, "hand": e.hand,
                      "action": rng.choice(allowed(rnd, s, s.hands[e.hand]))})
        else:
            feed({"type": "insurance_closed"})
    return t, log
