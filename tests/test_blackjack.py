"""Blackjack rules of RULES.md, case by case, through the table engine."""
import pytest

from helpers import of, one, ready, types


def dealt(outputs):
    return [(o["to"], o["seat"], o["hand"], o["card"], o["face"]) for o in of(outputs, "card_dealt")]


def test_luxury21_initial_deal_order_seats_ascending_dealer_up_then_hole():
    r = ready("luxury21")
    r.close(5, 2, 7)
    out = r.feed("2s", "3s", "4s", "5s", "6s", "7s", "8s", "9s")
    assert dealt(out) == [
        ("seat", 2, 0, "2s", "up"), ("seat", 5, 0, "3s", "up"), ("seat", 7, 0, "4s", "up"),
        ("dealer", None, None, "5s", "up"),
        ("seat", 2, 0, "6s", "up"), ("seat", 5, 0, "7s", "up"), ("seat", 7, 0, "8s", "up"),
        ("dealer", None, None, None, "down"),
    ]
    assert "9s" not in str(out)  # the hole card is nowhere in what was published
    assert out[-1]["type"] == "awaiting_decision" and out[-1]["seat"] == 2


def test_lucky7_deals_the_dealer_hole_card_first_then_the_up_card():
    r = ready("lucky7")
    r.close(1, 2)
    out = r.feed("2s", "3s", "4s", "5s", "6s", "7s")
    assert dealt(out) == [
        ("seat", 1, 0, "2s", "up"), ("seat", 2, 0, "3s", "up"), ("dealer", None, None, None, "down"),
        ("seat", 1, 0, "5s", "up"), ("seat", 2, 0, "6s", "up"), ("dealer", None, None, "7s", "up"),
    ]
    assert '"4s"' not in str(out).replace("'", '"')


def test_awaiting_card_announces_every_destination_before_its_card():
    r = ready("luxury21")
    out = r.close(3)
    assert out[-1] == {"type": "awaiting_card", "round": 1, "to": "seat", "seat": 3, "hand": 0,
                       "face": "up"}
    out = r.feed("2s", "3s")
    assert out[-1]["to"] == "seat" and out[-1]["seat"] == 3
    out = r.feed("4s")
    assert out[-1] == {"type": "awaiting_card", "round": 1, "to": "dealer", "seat": None,
                       "hand": None, "face": "down"}


def play(profile, seats, cards, *decisions):
    r = ready(profile)
    r.close(*seats)
    r.feed(*cards)
    for d in decisions:
        r.feed(d)
    return r


def test_dealer_stands_on_soft_17_and_hits_16():
    r = ready("luxury21")
    r.close(1)
    r.feed("Ts", "As", "9s", "6s", {"type": "insurance_closed"})  # seat 19, dealer soft 17
    r.decide(1, "stand")
    res = one(r.outputs, "round_result")
    assert res["dealer"]["cards"] == ["As", "6s"] and res["dealer"]["total"] == 17
    assert res["seats"][0]["hands"][0]["outcome"] == "win"
    r = ready("european")
    r.close(1)
    r.feed("Ts", "Td", "9s", "6s")
    r.decide(1, "stand")
    out = r.feed("5h")
    assert one(out, "round_result")["dealer"] == {"cards": ["Td", "6s", "5h"], "total": 21,
                                                  "blackjack": False, "bust": False}


def test_hole_card_is_revealed_before_the_dealer_draws_and_never_before():
    r = ready("luxury21")
    r.close(1)
    r.feed("Ts", "9d", "7s", "5h")
    before = str(r.outputs)
    out = r.decide(1, "stand")
    assert types(out)[:2] == ["hole_card_revealed", "awaiting_card"]
    assert out[0]["card"] == "5h" and "5h" not in before


