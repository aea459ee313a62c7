"""shoe-calibrate tells the truth: a deck scanned out of order is refused when its codes name their
cards, and a missing, busy, silent or wrong port is an error at once, not a wait that ends in a
report of 52 missing cards. Against the virtual shoe and real ptys."""
import os
import random
import subprocess
import sys
import time
import tty

import numpy as np
import pytest

from calibration import cli
from calibration.cli import main
from controller.cards import CARDS
from calibration_rig import shoe, when_ready  # noqa: F401 (fixtures)

PATTERN = r"D\d\d-[A2-9TJQK][shdc]"




def timed(argv):
    t0 = time.monotonic()
    rc = main(argv)
    return rc, time.monotonic() - t0


def test_a_shuffled_deck_whose_codes_name_their_cards_is_refused(
        shoe, tmp_path, capsys, when_ready):
    s = shoe(decks=1, mode="line")
    s.cards = list(CARDS)
    random.Random(3).shuffle(s.cards)
    s.deck_of = [1] * 52
    cal = tmp_path / "calibration.toml"
    when_ready(lambda: [s.deal() for _ in range(52)])
    rc = main(["learn-codebook", "--port", s.path, "--calibration", str(cal), "--idle", "1",
               "--pattern", PATTERN])
    out = capsys.readouterr().out
    assert rc == 1, out
    first = s.cards[0]
    assert f"scan 1: 'D01-{first}' names {first}, but the stated order has As here" in out
    assert "out of order" in out and "codebook not written" in out
    assert not cal.exists()


def test_a_named_group_in_the_pattern_says_where_the_card_is(tmp_path):
    from calibration.shoe_tools import learn_codebook
    # the card in the middle of the code: only the pattern's `card` group finds it
    payloads = [f"X{c}-{i:03d}" for i, c in enumerate(CARDS)]
    payloads[0], payloads[1] = payloads[1], payloads[0]
    book, errors = learn_codebook(payloads, None, r"X(?P<card>[A2-9TJQK][shdc])-\d{3}")
    assert len(errors) == 2 and "names 2s, but the stated order has As" in errors[0]
    # opaque codes (no card in them) are mapped by the order, as before
    book, errors = learn_codebook([f"{i:05d}" for i in range(52)])
    assert not errors and book["00000"] == "As"


def test_learn_progress_counts_cards_and_it_ends_when_the_deck_is_scanned(
        shoe, tmp_path, capsys, monkeypatch, when_ready):
    seen = []
    monkeypatch.setattr(cli, "progress", lambda done, total, what: seen.append((done, total)))
    s = shoe(decks=1, mode="line")
    s.cards, s.deck_of = list(CARDS), [1] * 52
    when_ready(lambda: [s.deal() for _ in range(52)])
    rc, took = timed(["learn-codebook", "--port", s.path, "--calibration",
                      str(tmp_path / "c.toml"), "--idle", "20", "--pattern", PATTERN])
    assert rc == 0 and took < 10
    assert seen == [(i, 52) for i in range(1, 53)]
    assert "ready: scan the 52 cards" in capsys.readouterr().err


def test_verify_ends_early_once_the_deck_is_complete(shoe, tmp_path, capsys, when_ready):
    s = shoe(decks=1, seed=5)
    when_ready(lambda: [s.deal() for _ in range(52)])
    rc, took = timed(["verify-deck", "--port", s.path, "--operator", "Bo", "--report-dir",
                      str(tmp_path), "--idle", "30"])
    captured = capsys.readouterr()
    assert rc == 0 and took < 8, took
    assert "ready: pass the 52 cards" in captured.err


@pytest.mark.parametrize("argv, device", [
    (["verify-deck", "--operator", "Bo"], "shoe"),
    (["learn-codebook"], "scanner"),
    (["monitor", "--device", "shoe"], "shoe"),
    (["monitor", "--device", "wheel"], "wheel"),     # the wheel's port, not "the shoe"
    (["ports"], "shoe"),
])
def test_a_missing_port_is_named_at_once(argv, device, tmp_path, capsys):
    rc, took = timed(argv + ["--port", str(tmp_path / "ttyUSB7")] +
                     (["--report-dir", str(tmp_path / "r")] if argv[0] == "verify-deck" else []))
    assert rc == 2 and took < 1.5
    assert f"no such port (is the {device} plugged in?)" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()           # no report of 52 missing cards


@pytest.fixture
def holder():
    """Another program holding a port the way dealer-station does (an exclusive lock)."""
    procs = []

    def hold(path):
        p = subprocess.Popen([sys.executable, "-c",
                              "import serial, sys, time\n"
                              "s = serial.Serial(sys.argv[1], exclusive=True)\n"
                              "print('held', flush=True)\n"
                              "time.sleep(60)\n", path], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "held"
        procs.append(p)
        return p
    yield hold
    for p in procs:
        p.kill()
        p.wait()


def test_a_busy_port_names_its_holder(shoe, holder, tmp_path, capsys):
    s = shoe(decks=1)
    p = holder(s.path)
    for argv in (["verify-deck", "--operator", "Bo", "--report-dir", str(tmp_path)],
                 ["ports"], ["monitor", "--device", "shoe"]):
        rc, took = timed(argv + ["--port", s.path])
        err = capsys.readouterr().err
        assert rc == 2 and took < 1.5, (argv, err)
        assert f"port busy: held by PID {p.pid} (python" in err and "dealer-station" in err
        # the virtual shoe behind the pty has it open too, but it is not what makes it busy
        assert f"PID {os.getpid()}" not in err and "held by PID" in err and err.count("PID ") == 1


def test_a_silent_port_is_called_silent(tmp_path, capsys):
    master, slave = os.openpty()
    tty.setraw(slave)
    try:
        rc, took = timed(["verify-deck", "--port", os.ttyname(slave), "--operator", "Bo",
                          "--report-dir", str(tmp_path / "r"), "--answer", "1"])
    finally:
        os.close(master)
        os.close(slave)
    err = capsys.readouterr().err
    assert rc == 2 and took < 3
    assert "opened, but the device said nothing in 1 s: wrong port or baud rate?" in err
    assert not (tmp_path / "r").exists()


def test_a_fifo_is_not_a_serial_port(tmp_path, capsys):
    fifo = tmp_path / "scanner"
    os.mkfifo(fifo)
    assert main(["ports", "--port", str(fifo)]) == 2
    assert "not a serial port but an input device" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["", "[zones]\n", '[codebook]\n"X" = "Zz"\n'])
