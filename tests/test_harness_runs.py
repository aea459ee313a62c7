"""table-sim end to end, the shorter runs beside the 200-round matrix of test_harness.py (a file
of their own, so a parallel run does not queue them behind it): the camera's short run, each
house procedure injected and resolved, the keyboard-mode scanner shoe, scenario files, an
outside broker."""
import json
import subprocess
import sys

import paho.mqtt.client as mqtt
import pytest

from dealer_station.sim import scenario
from mqtt_rig import ROOT
from test_harness import SCENARIOS, _write, assert_sound, table_sim


@pytest.mark.parametrize("profile", ["luxury21", "punto_banco"])
def test_the_camera_confirms_what_the_shoe_read_and_catches_a_disagreement(tmp_path, profile):
    """The short run with the virtual camera: every card laid is confirmed, and the two cards the
    camera is shown differently are each a source_mismatch, resolved."""
    scen = _write(tmp_path / "camera.json", {"seed": 11, "rounds": 24, "faults": [
        {"round": 4, "fault": "camera_disagrees"}, {"round": 9, "fault": "unreadable_card"},
        {"round": 15, "fault": "camera_disagrees"}]})
    p, r = table_sim(tmp_path, profile, scen, timeout=900)
    assert_sound(p, r, rounds=24)
    assert r["irregularities"].get("source_mismatch", 0) >= 1
    assert "open at the end" not in r["resolutions"].get("source_mismatch", {})
    cam = r["camera"]
    # unconfirmed: the two shown differently and at most the last round's cards (the run may end
    # before the camera's frames of them come in: up to a few dozen at a full blackjack table)
    assert cam["shown_differently"] == 2 and cam["cards_confirmed"] >= 0.9 * cam["cards_laid"]
    assert cam["cards_laid"] - cam["cards_confirmed"] <= 24


@pytest.mark.procedures
@pytest.mark.parametrize("profile, scenario_file", [("luxury21", "procedures.json"),
                                                    ("punto_banco", "procedures.json"),
                                                    ("roulette", "wheel-procedures.json")])
def test_each_house_procedure_is_injected_resolved_and_settled(tmp_path, profile, scenario_file):
    """docs/scenarios/procedures.json and wheel-procedures.json (issue #18): exposed card,
    misdeal, shoe jam mid-round, correction; no-spin, two numbers for one spin, the wheel's
    component fault. The simulated pit boss resolves each as a supervisor; balances still match
    a settlement of the journal's results and corrections."""
    p, r = table_sim(tmp_path, profile, SCENARIOS / scenario_file, "--no-camera", timeout=600)
    assert_sound(p, r, rounds=30)
    injected = set(r["faults_injected"])
    res = r["resolutions"]
    if profile == "roulette":
        assert injected >= set(scenario.WHEEL_PROCEDURES + scenario.ANY_PROCEDURES)
        assert res["no_spin"]["re-spun"] == 2
        assert res["number_mismatch"] == {"resumed": 1}            # the pit boss's correction
        assert res["device_fault"] == {"resumed": 1}               # the fault cleared in time
        assert res["correction"]["corrected"] == 2
    else:
        assert injected >= set(scenario.CARD_PROCEDURES + scenario.ANY_PROCEDURES)
        assert res["correction"] == {"voided": 1}
        assert res["device_fault"].get("resumed", 0) >= 1           # the jam
        # exposed cards continue; the misdeal is voided by the supervisor
        assert res["dealer_error"] == {"resumed": 2, "voided": 1}
        assert any("misdeal" in k for k in r["void_reasons"])


def test_table_sim_refuses_a_bad_scenario_before_starting(tmp_path):
    cases = [([{"round": 1, "fault": "meteor"}], "unknown fault 'meteor'"),
             ({"seed": -1}, "seed: a whole number"),
             ({"players": {"9": "hard"}}, "players.9: a seat is 1-7"),
             ({"players": {"2": "genius"}}, "level is one of easy, normal, hard"),
             ({"faults": [{"round": 0, "fault": "drop_frame"}]}, "round: a round number >= 1"),
             ({"tray": 3}, "unknown key 'tray'"),
             ({"shoe": "serial"}, "shoe: one of v1, hid, got 'serial'"),
             ([{"round": 2, "fault": "partial_code"}], "'partial_code' is not for a v1 shoe"),
             ({"shoe": "hid", "faults": [{"round": 2, "fault": "drop_frame"}]},
              "'drop_frame' is not for a hid shoe"),
             ([{"round": 2, "fault": "miss_spin"}], "'miss_spin' is not for a blackjack table")]
    for data, message in cases:
        f = tmp_path / "s.json"
        f.write_text(json.dumps(data))
        p = subprocess.run([sys.executable, "-m", "dealer_station.sim_cli", "--profile", "luxury21",
                            "--rounds", "1", "--faults", str(f)], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)
        assert p.returncode == 2 and message in p.stderr, (data, p.stderr)
        assert "Traceback" not in p.stderr


@pytest.mark.hid
def test_a_table_whose_shoe_is_a_keyboard_mode_scanner(tmp_path):
    """docs/scenarios/hid-faults.json: the daemon reads the shoe as a keyboard-mode scanner
    (input_event records through a FIFO) with its faults: a partial code, a wrong layout, an
    unplug; and the card-table faults that mean something without sequence numbers."""
    p, r = table_sim(tmp_path, "luxury21", SCENARIOS / "hid-faults.json", "--rounds", "48",
                     timeout=600)
    assert_sound(p, r, rounds=48)
    assert r["shoe"] == "hid"
    assert r["faults_injected"]["partial_code"] == 2 and r["faults_injected"]["wrong_layout"] == 2
    assert r["faults_injected"]["unplug_shoe"] == 2
    # the partial codes, wrong layouts, unreadable and garbled cards: each a misread, resumed
    assert r["irregularities"]["misread"] == 6 and r["resolutions"]["misread"] == {"resumed": 6}
    assert r["resolutions"]["foreign_card"] == {"voided": 1}


def test_a_scenario_file_sets_seed_rounds_and_players():
    s = scenario.parse({"seed": 4, "rounds": 9, "players": {"1": "easy", "3": "hard"},
                        "faults": [{"round": 2, "fault": "daemon_kill"}]})
    assert s == {"seed": 4, "rounds": 9, "players": {1: "easy", 3: "hard"},
                 "faults": [{"round": 2, "fault": "daemon_kill"}]}
    assert scenario.parse([])["faults"] == []


def test_with_broker_it_uses_that_broker_and_starts_none(tmp_path):
    from dealer_station.sim.broker import Broker
    b = Broker(str(tmp_path))
    b.start()
    try:
        seen = []
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        c.on_message = lambda cl, u, m: seen.append(m.topic)
        c.connect("127.0.0.1", b.port)
        c.subscribe("dealer-station/v1/sim/#")
        c.loop_start()
        p, r = table_sim(tmp_path, "punto_banco", _write(tmp_path / "none.json", []), "--rounds",
                         "5", "--broker", f"mqtt://127.0.0.1:{b.port}", timeout=300)
        c.loop_stop()
        assert_sound(p, r, rounds=5)
        assert r["broker"] == f"mqtt://127.0.0.1:{b.port}"
        assert "dealer-station/v1/sim/events" in seen          # the traffic went through ours
    finally:
        b.stop()
