"""The keyboard-mode (USB HID) scanner driver through its seam: the virtual scanner types
`struct input_event` records into a FIFO behind a stable symlink, the real driver reads them as it
reads /dev/input/event*. Faults: an unplug, a partial code, a wrong layout; a whole shoe."""
import errno
import os
import queue
import struct
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers import evdev_link
from drivers.events import CardRead, CardUnreadable, CutCard, DeviceState
from mqtt_rig import wait_for
from drivers.hid_scanner import HidScannerDriver, HidScannerSession
from drivers.keymap import EV_KEY, KEY_ENTER, KEY_LEFTSHIFT, KEY_TAB, LAYOUTS
from drivers.virtual_hid_scanner import VirtualHidScanner


class Rig:
    def __init__(self, decks=1, seed=3, cut_from_back=None, layout="us", scanner_layout=None,
                 suffix="enter", code_timeout=0.1):
        self.v = VirtualHidScanner(decks=decks, seed=seed, cut_from_back=cut_from_back,
                                   layout=scanner_layout or layout, suffix=suffix)
        self.path = self.v.start()
        self.q = queue.Queue()
        self.driver = HidScannerDriver(self.path, self.v.codebook(), layout, suffix, code_timeout,
                                       cut_payload="CUT")
        self.events = []
        self.driver.start(self.q.put)
        self.wait(lambda e: isinstance(e, DeviceState) and e.state == "connected")

    def wait(self, pred, timeout=5.0, after=0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for e in self.events[after:]:
                if pred(e):
                    return e
            try:
                self.events.append(self.q.get(timeout=0.05))
            except queue.Empty:
                pass
        raise AssertionError(f"no such event within {timeout}s; got {self.events}")

    def reads(self):
        return [e.card for e in self.events if isinstance(e, CardRead)]

    def unreadable(self):
        return [e.detail for e in self.events if isinstance(e, CardUnreadable)]

    def close(self):
        self.driver.close()
        self.v.close()


@pytest.fixture
def rig():
    made = []

    def make(**kw):
        made.append(Rig(**kw))
        return made[-1]
    yield make
    for r in made:
        r.close()


def test_a_whole_shoe_of_two_decks_arrives_in_order_with_the_cut_card(rig):
    r = rig(decks=2, cut_from_back=30)
    dealt = []
    while True:
        c = r.v.deal()
        if c is None:
            break
        dealt.append(c)
    r.wait(lambda e: len(r.reads()) == 104, timeout=20)
    assert r.reads() == dealt
    cards = [e for e in r.events if isinstance(e, (CardRead, CutCard))]
    assert isinstance(cards[104 - 30], CutCard)
    assert r.unreadable() == [] and r.driver.session.counts["reads"] == 104


def test_a_code_without_its_suffix_is_dropped_counted_and_unreadable(rig):
    r = rig(code_timeout=0.08)
    r.v.partial_next()
    r.v.deal()
    e = r.wait(lambda e: isinstance(e, CardUnreadable))
    assert e.detail["reason"] == "scanner code without its suffix key"
    assert e.detail["typed"].startswith("D01-")
    nxt = r.v.deal()                        # the next code reads, nothing of the partial left
    r.wait(lambda e: isinstance(e, CardRead))
    assert r.reads() == [nxt] and r.driver.session.counts["partial"] == 1


def test_a_partial_code_is_dropped_when_the_next_key_comes_late_even_without_a_tick():
    got = []
    s = HidScannerSession(got.append, {"AB": "As"}, code_timeout=0.1)
    for code in (30, 48):                   # a, b (lowercase: not the payload)
        s.key(code, 1, 0.0)
    s.key(KEY_LEFTSHIFT, 1, 1.0)
    for code in (30, 48):
        s.key(code, 1, 1.0)
        s.key(code, 0, 1.0)
    s.key(KEY_LEFTSHIFT, 0, 1.0)
    s.key(KEY_ENTER, 1, 1.01)
    assert [type(e).__name__ for e in got] == ["CardUnreadable", "CardRead"]
    assert got[0].detail["typed"] == "ab" and got[1].card == "As"


def test_a_scanner_typing_another_layout_is_unreadable_and_named(rig):
    r = rig(layout="us", scanner_layout="de")      # D01-As typed on a German keyboard
    card = r.v.deal()
    e = r.wait(lambda e: isinstance(e, CardUnreadable))
    assert "keyboard layout mismatch" in e.detail["reason"] and "'de'" in e.detail["reason"]
    assert e.detail["typed"] == "D01/" + card      # German '-' is the US '/' key
    assert r.reads() == [] and r.driver.session.counts["layout_mismatch"] == 1


def test_the_wrong_layout_fault_on_one_code_only(rig):
    r = rig(layout="de")                           # a German scanner, configured so
    r.v.wrong_layout_next("us")
    r.v.deal()
    good = r.v.deal()
    r.wait(lambda e: isinstance(e, CardRead))
    assert r.reads() == [good] and len(r.unreadable()) == 1


def test_unplugged_mid_code_then_plugged_back_on_a_new_node(rig):
    r = rig()
    first_node = r.v.node
    r.v.unplug_mid_code_next()
    r.v.deal()
    e = r.wait(lambda e: isinstance(e, CardUnreadable))
    assert e.detail["reason"] == "scanner unplugged in the middle of a code"
    r.wait(lambda e: isinstance(e, DeviceState) and e.state == "disconnected")
    fault = r.wait(lambda e: isinstance(e, DeviceState) and e.state == "fault")
    assert "no such device" in fault.detail["reason"]
    n = len(r.events)
    r.v.replug()
    r.wait(lambda e: isinstance(e, DeviceState) and e.state == "connected", after=n)
    assert r.v.node != first_node
    c = r.v.deal()
    r.wait(lambda e: isinstance(e, CardRead))
    assert r.reads() == [c] and r.driver.link.reconnects == 1
    # the refusal is reported once per reason, not on every retry while unplugged
    assert sum(isinstance(e, DeviceState) and e.state == "fault" for e in r.events) == 1


def test_double_fire_is_suppressed_and_tab_suffix(rig):
    r = rig(suffix="tab")
    r.v.double_fire_next()
    a, b = r.v.deal(), r.v.deal()
    r.wait(lambda e: len(r.reads()) == 2)
    assert r.reads() == [a, b] and r.driver.session.counts["double_fires"] == 1


def test_records_split_across_reads_are_reassembled(rig):
    r = rig()
    recs = r.v.keystrokes("D01-" + r.v.cards[0])
    for i in range(0, len(recs), 7):       # 7-byte pieces: records cut anywhere
        r.v.type_raw(recs[i:i + 7])
    r.wait(lambda e: isinstance(e, CardRead))
    assert r.reads() == [r.v.cards[0]]


def test_record_format_is_the_platforms_input_event():
    long_size = struct.calcsize("@l")
    assert evdev_link.RECORD.size == (24 if long_size == 8 else 16)
    assert evdev_link.EVIOCGRAB == (1 << 30) | (4 << 16) | (ord("E") << 8) | 0x90


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@settings(max_examples=60, deadline=None)
@given(text=st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=40))
def test_typed_text_reads_back_through_the_same_layout(layout, text):
    from drivers.keymap import strokes
    keys = strokes(LAYOUTS[layout])
    text = "".join(ch for ch in text if ch in keys).strip()
    if not text:
        return
    got = []
    s = HidScannerSession(got.append, {text: "As"}, layout=layout)
    v = VirtualHidScanner.__new__(VirtualHidScanner)
    v.layout, v.suffix = layout, "enter"
    s.data(v.keystrokes(text), 0.0)
    assert [e.card for e in got] == ["As"], got


