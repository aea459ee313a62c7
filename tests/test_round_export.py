"""The round export (`dealer-station export --round N`): one JSON document that `dealer-station
replay` re-lays to the very outputs recorded, for every profile; the blackjack round has a split,
an insurance, an irregularity (a misread) and a supervisor's overrides (the card entered by hand,
the resume), and a dealer's refused attempt, all in its staff actions."""
import json
import subprocess
import sys

import pytest

from controller.blackjack import allowed
from controller.rights import Staff
from dealer_station.export import export_round
from dealer_station.signing import ENVELOPE
from integrity_rig import Rig

STAFF = Staff({"d-anna": "dealer", "s-carol": "supervisor"})
PROFILES = ["luxury21", "european", "lucky7", "punto_banco", "roulette"]


def cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "dealer_station.cli", *args], capture_output=True,
                          text=True, timeout=60, input=stdin)


def load(rig):
    rig.input({"type": "shoe_loaded"})
    burn = iter(["5h", "2d", "3d", "4d", "5d", "6d", "7d", "8d", "9d", "Td", "Jd", "Qd", "Kd"] * 2)
    while rig.st.table.phase == "burn":
        rig.input({"type": "card", "card": next(burn)}, "shoe")


def play_card_round(rig, misread_at=3):
    """One round: split a pair, close the insurance window, one misread identified by the
    supervisor by hand (a dealer's try refused first), resumed by the supervisor."""
    dealer = iter(["As", "9c", "Kh", "Qh", "Jh", "Th", "9h"])
    seat = iter(["8s", "8d", "Tc", "9s", "2c", "3c", "4c", "5c", "6c", "7c", "Ts", "Js"])
    tableau = iter(["2h", "3h", "4h", "Ks", "Qs", "Kc", "Qc", "Jc", "7s", "6s"])
    if rig.st.table.phase in ("no_shoe", "shuffle_due"):
        load(rig)                              # lucky7 shuffles after every round
    assert rig.command(rig.st.table.game.betting_closed([1]))["status"] == "accepted"
    dealt = split = 0
    while rig.st.table.round is not None:
        t, e = rig.st.table, rig.st.expectation()
        if e is None:
            raise AssertionError(f"stuck: paused={t.paused}")
        if e.what == "card":
            dealt += 1
            if dealt == misread_at:
                rig.input({"type": "card_unreadable"}, "shoe")
                card = "8h"           # seat 1: 8s 8h, a pair to split
                refused = rig.command({"type": "manual_card", "card": card, "reason": "misread"},
                                      user="d-anna")
                assert refused["code"] == "not_authorized"
                r = rig.command({"type": "manual_card", "card": card, "reason": "misread"},
                                user="s-carol")
                assert r["status"] == "accepted", r
                r = rig.command({"type": "resume", "reason": "misread"}, user="s-carol")
                assert r["status"] == "accepted", r
                continue
            pile = tableau if e.to in ("player", "banker") else dealer if e.to == "dealer" else seat
            rig.input({"type": "card", "card": next(pile)}, "shoe")
        elif e.what == "decision":
            rnd = t.round
            s = rnd.seats[rnd.cur_s]
            acts = allowed(rnd, s, s.hands[e.hand])
            action = "split" if "split" in acts and not split else "stand"
            split += action == "split"
            assert rig.command({"type": "decision", "seat": e.seat, "hand": e.hand,
                                "action": action})["status"] == "accepted"
        elif e.what == "insurance":
            assert rig.command({"type": "insurance_closed"})["status"] == "accepted"
        else:
            raise AssertionError(e)
    return split


def play_roulette(rig):
    rig.command({"type": "betting_closed"})
    rig.command({"type": "pause", "reason": "ball off the wheel"}, user="d-anna")
    assert rig.command({"type": "void_round", "reason": "x"}, user="d-anna")["code"] == "not_authorized"
    assert rig.command({"type": "void_round", "reason": "no_spin"}, user="s-carol")["status"] == "accepted"
    rig.command({"type": "betting_closed"})
    rig.input({"type": "winning_number", "number": 17, "spin": 2}, "wheel")


