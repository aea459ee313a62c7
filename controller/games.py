"""The games behind one interface: one `Game` per game, chosen once from the profile
(`game_of`). The table, the camera cross-check, the snapshot, the settlement and autoplay ask
the game; nothing else switches on the game's name.

A game's rules stay in its own module (`blackjack.py`, `baccarat.py`, `roulette.py`, pay in
`pay.py`); a Game only says which of them apply. Adding a game is one module and one class here.
"""
from . import baccarat, blackjack, pay, roulette
from .protocol import Rejected


class Game:
    name = None
    uses_cards = True          # a shoe and cards (roulette: a wheel)
    takes_seats = False        # betting_closed names the seats in play
    inputs = frozenset()       # the inputs only some games take, that this one does
    bet_kinds = ()
    rules = None               # the module with expect / announce / on_card
    payouts = ()               # the pay-table keys a profile of this game must give

    def hidden(self, rnd):
        """(zone, card) of a card dealt face down and not yet revealed (the hole card), or
        None. No output may name it before its reveal (issue #16)."""
        return None

    def profile_problem(self, p):
        """(key, why) where profile `p` does not fit this game, else None."""
        if self.uses_cards != (p.decks != 0):
            return "decks", "roulette uses no cards (0 decks), card games 1-8"
        return None

    def check_input(self, kind):
        """Refuse an input that has no meaning in this game (before any other check)."""
        if kind not in self.inputs:
            raise Rejected("not_allowed", f"{kind} has no meaning in {self.name}")

    def start(self, profile, number, seats):
        """Betting closed: the new round and its first outputs. Rejected for a bad seat list."""
        if seats is not None:
            raise Rejected("malformed", f"betting_closed.seats: {self.name} takes no seats")
        return self.rules.start(profile, number)

    def betting_closed(self, seats):
        """The betting_closed input for `seats` (ignored where the game has none)."""
        return {"type": "betting_closed"}

    # expect(rnd), announce(rnd), on_card(rnd, card): each game binds its rules module's own
    # functions (no extra call on the engine's hot path)

    def over(self, rnd):
        return rnd.over

    def zones(self, rnd):
        """{camera zone: [cards placed there]} as far as a camera may see them."""
        return {}

    def zone_names(self, profile):
        """The camera zones a table of `profile` has (what zones() may name)."""
        return ()

    def public_view(self, rnd):
        """The round as a player may see it (the status snapshot)."""
        return {"round": rnd.number}

    def settle(self, profile, result, bets):
        """The settled bets (`pay._Bet`) of a round_result of this game."""
        raise NotImplementedError

    def corrected_result(self, profile, number, value):
        """The corrected round_result fields of round `number` given `value` (correct_result's
        number); a card game's result follows from its cards: it is corrected by a void only."""
        raise Rejected("not_allowed", f"a {self.name} result is corrected by void: true only "
                                      f"(its result follows from the cards dealt)")

    def expose_hole(self, rnd):
        """The face-down card exposed by mistake, kept in play: revealed now."""
        raise Rejected("not_allowed", f"{self.name} deals no face-down card")


