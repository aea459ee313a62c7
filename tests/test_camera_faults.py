"""The camera's faults as a technician meets them (issue 17's cold trial): a reader that raises is
a fault the driver reports (not a dead thread behind "connected"), a junk file in a folder of
frames is named and skipped, damaged templates and zones that cannot hold the templates' card are
said before the table runs."""
import queue
import threading

import cv2
import numpy as np

from drivers.camera.driver import CameraDriver, Zones
from drivers.camera.video import GeneratorSource, open_source
from drivers.events import DeviceState

ZONES = {"seat_1": [[10, 10], [100, 10], [100, 120], [10, 120]]}


class Crashing:
    """A decoder that raises on its first frame only, and says when it was called."""

    def __init__(self):
        self.calls = 0
        self.called = [threading.Event(), threading.Event()]

    def decode(self, gray):
        self.calls += 1
        self.called[min(self.calls, 2) - 1].set()
        if self.calls == 1:
            raise RuntimeError("split 0: division by zero")
        return []


def test_a_reader_that_raises_is_a_fault_and_the_camera_goes_on():
    dec = Crashing()

    def frames():       # each frame only once the one before was read (no frame dropped)
        yield np.full((160, 200, 3), 200, np.uint8)
        dec.called[0].wait(10)
        yield np.full((160, 200, 3), 60, np.uint8)      # changed: read again
        dec.called[1].wait(10)
    events = queue.Queue()
    d = CameraDriver(GeneratorSource(frames()), Zones(ZONES), "barcode", decoder=dec, codebook={})
    d.start(events.put)
    got = []
    while not got or got[-1].state != "disconnected":
        got.append(events.get(timeout=10))
    d.close()
    assert [e.state for e in got] == ["connected", "fault", "ok", "disconnected"], got
    assert all(isinstance(e, DeviceState) and e.device == "camera" for e in got)
    assert "RuntimeError: split 0: division by zero" in got[1].detail["reason"]


def test_a_junk_file_in_a_folder_of_frames_is_named_and_skipped(tmp_path):
    for i in range(5):
        cv2.imwrite(str(tmp_path / f"{i:02d}.png"), np.full((10, 10, 3), i, np.uint8))
    (tmp_path / "02.png").write_text("notes, not a frame")
    s = open_source(str(tmp_path))
    got = []
    while True:
        ok, img = s.read()
        if not ok:
            break
        got.append(int(img[0, 0, 0]))
    assert got == [0, 1, 3, 4]          # the frames after it are read
    assert "02.png" in s.end_reason and "not images" in s.end_reason
    events = queue.Queue()
    d = CameraDriver(open_source(str(tmp_path)), Zones(ZONES), "barcode", decoder=Crashing(),
                     codebook={})
    d.decoder.calls = 5                 # no crash: only the end matters here
    d.start(events.put)
    while (e := events.get(timeout=10)).state != "disconnected":
        pass
    d.close()
    assert "02.png" in e.detail["reason"], e


# -- templates: deck.json and the files beside it --------------------------------------------------

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402

from calibration.cli import main  # noqa: E402
from drivers.camera.visual import Templates  # noqa: E402


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Templates of a real deck design (cardsJS) through the camera model, saved."""
    from drivers.camera import camera_model as cm
    d = tmp_path_factory.mktemp("templates") / "t"
    cm.reference_templates("cardsjs", seed=0, size=(480, 320)).save(str(d))
    return d


def copy_of(saved, tmp_path):
    shutil.copytree(saved, tmp_path / "t")
    return tmp_path / "t"


@pytest.mark.parametrize("edit, text", [
    (lambda m: [], "expected an object with format, card_size"),
    (lambda m: {**m, "card_size": [float("nan"), 170]}, "card_size: expected 2 numbers, got [NaN, 170]"),
    (lambda m: {**m, "card_size": "125x175"}, "card_size: expected 2 numbers"),
    (lambda m: {**m, "card_size": [1e9, 170]}, "card_size: expected a card's width and height"),
    (lambda m: {**m, "split": 0}, "split: expected a whole number between the index box's top"),
    (lambda m: {**m, "box": [3, 9, 35]}, "box: expected 4 whole numbers"),
    (lambda m: {**m, "box": [30, 9, 3, 88]}, "box: expected x0 < x1 <= 240"),
])
def test_a_deck_json_edited_by_hand_is_refused_naming_its_key(saved, tmp_path, capsys, edit, text):
    t = copy_of(saved, tmp_path)
    meta = json.loads((t / "deck.json").read_text())
    (t / "deck.json").write_text(json.dumps(edit(meta)))
    with pytest.raises(ValueError, match="deck.json: ") as e:
        Templates.load(str(t))
    assert text in str(e.value)
    cv2.imwrite(str(tmp_path / "p.png"), np.full((300, 400, 3), 90, np.uint8))
    assert main(["camera", "recognize", "--templates", str(t), str(tmp_path / "p.png")]) == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err


def test_a_cut_deck_json_is_damaged_and_a_resized_index_is_named(saved, tmp_path):
    t = copy_of(saved, tmp_path)
    text = (t / "deck.json").read_text()
    (t / "deck.json").write_text(text[:len(text) // 2])
    with pytest.raises(ValueError, match="deck.json: damaged"):
        Templates.load(str(t))
    (t / "deck.json").write_text(text)
    g = cv2.imread(str(t / "index_Qd.png"))
    cv2.imwrite(str(t / "index_Qd.png"), cv2.resize(g, None, fx=1.5, fy=1.5))
    with pytest.raises(ValueError, match="index_Qd.png is .* pixels, the index box"):
        Templates.load(str(t))
