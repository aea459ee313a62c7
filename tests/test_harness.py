"""table-sim: the real daemon on a simulated table, end to end, with faults."""
import json
import subprocess
import sys

import pytest

from mqtt_rig import ROOT

FAULTS = [{"round": 2, "fault": "corrupt_frame"}, {"round": 3, "fault": "unreadable_card"},
          {"round": 4, "fault": "foreign_card"}, {"round": 5, "fault": "card_out_of_turn"},
          {"round": 6, "fault": "unplug_shoe"}, {"round": 7, "fault": "broker_restart"},
          {"round": 8, "fault": "daemon_kill"}, {"round": 9, "fault": "drop_frame"},
          {"round": 10, "fault": "double_fire"}]


@pytest.mark.parametrize("profile,rounds", [("luxury21", 40), ("punto_banco", 60), ("european", 30),
                                            ("lucky7", 20)])
def test_table_sim_plays_through_every_fault_and_loses_nothing(tmp_path, profile, rounds):
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps(FAULTS))
    report = tmp_path / "report.json"
    p = subprocess.run([sys.executable, "-m", "dealer_station.sim_cli", "--profile", profile,
                        "--rounds", str(rounds), "--seed", "3", "--speed", "0", "--plain",
                        "--faults", str(faults), "--report", str(report)],
                       capture_output=True, text=True, cwd=ROOT, timeout=900)
    r = json.loads(report.read_text())
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert r["messages_lost"] == 0 and r["protocol_errors"] == 0
    assert r["rounds_resulted"] + r["rounds_voided"] == rounds
    assert r["balances_match"] is True
    assert r["irregularities"].get("misread", 0) >= 1          # the unreadable card was noticed
    assert r["irregularities"].get("unexpected_card", 0) >= (1 if profile != "punto_banco" else 0)
    assert "fault injected: daemon_kill" in p.stdout and "fault injected: broker_restart" in p.stdout


def test_table_sim_refuses_an_unknown_fault(tmp_path):
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{"round": 1, "fault": "meteor"}]))
    p = subprocess.run([sys.executable, "-m", "dealer_station.sim_cli", "--profile", "luxury21",
                        "--rounds", "1", "--faults", str(faults)], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert p.returncode != 0 and "unknown fault 'meteor'" in p.stderr


def test_a_roulette_table_runs_under_table_sim_with_wheel_faults(tmp_path):
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{"round": 2, "fault": "miss_spin"}, {"round": 3, "fault": "garbled_packet"},
                                  {"round": 4, "fault": "no_ball"}, {"round": 5, "fault": "broker_restart"},
                                  {"round": 6, "fault": "daemon_kill"}]))
    report = tmp_path / "report.json"
    p = subprocess.run([sys.executable, "-m", "dealer_station.sim_cli", "--profile", "roulette",
                        "--rounds", "12", "--seed", "2", "--speed", "0", "--plain",
                        "--faults", str(faults), "--report", str(report)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    r = json.loads(report.read_text())
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert r["messages_lost"] == 0 and r["protocol_errors"] == 0 and r["balances_match"] is True
    assert r["rounds_resulted"] + r["rounds_voided"] == 12 and r["rounds_voided"] >= 1
    assert "voided: wheel: no ball" in p.stdout
