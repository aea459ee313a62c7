"""Settlement, case by case for every bet type and profile (RULES.md pay tables)."""
from decimal import Decimal

import pytest

from controller import get_profile, profile_from_mapping
from controller.settlement import SettlementError, settle
from helpers import one, ready

D = Decimal


def bj_result(profile, seats, cards, decisions=(), insurance=False, dealer_draws=()):
    r = ready(profile)
    r.close(*seats)
    r.feed(*cards)
    if insurance:
        r.feed({"type": "insurance_closed"})
    for seat, hand, action, *extra in decisions:
        r.feed({"type": "decision", "seat": seat, "hand": hand, "action": action}, *extra)
    r.feed(*dealer_draws)
    return one(r.outputs, "round_result")


def ret(results):
    return [(x["staked"], x["returned"], x["net"]) for x in results]


def test_seat_bet_win_lose_push_and_blackjack_three_to_two():
    lux = get_profile("luxury21")
    # seats 1 BJ, 2 twenty (push vs dealer 20), 3 nineteen (lose), 4 busts
    res = bj_result("luxury21", [1, 2, 3, 4], ["As", "Ts", "9s", "Td", "Qh", "Ks", "Th", "9c", "6d",
                                               "Kd"],
                    decisions=[(2, 0, "stand"), (3, 0, "stand"), (4, 0, "hit", "8c")])
    assert res["dealer"]["total"] == 20
    bets = [{"id": i, "kind": "seat", "seat": i, "amount": 1001} for i in (1, 2, 3, 4)]
    assert ret(settle(lux, res, bets)) == [(D(1001), D("2502.5"), D("1501.5")),
                                          (D(1001), D(1001), D(0)),
                                          (D(1001), D(0), D(-1001)),
                                          (D(1001), D(0), D(-1001))]


def test_double_and_split_stakes_and_split_21_is_not_blackjack():
    lux = get_profile("luxury21")
    res = bj_result("luxury21", [1, 2], ["As", "5s", "6d", "Ah", "6h", "Th"],
                    decisions=[(1, 0, "split", "Kd", "2c"), (2, 0, "double", "9c")],
                    dealer_draws=["Tc"])                       # dealer 6 T T = 26
    out = settle(lux, res, [{"id": "a", "kind": "seat", "seat": 1, "amount": 100},
                            {"id": "b", "kind": "seat", "seat": 2, "amount": 100}])
    assert [(x["item"], x["staked"], x["returned"], x["result"]) for x in out[0]["lines"]] == [
        ("hand 0", D(100), D(200), "win"), ("hand 1", D(100), D(200), "win")]  # A K after split pays 1:1
    assert (out[1]["staked"], out[1]["returned"]) == (D(200), D(400))


def test_surrender_returns_half():
    lux = get_profile("luxury21")
    res = bj_result("luxury21", [1], ["Ts", "9d", "6s", "8h"], decisions=[(1, 0, "surrender")])
    assert ret(settle(lux, res, [{"id": 1, "kind": "seat", "seat": 1, "amount": 250}])) == [
        (D(250), D(125), D(-125))]


def test_insurance_pays_two_to_one_on_dealer_blackjack_else_loses():
    lux = get_profile("luxury21")
    res = bj_result("luxury21", [1], ["Ts", "Ad", "9s", "Kh"], insurance=True)
    out = settle(lux, res, [{"id": 1, "kind": "seat", "seat": 1, "amount": 100, "insurance": True}])
    assert [(x["item"], x["staked"], x["returned"]) for x in out[0]["lines"]] == [
        ("hand 0", D(100), D(0)), ("insurance", D(50), D(150))]
    assert out[0]["net"] == D(0)
    res = bj_result("luxury21", [1], ["Ts", "Ad", "9s", "7h"], insurance=True,
                    decisions=[(1, 0, "stand")])
    out = settle(lux, res, [{"id": 1, "kind": "seat", "seat": 1, "amount": 100, "insurance": True}])
    assert [(x["item"], x["returned"]) for x in out[0]["lines"]] == [("hand 0", D(200)), ("insurance", D(0))]
    res = bj_result("luxury21", [1], ["Ts", "6d", "9s", "7h"], decisions=[(1, 0, "stand")],
                    dealer_draws=["5c"])
    with pytest.raises(SettlementError, match="only offered against an ace"):
        settle(lux, res, [{"id": 1, "kind": "seat", "seat": 1, "amount": 100, "insurance": True}])


