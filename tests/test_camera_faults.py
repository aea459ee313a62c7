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


def test_a_folder_source_names_the_files_it_does_not_read(tmp_path, caplog):
    """The cold trial: notes.txt and a .tif in a folder of frames were passed over unsaid."""
    cv2.imwrite(str(tmp_path / "01.png"), np.full((10, 10, 3), 1, np.uint8))
    (tmp_path / "notes.txt").write_text("exposure 150")
    cv2.imwrite(str(tmp_path / "02.tif"), np.full((10, 10, 3), 2, np.uint8))
    with caplog.at_level("WARNING"):
        s = open_source(str(tmp_path))
    assert "not read (not .png, .jpg, .jpeg, .bmp): 02.tif, notes.txt" in caplog.text
    assert s.read()[0] and not s.read()[0]
    assert s.end_reason == ("the video source ended (not read, not .png, .jpg, .jpeg, .bmp: "
                            "02.tif, notes.txt)")
    (tmp_path / "01.png").unlink()
    from drivers.camera.video import VideoError
    with pytest.raises(VideoError, match=r"no images \(only 02.tif, notes.txt: images are .png"):
        open_source(str(tmp_path))


# -- templates: deck.json and the files beside it --------------------------------------------------

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402

from calibration.cli import main  # noqa: E402
from drivers.camera.template_files import write_manifest  # noqa: E402
from drivers.camera.templates import Templates  # noqa: E402


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
    (lambda m: {**m, "extra": 1}, "unknown key 'extra'"),
    (lambda m: {**m, "print": {**m["print"], "shift_tol": -1}}, "no valid deck fingerprint ('print')"),
    (lambda m: {**m, "print": {**m["print"], "rounding": "4"}}, "no valid deck fingerprint ('print')"),
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


# -- check-config: the templates against the zones, the calibration's [camera] values ----------------

def table_config(tmp_path, templates, zones, camera=""):
    """A table with a visual camera: its config, and the calibration with `zones` and [camera]."""
    from dealer_station.config import read_config  # noqa: F401 (what check-config and run call)
    cal = tmp_path / "cal.toml"
    cal.write_text("[zones]\n" + "".join(f"{n} = {p}\n" for n, p in zones.items()) + camera)
    p = tmp_path / "table.toml"
    p.write_text(f'[table]\nid = "t1"\nprofile = "luxury21"\ncalibration = "{cal}"\n'
                 f'[shoe]\nprotocol = "none"\n[metrics]\nport = 0\n'
                 f'[paths]\njournal = "{tmp_path}/journal.sqlite"\n'
                 f'[camera]\nenabled = true\nmode = "visual"\nsource = "{tmp_path}"\n'
                 f'templates = "{templates}"\n')
    return p


def config_errors(path):
    from dealer_station.config import ConfigError, read_config
    try:
        read_config(path)
    except ConfigError as e:
        return e.errors
    return []


SEATS = {"seat_1": [[100, 300], [256, 300], [256, 500], [100, 500]],
         "seat_2": [[300, 300], [456, 300], [456, 500], [300, 500]]}


def test_templates_whose_card_fits_no_zone_are_an_error(saved, tmp_path):
    """The cold trial: templates from 296-pixel webcam photos, a table camera whose zones are
    156 x 200 (125-pixel cards): check-config said ok, and the daemon read nothing."""
    assert config_errors(table_config(tmp_path, saved, SEATS)) == []        # 123-pixel cards fit
    t = copy_of(saved, tmp_path)
    meta = json.loads((t / "deck.json").read_text())
    (t / "deck.json").write_text(json.dumps({**meta, "card_size": [296, 415]}))
    errs = config_errors(table_config(tmp_path, t, SEATS))
    assert len(errs) == 1 and "deck.json does not match manifest.sha256" in errs[0], errs
    write_manifest(str(t))          # as templates from another camera height would be
    errs = config_errors(table_config(tmp_path, t, SEATS))
    assert len(errs) == 1 and errs[0].startswith(
        "camera.templates: the templates' card (296 x 415 pixels) fits in no zone (the largest "
        "is 156 x 200)"), errs
    with pytest.raises(ValueError, match="fits in no zone"):        # the driver, at start
        from drivers.camera.recognize import VisualRecognizer
        CameraDriver(GeneratorSource([]), Zones(SEATS), "visual",
                     recognizer=VisualRecognizer(Templates.load(str(t))))


@pytest.mark.parametrize("camera, text", [
    ("width = 400\nheight = 720\n", "zones.seat_2: a point lies outside the 400x720 frame"),
    ("exposure = -5\n", "camera.exposure: -5: expected 1 to 100000"),
    ("fps = 0\n", "camera.fps: 0: expected 1 to 240"),
    ('width = "1280"\n', "camera.width: '1280': expected 16 to 8192"),
    ("zoom = 2\n", "camera.zoom: unknown camera setting"),
])
def test_the_calibrations_camera_values_are_checked(saved, tmp_path, camera, text):
    errs = config_errors(table_config(tmp_path, saved, SEATS, "[camera]\n" + camera))
    assert len(errs) == 1 and text in errs[0] and errs[0].startswith("table.calibration: "), errs


