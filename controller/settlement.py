"""Settlement reference: the return of every bet on a round, from the round's published result.

Amounts are integer minor units (cents) in, exact `Decimal` out: 3:2 on an odd stake and the 5%
Banker commission can leave a fraction of a minor unit, which the betting system rounds by its own
policy. Never float. A return is what goes back to the player, stake included (0 for a loss).
The pay rules of each game are in `pay.py`; the profile's game (`games.py`) picks them.
"""
from .games import game_of
from .pay import (BACCARAT_KINDS, BET_FIELDS, BLACKJACK_KINDS, OUTCOME_RETURN,  # noqa: F401
                  ROULETTE_KINDS, SettlementError, check_bet, money, refund)


def settle(profile, outcome, bets, raw=False):
    """Settle `bets` (list of dicts) on `outcome`, a published `round_result` or `round_voided`.
    Returns one dict per bet, in order: id, staked, returned, net, lines (Decimal money), or with
    `raw`, id and lines in exact ints and Fractions."""
    if not isinstance(outcome, dict) or outcome.get("type") not in ("round_result", "round_voided"):
        raise SettlementError("settle a round_result or a round_voided output")
    game = game_of(profile)
    for b in bets:
        check_bet(b, game.bet_kinds)
    if outcome["type"] == "round_voided":
        done = [refund(profile, b) for b in bets]
    elif outcome.get("game") != game.name:
        raise SettlementError(f"a {outcome.get('game')} result cannot settle {game.name} bets")
    else:
        done = game.settle(profile, outcome, bets)
    return [b.raw() if raw else b.out() for b in done]
