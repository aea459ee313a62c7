"""A virtual Cammegh SS2 wheel behind a real pty, speaking the status protocol of the developer
guide, with faults on command: miss-spin, failed launch, no ball, component fault, a garbled
packet. The real wheel driver reaches it through a device path, as it would the wheel."""
import os
import random
import select
import threading
import time

from .pty_link import close_pty, open_pty
from .scratch import scratch_dir


class VirtualWheel:
    def __init__(self, seed=1, period=0.5, link=None, times=(4, 3, 3, 2)):
        """period: seconds between automatic status packets (0.5 on the real wheel). times: how
        many periods the wheel spends in place bets, ball in rim, no more bets, winning number."""
        self.rng = random.Random(seed)
        self.period = period
        self.times = times
        self.state = 6
        self.spin = 1
        self.number = None
        self.ended = False                # the spin's number is out: the next game is a new spin
        self.flags = 0
        self.running = False
        self.auto_next = True
        self.phase_left = 0
        self.faults = set()
        self.persist = {}                 # fault -> periods left while it persists
        self.await_ack = False
        self.received = []
        self._dir = scratch_dir("vwheel") if link is None else None
        self.path = link or os.path.join(self._dir, "wheel")
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self.master = self.slave = None
        self._thread = None

    def start(self):
        self.master, self.slave = open_pty(self.path)
        self._thread = threading.Thread(target=self._run, name="virtual-wheel", daemon=True)
        self._thread.start()
        return self.path

    def close(self):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)
        close_pty(self.path, self.master, self.slave)
        if self._dir:
            os.rmdir(self._dir)

    # -- faults on command --------------------------------------------------------------------

    def miss_spin_next(self):
        self.faults.add("miss_spin")

    def failed_launch_next(self, periods=2):
        self.persist["failed_launch"] = periods

    def no_ball_next(self, periods=12):
        self.persist["no_ball"] = periods

    def component_fault(self, code="12", periods=None):
        """A sensor/motor/encoder fault (flag 4, and the self-test's code); cleared by itself
        after `periods` status periods, or never."""
        with self._lock:
            self.flags |= 4
            if periods is not None:
                self.persist["component"] = periods
            self._send(f"*F {code}")

    def double_number_next(self):
        """The next spin's number line is followed by another, different number (a reader fault)."""
        self.faults.add("double_number")

    def garble_next(self):
        self.faults.add("garble")

    def ball_out_next(self):
        """The next spin's ball leaves the wheel: no number comes (the wheel stays in no more
        bets) until `respin()`, when the dealer has declared the no-spin and launches again."""
        self.faults.add("ball_out")

    def respin(self):
        """The dealer launches the ball again after a ball out: the same game, from state 2."""
        with self._lock:
            if "ball_out" in self.faults and self.state == 4:
                self.faults.discard("ball_out")
                self._enter(2)

    # -- the wheel ----------------------------------------------------------------------------

    def _send(self, text):
        try:
            os.write(self.master, text.encode("ascii") + b"\r\n")
        except OSError:
            pass

    def _status(self):
        num = "  " if self.number is None else f"{self.number:>2}"
        pkt = f"*X;{self.state};{self.spin:03d};{num};{self.flags:X};{170 if self.state != 6 else 0:03d};0"
        if "garble" in self.faults:
            self.faults.discard("garble")
            pkt = pkt[:7] + pkt         # a packet mangled on the wire, like the capture's
        self._send(pkt)

    def _command(self, line):
        self.received.append(line)
        with self._lock:
            if line.startswith("*X"):
                self._status()
            elif line == "*P 1":
                self.running = True
                self.state = 1 if self.state == 6 else self.state
                self._send("*P OK")
            elif line == "*P 0":
                self.running = False
                self._send("*P OK")
            elif line == "*u 1":
                if self.state in (1, 5, 6) or (self.state == 2 and self.phase_left <= 0):
                    self._enter(2)
                    self._send("*u OK")
                else:
                    self._send("*u OK")
            elif line == "*R":
                if self.await_ack:      # the void game is acknowledged: spin again from state 2
                    self.await_ack = False
                    self.flags &= ~2
                    self._enter(2)
            elif line.startswith("*V"):
                self._send("*V V2.50 Cammegh / Syoptic - SlingShot 2 Roulette Wheel")

    def _enter(self, state):
        if state == 2 and self.ended:
            # a new game is a new spin (the controller numbers games): also when the host starts
            # it at the winning number, before the wheel would have moved on by itself
            self.spin = self.spin % 256 + 1
            self.ended = False
        self.state = state
        self.phase_left = {2: self.times[0], 3: self.times[1], 4: self.times[2], 5: self.times[3]}.get(state, 0)

    def _tick(self):
        with self._lock:
            if self.persist.get("component", 0) > 0:
                self.persist["component"] -= 1
                if not self.persist["component"]:
                    self.flags &= ~4
            if self.state in (1, 6) or self.await_ack:
                return
            if self.state == 2 and self.persist.get("failed_launch", 0) > 0:
                self.flags |= 8               # the launch failed: the controller retries
                self.persist["failed_launch"] -= 1
                return
            self.flags &= ~8
            if self.state == 3 and "miss_spin" in self.faults:
                self.faults.discard("miss_spin")
                self.flags |= 2               # the ball turns with the wheel: the game is void
                self.await_ack = True
                return
            if self.state == 4 and self.persist.get("no_ball", 0) > 0:
                self.flags |= 1
                self.persist["no_ball"] -= 1
                return
            self.flags &= ~1
            if self.state == 4 and "ball_out" in self.faults:
                return                        # the ball is off the wheel: no number to read
            self.phase_left -= 1
            if self.phase_left > 0:
                return
            if self.state == 2:
                self._enter(3)
            elif self.state == 3:
                self._enter(4)
            elif self.state == 4:
                self.number = self.rng.randrange(37)
                self._send(f"{self.number:>2}")     # the winning-number line (port 1)
                if "double_number" in self.faults:
                    self.faults.discard("double_number")
                    self._send(f"{(self.number + 1) % 37:>2}")
                self._enter(5)
                self.ended = True
            elif self.state == 5:     # stays at the winning number until a new game starts
                if self.running and self.auto_next:
                    self._enter(2)

    def _run(self):
        buf = b""
        next_status = time.monotonic() + self.period
        while not self._stop.is_set():
            try:
                r, _, _ = select.select([self.master], [], [], 0.01)
                data = os.read(self.master, 256) if r else b""
            except OSError:
                data = b""
            buf += data
            while b"\r" in buf or b"\n" in buf:
                cut = min(i for i in (buf.find(b"\r"), buf.find(b"\n")) if i >= 0)
                line, buf = buf[:cut].strip(), buf[cut + 1:]
                if line:
                    self._command(line.decode("ascii", "replace"))
            now = time.monotonic()
            if now >= next_status:
                next_status = now + self.period
                self._tick()
                with self._lock:
                    self._status()