class Blackjack(Game):
    name = "blackjack"
    takes_seats = True
    inputs = frozenset(("decision", "decision_timeout", "insurance_closed"))
    bet_kinds = pay.BLACKJACK_KINDS
    rules = blackjack
    expect, announce, on_card = (staticmethod(f) for f in (blackjack.expect, blackjack.announce,
                                                           blackjack.on_card))
    payouts = ("blackjack", "win")

    def profile_problem(self, p):
        return super().profile_problem(p) or (
            ("seats", "a blackjack profile needs 1-7 seats") if p.seats < 1 else None)

    def start(self, profile, number, seats):
        if seats is None:
            raise Rejected("malformed", "betting_closed.seats: missing (the seats in play)")
        bad = [s for s in seats if not 1 <= s <= profile.seats]
        if bad:
            raise Rejected("malformed", f"betting_closed.seats: no seat {bad[0]} at this table "
                                        f"(1-{profile.seats})")
        return blackjack.start(profile, number, seats)

    def betting_closed(self, seats):
        return {"type": "betting_closed", "seats": seats}

    on_decision = staticmethod(blackjack.on_decision)
    on_timeout = staticmethod(blackjack.on_timeout)
    on_insurance_closed = staticmethod(blackjack.on_insurance_closed)

    def over(self, rnd):
        return rnd.phase == "over"

    def expose_hole(self, rnd):
        return blackjack.expose_hole(rnd)

    def hidden(self, rnd):
        if rnd is not None and not rnd.revealed and len(rnd.dealer) > rnd.hole_index:
            return "dealer", rnd.dealer[rnd.hole_index]
        return None

    def zone_names(self, profile):
        return tuple(f"seat_{i}" for i in range(1, profile.seats + 1)) + ("dealer",)

    def zones(self, rnd):
        out = {f"seat_{s.seat}": list(s.dealt) for s in rnd.seats}
        dealer = list(rnd.dealer)
        if not rnd.revealed and len(dealer) > rnd.hole_index:
            del dealer[rnd.hole_index]            # face down: not for the camera to confirm yet
        out["dealer"] = dealer
        return out

    def public_view(self, rnd):
        dealer = list(rnd.dealer)
        if not rnd.revealed and len(dealer) > rnd.hole_index:
            dealer[rnd.hole_index] = None
        return {"round": rnd.number, "dealer": dealer,
                "seats": [{"seat": s.seat, "hands": [
                    {"cards": list(h.cards), "total": h.total, "soft": h.soft,
                     "doubled": h.doubled, "done": h.done and not h.needs_card}
                    for h in s.hands]} for s in rnd.seats]}

    def settle(self, profile, result, bets):
        seats = {s["seat"]: s for s in result["seats"]}
        return [pay.blackjack(profile, result, seats, b) for b in bets]


class Baccarat(Game):
    name = "baccarat"
    bet_kinds = pay.BACCARAT_KINDS
    rules = baccarat
    expect, announce, on_card = (staticmethod(f) for f in (baccarat.expect, baccarat.announce,
                                                           baccarat.on_card))
    payouts = ("player", "banker", "banker_commission", "tie")

    def profile_problem(self, p):
        return super().profile_problem(p) or (
            ("seats", "baccarat takes no seats, set 0") if p.seats != 0 else None)

    def zone_names(self, profile):
        return "player", "banker"

    def zones(self, rnd):
        return {"player": list(rnd.player), "banker": list(rnd.banker)}

    def public_view(self, rnd):
        return {"round": rnd.number, "player": list(rnd.player), "banker": list(rnd.banker)}

    def settle(self, profile, result, bets):
        return [pay.baccarat(profile, result, b) for b in bets]


class Roulette(Game):
    name = "roulette"
    uses_cards = False
    inputs = frozenset(("winning_number", "miss_spin", "no_spin", "manual_number",
                        "number_mismatch"))
    bet_kinds = pay.ROULETTE_KINDS
    rules = roulette
    expect, announce = staticmethod(roulette.expect), staticmethod(roulette.announce)
    payouts = ("straight", "split", "street", "corner", "six_line", "column", "dozen", "even_chance")
    min_revolutions = roulette.MIN_REVOLUTIONS

    def on_number(self, rnd, number, spin, revolutions=None, manual=None):
        return roulette.on_number(rnd, number, spin, revolutions, manual)

    def on_spin_void(self, rnd, spin, reason, by):
        return roulette.on_spin_void(rnd, spin, reason, by)

    def corrected_result(self, profile, number, value):
        return {"type": "round_result", "round": number, "game": "roulette",
                "profile": profile.name, **roulette.describe(value)}

    def settle(self, profile, result, bets):
        return [pay.roulette(profile, result, b) for b in bets]


GAMES = {g.name: g for g in (Blackjack(), Baccarat(), Roulette())}


def game_of(profile):
    """The Game a profile plays (`Profile.game` is validated against GAMES' names)."""
    return GAMES[profile.game]
