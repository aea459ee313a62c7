"""The shoe lifecycle, irregularities, pause / resume / void and input validation."""
import pytest

from controller import get_profile, new_table, rights, step
from controller.expectation import Pending
from helpers import Run, of, one, ready, types


def test_shoe_lifecycle_cut_card_in_a_round_makes_it_the_last():
    r = Run("luxury21")
    out = r.load("3h")
    assert types(out) == ["shoe_started", "awaiting_card", "card_dealt", "awaiting_card"]
    out = r.feed("4h", "5h")
    assert "burn_complete" not in types(out)
    out = r.feed("6h")
    assert one(out, "burn_complete")["burned"] == 3
    r.close(1)
    r.feed("Ts", "9d")
    out = r.feed({"type": "cut_card"})
    assert one(out, "last_round") == {"type": "last_round", "shoe": 1, "round": 1}
    r.feed("7s", "8h")
    out = r.decide(1, "stand")
    assert types(out)[-2:] == ["round_result", "shuffle_due"]
    out = r.close(1)
    assert out[0]["type"] == "rejected" and out[0]["code"] == "shuffle_due"
    out = r.feed("2d")
    assert one(out, "irregularity")["code"] == "card_after_shoe_end"
    r.feed({"type": "resume"})
    out = r.load()
    assert one(out, "shoe_started")["shoe"] == 2


def test_cut_card_between_rounds_announces_the_next_round_as_last():
    r = ready("punto_banco")
    r.close()
    r.feed("9s", "Kh", "8d", "5c", "4h")
    out = r.feed({"type": "cut_card"})
    assert one(out, "last_round")["round"] == 2
    out = r.close()
    assert one(out, "round_started")["round"] == 2
    out = r.feed("9s", "Kh", "8d", "5c", "4h")
    assert types(out)[-2:] == ["round_result", "shuffle_due"]
    assert r.feed({"type": "cut_card"})[0]["code"] == "no_shoe"


def test_cut_card_far_from_its_position_is_a_procedure_warning_not_a_stop():
    r = ready("punto_banco")
    out = r.feed({"type": "cut_card"})       # 2 cards out of 416: 414 remain, expected 7
    w = one(out, "procedure_warning")
    assert w["code"] == "cut_card_position" and w["detail"]["remaining"] == 414
    assert w["detail"]["expected_remaining"] == 7
    assert r.table.paused is None
    assert one(r.feed({"type": "cut_card"}), "rejected")["code"] == "cut_card_seen"


def test_cut_card_near_its_position_gives_no_warning():
    p = get_profile("punto_banco")
    from controller.autoplay import play_shoe
    from controller.cards import CARDS
    cards = list(CARDS) * 8
    outs = [o for _, out in play_shoe(p, cards, None) for o in out]
    assert one(outs, "last_round") and not of(outs, "procedure_warning")
    assert types(outs)[-1] == "shuffle_due"


def test_lucky7_has_no_cut_card_and_no_burn():
    r = Run("lucky7")
    out = r.load()
    assert types(out) == ["shoe_started"]
    assert one(r.feed({"type": "cut_card"}), "rejected")["code"] == "no_cut_card"


def test_unexpected_card_before_betting_closed_pauses_and_resume_burns_it():
    r = ready("luxury21")
    out = r.feed("Kc")
    irr = one(out, "irregularity")
    assert irr["code"] == "unexpected_card" and irr["detail"]["card"] == "Kc"
    assert one(out, "round_paused")["reason"] == "unexpected_card"
    assert one(r.close(1), "rejected")["code"] == "paused"
    out = r.feed({"type": "resume"})
    assert out == [{"type": "round_resumed", "round": None, "burned": ["Kc"], "removed": [],
                    "unidentified": 0}]
    assert types(r.close(1)) == ["round_started", "awaiting_card"]
    assert r.table.shoe.entries()[-1][1:] == ("Kc", "shoe", "unexpected")


def test_unexpected_card_during_a_decision_then_resume_asks_the_decision_again():
    r = ready("luxury21")
    r.close(1)
    r.feed("Ts", "9d", "7s", "8h")
    out = r.feed("5c")
    assert one(out, "irregularity")["round"] == 1
    assert one(r.decide(1, "hit"), "rejected")["code"] == "paused"
    out = r.feed({"type": "resume"})
    assert types(out) == ["round_resumed", "awaiting_decision"]
    assert out[0]["burned"] == ["5c"]


