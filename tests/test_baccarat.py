"""Punto banco: deal order, naturals and every cell of the Banker's drawing table (RULES.md)."""
import pytest

from helpers import Run, of, one, ready, types

RANK = {0: "T", 1: "A", 2: "2", 3: "3", 4: "4", 5: "5", 6: "6", 7: "7", 8: "8", 9: "9"}
# The RULES.md table, as written there: banker total -> player third cards on which it draws.
RULES_TABLE = {0: "0123456789", 1: "0123456789", 2: "0123456789", 3: "012345679", 4: "234567",
               5: "4567", 6: "67", 7: ""}


def two(total, suit):
    """Two cards with this baccarat total, neither a natural by accident."""
    return (f"T{suit}", f"K{suit}") if total == 0 else (f"A{suit}", f"{RANK[total - 1]}{suit}")


def coup(player, banker):
    """Deal P B P B from the two hands' first two cards."""
    return (player[0], banker[0], player[1], banker[1])


def test_deal_order_is_player_banker_player_banker():
    r = ready("punto_banco")
    r.close()
    out = r.feed("2s", "3s", "4s", "Ts")     # player 6 stands, banker 3 draws
    assert [(o["to"], o["card"]) for o in of(out, "card_dealt")] == [
        ("player", "2s"), ("banker", "3s"), ("player", "4s"), ("banker", "Ts")]
    assert out[-1] == {"type": "awaiting_card", "round": 1, "to": "banker", "seat": None,
                       "hand": None, "face": "up"}


@pytest.mark.parametrize("natural", [(8, 0), (9, 5), (3, 8), (0, 9), (8, 9)])
def test_a_natural_stops_both_hands(natural):
    p, b = natural
    r = ready("punto_banco")
    r.close()
    out = r.feed(*coup(two(p, "s"), two(b, "h")))
    res = one(out, "round_result")
    assert res["natural"] is True and len(res["player"]["cards"]) == 2 == len(res["banker"]["cards"])
    assert res["winner"] == ("player" if p > b else "banker" if b > p else "tie")


@pytest.mark.parametrize("player", range(8))
def test_player_draws_on_0_to_5_and_stands_on_6_7(player):
    r = ready("punto_banco")
    r.close()
    out = r.feed(*coup(two(player, "s"), two(7, "h")))
    if player <= 5:
        assert out[-1]["type"] == "awaiting_card" and out[-1]["to"] == "player"
    else:
        res = one(out, "round_result")   # banker 7 stands too
        assert len(res["player"]["cards"]) == 2


@pytest.mark.parametrize("banker", range(8))
def test_banker_when_the_player_stood(banker):
    for player in (6, 7):
        r = ready("punto_banco")
        r.close()
        out = r.feed(*coup(two(player, "s"), two(banker, "h")))
        draws = out[-1]["type"] == "awaiting_card"
        assert draws == (banker <= 5), (player, banker)
        if draws:
            assert out[-1]["to"] == "banker"


@pytest.mark.parametrize("banker", range(8))
@pytest.mark.parametrize("third", range(10))
def test_banker_after_the_players_third_card_every_cell(banker, third):
    r = ready("punto_banco")
    r.close()
    r.feed(*coup(two(3, "s"), two(banker, "h")))
    out = r.feed(f"{RANK[third]}d")
    draws = out[-1]["type"] == "awaiting_card"
    assert draws == (str(third) in RULES_TABLE[banker]), (banker, third)
    if draws:
        assert out[-1]["to"] == "banker"
        res = one(r.feed("5c"), "round_result")
        assert len(res["banker"]["cards"]) == 3
    else:
        res = one(out, "round_result")
        assert len(res["banker"]["cards"]) == 2 and len(res["player"]["cards"]) == 3


def test_result_totals_and_winner():
    r = ready("punto_banco")
    r.close()
    out = r.feed("9s", "Kh", "8d", "5c", "4h")   # player 7 stands; banker 5 draws 4 -> 9
    res = one(out, "round_result")
    assert res == {"type": "round_result", "round": 1, "game": "baccarat", "profile": "punto_banco",
                   "player": {"cards": ["9s", "8d"], "total": 7},
                   "banker": {"cards": ["Kh", "5c", "4h"], "total": 9},
                   "winner": "banker", "natural": False}


@pytest.mark.parametrize("first,burns", [("As", 1), ("7h", 7), ("Tc", 10), ("Kd", 10), ("5s", 5)])
def test_burn_by_the_first_cards_value_ace_1_faces_10(first, burns):
    r = Run("punto_banco")
    r.load(first)
    out = r.feed(*[f"{RANK[1 + i % 9]}c" for i in range(burns - 1)])
    assert "burn_complete" not in types(out)
    out = r.feed("3c")
    assert one(out, "burn_complete") == {"type": "burn_complete", "shoe": 1, "exposed": first,
                                         "burned": burns}
    burn_cards = of(r.outputs, "card_dealt")
    assert burn_cards[0]["card"] == first and burn_cards[0]["face"] == "up"
    assert all(c["card"] is None and c["face"] == "down" for c in burn_cards[1:])


def test_baccarat_betting_closed_takes_no_seats():
    r = ready("punto_banco")
    out = r.feed({"type": "betting_closed", "seats": [1]})
    assert out[0]["type"] == "rejected" and "no seats" in out[0]["reason"]
    out = r.feed({"type": "decision", "seat": 1, "hand": 0, "action": "hit"})
    assert out[0]["code"] == "no_round"