def test_luxury21_dealer_blackjack_ends_the_round_at_once_ten_up():
    r = ready("luxury21")
    r.close(1, 2)
    out = r.feed("Ts", "As", "Kd", "9s", "Qd", "Ah")   # dealer K up, A hole
    assert "awaiting_decision" not in types(out) and "insurance_offered" not in types(out)
    res = one(out, "round_result")
    assert res["dealer"]["blackjack"] is True
    assert [s["hands"][0]["outcome"] for s in res["seats"]] == ["lose", "push"]


def test_luxury21_insurance_on_ace_up_even_to_a_blackjack_then_peek():
    r = ready("luxury21")
    r.close(1, 2)
    out = r.feed("Ts", "9s", "Ad", "As", "8d", "Kh")   # seat1 T A = BJ, dealer A up, K hole
    ins = one(out, "insurance_offered")
    assert ins["insurance"] == [1, 2] and ins["even_money"] == []
    assert "awaiting_decision" not in types(out)
    rej = r.decide(2, "stand")
    assert rej[0]["type"] == "rejected"
    out = r.feed({"type": "insurance_closed"})
    assert types(out) == ["hole_card_revealed", "peek_result", "round_result"]
    assert out[1] == {"type": "peek_result", "round": 1, "blackjack": True, "insurance": "won"}
    res = out[-1]
    assert [s["hands"][0]["outcome"] for s in res["seats"]] == ["push", "lose"]


def test_insurance_closed_without_dealer_blackjack_continues_play():
    r = ready("luxury21")
    r.close(1)
    r.feed("Ts", "As", "6d", "9h")
    out = r.feed({"type": "insurance_closed"})
    assert types(out) == ["peek_result", "awaiting_decision"]
    assert out[0] == {"type": "peek_result", "round": 1, "blackjack": False, "insurance": "lost"}
    assert out[1]["allowed"] == ["hit", "stand", "double"]  # no surrender against an ace


def test_luxury21_round_ends_when_every_seated_player_has_blackjack():
    r = ready("luxury21")
    r.close(1, 2)
    out = r.feed("As", "Ad", "9s", "Ks", "Qd", "7h")
    assert types(out)[-2:] == ["hole_card_revealed", "round_result"]
    assert "awaiting_card" not in types(out[out.index(of(out, "hole_card_revealed")[0]):])
    res = out[-1]
    assert res["dealer"]["cards"] == ["9s", "7h"]  # 16, but no card can change a result
    assert [s["hands"][0]["outcome"] for s in res["seats"]] == ["blackjack", "blackjack"]


def test_dealer_draws_nothing_when_every_hand_busted_or_surrendered():
    r = ready("luxury21")
    r.close(1, 2)
    r.feed("Ts", "9s", "5d", "6s", "7h", "Th")       # dealer 5 up, T hole
    r.decide(1, "hit")
    r.feed("Kc")                                      # 26 bust
    out = r.decide(2, "surrender")
    assert types(out) == ["hole_card_revealed", "round_result"]
    res = out[-1]
    assert [s["hands"][0]["outcome"] for s in res["seats"]] == ["lose", "surrender"]


def test_surrender_only_on_first_two_cards_and_not_against_ace_or_ten():
    r = ready("luxury21")
    r.close(1)
    out = r.feed("Ts", "Td", "6s", "4h")
    assert "surrender" not in out[-1]["allowed"]
    r = ready("luxury21")
    r.close(1)
    out = r.feed("Ts", "9d", "4s", "4h")
    assert "surrender" in out[-1]["allowed"]
    r.decide(1, "hit")
    out = r.feed("2c")
    assert out[-1]["allowed"] == ["hit", "stand"]
    assert r.decide(1, "surrender")[0]["code"] == "not_allowed"
    for profile in ("european", "lucky7"):
        r = ready(profile)
        r.close(1)
        out = r.feed(*(("Ts", "6s", "9d", "4h") if profile == "european" else ("Ts", "4h", "6s", "9d")))
        assert "surrender" not in out[-1]["allowed"]


def test_double_takes_exactly_one_card_then_stands():
    r = ready("luxury21")
    r.close(1, 2)
    r.feed("5s", "Ts", "9d", "6s", "8s", "7h")
    r.decide(1, "double")
    out = r.feed("2c")
    assert out[-1] == {"type": "awaiting_decision", "round": 1, "seat": 2, "hand": 0,
                       "allowed": ["hit", "stand", "double", "surrender"]}