def test_caps_lock_altgr_autorepeat_and_ctrl():
    got = []
    s = HidScannerSession(got.append, {"Ab@": "Kd", "ab": "2c"}, layout="de")
    s.key(58, 1, 0)                # Caps Lock on: letters upper, shift inverts it
    s.key(30, 1, 0)
    s.key(30, 2, 0)                # autorepeat: not another 'A'
    s.key(KEY_LEFTSHIFT, 1, 0)
    s.key(48, 1, 0)
    s.key(KEY_LEFTSHIFT, 0, 0)
    s.key(100, 1, 0)               # AltGr+Q is '@' on a German keyboard
    s.key(16, 1, 0)
    s.key(100, 0, 0)
    s.key(KEY_ENTER, 1, 0)
    s.key(58, 1, 0)                # Caps Lock off
    s.key(29, 1, 0)                # Ctrl+A is no character: the code is garbled, not 'ab'
    s.key(30, 1, 0)
    s.key(29, 0, 0)
    s.key(48, 1, 0)
    s.key(KEY_ENTER, 1, 0)
    assert isinstance(got[0], CardRead) and got[0].card == "Kd"
    assert isinstance(got[1], CardUnreadable) and got[1].detail["reason"] == "garbled scanner line"


def test_other_suffix_key_does_not_end_the_code():
    got = []
    s = HidScannerSession(got.append, {"A": "As"}, suffix="enter", code_timeout=0.1)
    s.key(KEY_LEFTSHIFT, 1, 0)
    s.key(30, 1, 0)
    s.key(KEY_LEFTSHIFT, 0, 0)
    s.key(KEY_TAB, 1, 0)
    s.tick(0.05)
    assert got == []
    s.tick(0.2)
    assert got[0].detail["reason"] == "scanner code without its suffix key"