def test_lucky7_even_money_pays_one_to_one_whatever_the_dealer_has():
    l7 = get_profile("lucky7")
    res = bj_result("lucky7", [1], ["As", "Kc", "Kd", "Ac"], insurance=True)   # dealer blackjack
    out = settle(l7, res, [{"id": 1, "kind": "seat", "seat": 1, "amount": 100, "even_money": True}])
    assert ret(out) == [(D(100), D(200), D(100))]
    with pytest.raises(SettlementError, match="even money, not insurance"):
        settle(l7, res, [{"id": 1, "kind": "seat", "seat": 1, "amount": 100, "insurance": True}])
    with pytest.raises(SettlementError, match="even money is only"):
        settle(get_profile("luxury21"), bj_result("luxury21", [1], ["As", "Ac", "Kd", "7c"], insurance=True),
               [{"id": 1, "kind": "seat", "seat": 1, "amount": 100, "even_money": True}])


@pytest.mark.parametrize("cards,pattern,returned", [
    (["8s", "8s", "8s", "2c"], "suited_trips", 5100), (["8s", "9h", "8s", "2c"], "perfect", 3100),
    (["8s", "9h", "8c", "2c"], "coloured", 1100), (["8s", "9h", "8h", "2c"], "mixed", 600),
    (["8s", "9h", "9c", "2c"], "none", 0),
])
def test_pairs_side_bet_pays_only_the_highest_pattern(cards, pattern, returned):
    lux = get_profile("luxury21")
    r = ready("luxury21")
    r.close(1)
    r.feed(*cards, {"type": "decision", "seat": 1, "hand": 0, "action": "stand"}, "Tc", "Td")
    res = one(r.outputs, "round_result")
    out = settle(lux, res, [{"id": 1, "kind": "seat", "seat": 1, "amount": 100, "pairs": 100}])
    line = out[0]["lines"][-1]
    assert (line["item"], line["result"], line["returned"]) == ("pairs", pattern, D(returned))


def test_bet_behind_follow_double_and_follow_split():
    lux = get_profile("luxury21")
    res = bj_result("luxury21", [1, 2], ["8s", "5d", "6d", "8h", "6h", "Th"],
                    decisions=[(1, 0, "split", "3c"), (1, 0, "double", "Tc", "Kc"), (1, 1, "stand"),
                               (2, 0, "double", "Td")],
                    dealer_draws=["5c"])    # dealer 6 T 5 = 21: the two 21s push, 18 loses
    hands = res["seats"][0]["hands"]
    assert [h["outcome"] for h in hands] == ["push", "lose"] and hands[0]["doubled"]
    assert res["seats"][1]["hands"][0]["outcome"] == "push"
    bets = [
        {"id": "no", "kind": "behind", "seat": 1, "amount": 100},
        {"id": "split", "kind": "behind", "seat": 1, "amount": 100, "follow_split": True},
        {"id": "both", "kind": "behind", "seat": 1, "amount": 100, "follow_split": True,
         "follow_double": True},
        {"id": "d-no", "kind": "behind", "seat": 2, "amount": 100},
        {"id": "d-yes", "kind": "behind", "seat": 2, "amount": 100, "follow_double": True},
    ]
    out = {x["id"]: x for x in settle(lux, res, bets)}
    assert [l["item"] for l in out["no"]["lines"]] == ["hand 0"] and out["no"]["staked"] == D(100)
    assert out["no"]["returned"] == D(100)
    assert (out["split"]["staked"], out["split"]["returned"]) == (D(200), D(100))
    assert (out["both"]["staked"], out["both"]["returned"]) == (D(300), D(200))
    assert (out["d-no"]["staked"], out["d-no"]["returned"]) == (D(100), D(100))
    assert (out["d-yes"]["staked"], out["d-yes"]["returned"]) == (D(200), D(200))