def test_split_plays_the_first_hand_to_completion_before_the_second_gets_its_card():
    r = ready("luxury21")
    r.close(1, 2)
    r.feed("8s", "Ts", "6d", "8h", "9s", "Th")
    out = r.decide(1, "split")
    assert out[-1]["type"] == "awaiting_card" and (out[-1]["seat"], out[-1]["hand"]) == (1, 0)
    out = r.feed("3c")                                   # hand 0: 8 3 = 11
    assert out[-1]["type"] == "awaiting_decision" and out[-1]["hand"] == 0
    assert "split" not in out[-1]["allowed"] and "double" in out[-1]["allowed"]  # DAS
    assert "surrender" not in out[-1]["allowed"]
    r.feed({"type": "decision", "seat": 1, "hand": 0, "action": "double"})
    out = r.feed("Tc")                                   # hand 0: 21 after double, done
    assert out[-1] == {"type": "awaiting_card", "round": 1, "to": "seat", "seat": 1, "hand": 1,
                       "face": "up"}
    out = r.feed("8d")                                   # hand 1: 8 8 -- no resplit in luxury21
    assert out[-1]["type"] == "awaiting_decision" and out[-1]["hand"] == 1
    assert "split" not in out[-1]["allowed"]
    r.feed({"type": "decision", "seat": 1, "hand": 1, "action": "stand"})
    out = r.decide(2, "stand")
    assert types(out) == ["hole_card_revealed", "awaiting_card"]      # dealer 16 draws
    res = one(r.feed("5c"), "round_result")
    hands = res["seats"][0]["hands"]
    assert [h["cards"] for h in hands] == [["8s", "3c", "Tc"], ["8h", "8d"]]
    assert [h["doubled"] for h in hands] == [True, False] and all(h["split"] for h in hands)


def test_split_aces_get_one_card_each_and_no_decision_and_21_is_not_blackjack():
    r = ready("luxury21")
    r.close(1)
    r.feed("As", "9d", "Ah", "7c")
    out = r.decide(1, "split")
    out = r.feed("Kd")
    assert out[-1]["type"] == "awaiting_card" and out[-1]["hand"] == 1
    out = r.feed("5c")
    assert types(out)[1:] == ["hole_card_revealed", "awaiting_card"]  # straight to the dealer
    res = one(r.feed("Td"), "round_result")
    h0, h1 = res["seats"][0]["hands"]
    assert h0["cards"] == ["As", "Kd"] and h0["total"] == 21 and h0["outcome"] == "win"
    assert h1["cards"] == ["Ah", "5c"]


def test_no_decision_is_asked_on_21():
    r = ready("luxury21")
    r.close(1, 2)
    r.feed("5s", "9h", "9d", "6s", "7h", "7c")
    r.decide(1, "hit")
    out = r.feed("Tc")                                    # 5 6 T = 21: no decision, next seat
    assert out[-1]["type"] == "awaiting_decision" and out[-1]["seat"] == 2


def test_european_splits_up_to_four_hands_but_aces_only_once():
    r = ready("european")
    r.close(1)
    r.feed("8s", "9d", "8h", "7c")
    r.decide(1, "split")
    out = r.feed("8c")
    assert "split" in out[-1]["allowed"]
    r.decide(1, "split")                                  # three hands
    out = r.feed("8d")
    assert "split" in out[-1]["allowed"]
    r.decide(1, "split")                                  # four hands
    out = r.feed("8s")
    assert "split" not in out[-1]["allowed"]
    r = ready("european")
    r.close(1)
    r.feed("As", "9d", "Ah", "7c")
    r.decide(1, "split")
    out = r.feed("Ad")
    assert "awaiting_decision" not in types(out)          # split aces: one card, no resplit


