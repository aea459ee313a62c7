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
    """Settle `bets` (list of dicts) on `outcome`, a published `round_result`, `round_voided` or
    `result_corrected` (its new result, or a refund where it voids the round).
    Returns one dict per bet, in order: id, staked, returned, net, lines (Decimal money), or with
    `raw`, id and lines in exact ints and Fractions."""
    if isinstance(outcome, dict) and outcome.get("type") == "result_corrected":
        outcome = ({"type": "round_voided", "round": outcome.get("round")}
                   if outcome.get("voided") else outcome.get("result"))
    if not isinstance(outcome, dict) or outcome.get("type") not in ("round_result", "round_voided"):
        raise SettlementError("settle a round_result, round_voided or result_corrected output")
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


def correction(profile, original, corrected, bets):
    """What a `result_corrected` changes for each bet settled on `original` (the round_result it
    refers to by `corrects`): id, was, now (returns) and difference (now - was), Decimal money.
    The betting system pays or collects the difference; the original settlement stays on record."""
    if not isinstance(corrected, dict) or corrected.get("type") != "result_corrected":
        raise SettlementError("correction takes a result_corrected output")
    if not isinstance(original, dict) or original.get("round") != corrected.get("round"):
        raise SettlementError(f"result_corrected of round {corrected.get('round')!r} does not "
                              f"refer to round {original.get('round') if isinstance(original, dict) else None!r}")
    was = settle(profile, original, bets)
    now = settle(profile, corrected, bets)
    return [{"id": a["id"], "was": a["returned"], "now": b["returned"],
             "difference": b["returned"] - a["returned"]} for a, b in zip(was, now)]
