"""The dealer panel on gpiozero's MockFactory: pin edges in, events out; table state in, pin
states out."""
import json
import queue
import sys
import time

import pytest
from gpiozero.pins.mock import MockFactory

from controller import expect
from drivers.panel import Panel, PanelPress, panel_view
from helpers import ready

PINS = {"shoe_loaded": 5, "pit_boss": 6, "resume": 13, "key": 19, "void": 26, "deal": 17,
        "decision": 27, "last_round": 22, "shuffle_due": 23, "paused": 24, "buzzer": 25,
        "seat_1": 2, "seat_2": 3, "dealer": 4}


@pytest.fixture
def panel():
    f = MockFactory()
    q = queue.Queue()
    p = Panel(PINS, f, hold_s=0.2, bounce_s=0)
    p.start(q.put)
    yield p, f, q
    p.close()
    f.reset()


def events(q, n=0, quiet=0.1):
    """The `n` events the presses give (each waited for: the panel's threads emit them), then
    what else comes within `quiet` seconds (nothing, when the panel is right)."""
    out = [q.get(timeout=5) for _ in range(n)]
    try:
        while True:
            out.append(q.get(timeout=quiet))
    except queue.Empty:
        return out


def press(f, pin, hold=0.0):
    f.pin(pin).drive_low()
    time.sleep(hold)
    f.pin(pin).drive_high()


def test_a_press_calls_the_pit_boss_and_resumes(panel):
    p, f, q = panel
    press(f, 6)
    press(f, 13)
    assert events(q, 2) == [PanelPress("pit_boss"), PanelPress("resume")]


def test_shoe_loaded_needs_a_long_press(panel):
    p, f, q = panel
    press(f, 5, hold=0.05)                     # a brush of the hand
    assert events(q) == []
    press(f, 5, hold=0.35)
    assert events(q, 1) == [PanelPress("shoe_loaded")]


