"""Computer players and the game math computed from the engine's own rules."""
import json
import subprocess
import sys
from fractions import Fraction

import pytest

from controller import get_profile
from controller.analysis import baccarat_exact, pairs_exact, simulate
from controller.cards import CARDS
from controller.players import COLUMNS, chart_for, parse_chart, player
from controller.strategy_charts import EUROPEAN, LUXURY21, STANDARD
from helpers import of, ready


@pytest.mark.parametrize("chart", [STANDARD, LUXURY21, EUROPEAN])
def test_charts_are_complete(chart):
    c = parse_chart(chart)
    assert {r for (sec, r) in c if sec == "hard"} == {str(i) for i in range(5, 18)}
    assert {r for (sec, r) in c if sec == "soft"} == {str(i) for i in range(13, 21)}
    assert {r for (sec, r) in c if sec == "pair"} == {"2", "3", "4", "5", "6", "7", "8", "9", "T", "A"}
    assert all(set(row) == set(COLUMNS) for row in c.values())


def test_a_bad_chart_is_refused_with_its_line():
    with pytest.raises(ValueError, match="line 2: unknown code 'X'"):
        parse_chart("hard  2  3  4  5  6  7  8  9  T  A\n5 H H H H H H H H H X")


def decision(profile, level, seat_cards, up, allowed=("hit", "stand", "double", "split", "surrender")):
    """What a computer player does with two cards against an up card, in a real round."""
    r = ready(profile)
    r.close(1)
    hole = "2c"
    order = [seat_cards[0], up, seat_cards[1], hole] if r.profile.dealer_order == "up_hole" \
        else [seat_cards[0], hole, seat_cards[1], up]
    r.feed(*order)
    if of(r.outputs, "insurance_offered"):
        r.feed({"type": "insurance_closed"})
    rnd = r.table.round
    return player(level, r.profile)(rnd, 1, 0, list(allowed))


@pytest.mark.parametrize("profile,level,cards,up,expected", [
    ("luxury21", "hard", ("Ts", "6h"), "9d", "surrender"),   # 16 v 9: luxury21 lets it surrender
    ("luxury21", "normal", ("Ts", "6h"), "9d", "hit"),       # normal has no surrender
    ("luxury21", "hard", ("Ts", "6h"), "Td", "hit"),         # never against a ten
    ("luxury21", "hard", ("6s", "5h"), "Td", "double"),      # peek: 11 v T doubles
    ("european", "hard", ("6s", "5h"), "Td", "hit"),         # no hole card: 11 v T hits
    ("european", "normal", ("6s", "5h"), "Td", "double"),
    ("european", "hard", ("8s", "8h"), "Ad", "hit"),         # 8s v A: no split with no hole card
    ("european", "hard", ("As", "Ah"), "Ad", "hit"),
    ("luxury21", "hard", ("As", "Ah"), "Ad", "split"),
    ("lucky7", "hard", ("9s", "9h"), "7d", "stand"),
    ("lucky7", "hard", ("As", "7h"), "4d", "double"),        # soft 18 v 4
    ("lucky7", "hard", ("2s", "2h"), "3d", "split"),         # Ph with DAS
    ("luxury21", "easy", ("Ts", "6h"), "7d", "hit"),
    ("luxury21", "easy", ("Ts", "7h"), "Ad", "stand"),
])
def test_computer_players_decide_by_their_charts(profile, level, cards, up, expected):
    assert decision(profile, level, cards, up) == expected


def test_fallbacks_when_the_chart_move_is_not_allowed():
    assert decision("luxury21", "hard", ("6s", "5h"), "7d", allowed=("hit", "stand")) == "hit"
    assert decision("lucky7", "hard", ("As", "7h"), "4d", allowed=("hit", "stand")) == "stand"  # Ds
    assert decision("luxury21", "hard", ("8s", "8h"), "Td", allowed=("hit", "stand")) == "hit"  # 16
    assert decision("luxury21", "hard", ("Ts", "6h"), "9d", allowed=("hit", "stand")) == "hit"  # Rh


def test_chart_follows_the_rules_not_the_name():
    from controller import profile_from_mapping
    no_peek = profile_from_mapping({"base": "lucky7", "name": "x", "peek": [], "insurance": False,
                                    "even_money": False})
    assert chart_for(no_peek) is EUROPEAN and chart_for(get_profile("luxury21")) is LUXURY21


@pytest.mark.parametrize("level", ["easy", "normal", "hard"])
def test_players_never_use_the_hole_card(level):
    """Same table, same hand, different hole cards: same decision, every time."""
    for seat_cards, up in [(("Ts", "6h"), "9d"), (("6s", "5h"), "Td"), (("8s", "8h"), "7c"),
                           (("As", "6h"), "3c"), (("9s", "3h"), "2c")]:
        seen = set()
        for hole in ("2c", "Ah", "Tc", "7d"):
            r = ready("luxury21")
            r.close(1)
            r.feed(seat_cards[0], up, seat_cards[1], hole)
            if r.table.round is None or r.table.round.phase != "play":
                continue
            seen.add(player(level, r.profile)(r.table.round, 1, 0, ["hit", "stand", "double", "split"]))
        assert len(seen) <= 1