def test_bet_behind_insurance_is_independent_of_the_seat():
    lux = get_profile("luxury21")
    res = bj_result("luxury21", [1], ["Ts", "Ad", "9s", "Kh"], insurance=True)
    out = settle(lux, res, [{"id": "s", "kind": "seat", "seat": 1, "amount": 100},
                            {"id": "b", "kind": "behind", "seat": 1, "amount": 40, "insurance": True}])
    assert out[0]["returned"] == D(0) and [l["returned"] for l in out[1]["lines"]] == [D(0), D(60)]


def test_lucky7_side_bet_uses_the_operators_pay_table_and_refuses_without_one():
    res = bj_result("lucky7", [1], ["7s", "9c", "7h", "Td"], decisions=[(1, 0, "stand")])
    assert res["seats"][0]["lucky7"] == 2
    bet = [{"id": 1, "kind": "seat", "seat": 1, "amount": 100, "lucky7": 10}]
    with pytest.raises(SettlementError, match="no Lucky-7 pay table"):
        settle(get_profile("lucky7"), res, bet)
    p = profile_from_mapping({"base": "lucky7", "payouts": {"lucky7_1": "3:1", "lucky7_2": 25,
                                                            "lucky7_3": 200}})
    line = settle(p, res, bet)[0]["lines"][-1]
    assert (line["item"], line["staked"], line["returned"]) == ("lucky7", D(10), D(260))
    with pytest.raises(SettlementError, match="has no Lucky-7"):
        settle(get_profile("luxury21"), bj_result("luxury21", [1], ["7s", "9c", "7h", "Td"],
                                                  decisions=[(1, 0, "stand")]), bet)


@pytest.mark.parametrize("winner,player,banker,tie", [
    ("player", ("200", "0"), ("0",), ("0",)),
    ("banker", ("0",), ("195",), ("0",)),
    ("tie", ("100",), ("100",), ("900",)),
])
def test_baccarat_player_banker_commission_and_tie(winner, player, banker, tie):
    pb = get_profile("punto_banco")
    res = {"type": "round_result", "round": 1, "game": "baccarat", "winner": winner,
           "player": {}, "banker": {}, "natural": False}
    out = settle(pb, res, [{"id": k, "kind": k, "amount": 100} for k in ("player", "banker", "tie")])
    assert out[0]["returned"] == D(player[0]) and out[1]["returned"] == D(banker[0])
    assert out[2]["returned"] == D(tie[0])
    odd = settle(pb, res, [{"id": 1, "kind": "banker", "amount": 101}])[0]["returned"]
    if winner == "banker":
        assert odd == D("196.95")  # 101 + 101 * 0.95, exact


def test_baccarat_settles_engine_results():
    r = ready("punto_banco")
    r.close()
    r.feed("9s", "Kh", "8d", "5c", "4h")       # banker 9 beats player 7
    res = one(r.outputs, "round_result")
    out = settle(get_profile("punto_banco"), res, [{"id": 1, "kind": "banker", "amount": 1000},
                                                   {"id": 2, "kind": "player", "amount": 1000}])
    assert ret(out) == [(D(1000), D(1950), D(950)), (D(1000), D(0), D(-1000))]


def test_a_voided_round_refunds_everything():
    lux = get_profile("luxury21")
    voided = {"type": "round_voided", "round": 4, "reason": "malfunction"}
    out = settle(lux, voided, [{"id": 1, "kind": "seat", "seat": 1, "amount": 100, "pairs": 25,
                                "insurance": True},
                               {"id": 2, "kind": "behind", "seat": 1, "amount": 30}])
    assert ret(out) == [(D(175), D(175), D(0)), (D(30), D(30), D(0))]
    out = settle(get_profile("punto_banco"), voided, [{"id": 9, "kind": "tie", "amount": 5}])
    assert ret(out) == [(D(5), D(5), D(0))]