def test_european_no_peek_dealer_blackjack_beats_doubles_and_splits():
    r = ready("european")
    r.close(1, 2)
    r.feed("5s", "8s", "Ad", "6s", "8h", "Kh")            # dealer A up, K hole: no insurance, no peek
    assert "insurance_offered" not in types(r.outputs)
    r.decide(1, "double")
    r.feed("9c")
    r.decide(2, "split")
    r.feed("2c")
    r.feed({"type": "decision", "seat": 2, "hand": 0, "action": "stand"})
    r.feed("3c")
    out = r.feed({"type": "decision", "seat": 2, "hand": 1, "action": "stand"})
    res = one(out, "round_result")
    assert res["dealer"]["blackjack"]
    assert [h["outcome"] for s in res["seats"] for h in s["hands"]] == ["lose", "lose", "lose"]


def test_lucky7_peeks_on_ten_and_even_money_is_offered_to_a_blackjack():
    r = ready("lucky7")
    r.close(1, 2)
    out = r.feed("As", "9s", "Kc", "Kd", "7h", "Ac")       # hole K, up A; seat 1 A K blackjack
    ins = one(out, "insurance_offered")
    assert ins["insurance"] == [2] and ins["even_money"] == [1]
    out = r.feed({"type": "insurance_closed"})
    assert types(out) == ["hole_card_revealed", "peek_result", "round_result", "shuffle_due"]
    assert one(out, "round_result")["seats"][0]["lucky7"] == 0
    assert one(r.outputs, "shuffle_due")                   # lucky7 shuffles after every round
    r = ready("lucky7")
    r.close(1)
    out = r.feed("7s", "As", "7h", "Kd")                    # hole A, up K: peek, blackjack
    assert types(out)[-4:] == ["hole_card_revealed", "peek_result", "round_result", "shuffle_due"]
    assert one(out, "round_result")["seats"][0]["lucky7"] == 2   # two 7s paid for two


def test_lucky7_count_uses_the_card_that_completes_the_first_split_hand():
    r = ready("lucky7")
    r.close(1)
    r.feed("7s", "Ts", "7h", "9c")
    r.decide(1, "split")
    r.feed("7d")                                            # third 7, to the first split hand
    r.feed({"type": "decision", "seat": 1, "hand": 0, "action": "stand"})
    r.feed("2c")
    r.feed({"type": "decision", "seat": 1, "hand": 1, "action": "stand"})
    res = one(r.outputs, "round_result")
    assert res["seats"][0]["lucky7"] == 3 and "pairs" not in res["seats"][0]


@pytest.mark.parametrize("a,b,up,expected", [
    ("8s", "8s", "8s", "suited_trips"), ("8s", "8s", "8h", "perfect"), ("8s", "8c", "2d", "coloured"),
    ("8s", "8h", "2d", "mixed"), ("8s", "9s", "2d", "none"), ("Ts", "Ks", "2d", "none"),
    ("Qh", "Qd", "Qh", "coloured"),
])
def test_luxury21_pairs_pattern_is_the_highest_only(a, b, up, expected):
    r = ready("luxury21", burn=("As", "2c"))
    r.close(1)
    r.feed(a, up, b, "2s")
    if of(r.outputs, "awaiting_decision"):
        r.decide(1, "stand")
    if not of(r.outputs, "round_result"):
        r.feed("Ts", "Ts", "Ts")
    assert one(r.outputs, "round_result")["seats"][0]["pairs"] == expected


def test_luxury21_timeout_auto_plays_hit_until_over_11_then_stand():
    r = ready("luxury21")
    r.close(1, 2)
    r.feed("2s", "Ts", "9d", "3s", "8s", "7h")          # seat 1: 5
    out = r.feed({"type": "decision_timeout", "seat": 1, "hand": 0})
    assert out[-1]["type"] == "awaiting_card" and out[-1]["seat"] == 1
    out = r.feed("4c")                                   # 9: still <= 11, hit again
    assert out[-1]["type"] == "awaiting_card" and out[-1]["seat"] == 1
    out = r.feed("Ac")                                   # soft 20 > 11: stand
    assert out[-1]["type"] == "awaiting_decision" and out[-1]["seat"] == 2
    r = ready("luxury21")
    r.close(1)
    r.feed("Ts", "9d", "3s", "7h")                       # 13: stand at once
    out = r.feed({"type": "decision_timeout", "seat": 1, "hand": 0})
    assert types(out)[0] == "hole_card_revealed"


