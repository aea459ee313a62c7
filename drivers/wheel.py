"""The Cammegh SS2 roulette wheel: its session (spins, winning numbers, the guide's exception
rules) and the driver on a serial URL (9600 8N1). Emits typed events; never calls the engine."""
from .events import (DeviceState, WheelException, WheelReply, WheelState,  # noqa: F401 (re-exported)
                     WinningNumber)
from .section import Key, Section
from .serial_link import SerialLink
from .wheel_protocol import FLAGS, LineSplitter, NumberLine, Reply, Status, parse_line

WHEEL_SETTINGS = {"baudrate": 9600, "bytesize": 8, "parity": "N", "stopbits": 1}
COMMANDS = {"start_game": "*u 1", "run": "*P 1", "stop": "*P 0", "ack_void": "*R",
            "status": "*X", "version": "*V", "self_test": "*F"}


class WheelSession:
    def __init__(self, emit, failed_launch_s=3.0, no_ball_s=5.0, poll_s=None, write=None,
                 name="wheel"):
        self.emit = emit
        self.write = write
        self.failed_launch_s = failed_launch_s
        self.no_ball_s = no_ball_s
        self.poll_s = poll_s
        self.name = name
        self.split = LineSplitter()
        self.last = None            # the last Status
        self.epoch = 0              # the spin counter restarts at power-up: (epoch, spin) is a spin
        self.in_play = set()        # spins whose ball was launched
        self.numbers = {}           # (epoch, spin) -> the number reported
        self.raised = set()         # (kind, epoch, spin) exceptions already reported
        self.since = {}             # flag -> when it was first seen in this spin
        self.last_poll = 0.0
        self.counts = {"status": 0, "garbled": 0, "numbers": 0, "unattributed_lines": 0}

    def connected(self, now):
        self.split = LineSplitter()
        self.emit(DeviceState(self.name, "connected"))
        if self.write:
            self.write(b"*X\r\n")

    def lost(self, reason, now):
        self.emit(DeviceState(self.name, "disconnected", {"reason": reason}))

    def tick(self, now):
        if self.poll_s and self.write and now - self.last_poll >= self.poll_s:
            self.last_poll = now
            self.write(b"*X\r\n")
        self._timed_rules(now)

    def data(self, data, now):
        for line in self.split.feed(data):
            p = parse_line(line)
            if isinstance(p, Status):
                self.counts["status"] += 1
                self._status(p, now)
            elif isinstance(p, NumberLine):
                self._line(p)
            elif isinstance(p, Reply):
                if p.command == "F" and p.text:
                    self._raise("component_fault", {"code": p.text})
                self.emit(WheelReply(p.command, p.text))
            else:
                self.counts["garbled"] += 1   # a mangled packet: counted, never acted on

    # -- spins ---------------------------------------------------------------------------------

    def _key(self, st):
        return (self.epoch, st.spin)

    def _status(self, st, now):
        prev = self.last
        if prev is not None and st.spin < prev.spin and not (prev.spin >= 250 and st.spin <= 5):
            self.epoch += 1           # power-up: the controller counts spins from 1 again
        if st.state in (1, 6) and prev is not None and prev.state not in (1, 6):
            self.since.clear()
        key = self._key(st)
        if prev is None or (st.state, st.spin, st.flags) != (prev.state, prev.spin, prev.flags):
            self.emit(WheelState(st.state, st.name, st.spin, st.flags, st.rpm, st.direction))
        if prev is not None and prev.spin != st.spin:
            self.since.clear()
            old = (self.epoch if st.spin > prev.spin else self.epoch - 1, prev.spin)
            # a spin whose state 5 we never saw: the next status carries its number
            if (old in self.in_play and old not in self.numbers and st.number is not None
                    and ("miss_spin",) + old not in self.raised):
                self._number(st.number, old, "late")
        self.last = st
        if st.state in (3, 4, 5):
            self.in_play.add(key)
        if st.state == 5 and st.number is not None:
            self._number(st.number, key, "status")
        self._flags(st, now)

    def _line(self, p):
        st = self.last
        if p.number is None:
            self.counts["garbled"] += 1
            return
        if st is None or st.state not in (3, 4, 5):
            self.counts["unattributed_lines"] += 1   # not during a spin we are watching
            return
        self._number(p.number, self._key(st), "line")

    def _number(self, n, key, source):
        if key in self.numbers:
            if self.numbers[key] != n:
                self._raise("number_mismatch", {"first": self.numbers[key], "then": n,
                                                "source": source}, key)
            return
        self.numbers[key] = n
        self.counts["numbers"] += 1
        self.emit(WinningNumber(n, key[1], source))

    # -- the guide's exception rules (section 4.1) ---------------------------------------------

    def _flags(self, st, now):
        for flag in (1, 2, 4, 8):
            if st.flags & flag:
                self.since.setdefault(flag, now)
            else:
                self.since.pop(flag, None)
        if st.state == 3 and st.flags & 2:
            self._raise("miss_spin", {"reason": FLAGS[2]})       # the game is void
        if st.flags & 4:
            self._raise("component_fault", {"reason": FLAGS[4]})
        if st.state == 7:
            self.since.setdefault(1, now)
        self._timed_rules(now)

    def _timed_rules(self, now):
        st = self.last
        if st is None:
            return
        t = self.since.get(8)
        if t is not None and now - t >= self.failed_launch_s:
            self._raise("failed_launch", {"reason": FLAGS[8], "seconds": round(now - t, 1)})
        t = self.since.get(1)
        if t is not None and st.state in (4, 7) and now - t >= self.no_ball_s:
            self._raise("no_ball", {"reason": FLAGS[1], "seconds": round(now - t, 1)})

    def _raise(self, kind, detail, key=None):
        key = key or (self._key(self.last) if self.last else (self.epoch, None))
        if (kind,) + key in self.raised:
            return
        self.raised.add((kind,) + key)
        self.emit(WheelException(kind, key[1], detail))


