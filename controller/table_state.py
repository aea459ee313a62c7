"""The table's state (a part of table.py): the immutable `Table`, a new table, what it waits for
(`expect`, `announce`), and the end of a round step (a round over goes to the shuffle or the next
round). It calls no input handler: the imports point one way."""
from .expectation import Expect, Finished
from .games import game_of


class Table:
    __slots__ = ("profile", "game", "phase", "shoe", "round", "rounds", "shoes", "last_round", "paused",
                 "pending", "seen", "finished", "early", "faults", "undo")

    def but(self, **kw):
        t = Table.__new__(Table)
        t.profile = self.profile
        t.game = self.game
        t.phase = self.phase
        t.shoe = self.shoe
        t.round = self.round
        t.rounds = self.rounds
        t.shoes = self.shoes
        t.last_round = self.last_round
        t.paused = self.paused
        t.pending = self.pending
        t.seen = self.seen
        t.finished = self.finished
        t.early = self.early
        t.faults = self.faults
        t.undo = self.undo
        for k, v in kw.items():
            setattr(t, k, v)
        return t


def new_table(profile):
    t = Table.__new__(Table)
    t.profile = profile
    t.game = game_of(profile)  # the Game (games.py), chosen once
    # no_shoe | burn | ready | round | shuffle_due; a wheel needs no shoe
    t.phase = "no_shoe" if t.game.uses_cards else "ready"
    t.shoe = None
    t.round = None           # the round under way (in phase burn only after burn_incomplete)
    t.rounds = 0             # rounds started at this table: the next round's number - 1
    t.shoes = 0
    t.last_round = False     # the cut card came out: the round under way (or next) is the last
    t.paused = None          # the reason, while paused
    t.pending = ()           # irregular reads awaiting resume or void: Pending, ...
    t.seen = ()              # Sighting(zone, card), ... the camera confirmed in the round under way
    # Finished(round, ((zone, cards), ...), seen) of the round that just ended with a result: the
    # camera may confirm its last cards after the result (it sees a card some frames after the shoe)
    t.finished = None
    # Sighting(zone, card), ... the camera saw where the table waits for a card, before the shoe's
    # read came (a resend, a replugged cable): checked when the shoe's card for that place arrives
    t.early = ()
    t.faults = ()            # (device, reason), ... of required devices reported down
    # (round before, round after, card, shoe log n) of the last card dealt to the round: what a
    # supervisor's "replace" after a dealer error takes back
    t.undo = None
    return t


def expect(t):
    """What the table waits for (an `expectation.Await*`), or None. Nothing while paused."""
    if t.paused:
        return None
    if t.phase == "burn":
        return Expect.card("burn", None, None, "up" if t.shoe.exposed is None else "down")
    if t.phase == "round":
        return t.game.expect(t.round)
    return None


def announce(t):
    if t.paused:
        return []
    if t.phase == "burn":
        e = expect(t)
        return [{"type": "awaiting_card", "round": None, "to": "burn", "seat": None,
                 "hand": None, "face": e.face}]
    if t.phase == "round":
        return t.game.announce(t.round)
    return []


def _after_round_step(t, out):
    rnd = t.round
    if not t.game.over(rnd):
        return t, out
    done = Finished(rnd.number, tuple((z, tuple(c)) for z, c in t.game.zones(rnd).items()), t.seen)
    return _round_ended(t.but(round=None, finished=done), out)


def _round_ended(t, out):
    if t.last_round or t.profile.shuffle_every_round:
        out.append({"type": "shuffle_due", "shoe": t.shoe.number})
        return t.but(phase="shuffle_due"), out
    return t.but(phase="ready"), out