# -- opening and grabbing -------------------------------------------------------------------

class FakeGrab:
    def __init__(self, fail=None):
        self.calls, self.fail = [], fail

    def __call__(self, fd, request, arg):
        self.calls.append((request, arg))
        if self.fail:
            raise OSError(self.fail, os.strerror(self.fail))
        return 0


def test_the_device_is_grabbed_before_anything_is_read(monkeypatch, rig):
    grab = FakeGrab()
    monkeypatch.setattr(evdev_link, "_ioctl", grab)
    r = rig()
    assert grab.calls == [(evdev_link.EVIOCGRAB, 1)]
    assert r.driver.link.port.grabbed is True


def test_a_fifo_has_no_grab_and_that_is_not_an_error(rig):
    r = rig()                                   # the real ioctl: ENOTTY on a FIFO
    assert r.driver.link.port.grabbed is False


@pytest.mark.parametrize("err, words", [(errno.EBUSY, "busy: another program has grabbed"),
                                        (errno.EACCES, "permission denied: the user needs the input group")])
def test_a_busy_or_forbidden_device_is_a_clear_fault_reported_once(monkeypatch, err, words):
    v = VirtualHidScanner(decks=1)
    path = v.start()
    if err == errno.EBUSY:
        monkeypatch.setattr(evdev_link, "_ioctl", FakeGrab(err))
    else:
        def refuse(path):
            raise PermissionError(errno.EACCES, "Permission denied")
        monkeypatch.setattr(evdev_link, "_open", refuse)
    q = queue.Queue()
    d = HidScannerDriver(path, v.codebook())
    d.start(q.put)
    try:
        e = q.get(timeout=3)
        assert e.state == "fault" and words in e.detail["reason"] and path in e.detail["reason"]
        deadline = time.monotonic() + 0.5         # it keeps retrying, quietly
        while time.monotonic() < deadline and d.link.port is None:
            pytest.raises(queue.Empty, q.get, timeout=0.1)
        assert d.link.opened == 0
    finally:
        d.close()
        v.close()


def test_a_node_that_is_not_an_input_device_is_refused(tmp_path):
    f = tmp_path / "not-an-event-node"
    f.write_bytes(b"")
    with pytest.raises(evdev_link.DeviceError, match="not an input event device"):
        evdev_link.EventDevice(str(f))


def test_bad_layout_or_suffix_fails_at_construction():
    with pytest.raises(ValueError, match="layout"):
        HidScannerDriver("/dev/null", {}, layout="fr")
    with pytest.raises(ValueError, match="suffix"):
        HidScannerDriver("/dev/null", {}, suffix="space")


def test_only_key_events_count(rig):
    r = rig()
    noise = b"".join(evdev_link.encode(t, c, v) for t, c, v in ((4, 4, 0x70004), (0, 0, 0), (17, 1, 1)))
    r.v.type_raw(noise + r.v.keystrokes("D01-" + r.v.cards[0]))
    r.wait(lambda e: isinstance(e, CardRead))
    assert r.reads() == [r.v.cards[0]] and EV_KEY == 1


# -- configuration ----------------------------------------------------------------------------

def test_config_selects_the_keyboard_scanner_strictly(tmp_path):
    from dealer_station.config import check_config
    from dealer_station.daemon import Daemon
    base = {"table": {"id": "k1", "profile": "luxury21"},
            "paths": {"journal": str(tmp_path / "j.sqlite")}, "metrics": {"enabled": False}}
    _, errors = check_config({**base, "shoe": {"protocol": "hid", "url": "/dev/input/event0",
                                               "layout": "fr", "suffix": "space",
                                               "code_timeout_ms": 5}})
    for want in ("shoe.layout: must be one of us, uk, de", "shoe.suffix: must be one of enter, tab",
                 "shoe.code_timeout_ms: must be 10-2000",
                 "table.calibration: hid mode needs the codebook"):
        assert any(e.startswith(want) for e in errors), (want, errors)
    cal = tmp_path / "cal.toml"
    cal.write_text('[codebook]\n"D01-As" = "As"\n')
    cfg, errors = check_config({**base, "table": {**base["table"], "calibration": str(cal)},
                                "shoe": {"protocol": "hid", "url": "/dev/input/by-id/x-event-kbd",
                                         "layout": "de", "suffix": "tab", "code_timeout_ms": 150}})
    assert not errors, errors
    shoe = Daemon(cfg).shoe
    assert isinstance(shoe, HidScannerDriver) and shoe.codebook == {"D01-As": "As"}
    assert shoe.options["layout"] == "de" and shoe.options["suffix"] == "tab"
    assert shoe.options["code_timeout"] == 0.15