def starved_press(f, pin, hold):
    """A press of `hold` seconds while the panel's threads get no CPU: this thread keeps the
    GIL for the whole press (a busy wait, the switch interval longer than it), as a daemon
    starved on a loaded machine does not run gpiozero's hold thread in time."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        f.pin(pin).drive_low()
        end = time.perf_counter() + hold
        while time.perf_counter() < end:
            pass
        f.pin(pin).drive_high()
    finally:
        sys.setswitchinterval(interval)


def test_a_long_press_counts_even_when_the_hold_thread_is_starved(panel):
    """table-sim in CI: the daemon heard nothing of a 0.3 s shoe_loaded hold (hold_s 0.2) and the
    table never started. The press's length is the edges' ticks, not whether a thread woke."""
    p, f, q = panel
    starved_press(f, 5, 0.05)                  # a brush of the hand is still nothing
    assert events(q) == []
    starved_press(f, 5, 0.3)
    assert events(q, 1) == [PanelPress("shoe_loaded")]
    f.pin(19).drive_low()                      # key on: void is held the same way
    starved_press(f, 26, 0.3)
    f.pin(19).drive_high()
    assert events(q, 3) == [PanelPress("key", True), PanelPress("void", True),
                            PanelPress("key", False)]


def test_a_long_press_is_reported_once(panel):
    p, f, q = panel
    press(f, 5, hold=0.6)                      # when_held fires at 0.2 s, the release finds it
    press(f, 26, hold=0.35)
    assert events(q, 2, quiet=0.3) == [PanelPress("shoe_loaded"), PanelPress("void", False)]


def test_void_is_armed_only_by_the_pit_boss_key(panel):
    p, f, q = panel
    press(f, 26, hold=0.35)
    assert events(q, 1) == [PanelPress("void", False)]
    f.pin(19).drive_low()                      # key on
    press(f, 26, hold=0.35)
    f.pin(19).drive_high()
    assert events(q, 3) == [PanelPress("key", True), PanelPress("void", True), PanelPress("key", False)]


def test_lights_follow_the_table(panel):
    p, f, q = panel
    r = ready("luxury21")
    r.close(1, 2)
    p.show(panel_view(expect(r.table), r.table))
    assert f.pin(17).state and f.pin(2).state and not f.pin(3).state and not f.pin(27).state
    r.feed("Ts")
    p.show(panel_view(expect(r.table), r.table))
    assert f.pin(3).state and not f.pin(2).state
    r.feed("9s", "5d", "6s", "7h")              # seat 2's card, dealer up, seat cards, hole
    r.feed("Kc")
    p.show(panel_view(expect(r.table), r.table))
    assert not f.pin(17).state and f.pin(27).state          # waiting for a decision
    r.feed({"type": "pause", "reason": "pit boss"})
    p.show(panel_view(expect(r.table), r.table))
    assert not f.pin(27).state and p.devices["paused"].is_lit and p.devices["buzzer"].is_active
    r.feed({"type": "cut_card"}, {"type": "resume"})
    p.show(panel_view(expect(r.table), r.table))
    assert f.pin(22).state and not p.devices["paused"].is_lit


def test_shuffle_due_light():
    f = MockFactory()
    p = Panel({"shuffle_due": 23}, f)
    p.start(lambda e: None)
    r = ready("lucky7")
    r.close(1)
    r.feed("Ts", "9d", "7s", "Kh")             # seat 17, dealer 19: stands... then shuffle due
    if r.table.phase != "shuffle_due":
        r.feed({"type": "decision", "seat": 1, "hand": 0, "action": "stand"})
    p.show(panel_view(expect(r.table), r.table))
    assert p.devices["shuffle_due"].is_lit
    p.close()


def test_bad_pin_maps_are_refused():
    with pytest.raises(ValueError, match="two parts"):
        Panel({"deal": 5, "paused": 5}, MockFactory())
    with pytest.raises(ValueError, match="unknown part 'laser'"):
        Panel({"laser": 5}, MockFactory())


def test_the_pin_bridge_lets_another_process_press_buttons_and_read_lights(tmp_path):
    """The simulator's seam: mock pins reached through a Unix socket, the panel code unchanged."""
    from drivers.panel import make_pin_factory
    from drivers.pin_bridge import bridge_request
    sock = str(tmp_path / "pins.sock")
    (tmp_path / "pins.sock").write_text("left by a killed daemon")
    f = make_pin_factory("mock", sock)
    q = queue.Queue()
    p = Panel(PINS, f, hold_s=0.2, bounce_s=0)
    p.start(q.put)
    try:
        assert bridge_request(sock, "drive 6 0") == "ok"
        time.sleep(0.05)
        assert bridge_request(sock, "drive 6 1") == "ok"
        assert events(q, 1) == [PanelPress("pit_boss")]
        p.show({"deal": None, "decision": True, "last_round": False, "shuffle_due": False,
                "paused": False})
        assert bridge_request(sock, "state 27") == "1" and bridge_request(sock, "state 22") == "0"
        assert json.loads(bridge_request(sock, "states"))["27"] == 1
        for bad, why in (("drive 6 2", "unknown request"), ("fly 6", "unknown request"),
                         ("state x", "invalid literal"), ("", "unknown request")):
            assert why in bridge_request(sock, bad), bad
        assert bridge_request(sock, "state 13") == "1"       # a bad request changed nothing
        assert events(q) == []
    finally:
        p.close()
        f.close()
    assert not (tmp_path / "pins.sock").exists()


# review32: the void reported at its release took the key's state as it was when the late callback
# ran; the pit boss turns the key back right after releasing void (sim dealer_panel.void_with_key)

def late_void(key_during, key_after):
    """void held 0.3 s (hold_s 0.2) with the key at `key_during`, the key then set to
    `key_after`, and only then the void's two edges' callbacks run (lgpio's callback thread
    late, gpiozero's hold thread starved): the events."""
    f = MockFactory()
    q = queue.Queue()
    p = Panel(PINS, f, hold_s=0.2, bounce_s=0)
    p.start(q.put)
    try:
        from gpiozero.pins.pi import PiPin
        void, key, late = f.pin(26), f.pin(19), []
        void._call_when_changed = lambda *a: late.append((void._last_change, void._state))
        p.devices["void"]._hold_thread.stop()
        (key.drive_low if key_during else key.drive_high)()
        void.drive_low()
        void.drive_high()
        (key.drive_low if key_after else key.drive_high)()
        del void._call_when_changed
        # held 0.3 s by its edges' ticks (no sleep): the press's tick set back, the key's change
        # before the release stays before it and the one after stays after
        late[0] = (late[0][0] - 0.3, late[0][1])
        for t, s in late:
            PiPin._call_when_changed(void, t, s)
        return [e for e in events(q, 0, quiet=1.0) if e.button == "void"]
    finally:
        p.close()
        f.reset()


def test_a_void_held_with_the_key_is_armed_though_the_key_went_off_before_its_callback():
    assert late_void(True, False) == [PanelPress("void", True)]


def test_a_void_held_without_the_key_is_not_armed_by_a_key_turned_on_after_it():
    assert late_void(False, True) == [PanelPress("void", False)]