class WheelDriver:
    """start(emit), command(name), close(). Commands: start_game, run, stop, ack_void (after a
    void game), status, version, self_test."""

    def __init__(self, url, settings=None, poll_s=None, **rules):
        self.url = url
        self.settings = {**WHEEL_SETTINGS, **(settings or {})}
        self.poll_s = poll_s
        self.rules = rules
        self.link = None
        self.session = None

    def start(self, emit):
        self.link = SerialLink(self.url, None, self.settings, name="wheel")
        self.session = WheelSession(emit, poll_s=self.poll_s, write=self.link.write, **self.rules)
        self.link.protocol = self.session
        self.link.start()

    def command(self, name):
        if name not in COMMANDS:
            raise ValueError(f"wheel command {name!r}: one of {', '.join(COMMANDS)}")
        return self.link.write(COMMANDS[name].encode("ascii") + b"\r\n")

    def close(self):
        if self.link is not None:
            self.link.close()


def _check_config(cfg, errors):
    if cfg["wheel"]["enabled"] and not cfg["wheel"]["url"]:
        errors.append("wheel.url: required when the wheel is enabled")


CONFIG = Section("wheel", {
    "enabled": Key(bool, False),
    "url": Key(str, None),
    "baudrate": Key(int, 9600, choices=(9600, 19200, 38400, 57600, 115200)),
    "poll_s": Key(float, 0.0, lo=0, hi=5),
    "failed_launch_s": Key(float, 3.0, lo=0.05, hi=60),
    "no_ball_s": Key(float, 5.0, lo=0.05, hi=120),
    "auto_start": Key(bool, True),
}, _check_config)


def build(c):
    """The wheel of a checked [wheel] section, or None when it is not enabled."""
    if not c["enabled"]:
        return None
    return WheelDriver(c["url"], {"baudrate": c["baudrate"]}, poll_s=c["poll_s"] or None,
                       failed_launch_s=c["failed_launch_s"], no_ball_s=c["no_ball_s"])
