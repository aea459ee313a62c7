"""The dealer panel: buttons and lights on GPIO through gpiozero 2.x, over a pin factory that is
always passed in (lgpio on the Pi, MockFactory in tests and the simulator), never the global
default.

Buttons (active low, internal pull-up):
  shoe_loaded  hold (long press) after shuffle and cut: a brush of the hand loads nothing
  pit_boss     press: call the pit boss (pauses the table)
  resume       press
  key          the pit boss's key switch (maintained); it arms `void`
  void         hold, only while the key is on: void the round
Lights: deal (and seat_1..seat_7 / dealer where fitted), decision, last_round, shuffle_due,
paused, and a buzzer that sounds when the table pauses.

Callbacks only emit PanelPress events (a queue put); the daemon decides what they mean.
"""

import logging
import threading

from .events import PanelPress  # noqa: F401 (re-exported)
from .section import Key, Section, name, show

log = logging.getLogger(__name__)

BUTTONS = ("shoe_loaded", "pit_boss", "resume", "key", "void")
LIGHTS = ("deal", "decision", "last_round", "shuffle_due", "paused")
SEAT_LIGHTS = tuple(f"seat_{i}" for i in range(1, 8)) + ("dealer", "player", "banker")
HELD = ("shoe_loaded", "void")


class Panel:
    def __init__(self, pins, pin_factory, hold_s=1.0, bounce_s=0.05):
        unknown = set(pins) - set(BUTTONS) - set(LIGHTS) - set(SEAT_LIGHTS) - {"buzzer"}
        if unknown:
            raise ValueError(f"panel pin for unknown part {sorted(unknown)[0]!r}")
        used = list(pins.values())
        if len(used) != len(set(used)):
            raise ValueError("panel: a GPIO pin is given to two parts")
        self.pins = pins
        self.factory = pin_factory
        self.hold_s = hold_s
        self.bounce_s = bounce_s
        self.devices = {}
        self.view = None

    def start(self, emit):
        from gpiozero import LED, Button, Buzzer   # here: a table without a panel never loads it
        f = self.factory
        for name in BUTTONS:
            if name not in self.pins:
                continue
            b = Button(self.pins[name], pull_up=True, bounce_time=self.bounce_s or None,
                       hold_time=self.hold_s, pin_factory=f)
            self.devices[name] = b
            if name == "void":
                self._long_press(b, name, lambda at: emit(PanelPress("void", self._key_on(at))))
            elif name in HELD:
                self._long_press(b, name, lambda at, n=name: emit(PanelPress(n)))
            elif name == "key":
                b.when_pressed = lambda: emit(PanelPress("key", True))
                b.when_released = lambda: emit(PanelPress("key", False))
            else:
                b.when_pressed = lambda n=name: emit(PanelPress(n))
        for name in LIGHTS + SEAT_LIGHTS:
            if name in self.pins:
                self.devices[name] = LED(self.pins[name], pin_factory=f)
        if "buzzer" in self.pins:
            self.devices["buzzer"] = Buzzer(self.pins["buzzer"], pin_factory=f)

    @staticmethod
    def _long_press(b, name, fire):
        """Fire once per press held hold_s or longer. gpiozero's when_held comes from a thread that
        starts timing only once it has woken after the press: a daemon starved of CPU at that
        moment (a loaded Pi, or the test suite's start-up) loses a long press a little over
        hold_s: the shoe is never loaded and the table says nothing. So the press's own length decides
        as well: the edges' ticks (the kernel's timestamps under lgpio; gpiozero sets
        `_last_changed` to them before calling when_pressed / when_released), and a press held
        long enough that when_held did not report is reported at its release. A brush of the
        hand stays nothing: its edges are less than hold_s apart however late they are seen."""
        lock = threading.Lock()
        press = {"at": None, "fired": True}

        def at_most_once(at):
            with lock:
                if press["fired"]:
                    return False
                press["fired"] = True
            fire(at)
            return True

        def once():                 # gpiozero's hold thread, while the button is still down
            at_most_once(None)

        def pressed():
            with lock:
                press["at"], press["fired"] = b._last_changed, False

        def released():
            at = press["at"]
            held = None if at is None else b.pin_factory.ticks_diff(b._last_changed, at)
            if held is not None and held >= b.hold_time and at_most_once(b._last_changed):
                # said, so a log shows how starved the daemon was when it happens again
                log.warning("panel: %s held %.2f s, reported at its release (the hold timer "
                            "had not fired: the daemon was short of CPU)", name, held)

        b.when_pressed, b.when_held, b.when_released = pressed, once, released

    def _key_on(self, at=None):
        """Whether the pit boss's key is on; at the tick `at` when given (a void reported at its
        release on a starved daemon: the key may have turned since, review32), the key's state
        before its last change when that change came after `at`."""
        k = self.devices.get("key")
        if not k:
            return False
        on = bool(k.is_pressed)
        last = k._last_changed
        if at is not None and last is not None and k.pin_factory.ticks_diff(last, at) > 0:
            on = not on
        return on

    def show(self, view):
        """Set the lights from a view: {deal: None | 'seat_3' | 'dealer' | ..., decision, last_round,
        shuffle_due, paused}. Only what changed is touched (a blink keeps its phase)."""
        old = self.view or {}
        self.view = view
        for name in ("decision", "last_round", "shuffle_due", "paused"):
            if name in self.devices and bool(view.get(name)) != bool(old.get(name)):
                led = self.devices[name]
                if not view.get(name):
                    led.off()
                elif name in ("paused", "shuffle_due"):
                    led.blink(0.5, 0.5)
                else:
                    led.on()
        if view.get("deal") != old.get("deal"):
            if "deal" in self.devices:
                self.devices["deal"].value = 1 if view.get("deal") else 0
            for name in SEAT_LIGHTS:
                if name in self.devices:
                    self.devices[name].value = 1 if view.get("deal") == name else 0
        if view.get("paused") and not old.get("paused") and "buzzer" in self.devices:
            self.devices["buzzer"].beep(0.2, 0.2, n=3)

    def close(self):
        for d in self.devices.values():
            d.close()
        self.devices = {}