def test_a_calibration_without_a_good_codebook_is_one_line(shoe, tmp_path, capsys, content):
    s = shoe(decks=1, mode="line")
    cal = tmp_path / "c.toml"
    cal.write_text(content)
    assert main(["monitor", "--device", "scanner", "--port", s.path, "--codebook", str(cal)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"shoe-calibrate: {cal}") and "Traceback" not in err


def test_reports_never_overwrite_one_another(shoe, tmp_path, capsys, when_ready):
    for seed in (5, 6):
        s = shoe(decks=1, seed=seed)
        when_ready(lambda: [s.deal() for _ in range(52)])
        assert main(["verify-deck", "--port", s.path, "--operator", "Bo", "--report-dir",
                     str(tmp_path), "--idle", "5"]) == 0
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 6, files                   # two sets of Markdown, JSON and chart
    mds = [f for f in files if f.endswith(".md")]
    for md in mds:
        stem = md[:-3]
        assert {stem + ".json", stem + "-read-intervals.png"} <= set(files)
        assert f"]({stem}-read-intervals.png)" in (tmp_path / md).read_text()


def table_video(path, zones, codes):
    import cv2
    from drivers.camera.synth import scene
    frame, _ = scene({n: CARDS[i] for i, n in enumerate(zones)}, zones, "clean", codes=codes)
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 10,
                        (frame.shape[1], frame.shape[0]))
    for _ in range(30):
        w.write(frame)
    w.release()
    return frame


def zones_toml(zones):
    return "[zones]\n" + "".join(f"{n} = {[[int(x), int(y)] for x, y in p]}\n" for n, p in zones.items())


def settable(monkeypatch):
    """The video played as a camera that applies exposure and focus (a file cannot)."""
    from drivers.camera import video
    real = video.open_source

    class Camera:
        def __init__(self, spec):
            self.cap = real(spec)

        def read(self):
            return self.cap.read()

        def set(self, prop, value):
            return True
    monkeypatch.setattr(video, "open_source", Camera)


def test_sweep_without_a_report_dir_writes_its_report_then_the_calibration(tmp_path, monkeypatch,
                                                                          capsys):
    import cv2
    from drivers.camera.synth import default_zones
    z = default_zones()
    codes = {c: f"D01-{c}" for c in CARDS}
    frame = table_video(tmp_path / "table.avi", z, codes)
    cal = tmp_path / "c.toml"
    cal.write_text(zones_toml(z) + "[codebook]\n" + "".join(f'"D01-{c}" = "{c}"\n' for c in CARDS))
    monkeypatch.chdir(tmp_path)
    settable(monkeypatch)
    assert main(["camera", "sweep", "--source", "table.avi", "--calibration", "c.toml",
                 "--exposures", "100,200", "--focus", "0", "--operator", "Bo"]) == 0, \
        capsys.readouterr()
    reports = sorted(os.listdir(tmp_path / "calibration-reports"))
    assert [f.split("-", 2)[2] for f in reports] == [
        "camera-sweep-decode-rate.png", "camera-sweep.json", "camera-sweep.md"]
    assert "[camera]" in cal.read_text() and f"report calibration-reports/{reports[2]}" in \
        capsys.readouterr().out
    assert cv2.imread(str(tmp_path / "calibration-reports" / reports[0])) is not None
    assert frame is not None


def test_sweep_refuses_a_folder_and_a_calibration_without_codebook(tmp_path, capsys):
    import cv2
    from drivers.camera.synth import default_zones
    z = default_zones()
    (tmp_path / "frames").mkdir()
    cv2.imwrite(str(tmp_path / "frames" / "1.png"), np.zeros((10, 10, 3), np.uint8))
    cal = tmp_path / "c.toml"
    cal.write_text(zones_toml(z) + '[codebook]\n"X" = "As"\n')
    before = cal.read_text()
    assert main(["camera", "sweep", "--source", str(tmp_path / "frames"), "--calibration",
                 str(cal), "--report-dir", str(tmp_path / "r")]) == 2
    assert "a folder of images has no exposure or focus" in capsys.readouterr().err
    cal.write_text(zones_toml(z))
    assert main(["camera", "sweep", "--source", str(tmp_path / "frames"), "--calibration",
                 str(cal)]) == 2
    assert "no [codebook] table" in capsys.readouterr().err
    assert before != cal.read_text() and not (tmp_path / "r").exists()


def test_recognition_without_templates_is_one_line(tmp_path, capsys):
    (tmp_path / "l.csv").write_text("image,rank,suit\n")
    for argv in (["camera", "accuracy", "--templates", str(tmp_path / "none"), "--labels",
                  str(tmp_path / "l.csv")],
                 ["camera", "recognize", "--templates", str(tmp_path / "none"), "x.png"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "no templates there" in err and "Traceback" not in err