@pytest.mark.parametrize("zones, text", [
    ({"dealer": '"everywhere"'}, "zones.dealer: a polygon is a list of at least three [x, y]"),
    ({"seat_1": "[[150, 20, 1], [300, 20, 1], [300, 200, 1]]"}, "zones.seat_1: a polygon"),
    ({"seat_1": '[[100, 300], [256, "x"], [256, 500]]'}, 'not [256, "x"]'),
    ({"seat_1": "[[true, 300], [256, 300], [256, 500]]"}, "not [true, 300]"),
    ({"seat_1": "[[100, 300], [256, 500], [256, 300], [100, 500]]"}, "zones.seat_1: its sides cross"),
    # a review's (review31): a figure eight touching at a corner, a spike, a corner twice, a line
    ({"seat_1": "[[100, 300], [200, 400], [300, 300], [300, 500], [200, 400], [100, 500]]"},
     "zones.seat_1: its sides cross or touch"),
    ({"seat_1": "[[100, 300], [256, 300], [400, 300], [300, 300], [256, 500]]"}, "its sides cross or touch"),
    ({"seat_1": "[[100, 300], [256, 300], [256, 300], [256, 500]]"}, "each once"),
    ({"seat_1": "[[100, 300], [200, 300], [300, 300]]"}, "encloses nothing"),
    ({"seat_1": "[[100, 300], [256, 300], [256, 500], [100, 300], [100, 300]]"}, "each once"),
    ({"seat_1": "[[100, 300], [256, 300], [256, 500], [100, 500]]",
      '"seat 9"': "[[300, 300], [456, 300], [456, 500]]"},
     "zones.seat 9: not a place of this table (blackjack, luxury21: seat_1, seat_2, seat_3, "
     "seat_4, seat_5, seat_6, seat_7, dealer)"),
])
def test_a_zone_the_table_cannot_use_is_named(saved, tmp_path, zones, text):
    """The cold trial (trial31): "everywhere", [x, y, z] and [650, "x"] were numpy's and int()'s
    words without the key; [true, 20], a bow tie and a zone named "seat 9" passed (every card the
    camera saw in a misnamed zone would pause the table as misplaced)."""
    cal = tmp_path / "cal.toml"
    p = table_config(tmp_path, saved, {})
    cal.write_text("[zones]\n" + "".join(f"{n} = {v}\n" for n, v in zones.items()))
    errs = config_errors(p)
    assert len(errs) == 1 and errs[0].startswith("table.calibration: ") and text in errs[0], errs


def test_every_zone_the_table_cannot_use_is_named_each_on_one_line(saved, tmp_path):
    """The cold trial: only the first misnamed zone was named (check-config promises every
    error), and a name was printed raw: "seat_1\\nx" split the error over two lines, and
    "seat_1" with a zero-width space read as the right name refused."""
    cal = tmp_path / "cal.toml"
    p = table_config(tmp_path, saved, {})
    cal.write_text('[zones]\nseat_01 = [[100, 300], [256, 300], [256, 500]]\n'
                   '"seat_1\\nx" = [[300, 300], [456, 300], [456, 500]]\n'
                   '"seat_1\\u200b" = [[500, 300], [656, 300], [656, 500]]\n')
    errs = config_errors(p)
    assert len(errs) == 3 and all("\n" not in e for e in errs), errs
    for shown in ("zones.seat_01: ", "zones.'seat_1\\nx': ", "zones.'seat_1\\u200b': "):
        assert any(shown + "not a place of this table" in e for e in errs), (shown, errs)


POINT = st.one_of(st.integers(-5, 1300), st.floats(allow_nan=True), st.booleans(), st.text(max_size=2),
                  st.none())


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(st.one_of(st.lists(POINT, max_size=3), POINT), max_size=6),
                 st.lists(st.tuples(st.integers(0, 1279), st.integers(0, 719)), max_size=7), POINT))
def test_any_zone_value_is_a_simple_polygon_or_an_error_naming_it(value):
    """Whatever a calibration file holds for a zone: a polygon of three or more points whose sides
    do not cross, or a ValueError naming zones.<name>; never another exception."""
    try:
        z = Zones({"seat_3": value}, frame_size=(1280, 720))
    except ValueError as e:
        assert str(e).startswith("zones.seat_3: "), e
        return
    p = z.polygons["seat_3"]
    assert len(p) >= 3 and abs(cv2.contourArea(np.float32(p))) >= 1
    assert _simple(p.tolist()), p