def panel_view(expectation, table):
    """What the lights show for the table's state (a pure function of it)."""
    e = expectation
    return {"deal": e.zone if e is not None and e.what == "card" else None,
            "decision": e is not None and e.what in ("decision", "insurance"),
            "last_round": table.last_round, "shuffle_due": table.phase == "shuffle_due",
            "paused": bool(table.paused)}


def make_pin_factory(name, mock_socket=None):
    """The pin factory named in the configuration, created explicitly. `mock_socket`: mock pins
    that the table simulator drives through a Unix socket (drivers/pin_bridge.py)."""
    if name == "mock":
        if mock_socket:
            from .pin_bridge import BridgedMockFactory
            return BridgedMockFactory(mock_socket)
        from gpiozero.pins.mock import MockFactory
        return MockFactory()
    if name == "native":
        from gpiozero.pins.native import NativeFactory
        return NativeFactory()
    from gpiozero.pins.lgpio import LGPIOFactory
    return LGPIOFactory()


def _check_config(cfg, errors):
    panel = cfg["panel"]
    if not panel["enabled"]:
        return
    parts = BUTTONS + LIGHTS + SEAT_LIGHTS + ("buzzer",)
    pins = panel["pins"] or {}
    if not pins:
        errors.append("panel.pins: a table of part = GPIO number is needed when the panel is enabled")
    for part, pin in pins.items():
        if part not in parts:
            errors.append(f"panel.pins.{name(part)}: unknown part (known: {', '.join(parts)})")
        elif not isinstance(pin, int) or isinstance(pin, bool) or not 0 <= pin <= 27:
            errors.append(f"panel.pins.{part}: a BCM GPIO number 0-27, got {show(pin)}")
    if panel["mock_socket"] and panel["pin_factory"] != "mock":
        errors.append("panel.mock_socket: only mock pins are driven through a socket "
                      f"(pin_factory is {panel['pin_factory']!r})")
    numbers = [p for p in pins.values() if isinstance(p, int)]
    if len(set(numbers)) != len(numbers):
        errors.append("panel.pins: a GPIO pin is given to two parts")


CONFIG = Section("panel", {
    "enabled": Key(bool, False),
    "pin_factory": Key(str, "lgpio", choices=("lgpio", "native", "mock")),
    "hold_s": Key(float, 1.0, lo=0.2, hi=5.0),
    "bounce_ms": Key(int, 50, lo=0, hi=500),
    "pins": Key(dict, None),
    "mock_socket": Key(str, None),
}, _check_config)


def build(c):
    """(panel, pin factory) of a checked [panel] section, or (None, None) when not enabled."""
    if not c["enabled"]:
        return None, None
    factory = make_pin_factory(c["pin_factory"], c["mock_socket"])
    return Panel(c["pins"], factory, c["hold_s"], c["bounce_ms"] / 1000), factory