def test_foreign_card_is_an_irregularity_and_the_same_place_still_waits():
    r = ready("european")                      # 6 decks
    r.close(1)
    for _ in range(6):
        r.table.shoe = r.table.shoe.read("Qh", "shoe", "burn")
    out = r.feed("Qh")
    irr = one(out, "irregularity")
    assert irr["code"] == "foreign_card" and irr["detail"] == {"card": "Qh", "source": "shoe",
                                                               "read": 7, "decks": 6}
    out = r.feed({"type": "resume"})
    assert out[0]["removed"] == ["Qh"]
    assert out[-1]["type"] == "awaiting_card" and out[-1]["seat"] == 1
    assert r.table.shoe.count("Qh") == 6


def test_misread_resolved_by_a_manual_card_goes_where_the_card_was_expected():
    r = ready("luxury21")
    r.close(1, 2)
    r.feed("Ts")
    out = r.feed({"type": "card_unreadable", "source": "shoe"})
    assert one(out, "irregularity")["code"] == "misread"
    out = r.feed({"type": "card", "card": "9h", "source": "manual"})
    assert one(out, "card_dealt") == {"type": "card_dealt", "round": 1, "card": "9h", "to": "seat",
                                      "seat": 2, "hand": 0, "face": "up"}
    assert "awaiting_card" not in types(out)   # still paused
    out = r.feed({"type": "resume"})
    assert out[0]["unidentified"] == 0
    assert out[-1]["to"] == "dealer"
    assert [e[1:] for e in r.table.shoe.entries()[-2:]] == [(None, "shoe", "unreadable"),
                                                              ("9h", "manual", "seat:2:0")]


def test_a_misread_identified_by_hand_that_the_camera_contradicts_stays_pending():
    """The camera saw Kh at the player's place before the shoe's read; the shoe's read was
    unreadable (paused: misread) and the card entered by hand is Qh. The source mismatch is
    pending as it is when the table was not paused (its resume then needs the supervisor's
    override), and the table, paused already, announces no second pause."""
    r = ready("punto_banco")
    r.close()
    assert r.feed({"type": "card_seen", "card": "Kh", "zone": "player"}) == []
    r.feed({"type": "card_unreadable", "source": "shoe"})
    out = r.feed({"type": "card", "card": "Qh", "source": "manual"})
    assert types(out) == ["card_identified", "card_dealt", "irregularity"]
    assert one(out, "irregularity")["detail"] == {"zone": "player", "seen": "Kh", "read": ["Qh"]}
    assert r.table.paused == "misread"
    assert r.table.pending == (Pending("seen", "Kh", None),)
    assert rights.required("resume", bool(r.table.pending)) == rights.OVERRIDE
    out = r.feed({"type": "resume"})
    assert types(out) == ["round_resumed", "awaiting_card"] and out[1]["to"] == "banker"
    assert r.table.pending == () and r.table.paused is None


def test_misread_not_identified_is_discarded_on_resume_and_the_place_still_waits():
    r = ready("luxury21")
    r.close(1)
    r.feed({"type": "card_unreadable"})
    out = r.feed({"type": "resume"})
    assert out[0]["unidentified"] == 1
    assert out[-1]["type"] == "awaiting_card" and out[-1]["seat"] == 1
    assert r.table.shoe.unknown == 1 and r.table.shoe.drawn == 3


def test_void_round_ends_it_without_result_and_the_next_round_follows():
    r = ready("luxury21")
    r.close(1)
    r.feed("Ts", "9d")
    out = r.feed({"type": "void_round", "reason": "shoe jammed"})
    assert out == [{"type": "round_voided", "round": 1, "reason": "shoe jammed", "burned": [],
                    "removed": [], "unidentified": 0}]
    assert not of(r.outputs, "round_result")
    assert one(r.close(2), "round_started")["round"] == 2
    assert one(Run("luxury21").feed({"type": "void_round", "reason": "x"}), "rejected")["code"] == "no_round"


def test_void_after_an_irregularity_clears_the_pause():
    r = ready("luxury21")
    r.close(1)
    r.feed({"type": "card_unreadable"})
    out = r.feed({"type": "void_round", "reason": "unreadable card"})
    assert out[0]["unidentified"] == 1 and r.table.paused is None
    assert one(r.close(1), "round_started")["round"] == 2


def test_betting_closed_during_the_burn_is_burn_incomplete_then_resume_finishes_the_burn():
    r = Run("luxury21")
    r.load("4h", "5h")
    out = r.close(1)
    assert types(out) == ["round_started", "irregularity", "round_paused"]
    assert out[1]["code"] == "burn_incomplete" and out[1]["detail"] == {"required": 4, "burned": 1,
                                                                       "exposed": "4h"}
    out = r.feed({"type": "resume"})
    assert out[-1]["to"] == "burn"
    out = r.feed("6h", "7h", "8h")
    assert types(out)[-2:] == ["burn_complete", "awaiting_card"] and out[-1]["seat"] == 1
    r2 = Run("luxury21")
    r2.load("4h", "5h")
    r2.close(1)
    out = r2.feed({"type": "void_round", "reason": "burn"})
    assert types(out) == ["round_voided", "awaiting_card"] and out[-1]["to"] == "burn"