def _simple(p):
    """An independent oracle: no two sides share a point but neighbours at their common corner
    (each pair solved exactly with fractions; a shared point of neighbours elsewhere is a fold)."""
    from fractions import Fraction as F
    n = len(p)
    sides = [(p[i], p[(i + 1) % n]) for i in range(n)]

    def shared(s, t):
        (x1, y1), (x2, y2) = s
        (x3, y3), (x4, y4) = t
        den = (x2 - x1) * (y4 - y3) - (y2 - y1) * (x4 - x3)
        if den:
            u = F((x3 - x1) * (y4 - y3) - (y3 - y1) * (x4 - x3), den)
            v = F((x3 - x1) * (y2 - y1) - (y3 - y1) * (x2 - x1), den)
            return [(x1 + u * (x2 - x1), y1 + u * (y2 - y1))] if 0 <= u <= 1 and 0 <= v <= 1 else []
        if (x3 - x1) * (y2 - y1) - (y3 - y1) * (x2 - x1):
            return []                               # parallel, apart
        pts = [q for q in (s[0], s[1], t[0], t[1])  # on one line: the ends inside the other
               if min(x1, x2) <= q[0] <= max(x1, x2) and min(y1, y2) <= q[1] <= max(y1, y2)
               and min(x3, x4) <= q[0] <= max(x3, x4) and min(y3, y4) <= q[1] <= max(y3, y4)]
        return pts + [(F(pts[0][0] + q[0], 2), F(pts[0][1] + q[1], 2)) for q in pts[1:]]
    for i in range(n):
        for j in range(i + 1, n):
            common = [tuple(sides[i][1])] if j == i + 1 else [tuple(sides[j][1])] if (i, j) == (0, n - 1) else []
            if any(tuple(q) not in common for q in shared(sides[i], sides[j])):
                return False
    return True


# -- accuracy and recognize say what the daemon would read ----------------------------------------

def test_accuracy_says_when_it_read_cards_the_daemon_would_not(saved, tmp_path, capsys):
    """Templates of 123-pixel cards, photos of 300-pixel cards (another camera height): the
    tool's fallback reads them, the daemon (cards of the templates' size only) would not."""
    from drivers.camera import camera_model as cm
    rng = np.random.default_rng(4)
    rows = ["image,rank,suit"]
    for c in ("7h", "Ks"):
        img, _ = cm.webcam_photo("cardsjs", c, "grey", rng, "clean")
        cv2.imwrite(str(tmp_path / f"{c}.png"), img)
        rows.append(f"{c}.png,{c[0]},{c[1]}")
    (tmp_path / "l.csv").write_text("\n".join(rows) + "\n")
    capsys.readouterr()
    rc = main(["camera", "accuracy", "--templates", str(saved), "--labels", str(tmp_path / "l.csv"),
               "--json"])
    out, err = capsys.readouterr()
    r = json.loads(out)
    assert r["fallback"] == 2 and r["daemon"] == 0 and rc == 1, r
    assert "warning: 2 of 2 photo(s) show no card of the templates' size (123 x 173 pixels)" in err
    assert "the daemon does not do" in err
    # the photos named (trial31: the warning said how many, not which)
    assert f"{tmp_path / '7h.png'}, {tmp_path / 'Ks.png'}: read here" in err, err
    assert r["fallback_photos"] == [str(tmp_path / "7h.png"), str(tmp_path / "Ks.png")], r
    assert main(["camera", "recognize", "--templates", str(saved), str(tmp_path / "7h.png")]) == 0
    err = capsys.readouterr().err
    assert "warning: 1 of 1 photo(s) show no card of the templates' size" in err
    assert f"pixels): {tmp_path / '7h.png'}: read here" in err, err


# -- templates written all or nothing ---------------------------------------------------------------

WRITE = """
import resource, signal, sys
from calibration import camera_tools as ct
from calibration.shoe_tools import ToolError
from drivers.camera.templates import Templates
t = Templates.load(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)        # a file past the limit: EFBIG, as a full disk
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    ct.write_templates(t, sys.argv[2])
    print("written")
except ToolError as e:
    print(e)
"""