def test_baccarat_exact_matches_the_published_tables():
    pb = get_profile("punto_banco")
    r = baccarat_exact(pb, 8)
    p, e = r["probability"], r["house_edge"]
    assert (round(float(p["banker"]), 6), round(float(p["player"]), 6), round(float(p["tie"]), 6)) == (
        0.458597, 0.446247, 0.095156)
    assert (round(100 * float(e["banker"]), 4), round(100 * float(e["player"]), 4),
            round(100 * float(e["tie"]), 4)) == (1.0579, 1.2351, 14.3596)
    assert sum(p.values()) == 1
    r6 = baccarat_exact(pb, 6)
    assert (round(100 * float(r6["house_edge"]["banker"]), 4),
            round(100 * float(r6["house_edge"]["player"]), 4),
            round(100 * float(r6["house_edge"]["tie"]), 4)) == (1.0558, 1.2374, 14.4382)


def test_baccarat_exact_uses_the_engines_drawing_rule(monkeypatch):
    import controller.analysis as analysis
    calls = []
    real = analysis.next_hand
    monkeypatch.setattr(analysis, "next_hand", lambda p, b: calls.append(1) or real(p, b))
    baccarat_exact(get_profile("punto_banco"), 1)
    assert len(calls) > 10000


def test_pairs_exact_matches_published_perfect_pairs_for_8_decks():
    r = pairs_exact(get_profile("luxury21"), 8)
    p = r["probability"]
    assert r["perfect_any"] == Fraction(7, 415)
    assert (p["coloured"], p["mixed"]) == (Fraction(8, 415), Fraction(16, 415))
    assert sum(p.values()) == 1
    # 50:1 trips inside the perfect pairs, 30:1 the rest, 10:1 coloured, 5:1 mixed
    assert r["rtp"] == p["suited_trips"] * 51 + p["perfect"] * 31 + p["coloured"] * 11 + p["mixed"] * 6


def _shoes(profile, seed):
    import random
    rng = random.Random(seed)
    while True:
        cards = list(CARDS) * profile.decks
        rng.shuffle(cards)
        yield cards


def test_simulation_plays_exactly_the_rounds_asked_and_is_reproducible():
    p = get_profile("luxury21")
    a = simulate(p, _shoes(p, 5), player("hard", p), 300)
    b = simulate(p, _shoes(p, 5), player("hard", p), 300)
    assert a["rounds"] == 300 == a["tallies"]["main"].rounds
    assert a["tallies"]["main"].units == 300 * 7
    assert a["tallies"]["main"].as_dict() == b["tallies"]["main"].as_dict()
    s = a["tallies"]["main"].summary()
    assert s["ci95"][0] < s["rtp"] < s["ci95"][1]
    assert 0.8 < s["rtp"] < 1.2
    assert sum(a["pairs_counts"].values()) == 2100


def test_hard_beats_easy_over_many_hands():
    p = get_profile("european")
    hard = simulate(p, _shoes(p, 9), player("hard", p), 3000)["tallies"]["main"].summary()
    easy_ = simulate(p, _shoes(p, 9), player("easy", p), 3000)["tallies"]["main"].summary()
    assert hard["rtp"] > easy_["rtp"]


def test_analyze_command_is_reproducible_and_independent_of_processes():
    cmd = [sys.executable, "-m", "dealer_station.cli", "analyze", "luxury21", "--rounds", "6000",
           "--seed", "3", "--json"]
    one = json.loads(subprocess.run(cmd + ["--jobs", "1"], capture_output=True, text=True, check=True).stdout)
    two = json.loads(subprocess.run(cmd + ["--jobs", "2"], capture_output=True, text=True, check=True).stdout)
    assert one["bets"] == two["bets"] and one["rounds"] == 6000
    assert set(one["bets"]) == {"main", "pairs"}


@pytest.mark.parametrize("args,says", [
    (["punto_banco", "--decks", "0"], "argument --decks: must be 1-8, got 0"),     # ran 8 decks
    (["pairs", "--decks", "-1"], "argument --decks: must be 1-8, got -1"),         # RTP 0%
    (["luxury21", "--rounds", "0"], "argument --rounds: must be at least 1, got 0"),  # KeyError
    (["luxury21", "--rounds", "10", "--jobs", "-3"], "argument --jobs: must be at least 1"),
])
def test_analyze_refuses_a_bad_count_with_a_usage_error(args, says):
    p = subprocess.run([sys.executable, "-m", "dealer_station.cli", "analyze", *args],
                       capture_output=True, text=True)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr
    assert p.stdout == ""


def test_analyze_exact_commands_print_the_figures():
    out = subprocess.run([sys.executable, "-m", "dealer_station.cli", "analyze", "punto_banco",
                          "--decks", "8"], capture_output=True, text=True, check=True).stdout
    assert "banker  wins 0.458597" in out and "1.0579%" in out
    out = json.loads(subprocess.run([sys.executable, "-m", "dealer_station.cli", "analyze", "pairs",
                                     "--decks", "8", "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    assert out["perfect_any"]["fraction"] == "7/415"
    assert out["probability"]["coloured"]["fraction"] == "8/415"