@pytest.mark.parametrize("bet,message", [
    ({"id": 1, "kind": "seat", "seat": 8, "amount": 100}, "no seat 8 at this table"),
    ({"id": 1, "kind": "seat", "seat": 1, "amount": 0}, "amount must be a positive whole number"),
    ({"id": 1, "kind": "seat", "seat": 1, "amount": 1.5}, "amount must be a positive"),
    ({"id": 1, "kind": "seat", "seat": 1, "amount": 100, "colour": "red"}, "unknown field 'colour'"),
    ({"id": 1, "kind": "player", "amount": 100}, "kind must be one of seat, behind"),
    ({"id": 1, "kind": "seat", "seat": 1, "amount": 100, "insurance": "yes"}, "insurance must be true or false"),
])
def test_bad_bets_are_clear_errors(bet, message):
    res = bj_result("luxury21", [1], ["Ts", "9d", "7s", "8h"], decisions=[(1, 0, "stand")])
    with pytest.raises(SettlementError, match=message):
        settle(get_profile("luxury21"), res, [bet])


def test_european_profile_has_no_side_bets():
    res = bj_result("european", [1], ["8s", "9d", "8h", "8c"], decisions=[(1, 0, "stand")])
    with pytest.raises(SettlementError, match="no Pairs side bet"):
        settle(get_profile("european"), res, [{"id": 1, "kind": "seat", "seat": 1, "amount": 1, "pairs": 1}])


def test_bets_behind_and_pairs_on_a_seat_that_took_no_cards_are_refunded():
    """000: a seat without a valid bet takes no cards; bets behind and Pairs there go back."""
    from helpers import ready
    r = ready("luxury21")
    r.close(1)
    res = [o for o in r.feed("Ts", "Kd", "7h", "8d") if o["type"] == "round_result"]
    res = res or [o for o in r.decide(1, "stand") if o["type"] == "round_result"]
    bets = [{"id": "b", "kind": "behind", "seat": 2, "amount": 50, "pairs": 5},
            {"id": "s", "kind": "seat", "seat": 3, "amount": 100, "pairs": 10}]
    out = settle(get_profile("luxury21"), res[0], bets)
    assert [(o["staked"], o["returned"], o["net"]) for o in out] == [(D(55), D(55), D(0)),
                                                                     (D(110), D(110), D(0))]
    assert {x["result"] for o in out for x in o["lines"]} == {"refund: seat not in play"}


def test_a_correction_pays_the_difference_and_a_void_correction_refunds():
    from controller.roulette import describe
    from controller.settlement import correction
    p = get_profile("roulette")
    orig = {"type": "round_result", "round": 4, "game": "roulette", "profile": "roulette", **describe(31)}
    fixed = {"type": "result_corrected", "round": 4, "corrects": 21, "voided": False,
             "result": {**orig, **describe(13)}, "reason": "x", "by": "s"}
    bets = [{"id": 1, "kind": "straight", "numbers": [13], "amount": 10},
            {"id": 2, "kind": "straight", "numbers": [31], "amount": 10},
            {"id": 3, "kind": "black", "amount": 10}]
    diff = correction(p, orig, fixed, bets)
    assert [(d["was"], d["now"], d["difference"]) for d in diff] == [
        (D(0), D(360), D(360)), (D(360), D(0), D(-360)), (D(20), D(20), D(0))]
    void = {**fixed, "voided": True, "result": None}
    assert [o["returned"] for o in settle(p, void, bets)] == [D(10)] * 3
    with pytest.raises(SettlementError, match="does not refer"):
        correction(p, {**orig, "round": 3}, fixed, bets)


def test_a_street_on_a_trio_says_it_is_a_trio():
    with pytest.raises(SettlementError, match="kind trio"):
        settle(get_profile("roulette"), {"type": "round_result", "round": 1, "game": "roulette",
                                         "number": 0}, [{"id": 1, "kind": "street",
                                                         "numbers": [0, 1, 2], "amount": 1}])
