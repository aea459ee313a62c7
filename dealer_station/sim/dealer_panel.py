"""The simulated dealer's hands on the daemon's panel: mock pins driven through the pin bridge
(drivers/pin_bridge.py), so a press goes through gpiozero's Button exactly as on the Pi."""
import json
import time

from drivers.pin_bridge import bridge_request

PINS = {"shoe_loaded": 5, "pit_boss": 6, "resume": 13, "key": 19, "void": 26,
        "deal": 16, "decision": 20, "last_round": 21, "shuffle_due": 12, "paused": 25,
        "buzzer": 24}
HOLD_S = 0.2
BUTTONS = ("shoe_loaded", "pit_boss", "resume", "key", "void")


class SimPanel:
    def __init__(self, path, pins=None, hold_s=HOLD_S):
        self.path = path
        self.pins = dict(pins or PINS)
        self.hold_s = hold_s

    def config(self):
        pins = "\n".join(f"{k} = {v}" for k, v in self.pins.items())
        return (f'[panel]\nenabled = true\npin_factory = "mock"\nmock_socket = "{self.path}"\n'
                f'hold_s = {self.hold_s}\nbounce_ms = 10\n\n[panel.pins]\n{pins}\n\n')

    def _ask(self, line, timeout=15.0):
        """One request; waits while the daemon (and its pins) restarts."""
        end = time.monotonic() + timeout
        while True:
            try:
                answer = bridge_request(self.path, line)
            except OSError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.1)
                continue
            if answer.startswith("error"):
                raise RuntimeError(f"panel: {line!r}: {answer}")
            return answer

    def wait_ready(self, timeout=20.0):
        """Wait until the daemon's panel is built. Its pin socket opens before its buttons exist
        (the daemon recovers its journal and meets the shoe in between): a press driven then moves
        a bare pin and is lost. The panel makes its lights after its buttons, and we never drive
        a light, so every light pin listed in `states` is the signal."""
        lights = {str(pin) for name, pin in self.pins.items() if name not in BUTTONS}
        end = time.monotonic() + timeout
        while True:
            try:
                levels = json.loads(self._ask("states", timeout=max(0.1, end - time.monotonic())))
                if lights <= set(levels):
                    return
            except OSError:
                pass
            if time.monotonic() > end:
                raise TimeoutError(f"panel: the daemon's panel at {self.path} was not up after "
                                   f"{timeout:g} s (no lights on pins {sorted(lights)})")
            time.sleep(0.05)

    def _drive(self, name, level):
        self._ask(f"drive {self.pins[name]} {level}")

    def press(self, name):
        self.wait_ready()
        self._drive(name, 0)
        time.sleep(0.05)
        self._drive(name, 1)

    def hold(self, name):
        self.wait_ready()
        self._drive(name, 0)
        time.sleep(self.hold_s + 0.1)
        self._drive(name, 1)

    def void_with_key(self):
        """The pit boss turns the key, holds void, turns the key back."""
        self.wait_ready()
        self._drive("key", 0)
        time.sleep(0.05)
        self.hold("void")
        self._drive("key", 1)

    def lights(self):
        """{light: on} for the live view (a blinking light shows its current phase)."""
        try:
            levels = json.loads(self._ask("states", timeout=0.5))
        except (OSError, RuntimeError, ValueError):
            return {}
        return {name: bool(levels.get(str(pin))) for name, pin in self.pins.items()
                if name in ("deal", "decision", "last_round", "shuffle_due", "paused")}