def test_templates_written_on_a_full_disk_leave_the_old_ones(saved, tmp_path):
    import subprocess
    import sys
    out = copy_of(saved, tmp_path)
    meta = json.loads((out / "deck.json").read_text())
    (out / "deck.json").write_text(json.dumps({**meta, "card_size": [124.5, 174.5]}))   # the old set
    before = {f: (out / f).read_bytes() for f in os.listdir(out)}

    def write(limit):
        r = subprocess.run([sys.executable, "-c", WRITE, str(saved), str(out), str(limit)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stderr == "", r.stderr
        return r.stdout.strip()
    said = write(20_000)               # a face PNG is larger: it cannot be written whole
    assert said.startswith(f"--out {out}: the templates could not be written (") and \
        "Nothing was changed there" in said, said
    assert {f: (out / f).read_bytes() for f in os.listdir(out)} == before
    assert sorted(os.listdir(tmp_path)) == ["t"]          # no half-written folder left beside it
    assert write(10_000_000) == "written"
    assert Templates.load(str(out)).card_size == pytest.approx(
        Templates.load(str(saved)).card_size) and sorted(os.listdir(tmp_path)) == ["t"]


# -- the camera commands' one-line errors ----------------------------------------------------------

def one_line(argv, capsys, text):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert text in err and "Traceback" not in err, err
    return err


def test_zones_beyond_the_image_and_an_out_with_no_extension_are_one_line(tmp_path, capsys):
    cal = tmp_path / "c.toml"
    cal.write_text("[zones]\na = [[10, 10], [1300, 10], [10, 100]]\nb = [[10, 10], [100, 10], [10, 100]]\n")
    cv2.imwrite(str(tmp_path / "table.png"), np.full((720, 1280, 3), 90, np.uint8))
    zones = ["camera", "zones", "--image", str(tmp_path / "table.png"), "--calibration", str(cal)]
    one_line(zones + ["--out", str(tmp_path / "z.png")], capsys,
             f"{cal}: zones.a: a point lies outside the 1280x720 frame")
    cal.write_text("[zones]\nb = [[10, 10], [100, 10], [10, 100]]\n")
    one_line(zones + ["--out", str(tmp_path / "zones")], capsys,
             f"--out {tmp_path / 'zones'}: not an image file name (end it in .png)")
    assert main(zones + ["--out", str(tmp_path / "z.png")]) == 0


def test_a_short_label_row_is_named_and_a_refused_capture_leaves_no_folder(tmp_path, capsys):
    cv2.imwrite(str(tmp_path / "a.png"), np.full((300, 400, 3), 90, np.uint8))
    (tmp_path / "short_row.csv").write_text("image,rank,suit\na.png,A,s\na.png,K\n")
    tmpl = ["camera", "templates", "--out", str(tmp_path / "new"), "--labels"]
    one_line(tmpl + [str(tmp_path / "short_row.csv")], capsys,
             "short_row.csv:3: expected image,rank,suit naming a card")
    (tmp_path / "l.csv").write_text("image,rank,suit\na.png,A,s\n")
    one_line(tmpl + [str(tmp_path / "l.csv")], capsys, "expected one card in the photo, found 0")
    assert not (tmp_path / "new").exists()


def big_tiff(path, w, h):
    """A small TIFF whose header says w x h (its ImageWidth and ImageLength tags rewritten)."""
    import struct
    data = bytearray(cv2.imencode(".tiff", np.zeros((4, 4, 3), np.uint8))[1].tobytes())
    assert data[:4] == b"II*\x00"
    ifd = struct.unpack_from("<I", data, 4)[0]
    for i in range(struct.unpack_from("<H", data, ifd)[0]):
        at = ifd + 2 + 12 * i
        tag, kind = struct.unpack_from("<HH", data, at)
        if tag in (256, 257):
            struct.pack_into("<HHII", data, at, tag, 4, 1, w if tag == 256 else h)
    path.write_bytes(bytes(data))


def test_a_huge_tiff_is_refused_before_it_is_decoded(saved, tmp_path):
    """40 megapixels at most in any format, from the header: the PNG/JPEG parser does not know
    TIFF or WebP, OpenCV's own limit does (set before cv2 loads)."""
    import subprocess
    import sys
    big_tiff(tmp_path / "huge.tiff", 8000, 8000)
    r = subprocess.run([sys.executable, "-m", "calibration.cli", "camera", "recognize", "--templates",
                        str(saved), str(tmp_path / "huge.tiff")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stderr == (f"shoe-calibrate: {tmp_path / 'huge.tiff'}: larger "
                                              f"than any camera's photo (over 40 megapixels), or "
                                              f"its header is damaged\n"), r.stderr


# -- the messages a technician reads ----------------------------------------------------------------

def reference_photos(blank=None, size=(480, 320)):
    """One camera photo per card of a real deck design (as camera_model.reference_templates
    takes them), the card `blank` printed without ink (a blank card, a white sheet)."""
    from controller.cards import CARDS
    from drivers.camera import camera_model as cm
    from drivers.camera.find import find_cards
    rng = np.random.default_rng(0)
    out = []
    for i, c in enumerate(CARDS):
        frame = cm.surface("green_felt", *size, rng)
        face = cm.load_deck("cardsjs")[c].copy()
        if c == blank:
            face[..., :3] = 245
        cm.lay(frame, face, cm.pose(rng, "clean", (size[0] / 2, size[1] / 2), 125,
                                    face.shape[0] / face.shape[1]))
        frame = cm.camera(frame, rng)
        out.append((frame, find_cards(frame)[0], c))
    return out


def test_a_blank_reference_card_is_no_index_found_and_mixed_heights_are_refused(tmp_path):
    from calibration import camera_tools as ct
    from calibration.shoe_tools import ToolError
    from drivers.camera.templates import BadReference
    samples = reference_photos(blank="Qd")
    with pytest.raises(BadReference, match=r"no index found in the corner of the reference images "
                                           r"of Qd \(a blank card"):
        Templates.capture(samples)
    img, q, c = samples[5]
    samples[5] = (img, (q - q.mean(axis=0)) * 2.4 + q.mean(axis=0), c)   # from nearer the card
    with pytest.raises(ToolError, match=rf"the reference photos of {c} \(\d+\) show the card at "
                                        r"another size than the others \(about 12\d pixels wide\)"):
        ct._save_templates(samples, str(tmp_path / "t"))


def test_label_headers_in_any_case_and_a_semicolon_file(tmp_path, capsys):
    from calibration import camera_tools as ct
    (tmp_path / "l.csv").write_text("Image, Rank ,SUIT\na.png,A,s\n")
    assert ct.label_rows(str(tmp_path / "l.csv")) == [{"image": "a.png", "rank": "A", "suit": "s"}]
    (tmp_path / "l.csv").write_text("image;rank;suit\na.png;A;s\n")
    one_line(["camera", "templates", "--out", str(tmp_path / "t"), "--labels", str(tmp_path / "l.csv")],
             capsys, "separated by semicolons; the separator is a comma")


def test_the_live_capture_checks_its_order_its_calibration_and_its_inputs(tmp_path, capsys):
    cal = tmp_path / "c.toml"
    frames = tmp_path / "frames"
    frames.mkdir()
    cv2.imwrite(str(frames / "0.png"), np.full((320, 480, 3), 90, np.uint8))
    live = ["camera", "templates", "--source", str(frames), "--out", str(tmp_path / "t"),
            "--calibration", str(cal)]
    one_line(live, capsys, f"{cal}: no such calibration file")
    cal.write_text("[zones]\nseat_1 = [[10, 10], [200, 10], [200, 300], [10, 300]]\n")
    one_line(live, capsys, "no zone 'seat_4' to capture in (its zones: seat_1; --zone names one)")
    live += ["--zone", "seat_1", "--order", str(tmp_path / "order.txt")]
    from controller.cards import CARDS
    for text, said in ((" ".join(list(CARDS[:-1]) + ["Xx"]), "'Xx' is not a card"),
                       (",".join(list(CARDS[:-1]) + ["Xx"]), "'Xx' is not a card"),  # a spreadsheet's
                       (" ".join(list(CARDS[:-1]) + ["as"]), "As is listed twice"),
                       (" ".join(CARDS[:-1]), "1 card(s) missing (Kc)")):
        (tmp_path / "order.txt").write_text(text)
        one_line(live, capsys, f"--order {tmp_path / 'order.txt'}: {said}")
    (tmp_path / "l.csv").write_text("image,rank,suit\na.png,A,s\n")
    one_line(live + ["--labels", str(tmp_path / "l.csv")], capsys, "not both")
    assert not (tmp_path / "t").exists()


def test_recognize_goes_on_past_a_missing_photo(saved, tmp_path, capsys):
    cv2.imwrite(str(tmp_path / "a.png"), np.full((300, 400, 3), 90, np.uint8))
    rc = main(["camera", "recognize", "--templates", str(saved), str(tmp_path / "gone.png"),
               str(tmp_path / "a.png")])
    out, err = capsys.readouterr()
    assert rc == 1 and f"{tmp_path / 'gone.png'}: no such file" in err
    assert f"{tmp_path / 'a.png'}: no card found" in out


def test_recognize_goes_on_past_a_photo_this_user_may_not_read(saved, tmp_path):
    """A cold trial: photos copied by root, the tool run as the table's user. A photo it may not
    open was a PermissionError traceback that stopped the batch; it is named and the rest read.
    Run as root, the tool is started without root's right to read any file (setpriv)."""
    import subprocess
    import sys
    cv2.imwrite(str(tmp_path / "a.png"), np.full((300, 400, 3), 90, np.uint8))
    shutil.copy(tmp_path / "a.png", tmp_path / "b.png")
    os.chmod(tmp_path / "b.png", 0)
    tool = [os.path.join(os.path.dirname(sys.executable), "shoe-calibrate")]
    if os.geteuid() == 0:
        tool = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"] + tool
    p = subprocess.run(tool + ["camera", "recognize", "--templates", str(saved), str(tmp_path / "b.png"),
                               str(tmp_path / "a.png")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"{tmp_path / 'b.png'}: cannot be read (Permission denied)" in p.stderr
    assert f"{tmp_path / 'a.png'}: no card found" in p.stdout


def test_zones_beyond_the_frames_the_camera_sends_are_a_fault():
    """The calibration's zones drawn at 1280 x 720, the camera sending 640 x 480 (a setting it
    could not apply): said at the first frame, not read as an empty table."""
    events = queue.Queue()
    zones = {**ZONES, "seat_2": [[300, 10], [700, 10], [700, 120], [300, 120]]}
    d = CameraDriver(GeneratorSource([np.full((480, 640, 3), 90, np.uint8)]), Zones(zones),
                     "barcode", decoder=Crashing(), codebook={})
    d.decoder.calls = 5
    d.start(events.put)
    got = []
    while not got or got[-1].state != "disconnected":
        got.append(events.get(timeout=10))
    d.close()
    assert [e.state for e in got] == ["connected", "fault", "disconnected"], got
    assert got[1].detail["reason"] == "zones.seat_2: a point lies outside the 640x480 frame"


def test_a_readers_recovery_does_not_clear_the_zones_fault():
    """A cold trial: zones beyond the frame and a reader that raised, then read again: the camera
    said "ok" though the zones still lay outside the frame. The zones' fault is said again."""
    dec = Crashing()

    def frames():
        yield np.full((480, 640, 3), 200, np.uint8)
        dec.called[0].wait(10)
        yield np.full((480, 640, 3), 60, np.uint8)
        dec.called[1].wait(10)
    events = queue.Queue()
    zones = {**ZONES, "seat_2": [[300, 10], [700, 10], [700, 120], [300, 120]]}
    d = CameraDriver(GeneratorSource(frames()), Zones(zones), "barcode", decoder=dec, codebook={})
    d.start(events.put)
    got = []
    while not got or got[-1].state != "disconnected":
        got.append(events.get(timeout=10))
    d.close()
    assert [e.state for e in got] == ["connected", "fault", "fault", "fault", "disconnected"], got
    assert "outside the 640x480 frame" in got[1].detail["reason"]
    assert "the card reader failed" in got[2].detail["reason"]
    assert got[3].detail["reason"] == got[1].detail["reason"]


def test_templates_can_be_captured_again_into_the_folder_the_tool_wrote(tmp_path):
    """A cold trial: the second capture into the same --out was refused for the contact sheet the
    first one wrote ("holds other files than templates (contact.png)")."""
    import pytest
    from calibration import camera_tools as ct
    from calibration.shoe_tools import ToolError
    out = tmp_path / "templates"
    out.mkdir()
    for name in ("deck.json", "contact.png", "index_As.png", "face_As.png"):
        (out / name).write_bytes(b"x")
    ct.out_folder(str(out))
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ToolError, match=r"holds other files than templates \(notes.txt\)"):
        ct.out_folder(str(out))


# -- a hostile technician's templates folder: one line naming the file, nothing changed --------------

def _cut(t):
    data = (t / "index_7h.png").read_bytes()
    (t / "index_7h.png").write_bytes(data[:len(data) // 2])


def _cut_signed(t):
    _cut(t)
    write_manifest(str(t))


def _manifest_line(t):
    m = (t / "manifest.sha256").read_text().splitlines()
    (t / "manifest.sha256").write_text("\n".join(m[:5] + ["# edited"] + m[5:]) + "\n")


def _manifest_sum(t):
    m = (t / "manifest.sha256").read_text()
    i = m.index("  face_2c.png") - 1
    (t / "manifest.sha256").write_text(m[:i] + ("0" if m[i] != "0" else "1") + m[i + 1:])


def _huge(t):
    with open(t / "face_Ad.png", "wb") as f:      # sparse: 64 MB that take no disk
        f.truncate(64 << 20)


def _loop(t):
    (t / "index_9c.png").unlink()
    os.symlink("index_9c.png", t / "index_9c.png")


def _fifo(t):
    (t / "index_2s.png").unlink()
    os.mkfifo(t / "index_2s.png")


def _dir(t):
    (t / "index_Qs.png").unlink()
    (t / "index_Qs.png").mkdir()


def _extra(t):
    with open(t / "manifest.sha256", "a") as f:
        f.write("0" * 64 + "  notes-from-the-technician.txt\n")


def _deleted(t):
    """contact.png deleted and its line taken out of the manifest."""
    (t / "contact.png").unlink()
    m = (t / "manifest.sha256").read_text().splitlines(keepends=True)
    (t / "manifest.sha256").write_text("".join(x for x in m if "contact.png" not in x))


def _other_deck_json(t):
    """deck.json of another set (its index box 4 pixels wider), the manifest not written again."""
    meta = json.loads((t / "deck.json").read_text())
    meta["box"][2] += 4
    (t / "deck.json").write_text(json.dumps(meta))


def _renamed_8(t):
    for k in ("index", "face"):
        a, b = t / f"{k}_8s.png", t / f"{k}_9s.png"
        data = a.read_bytes()
        a.write_bytes(b.read_bytes())
        b.write_bytes(data)
    write_manifest(str(t))


def _suits_renamed(pair):
    """Every card of one suit renamed to the other suit of its colour (index and face), re-signed:
    each card still agrees with its neighbours (issue 17's cold trial: it loaded and misread)."""
    def harm(t):
        a, b = pair
        for k in ("index", "face"):
            for r in "A23456789TJQK":
                pa, pb = t / f"{k}_{r}{a}.png", t / f"{k}_{r}{b}.png"
                data = pa.read_bytes()
                pa.write_bytes(pb.read_bytes())
                pb.write_bytes(data)
        write_manifest(str(t))
    return harm


def _courts_in_two_suits(t):
    for u in "sh":
        for k in ("index", "face"):
            a, b = t / f"{k}_Q{u}.png", t / f"{k}_K{u}.png"
            data = a.read_bytes()
            a.write_bytes(b.read_bytes())
            b.write_bytes(data)
    write_manifest(str(t))


def _bomb(t):
    """A PNG header stating 100,000 x 100,000 pixels, the manifest written again to match."""
    import struct
    import zlib
    ihdr = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    png = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr
           + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr)))
    (t / "face_3d.png").write_bytes(png)
    write_manifest(str(t))


@pytest.mark.parametrize("harm, text", [
    (_cut, "index_7h.png does not match manifest.sha256 (swapped, edited or cut short by hand?)"),
    (_cut_signed, "template index_7h.png is damaged (cut short?)"),
    (_manifest_line, "manifest.sha256:6: expected '<sha256>  <template file>'"),
    (_manifest_sum, "face_2c.png does not match manifest.sha256"),
    (lambda t: (t / "manifest.sha256").unlink(), "no manifest.sha256 (removed by hand?)"),
    (_huge, "face_Ad.png: 67108864 bytes, no template file is so large"),
    (_loop, "index_9c.png: Too many levels of symbolic links"),
    (_fifo, "index_2s.png: not a regular file"),
    (_dir, "index_Qs.png: a directory, expected a file"),
    (_extra, "manifest.sha256:107: 'notes-from-the-technician.txt' is not a template file"),
    (_deleted, "missing template contact.png (deleted?)"),
    (_other_deck_json, "deck.json: its index box (3"),
    (_renamed_8, "index_9s.png shows an 8's rank"),
    # the correct Qd, Kd, Qc, Kc not named (their letters are their labels')
    (_courts_in_two_suits, "t: index_Qs.png shows a K's rank, index_Ks.png shows a Q's rank, "
                           "index_Qh.png shows a K's rank, index_Kh.png shows a Q's rank (files"),
    (_suits_renamed("sc"), "the templates labelled spades show clubs' suit glyphs and those labelled "
                           "clubs spades'"),
    (_suits_renamed("hd"), "the templates labelled diamonds show hearts' suit glyphs"),
    (_bomb, "template face_3d.png is damaged (not a 120 x 168 16-bit gray PNG)"),
])
def test_a_templates_folder_harmed_by_hand_is_one_line_naming_the_file(saved, tmp_path, capsys,
                                                                       harm, text):
    t = copy_of(saved, tmp_path)
    harm(t)
    before = {p.name: (p.lstat().st_size, p.lstat().st_mtime_ns) for p in t.iterdir()}
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(ValueError) as e:
        Templates.load(str(t))
    assert len(os.listdir("/proc/self/fd")) == fds          # no file left open
    assert text in str(e.value) and "\n" not in str(e.value), str(e.value)
    one_line(["camera", "recognize", "--templates", str(t), str(tmp_path / "none.png")], capsys, text)
    errs = config_errors(table_config(tmp_path, t, SEATS))
    assert len(errs) == 1 and errs[0].startswith("camera.templates: ") and text in errs[0], errs
    assert {p.name: (p.lstat().st_size, p.lstat().st_mtime_ns) for p in t.iterdir()} == before


def test_an_empty_a_missing_and_a_looping_templates_folder_are_named(tmp_path):
    (tmp_path / "empty").mkdir()
    os.symlink("loop", tmp_path / "loop")
    for folder, text in (("empty", "an empty folder, no templates in it"),
                         ("gone", "no such folder"),
                         ("loop", "Too many levels of symbolic links")):
        errs = config_errors(table_config(tmp_path, tmp_path / folder, SEATS))
        assert errs == [f"camera.templates: {tmp_path / folder}: {text}" + (
            " (capture them with shoe-calibrate camera templates)" if folder == "empty" else
            " (capture the templates with shoe-calibrate camera templates)" if folder == "gone" else "")], errs


# -- templates from another camera height that still fit the zones (issue 17's cold trial) ----------

def test_templates_unlike_the_card_measured_at_the_table_are_an_error(saved, tmp_path, capsys):
    """Templates of 123-pixel cards fit a zone drawn for 296-pixel cards: check-config said ok
    and the daemon read nothing. `camera zones --card` measures the card at the table; check-config
    holds the templates to it, and says so when the calibration has no measurement."""
    from dealer_station.cli import main as ds
    from drivers.camera import camera_model as cm
    rng = np.random.default_rng(3)
    frame = cm.surface(cm.SURFACES[0], 640, 480, rng)
    face = cm.load_deck("cardsjs")["7h"]
    cm.lay(frame, face, cm.pose(rng, "clean", (320, 240), 250, face.shape[0] / face.shape[1]))
    cv2.imwrite(str(tmp_path / "table.png"), cm.camera(frame, rng))
    big = {"seat_1": [[150, 50], [490, 50], [490, 430], [150, 430]]}
    cfg = table_config(tmp_path, saved, big)
    capsys.readouterr()
    assert ds(["check-config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "warning: camera.templates: " in out and "has no [card]" in out and "zones --card" in out
    assert main(["camera", "zones", "--card", "--image", str(tmp_path / "table.png"), "--calibration",
                 str(tmp_path / "cal.toml"), "--out", str(tmp_path / "z.png")]) == 0
    assert "(1 card(s) in the zones), written to [card]" in capsys.readouterr().out
    errs = config_errors(cfg)
    assert len(errs) == 1 and errs[0].startswith("camera.templates: the card measured at the table "
                                                 "(23"), errs
    assert "has 3.6" in errs[0] and "times the area of the templates' card (123 x 173), the camera " \
        "looks for 0.6 to 1.45 times" in errs[0], errs
    zones = "[zones]\n" + "".join(f"{n} = {p}\n" for n, p in big.items())
    (tmp_path / "cal.toml").write_text(zones + "[card]\nwidth = 125\nheight = 175\n")
    assert config_errors(cfg) == []            # the table's card the templates' size
    (tmp_path / "cal.toml").write_text(zones + "[card]\nwidth = -3\nheight = 175\n")
    assert config_errors(cfg) == [f"table.calibration: {tmp_path / 'cal.toml'}: card.width: -3: "
                                  f"expected a whole number of pixels, 16 to 4000"]


def test_a_table_picture_of_another_size_than_the_camera_sends_is_refused(tmp_path, capsys):
    """Cold trial (trial31): a 1000 x 750 photo against [camera] 800 x 600 wrote a [card] of
    361 x 478, and check-config then blamed the templates. Zones and [card] are in the table
    camera's pixels: the picture must be the camera's, and nothing is written when it is not."""
    from drivers.camera import camera_model as cm
    rng = np.random.default_rng(5)
    frame = cm.surface(cm.SURFACES[0], 1000, 750, rng)
    face = cm.load_deck("cardsjs")["7h"]
    cm.lay(frame, face, cm.pose(rng, "clean", (400, 300), 300, face.shape[0] / face.shape[1]))
    cv2.imwrite(str(tmp_path / "big.png"), cm.camera(frame, rng))
    cal = tmp_path / "cal.toml"
    cal.write_text("[camera]\nwidth = 800\nheight = 600\n\n"
                   "[zones]\nseat_1 = [[100, 50], [700, 50], [700, 590], [100, 590]]\n")
    before = cal.read_bytes()
    for card in ([], ["--card"]):
        capsys.readouterr()
        assert main(["camera", "zones", *card, "--image", str(tmp_path / "big.png"), "--calibration",
                     str(cal), "--out", str(tmp_path / "z.png")]) == 2
        assert "big.png: 1000 x 750 pixels, but the camera is set to 800 x 600 ([camera] of " \
            in capsys.readouterr().err
    assert cal.read_bytes() == before and not (tmp_path / "z.png").exists()
    small = cm.camera(frame, rng)[:600, :800]
    cv2.imwrite(str(tmp_path / "ok.png"), small)     # the camera's size: measured and written
    assert main(["camera", "zones", "--card", "--image", str(tmp_path / "ok.png"), "--calibration",
                 str(cal), "--out", str(tmp_path / "z.png")]) == 0
    assert "[card]" in cal.read_text()


@pytest.mark.parametrize("card, text", [
    ("width = 125\nheight = 175\ndepth = 3", "card.depth: unknown key (expected width and height)"),
    ("width = 178\nheight = 127", "card: width 178, height 127: not a card upright"),
    ("width = 127.5\nheight = 178", "card.width: 127.5: expected a whole number of pixels"),
    ("height = 178", "card.width: missing"),
    ("width = 2000\nheight = 3000", "card.height: a 2000 x 3000 card is larger than the 1280 x 720 frame"),
    ("width = 300\nheight = 420", "card: a 300 x 420 card fits in no zone"),
])
def test_a_wrong_card_in_the_calibration_is_named_not_the_templates(saved, tmp_path, card, text):
    """The cold trial: [card] with an unknown key, landscape, a fraction, larger than the frame:
    accepted, or blamed on the templates."""
    cfg = table_config(tmp_path, saved, SEATS)
    zones = "[zones]\n" + "".join(f"{n} = {p}\n" for n, p in SEATS.items())
    (tmp_path / "cal.toml").write_text(zones + "[camera]\nwidth = 1280\nheight = 720\n[card]\n" + card + "\n")
    errs = config_errors(cfg)
    assert len(errs) == 1 and errs[0].startswith(f"table.calibration: {tmp_path / 'cal.toml'}: {text}"), errs


def test_the_accuracy_table_without_deck_or_condition_columns_has_one_row():
    """trial31: labels without deck and condition printed a "-/-" row, the same as "all"."""
    from calibration import camera_accuracy as ca
    g = {"photos": 4, "correct": 3, "unknown": 1, "wrong": 0, "daemon": 3, "fallback": 0}
    r = {**g, "groups": {"-/-": dict(g)}, "refused": {"7h": 1}, "wrong_as": {}, "missing": []}
    rows = ca.accuracy_table(r).splitlines()
    assert not any(x.startswith("-/-") for x in rows) and sum(x.startswith("all ") for x in rows) == 1, rows
    r["groups"] = {"kennard/white": dict(g), "kennard/grey": dict(g)}
    rows = ca.accuracy_table(r).splitlines()
    assert [x.split()[0] for x in rows[1:4]] == ["kennard/grey", "kennard/white", "all"], rows


def test_a_zone_closed_by_repeating_its_first_corner_is_that_zone():
    """review32: a polygon closed by repeating its first corner was accepted before the strict
    simplicity check, and refused after it; it is the same zone."""
    z = Zones({"seat_1": [[100, 300], [256, 300], [256, 500], [100, 500], [100, 300]]})
    assert z.polygons["seat_1"].tolist() == [[100, 300], [256, 300], [256, 500], [100, 500]]