def test_european_and_lucky7_timeout_stands():
    for profile, cards in (("european", ("2s", "9d", "3s", "8h")), ("lucky7", ("2s", "8h", "3s", "9d"))):
        r = ready(profile)
        r.close(1)
        r.feed(*cards)
        out = r.feed({"type": "decision_timeout", "seat": 1, "hand": 0})
        assert types(out)[0] == "hole_card_revealed"
        assert one(r.outputs, "round_result")["seats"][0]["hands"][0]["cards"] == ["2s", "3s"]


def test_out_of_turn_and_illegal_decisions_are_rejected_and_change_nothing():
    r = ready("luxury21")
    r.close(1, 2)
    r.feed("5s", "9h", "9d", "6s", "7h", "7c")
    before = r.table
    for bad, code in [({"type": "decision", "seat": 2, "hand": 0, "action": "split"}, "out_of_turn"),
                      ({"type": "decision", "seat": 1, "hand": 1, "action": "hit"}, "out_of_turn"),
                      ({"type": "decision", "seat": 1, "hand": 0, "action": "split"}, "not_allowed"),
                      ({"type": "decision", "seat": 1, "hand": 0, "action": "fold"}, "malformed"),
                      ({"type": "decision", "seat": 1, "action": "hit"}, "malformed"),
                      ({"type": "decision_timeout", "seat": 2, "hand": 0}, "out_of_turn"),
                      ({"type": "insurance_closed"}, "not_awaiting_insurance")]:
        out = r.feed(bad)
        assert len(out) == 1 and out[0]["type"] == "rejected" and out[0]["code"] == code, out
        assert r.table is before


def test_a_later_seat_pre_selects_and_its_choice_is_applied_at_its_turn():
    """000: a player may pre-select a decision before the turn; applied if still legal."""
    r = ready("luxury21")
    r.close(1, 2)
    r.feed("Ts", "9s", "Kd", "7h", "2c", "8d")
    out = r.decide(2, "double")
    assert out == [{"type": "decision_preselected", "round": 1, "seat": 2, "hand": 0,
                    "action": "double"}]
    out = r.decide(1, "stand")
    assert types(out) == ["preselection_applied", "awaiting_card"]
    res = one(r.feed("9h"), "round_result")
    assert res["seats"][1]["hands"][0]["doubled"] is True


def test_an_exposed_hole_card_kept_in_play_is_revealed_and_a_replaced_one_burned():
    r = ready("luxury21")
    r.close(1)
    r.feed("Ts", "9d", "7c", "5h")
    out = r.feed({"type": "dealer_error", "error": "exposed_hole_card", "by": "d1"})
    assert "5h" not in str(out) and one(out, "irregularity")["code"] == "dealer_error"
    assert one(r.feed({"type": "resume"}), "rejected")["code"] == "decision_pending"
    out = r.feed({"type": "supervisor_decision", "decision": "replace", "by": "s1", "reason": "x"})
    assert one(out, "card_replaced")["card"] is None and "5h" not in str(out)
    assert r.table.shoe.entries()[-1][1:] == ("5h", "shoe", "burn")
    out = r.feed("8h")
    assert types(out) == ["card_dealt", "awaiting_decision"]
    out = r.feed({"type": "dealer_error", "error": "exposed_hole_card", "by": "d1"})
    out = r.feed({"type": "supervisor_decision", "decision": "continue", "by": "s1", "reason": "x"})
    assert one(out, "hole_card_revealed")["card"] == "8h"
    out = r.decide(1, "stand")
    assert types(out) == ["round_result"]          # revealed once, not again at the turn
