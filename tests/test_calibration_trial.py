"""What a technician's cold trial of shoe-calibrate found (issue #19): a second deck's codes are
added to the codebook, not put in place of the first's; a file or folder that could not be written
is an error before `ready:`, not after the whole deck has passed. Virtual shoe, real ptys."""
import threading
import time
import tomllib

import pytest

from calibration import cli
from calibration.cli import main
from controller.cards import CARDS
from drivers.virtual_shoe import VirtualShoe

PATTERN = r"D\d\d-[A2-9TJQK][shdc]"


@pytest.fixture
def shoe():
    made = []

    def make(**kw):
        s = VirtualShoe(heartbeat=0.2, **kw)
        s.start()
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


@pytest.fixture
def on_ready(monkeypatch):
    """Run `fn` when the tool says `ready:` (the technician starts scanning then)."""
    todo = []
    say = cli.say

    def said(text):
        say(text)
        if text.startswith("ready:") and todo:
            threading.Thread(target=todo.pop()).start()
    monkeypatch.setattr(cli, "say", said)
    return todo.append


@pytest.fixture
def reference_deck(shoe, on_ready):
    def make(deck):
        s = shoe(decks=1, mode="line")
        s.cards, s.deck_of = list(CARDS), [deck] * 52
        on_ready(lambda: [s.deal() for _ in range(52)])
        return s
    return make


def codebook_text(deck, cards=CARDS):
    return "[codebook]\n" + "".join(f'"D{deck:02d}-{c}" = "{c}"\n' for c in cards)


def test_learning_a_second_deck_adds_its_codes(reference_deck, tmp_path, capsys):
    cal = tmp_path / "calibration.toml"
    cal.write_text(codebook_text(1) + '[shoe]\nnote = "kept"\n')
    s = reference_deck(2)
    assert main(["learn-codebook", "--port", s.path, "--calibration", str(cal), "--idle", "5",
                 "--pattern", PATTERN]) == 0
    assert "codebook of 104 payloads written (52 added to the 52 learned before)" in \
        capsys.readouterr().out
    data = tomllib.loads(cal.read_text())
    assert len(data["codebook"]) == 104
    assert data["codebook"]["D01-As"] == "As" and data["codebook"]["D02-Kc"] == "Kc"
    assert data["shoe"] == {"note": "kept"}


def test_a_code_learned_before_for_another_card_is_refused(reference_deck, tmp_path, capsys):
    cal = tmp_path / "calibration.toml"
    cal.write_text('[codebook]\n"D02-As" = "Kc"\n')
    before = cal.read_text()
    s = reference_deck(2)
    assert main(["learn-codebook", "--port", s.path, "--calibration", str(cal), "--idle", "5",
                 "--pattern", PATTERN]) == 1
    out = capsys.readouterr().out
    assert "'D02-As' is already in the codebook as Kc, this deck has it as As" in out
    assert "--replace starts a new codebook" in out and cal.read_text() == before


def test_replace_starts_a_new_codebook(reference_deck, tmp_path, capsys):
    cal = tmp_path / "calibration.toml"
    cal.write_text(codebook_text(1))
    s = reference_deck(2)
    assert main(["learn-codebook", "--port", s.path, "--calibration", str(cal), "--idle", "5",
                 "--pattern", PATTERN, "--replace"]) == 0
    assert set(tomllib.loads(cal.read_text())["codebook"]) == {f"D02-{c}" for c in CARDS}


def early(argv, capsys):
    t0 = time.monotonic()
    rc = main(argv)
    took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert rc == 2 and took < 1.5, (rc, took, err)
    assert "ready:" not in err and "Traceback" not in err
    return err


def test_a_calibration_that_cannot_be_written_is_said_before_ready(shoe, tmp_path, capsys):
    s = shoe(decks=1, mode="line")
    bad = tmp_path / "garb.toml"
    bad.write_text("this is = = not toml\n")
    learn = ["learn-codebook", "--port", s.path, "--idle", "20", "--calibration"]
    assert f"{bad}: not valid TOML" in early(learn + [str(bad)], capsys)
    err = early(learn + [str(tmp_path / "nonexistent" / "cal.toml")], capsys)
    assert f"no such folder {tmp_path}/nonexistent: the calibration file cannot be written" in err
    assert "--order" in early(learn + [str(tmp_path / "c.toml"), "--order",
                                       str(tmp_path / "nope.txt")], capsys)


def test_a_report_folder_that_cannot_be_made_is_said_before_ready(shoe, tmp_path, capsys):
    s = shoe(decks=1)
    err = early(["verify-deck", "--port", s.path, "--operator", "Bo", "--idle", "20",
                 "--report-dir", "/proc/nope"], capsys)
    assert "/proc/nope: cannot make the report folder" in err


def test_line_mode_without_a_codebook_names_the_calibration_option(shoe, tmp_path, capsys):
    s = shoe(decks=1, mode="line")
    cal = tmp_path / "c.toml"
    cal.write_text("[zones]\n")
    err = early(["verify-deck", "--port", s.path, "--protocol", "line", "--operator", "Bo",
                 "--calibration", str(cal), "--report-dir", str(tmp_path / "r")], capsys)
    assert f"{cal}: no [codebook] table (learn it first" in err and "--codebook" not in err
