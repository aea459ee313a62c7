"""`dealer-station replay`: the engine's black-box interface and the audit tool."""
import json
import pathlib
import re
import subprocess
import sys

import pytest

from controller.protocol import SCHEMAS

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "docs" / "samples"
CLI = [sys.executable, "-m", "dealer_station.cli"]


def replay(*args, stdin=None):
    return subprocess.run(CLI + ["replay", *args], input=stdin, capture_output=True, text=True,
                          cwd=ROOT, timeout=60)


@pytest.mark.parametrize("profile", ["luxury21", "punto_banco"])
def test_replay_reproduces_the_documented_sample_shoe(profile):
    p = replay("--profile", profile, str(SAMPLES / f"{profile}-shoe.jsonl"))
    assert p.returncode == 0, p.stderr
    expected = (SAMPLES / f"{profile}-shoe.out.jsonl").read_text()
    assert p.stdout == expected
    assert len(expected.splitlines()) > 40


@pytest.mark.parametrize("profile", ["roulette", "luxury21", "punto_banco", "european", "lucky7"])
def test_replay_reproduces_the_procedure_samples(profile):
    """Issue #18: a replay sample per house procedure, input and expected output checked in."""
    p = replay("--profile", profile, str(SAMPLES / f"{profile}-procedures.jsonl"))
    assert p.returncode == 0, p.stderr
    assert p.stdout == (SAMPLES / f"{profile}-procedures.out.jsonl").read_text()
    kinds = {json.loads(x)["type"] for x in p.stdout.splitlines()}
    want = {"roulette": {"spin_void", "number_held", "result_corrected", "device_fault"},
            "luxury21": {"peek_result", "preselection_applied", "supervisor_decided",
                         "card_replaced", "result_corrected", "device_restored"},
            "punto_banco": {"device_fault", "supervisor_decided", "result_corrected"},
            "european": {"device_fault", "device_restored", "supervisor_decided", "round_voided",
                         "result_corrected"},
            "lucky7": {"device_fault", "device_restored", "supervisor_decided", "card_replaced",
                       "result_corrected"}}[profile]
    assert want <= kinds, want - kinds


def test_replay_reads_standard_input_and_is_deterministic():
    text = (SAMPLES / "luxury21-shoe.jsonl").read_text()
    a = replay("--profile", "luxury21", "-", stdin=text)
    b = replay("--profile", "luxury21", "-", stdin=text)
    assert a.returncode == 0 and a.stdout == b.stdout == (SAMPLES / "luxury21-shoe.out.jsonl").read_text()


def test_replay_reports_a_line_that_is_not_json_and_goes_on():
    p = replay("--profile", "punto_banco", "-", stdin='{"type":"shoe_loaded"}\n{oops\n{"type":"cut_card"}\n')
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    bad = [x for x in lines if x["type"] == "rejected"]
    assert len(bad) == 1 and bad[0]["reason"].startswith("line 2: not JSON")
    assert lines[-1]["type"] in ("last_round", "procedure_warning")


def test_replay_lines_card_source_defaults_to_shoe():
    from controller import get_profile
    from dealer_station.replay import replay_lines
    lines = ['{"type":"shoe_loaded"}', '{"type":"card","card":"As"}',
             '{"type":"card","card":"2s","source":"shoe"}']
    out = list(replay_lines(get_profile("punto_banco"), lines))
    assert out[-1] == {"type": "burn_complete", "shoe": 1, "exposed": "As", "burned": 1}


def test_unknown_profile_and_missing_file_are_clear_errors(tmp_path):
    p = replay("--profile", "poker", "-", stdin="")
    assert p.returncode == 2 and "unknown profile 'poker'" in p.stderr
    p = replay("--profile", "luxury21", str(tmp_path / "nope.jsonl"))
    assert p.returncode != 0 and "nope.jsonl" in p.stderr


def test_replay_takes_a_profile_file(tmp_path):
    f = tmp_path / "studio.toml"
    f.write_text('base = "punto_banco"\nname = "pb-studio-2"\ncut_card_tolerance = 410\n')
    p = replay("--profile", str(f), str(SAMPLES / "punto_banco-shoe.jsonl"))
    assert p.returncode == 0, p.stderr
    assert '"profile":"pb-studio-2"' in p.stdout and "procedure_warning" not in p.stdout
    f.write_text('base = "punto_banco"\ndecks = 9\n')
    p = replay("--profile", str(f), "-", stdin="")
    assert p.returncode == 2 and "decks: must be 1-8" in p.stderr


def test_protocol_doc_documents_every_input_and_output():
    doc = (ROOT / "docs" / "protocol.md").read_text()
    headings = set(re.findall(r"^### .*", doc, re.M))
    documented = {name for h in headings for name in re.findall(r"`([a-z_0-9]+)`", h)}
    outputs = set()
    for f in (ROOT / "controller").glob("*.py"):
        outputs |= set(re.findall(r'"type": "([a-z_]+)"', f.read_text()))
    assert set(SCHEMAS) <= documented, set(SCHEMAS) - documented
    assert outputs <= documented, outputs - documented
    assert len(outputs) >= 18
