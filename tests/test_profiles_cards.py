"""Profiles as RULES.md states them, strict profile validation, and card notation."""
from fractions import Fraction

import pytest

from controller import ProfileError, get_profile, profile_from_mapping
from controller.cards import BAC_VALUE, BJ_VALUE, CARDS, CardError, hand_total, parse_card


def test_builtin_profiles_follow_rules_md():
    lux = get_profile("luxury21")
    assert (lux.decks, lux.seats, lux.dealer_order, lux.max_hands, lux.timeout_play) == (8, 7, "up_hole", 2, "hit_to_12")
    assert lux.insurance and lux.surrender and lux.pairs and not lux.dealer_hits_soft_17
    assert lux.cut_card_from_back == 208 and lux.burn and not lux.shuffle_every_round
    assert lux.payouts["blackjack"] == Fraction(3, 2) and lux.payouts["pairs_suited_trips"] == 50
    eu = get_profile("european")
    assert (eu.decks, eu.peek, eu.insurance, eu.surrender, eu.max_hands) == (6, (), False, False, 4)
    assert eu.timeout_play == "stand"
    l7 = get_profile("lucky7")
    assert (l7.decks, l7.dealer_order, l7.peek, l7.shuffle_every_round) == (8, "hole_up", ("ace", "ten"), True)
    assert l7.even_money and not l7.burn and l7.cut_card_from_back is None and l7.lucky7
    assert "lucky7_1" not in l7.payouts   # the operator's configuration, not the rule book's
    pb = get_profile("punto_banco")
    assert (pb.game, pb.decks, pb.cut_card_from_back) == ("baccarat", 8, 7)
    assert pb.payouts["banker_commission"] == Fraction(1, 20) and pb.payouts["tie"] == 8
    with pytest.raises(AttributeError):
        lux.decks = 6  # frozen


def test_profile_from_toml_data_overrides_a_base():
    p = profile_from_mapping({"base": "lucky7", "name": "l7-studio", "payouts": {
        "lucky7_1": "3:1", "lucky7_2": 25, "lucky7_3": "100:1"}})
    assert p.name == "l7-studio" and p.decks == 8
    assert (p.payouts["lucky7_1"], p.payouts["lucky7_2"], p.payouts["lucky7_3"]) == (3, 25, 100)
    assert p.payouts["blackjack"] == Fraction(3, 2)


@pytest.mark.parametrize("data,message", [
    ({"base": "luxury21", "decks": 0}, "profile.decks: must be 1-8"),
    ({"base": "luxury21", "deck": 8}, "profile.deck: unknown key"),
    ({"base": "luxury21", "seats": "7"}, "profile.seats: expected int"),
    ({"base": "luxury21", "timeout_play": "fold"}, "profile.timeout_play: must be one of"),
    ({"base": "luxury21", "payouts": {"blackjack": "three to two"}}, "payouts.blackjack: expected a ratio"),
    ({"base": "luxury21", "payouts": {"jackpot": 5}}, "payouts.jackpot: unknown payout"),
    ({"base": "baccarat"}, "unknown profile 'baccarat'"),
    ({"name": "x", "game": "blackjack"}, "profile.decks: missing"),
    ({"base": "punto_banco", "seats": 3}, "profile.seats: baccarat takes no seats"),
    ({"base": "european", "even_money": True}, "profile.even_money"),
    ({"base": "luxury21", "peek": ["ten"]}, "profile.insurance: insurance needs the dealer to peek"),
    ({"base": "luxury21", "cut_card_from_back": 416}, "profile.cut_card_from_back: 416 is not inside"),
    ({"base": "luxury21", "surrender": 1}, "profile.surrender: expected bool"),
])
def test_profile_errors_name_the_key(data, message):
    with pytest.raises(ProfileError, match=None) as e:
        profile_from_mapping(data)
    assert message in str(e.value)


def test_cards_and_values():
    assert len(CARDS) == 52 == len(set(CARDS))
    assert parse_card("Td") == "Td"
    for bad in ("td", "10d", "AS", "A", "Asx", None, 7):
        with pytest.raises(CardError):
            parse_card(bad)
    assert [BJ_VALUE[c] for c in ("As", "9h", "Td", "Kc")] == [1, 9, 10, 10]
    assert [BAC_VALUE[c] for c in ("As", "9h", "Td", "Kc")] == [1, 9, 0, 0]
    assert hand_total(("As", "9h")) == (20, True)
    assert hand_total(("As", "9h", "5c")) == (15, False)
    assert hand_total(("As", "Ad", "9h")) == (21, True)
    assert hand_total(("Ts", "Kd", "2c")) == (22, False)