# -- shoe-calibrate ---------------------------------------------------------------------------

PROC = '''I: Bus=0003 Vendor=0c2e Product=0b61 Version=0111
N: Name="Honeywell Imaging & Mobility 1900"
P: Phys=usb-0000:01:00.0-1.2/input0
H: Handlers=sysrq kbd leds event3
B: EV=120013

I: Bus=0003 Vendor=046d Product=c31c Version=0110
N: Name="Logitech USB Keyboard"
H: Handlers=sysrq kbd event4 leds
B: EV=120013

I: Bus=0003 Vendor=046d Product=c077 Version=0111
N: Name="Logitech USB Optical Mouse"
H: Handlers=mouse0 event5
B: EV=17

I: Bus=0019 Vendor=0000 Product=0001 Version=0000
N: Name="Power Button"
H: Handlers=kbd event0
B: EV=3
'''


def test_ports_lists_usb_keyboards_and_names_the_scanner(tmp_path, monkeypatch, capsys):
    from calibration import shoe_tools
    from calibration.cli import main
    proc = tmp_path / "devices"
    proc.write_text(PROC)
    (tmp_path / "by-id").mkdir()
    (tmp_path / "event3").write_text("")
    os.symlink(tmp_path / "event3", tmp_path / "by-id" / "usb-Honeywell_1900-event-kbd")
    found = shoe_tools.list_input_devices(str(proc), str(tmp_path))
    assert [(os.path.basename(n), s and os.path.basename(s), looks) for n, s, _, looks in found] == [
        ("event3", "usb-Honeywell_1900-event-kbd", True), ("event4", None, False)]
    monkeypatch.setattr(shoe_tools, "list_ports", lambda: [])
    monkeypatch.setattr(shoe_tools, "list_input_devices", lambda: found)
    assert main(["ports"]) == 0
    out = capsys.readouterr().out
    assert ("by-id/usb-Honeywell_1900-event-kbd: keyboard-mode input device 'Honeywell Imaging & "
            "Mobility 1900', looks like a barcode scanner") in out
    assert "event4: keyboard-mode input device 'Logitech USB Keyboard', a USB keyboard" in out
    assert "Mouse" not in out and "Power Button" not in out
    monkeypatch.setattr(shoe_tools, "list_input_devices", lambda: [])
    assert main(["ports"]) == 1


def _opened_twice(node):
    """Whether a second descriptor of this process has the FIFO `node` open (the virtual scanner
    holds the first): the tool under test has opened the scanner."""
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return fds.count(node) >= 2


def _drained(fd):
    """Whether the scanner's FIFO holds nothing unread: the code without its suffix is then
    reported after its 0.1 s code timeout, which the 0.4 s before the unplug leaves room for
    (counted from the write, under load the read itself came after the unplug: "unplugged in the
    middle")."""
    import fcntl
    import termios
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0] == 0


def test_monitor_and_verify_deck_read_a_keyboard_scanner(tmp_path, capsys):
    import threading
    from calibration.cli import main
    v = VirtualHidScanner(decks=1, seed=5, layout="de")
    path = v.start()
    cal = tmp_path / "calibration.toml"
    cal.write_text("[codebook]\n" + "".join(f'"{p}" = "{c}"\n' for p, c in v.codebook().items()))
    try:
        first = []
        # the cards once monitor has the scanner open: a fixed delay raced its start under load
        # (the unplug came before the open: "no such port")
        t = threading.Thread(target=lambda: (wait_for(lambda: _opened_twice(v.node), 30, "the open"),
                                             first.append(v.deal()),
                                             v.partial_next(), v.deal(),
                                             wait_for(lambda: _drained(v.master), 30, "the FIFO read"),
                                             time.sleep(0.4), v.unplug()))
        t.start()
        assert main(["monitor", "--device", "scanner", "--protocol", "hid", "--layout", "de",
                     "--port", path, "--codebook", str(cal)]) == 0
        t.join()
        out = capsys.readouterr().out
        assert f"event=CardRead card={first[0]}" in out and "without its suffix key" in out
        v.replug()
        v.reload(9)
        t = threading.Thread(target=lambda: (wait_for(lambda: _opened_twice(v.node), 30, "the open"),
                                                      [v.deal() for _ in range(52)]))
        t.start()
        assert main(["verify-deck", "--port", path, "--protocol", "hid", "--layout", "de",
                     "--calibration", str(cal), "--operator", "t", "--idle", "1",
                     "--report-dir", str(tmp_path / "rep")]) == 0
        t.join()
        assert capsys.readouterr().out.startswith("PASS: 52 cards read")
    finally:
        v.close()


