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