def test_pause_and_resume_by_command():
    r = ready("luxury21")
    r.close(1)
    out = r.feed({"type": "pause", "reason": "pit boss called"})
    assert out == [{"type": "round_paused", "round": 1, "reason": "pit boss called"}]
    assert one(r.feed({"type": "pause", "reason": "again"}), "rejected")["code"] == "paused"
    out = r.feed({"type": "resume"})
    assert types(out) == ["round_resumed", "awaiting_card"]
    assert one(r.feed({"type": "resume"}), "rejected")["code"] == "not_paused"


def test_shoe_loaded_during_a_round_is_rejected():
    r = ready("luxury21")
    r.close(1)
    assert one(r.load(), "rejected")["code"] == "round_in_progress"


@pytest.mark.parametrize("bad", [
    {"type": "card", "card": "AS"}, {"type": "card", "card": "10s"}, {"type": "card"},
    {"type": "card", "card": "As", "source": "eye"}, {"type": "card", "card": "As", "extra": 1},
    {"type": "betting_closed", "seats": [1, 1]}, {"type": "betting_closed", "seats": []},
    {"type": "betting_closed", "seats": [8]}, {"type": "betting_closed", "seats": "1"},
    {"type": "explode"}, {"kind": "card"}, ["card"], "card", None,
    {"type": "pause"}, {"type": "pause", "reason": ""}, {"type": "card", "card": "As", "id": [1]},
])
def test_malformed_inputs_are_rejected_and_change_nothing(bad):
    r = ready("luxury21")
    before = r.table
    out = r.feed(bad) if not isinstance(bad, str) else step(r.table, bad)[1]
    assert len(out) == 1 and out[0]["type"] == "rejected"
    assert out[0]["code"] == "malformed" and out[0]["reason"]
    assert r.table is before


@pytest.mark.parametrize("field, value, says", [
    ("seat", "3", "decision.seat: expected a seat number 1-7 (an integer), got '3'"),
    ("seat", 0, "decision.seat: expected a seat number 1-7 (an integer), got 0"),
    ("seat", 8, "decision.seat: expected a seat number 1-7 (an integer), got 8"),
    ("seat", True, "decision.seat: expected a seat number 1-7 (an integer), got True"),
    ("hand", "0", "decision.hand: expected a hand index 0-99 (an integer, 0: the seat's first "
                  "hand), got '0'"),
])
def test_a_decisions_seat_or_hand_refused_names_its_own_range(field, value, says):
    """The cold trial: a seat given as text was refused "expected an integer 0-99" while seats
    are 1-7 (as the zones seat_1..seat_7 and a profile's at most 7 seats)."""
    r = ready("luxury21")
    r.close(3)
    before = r.table
    body = {"type": "decision", "seat": 3, "hand": 0, "action": "stand", field: value}
    out = r.feed(body)
    assert out == [{"type": "rejected", "input": "decision", "code": "malformed", "reason": says}]
    assert r.table is before
    out = r.feed({"type": "decision_timeout", "seat": 3, "hand": 0, field: value})
    assert out[0]["reason"] == says.replace("decision.", "decision_timeout.")


def test_ts_is_copied_to_what_an_input_causes_and_id_to_its_rejection():
    r = ready("luxury21")
    out = r.feed({"type": "betting_closed", "seats": [2], "ts": 1700000000.5})
    assert out and all(o["ts"] == 1700000000.5 for o in out)
    out = r.feed({"type": "betting_closed", "seats": [2], "id": "cmd-7"})
    assert out == [{"type": "rejected", "input": "betting_closed", "code": "round_in_progress",
                    "reason": "round 1 is under way", "id": "cmd-7"}]
    out = r.feed("Ts")
    assert all("ts" not in o for o in out)


def test_the_shoe_log_keeps_every_read_with_its_destination():
    r = Run("luxury21")
    r.load("As", "2c")
    r.close(4)
    r.feed("Ts", "9d", "7s", "8h")
    log = r.table.shoe.entries()
    assert [(e[1], e[3]) for e in log] == [("As", "burn"), ("2c", "burn"), ("Ts", "seat:4:0"),
                                           ("9d", "dealer"), ("7s", "seat:4:0"), ("8h", "dealer")]
    assert [e[0] for e in log] == [1, 2, 3, 4, 5, 6]
    assert r.table.shoe.remaining == 410


def test_no_card_before_any_shoe():
    t = new_table(get_profile("punto_banco"))
    t, out = step(t, {"type": "card", "card": "As"})
    assert one(out, "irregularity")["detail"]["why"] == "no shoe is loaded"