def test_monitor_refuses_a_busy_scanner_clearly(monkeypatch, tmp_path, capsys):
    from calibration.cli import main
    monkeypatch.setattr(evdev_link, "_ioctl", FakeGrab(errno.EBUSY))
    v = VirtualHidScanner(decks=1)
    path = v.start()
    cal = tmp_path / "calibration.toml"
    cal.write_text('[codebook]\n"D01-As" = "As"\n')
    try:
        assert main(["monitor", "--device", "scanner", "--protocol", "hid", "--port", path,
                     "--codebook", str(cal)]) == 2
        assert "busy: another program has grabbed the scanner" in capsys.readouterr().err
    finally:
        v.close()


def test_table_sim_shoe_mode_hid_serves_a_fifo_the_driver_reads(tmp_path):
    import subprocess
    import sys
    p = subprocess.Popen([sys.executable, "-m", "dealer_station.sim_cli", "shoe", "--pty", "--mode",
                          "hid", "--layout", "uk", "--decks", "1", "--seed", "4"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    d = None
    try:
        path = p.stdout.readline().strip()
        p.stdin.write("codebook\n")
        p.stdin.flush()
        book = dict(tuple(x.strip('"') for x in p.stdout.readline().split(" = ")) for _ in range(52))
        q = queue.Queue()
        d = HidScannerDriver(path, book, layout="uk")
        d.start(q.put)
        assert q.get(timeout=5).state == "connected"
        def say(cmd):
            p.stdin.write(cmd + "\n")
            p.stdin.flush()
            return p.stdout.readline().strip()
        say("deal 2")
        got = [q.get(timeout=5) for _ in range(2)]
        say("partial")
        say("deal")                      # the suffix never comes: dropped after the timeout
        got.append(q.get(timeout=5))
        say("layout de")
        say("deal")
        got.append(q.get(timeout=5))
        assert say("restart") == "error: a keyboard-mode scanner has no protocol to restart"
        assert [type(e).__name__ for e in got] == ["CardRead", "CardRead", "CardUnreadable",
                                                   "CardUnreadable"]
        assert "without its suffix" in got[2].detail["reason"]
        assert "layout mismatch" in got[3].detail["reason"]
    finally:
        if d:
            d.close()
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait(timeout=5)


def test_events_dropped_by_the_kernel_make_the_code_unreadable_not_a_shorter_code():
    from drivers.keymap import EV_SYN
    got = []
    s = HidScannerSession(got.append, {"D01-As": "As", "D01-A": "Kd"})
    v = VirtualHidScanner.__new__(VirtualHidScanner)
    v.layout, v.suffix = "us", "enter"
    recs = v.keystrokes("D01-As")
    cut = len(v.keystrokes("D01-A", suffix=False))
    # the 's' is lost in the overflow: without care this would read "D01-A", another card
    s.data(recs[:cut] + evdev_link.encode(EV_SYN, 3, 0) + v._tap(31)[:evdev_link.RECORD.size]
           + evdev_link.encode(EV_SYN, 0, 0) + v.keystrokes("", suffix=True), 0.0)
    assert len(got) == 1 and isinstance(got[0], CardUnreadable), got
    s.data(v.keystrokes("D01-As"), 1.0)
    assert got[1].card == "As"


def test_a_reader_that_ran_late_does_not_cut_a_code_it_was_sent_whole():
    """The gap between a code's keys is the kernel's (the records' time), not when the thread
    got to read them: the code's first half read at 0.0, the rest (sent 5 ms later) only read
    0.5 s later because the reader was starved, is still one code."""
    got = []
    s = HidScannerSession(got.append, {"D01-As": "As"}, code_timeout=0.1)
    v = VirtualHidScanner.__new__(VirtualHidScanner)
    v.layout, v.suffix = "us", "enter"
    recs = v.keystrokes("D01-As")
    half = len(recs) // 2 // evdev_link.RECORD.size * evdev_link.RECORD.size

    def stamped(data, t):
        return b"".join(evdev_link.encode(ty, c, val, t)
                        for _, _, ty, c, val in evdev_link.RECORD.iter_unpack(data))
    s.data(stamped(recs[:half], 1000.0), 0.0)
    s.data(stamped(recs[half:], 1000.005), 0.5)
    assert [getattr(e, "card", None) for e in got] == ["As"], got