def check_replay(tmp_path, profile, doc):
    path = tmp_path / f"round-{doc['round']}.json"
    path.write_text(json.dumps(doc, indent=1))
    r = cli("replay", "--profile", profile, str(path))
    assert r.returncode == 0, r.stderr
    assert "identical to the record" in r.stderr
    got = [json.loads(line) for line in r.stdout.splitlines()]
    want = [{k: v for k, v in json.loads(o["message"]).items() if k not in ENVELOPE or k == "ts"}
            for o in doc["outputs"]]
    assert got == want and got
    # an output altered in the record is found
    o = json.loads(doc["outputs"][-1]["message"])
    o["round"] = 999
    doc["outputs"][-1]["message"] = json.dumps(o)
    path.write_text(json.dumps(doc, indent=1))
    r = cli("replay", "--profile", profile, str(path))
    assert r.returncode == 1 and "differs from the record" in r.stderr


@pytest.mark.parametrize("profile", PROFILES)
def test_a_round_export_replays_exactly(tmp_path, profile):
    rig = Rig(tmp_path / "journal.sqlite", profile, staff=STAFF)
    if profile == "roulette":
        play_roulette(rig)
        numbers = (1, 2)
    else:
        load(rig)
        play_card_round(rig, misread_at=99)         # a round before: the export starts mid-shoe
        rig.crash()                                 # and a restart between the rounds
        split = play_card_round(rig)
        if rig.profile.game == "blackjack":
            assert split == 1
        numbers = (2,)
    for n in numbers:
        doc = export_round(rig.path, n)
        assert doc["round"] == n and doc["finished"] and doc["table"] == "t1"
        assert doc["software"] and doc["software"][0]["version"] == "test"
        assert all(o["seq"] for o in doc["outputs"])
        kinds = [json.loads(o["message"])["type"] for o in doc["outputs"]]
        assert kinds[0] == "round_started"
        assert kinds[-1] in ("round_result", "round_voided") or "round_result" in kinds
        actions = [(s["who"], s["action"], s["result"]) for s in doc["staff"]]
        if profile == "roulette" and n == 1:
            assert ("d-anna", "void_round", "rejected:not_authorized") in actions
            assert ("s-carol", "void_round", "accepted") in actions
        elif profile != "roulette":
            assert actions == [("d-anna", "manual_card", "rejected:not_authorized"),
                               ("s-carol", "manual_card", "accepted"),
                               ("s-carol", "resume", "accepted")]
            assert "irregularity" in kinds and "card_identified" in kinds
            if profile == "luxury21":       # the round of issue #16: split, insurance, misread
                assert "insurance_offered" in kinds and "round_result" in kinds
            cards = doc["cards"]
            assert [c["card"] for c in cards if c["card"]][:1] and any(
                c["source"] == "manual" for c in cards)
            assert [c["input"] for c in cards] == sorted(c["input"] for c in cards)
        check_replay(tmp_path, profile, doc)


def test_export_command(tmp_path):
    rig = Rig(tmp_path / "journal.sqlite", "luxury21", staff=STAFF)
    load(rig)
    play_card_round(rig)
    out = tmp_path / "r1.json"
    r = cli("export", "--round", "1", "--shoe", "1", "--journal", rig.path, "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "round 1 (shoe 1):" in r.stderr and out.stat().st_mode & 0o077 == 0
    r = cli("replay", "--profile", "luxury21", str(out))
    assert r.returncode == 0 and "identical" in r.stderr
    r = cli("export", "--round", "1", "--shoe", "2", "--journal", rig.path)
    assert r.returncode == 1 and "played in shoe 1, not shoe 2" in r.stderr
    r = cli("export", "--round", "7", "--journal", rig.path)
    assert r.returncode == 1 and "round 7 is not in this journal" in r.stderr
