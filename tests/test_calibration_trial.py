"""What a technician's cold trial of shoe-calibrate found (issue #19): a second deck's codes are
added to the codebook, not put in place of the first's; a file or folder that could not be written
is an error before `ready:`, not after the whole deck has passed. Virtual shoe, real ptys."""
import os
import threading
import time
import tomllib
import tty

import pytest

from calibration import cli
from calibration.cli import main
from controller.cards import CARDS
from calibration_rig import shoe  # noqa: F401 (shoe: a fixture)

PATTERN = r"D\d\d-[A2-9TJQK][shdc]"




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


def test_monitor_on_a_silent_port_ends_with_the_silent_error(tmp_path, capsys):
    master, slave = os.openpty()
    tty.setraw(slave)
    try:
        t0 = time.monotonic()
        rc = main(["monitor", "--device", "shoe", "--port", os.ttyname(slave), "--answer", "1"])
        took = time.monotonic() - t0
    finally:
        os.close(master)
        os.close(slave)
    assert rc == 2 and took < 3
    assert "opened, but the device said nothing in 1 s: wrong port or baud rate?" in \
        capsys.readouterr().err


def test_busy_names_the_lock_holder_not_the_device_behind_the_pty(tmp_path, capsys):
    import subprocess
    import sys
    device = subprocess.Popen([sys.executable, "-c",      # a virtual device: holds the pty open
                               "import os, sys, tty\nm, s = os.openpty()\ntty.setraw(s)\n"
                               "print(os.ttyname(s), flush=True)\nsys.stdin.read()\n"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    path = device.stdout.readline().strip()
    holder = subprocess.Popen([sys.executable, "-c",
                               "import serial, sys\ns = serial.Serial(sys.argv[1], exclusive=True)\n"
                               "print('held', flush=True)\nsys.stdin.read()\n" + "# " + "x" * 90,
                               path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(["verify-deck", "--port", path, "--operator", "Bo", "--report-dir",
                     str(tmp_path / "r")]) == 2
    finally:
        for p in (holder, device):
            p.stdin.close()
            p.wait()
    err = capsys.readouterr().err
    assert f"port busy: held by PID {holder.pid} (python" in err
    assert f"PID {device.pid}" not in err
    assert " ...)" in err and "xxxx" not in err         # a long command line is cut between words


# -- camera ---------------------------------------------------------------------------------

def one_line(argv, capsys, text):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err and "WARN" not in err, err
    return err


def test_sweep_refuses_a_source_that_cannot_set_exposure(tmp_path, capsys):
    from drivers.camera.synth import default_zones
    from test_calibration_ports import table_video, zones_toml
    z = default_zones()
    table_video(tmp_path / "table.avi", z, {c: f"D01-{c}" for c in CARDS})
    cal = tmp_path / "c.toml"
    cal.write_text(zones_toml(z) + codebook_text(1))
    before = cal.read_text()
    one_line(["camera", "sweep", "--source", str(tmp_path / "table.avi"), "--calibration",
              str(cal), "--report-dir", str(tmp_path / "r"), "--operator", "Bo"], capsys,
             "this source cannot set the camera's exposure")
    assert cal.read_text() == before and not (tmp_path / "r").exists()


@pytest.mark.parametrize("zones, text", [
    (None, "no such calibration file"),
    ("", "no [zones] table, or it is empty"),
    ("[zones]\n", "no [zones] table, or it is empty"),
    ("[zones]\nseat_1 = [[0, 0], [10, 10]]\n", "zones.seat_1: a polygon is a list of at least three"),
])
@pytest.mark.parametrize("action", ["zones", "sweep"])
def test_zones_that_are_missing_or_wrong_are_one_line(action, zones, text, tmp_path, capsys):
    import cv2
    import numpy as np
    cal = tmp_path / "c.toml"
    if zones is not None:
        cal.write_text(zones + codebook_text(1))
    cv2.imwrite(str(tmp_path / "t.png"), np.full((48, 64, 3), 128, np.uint8))
    argv = (["camera", "zones", "--image", str(tmp_path / "t.png"), "--out",
             str(tmp_path / "z.png")] if action == "zones"
            else ["camera", "sweep", "--source", str(tmp_path / "t.avi")])
    assert one_line(argv + ["--calibration", str(cal)], capsys, text).startswith(
        f"shoe-calibrate: {cal}: ")


def test_labels_missing_without_columns_or_empty_are_one_line(tmp_path, capsys):
    (tmp_path / "deck.json").write_text("{}")          # templates there: the labels are the fault
    acc = ["camera", "accuracy", "--templates", str(tmp_path), "--labels"]
    one_line(["camera", "templates", "--labels", str(tmp_path / "labels.csv"), "--out",
              str(tmp_path / "t")], capsys, f"{tmp_path}/labels.csv: No such file or directory")
    (tmp_path / "l.csv").write_text("file,card\na.png,As\n")
    one_line(acc + [str(tmp_path / "l.csv")], capsys, "no column image, rank, suit")
    (tmp_path / "l.csv").write_text("image,rank,suit\n")
    one_line(acc + [str(tmp_path / "l.csv")], capsys, "no photos listed: a check of nothing")


def test_a_second_run_on_a_port_another_run_holds_is_busy(shoe, on_ready, tmp_path, capsys):
    import subprocess
    import sys
    s = shoe(decks=1)
    other = subprocess.Popen([sys.executable, "-c",          # another shoe-calibrate's claim
                              "import sys\nfrom calibration.port_check import claim\n"
                              "claim(sys.argv[1])\nprint('held', flush=True)\nsys.stdin.read()\n",
                              s.path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        err = early(["verify-deck", "--port", s.path, "--operator", "Bo", "--report-dir",
                     str(tmp_path / "r")], capsys)
    finally:
        other.stdin.close()
        other.wait()
    assert f"port busy: held by PID {other.pid} (python" in err and "another shoe-calibrate" in err
    # once it has ended the port is free again (the claim dies with its holder)
    on_ready(lambda: [s.deal() for _ in range(52)])
    assert main(["verify-deck", "--port", s.path, "--operator", "Bo", "--report-dir",
                 str(tmp_path / "r"), "--idle", "5"]) == 0


def test_no_opencv_warnings_before_the_tools_own_error(tmp_path):
    import subprocess
    import sys
    cal = tmp_path / "c.toml"
    cal.write_text('[zones]\nseat_1 = [[0, 0], [10, 0], [10, 10]]\n' + codebook_text(1))
    r = subprocess.run([sys.executable, "-m", "calibration.cli", "camera", "sweep", "--source",
                        "/dev/video77", "--calibration", str(cal)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == ("shoe-calibrate: no camera: cannot open '/dev/video77' (is the camera "
                        "connected, and the user in the video group?)\n")


def _photo_files(folder):
    """Files a hostile or careless technician hands the camera commands."""
    import cv2
    import numpy as np
    noise = np.random.default_rng(0).integers(90, 160, (120, 160, 3), dtype=np.uint8)
    cv2.imwrite(str(folder / "ok.jpg"), noise)          # its half cuts into the scan
    data = (folder / "ok.jpg").read_bytes()
    cv2.imwrite(str(folder / "dot.png"), np.zeros((1, 1, 3), np.uint8))
    (folder / "empty.jpg").write_bytes(b"")
    (folder / "adir.jpg").mkdir()
    cv2.imwrite(str(folder / "line.png"), np.zeros((500, 1, 3), np.uint8))
    (folder / "cut.jpg").write_bytes(data[:len(data) // 2])
    (folder / "text.png").write_text("not a picture")
    # 9000 x 6000 said by the header alone: refused before it is decoded (1.3 GB)
    png = bytearray(cv2.imencode(".png", np.zeros((2, 2, 3), np.uint8))[1].tobytes())
    png[16:24] = (9000).to_bytes(4, "big") + (6000).to_bytes(4, "big")
    (folder / "huge.png").write_bytes(bytes(png))
    jpg = bytearray(data)
    sof = jpg.index(b"\xff\xc0")
    jpg[sof + 5:sof + 9] = (6000).to_bytes(2, "big") + (9000).to_bytes(2, "big")
    (folder / "huge.jpg").write_bytes(bytes(jpg))


@pytest.mark.parametrize("name, text", [
    ("dot.png", "1 x 1 pixels: too small to show a card"),
    ("line.png", "1 x 500 pixels: too small to show a card"),
    ("cut.jpg", "a damaged JPEG (cut short, no end marker)"),
    ("text.png", "not an image"),
    ("empty.jpg", "an empty file (0 bytes)"),
    ("adir.jpg", "a folder, not a photo"),
    ("huge.png", "9000 x 6000 pixels: larger than any camera's photo"),
    ("huge.jpg", "9000 x 6000 pixels: larger than any camera's photo"),
])
def test_photos_that_cannot_be_read_are_one_line(name, text, tmp_path, capsys):
    """A cold trial found tracebacks (a 1-pixel image), a cut JPEG read as a photo of nothing,
    and a 100-megapixel photo decoded into 1.3 GB before anything was said."""
    from drivers.camera import camera_model as cm
    _photo_files(tmp_path)
    cm.reference_templates("cardsjs", seed=0, size=(480, 320)).save(str(tmp_path / "t"))
    one_line(["camera", "recognize", "--templates", str(tmp_path / "t"), str(tmp_path / name)],
             capsys, f"{tmp_path / name}: {text}")
    (tmp_path / "l.csv").write_text(f"image,rank,suit\n{name},A,s\n")
    one_line(["camera", "templates", "--labels", str(tmp_path / "l.csv"), "--out",
              str(tmp_path / "new")], capsys, text)
    assert main(["camera", "recognize", "--templates", str(tmp_path / "t"),
                 str(tmp_path / "ok.jpg")]) == 0                     # a plain photo: no card found


def test_label_files_and_template_folders_that_cannot_work_are_one_line(tmp_path, capsys):
    """Excel's CSV encodings, a card listed twice, an --out that cannot be a folder, templates
    from an older version: each said in one line, before any photo is read, nothing written."""
    import json
    from drivers.camera import camera_model as cm
    _photo_files(tmp_path)
    tmpl = ["camera", "templates", "--out", str(tmp_path / "new"), "--labels"]
    (tmp_path / "l.csv").write_bytes("image,rank,suit\nok\u00e9.jpg,A,s\n".encode("cp1252"))
    one_line(tmpl + [str(tmp_path / "l.csv")], capsys, 'not UTF-8 text (save it as "CSV UTF-8")')
    (tmp_path / "l.csv").write_text("image,rank,suit\nok.jpg,A,s\nok2.jpg,3,h\nok3.jpg,a,S\n")
    one_line(tmpl + [str(tmp_path / "l.csv")], capsys, "l.csv:4: As is listed twice (lines 2 and 4)")
    (tmp_path / "l.csv").write_text("image,rank,suit\nok.jpg,A,s\nok2.jpg,3,h\n./ok.jpg,4,h\n")
    one_line(tmpl + [str(tmp_path / "l.csv")], capsys, "l.csv:4: ./ok.jpg is listed twice (lines 2 "
             "and 4, labelled As and 4h): one photo per card")
    assert not (tmp_path / "new").exists() or not os.listdir(tmp_path / "new")
    (tmp_path / "bom.csv").write_text("image,rank,suit\nok.jpg,A,s\n", encoding="utf-8-sig")
    one_line(tmpl + [str(tmp_path / "bom.csv")], capsys, "expected one card in the photo, found 0")
    (tmp_path / "afile").write_text("")
    one_line(["camera", "templates", "--labels", str(tmp_path / "bom.csv"), "--out",
              str(tmp_path / "afile")], capsys, "--out " + str(tmp_path / "afile") + ": a file, not a folder")
    old = tmp_path / "old"
    cm.reference_templates("cardsjs", seed=0, size=(480, 320)).save(str(old))
    meta = json.loads((old / "deck.json").read_text())
    (old / "deck.json").write_text(json.dumps({**meta, "format": 3}))
    for argv in (["camera", "recognize", "--templates", str(old), str(tmp_path / "ok.jpg")],
                 ["camera", "accuracy", "--templates", str(old), "--labels", str(tmp_path / "bom.csv")]):
        one_line(argv, capsys, "template format 3, expected 5 (from an older version: capture them again")
    (old / "deck.json").write_text(json.dumps(meta))
    os.unlink(old / "index_Kc.png")
    one_line(["camera", "recognize", "--templates", str(old), str(tmp_path / "ok.jpg")], capsys,
             "missing template index_Kc.png")
