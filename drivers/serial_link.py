"""A serial port by URL, read in its own thread, reopened with capped backoff when it fails.

The framing and the device's session live in a protocol object (pyserial's model: transport apart
from framing). The link calls, from its reader thread only:
    protocol.connected(now)        the port is open (again)
    protocol.data(bytes, now)      bytes arrived
    protocol.lost(reason, now)     the port failed; it will be reopened
    protocol.tick(now)             at least every `poll` seconds, for timers
The protocol turns these into events and calls `emit`; it never blocks.

An exception out of the protocol (a driver bug, or input it failed to reject) must not end the
reader thread, which would leave the device reported connected and deaf: the link logs it, closes
the port, reports `lost("driver error: ...")` and reopens it after a backoff, as after a read error.
"""
import logging
import threading
import time

import serial

log = logging.getLogger(__name__)

DEFAULT_SETTINGS = {"baudrate": 115200, "bytesize": 8, "parity": "N", "stopbits": 1,
                    "xonxoff": False, "rtscts": False}


class SerialLink:
    def __init__(self, url, protocol, settings=None, poll=0.01, backoff=0.05, backoff_max=2.0,
                 name="serial"):
        self.url = url
        self.protocol = protocol
        self.settings = {**DEFAULT_SETTINGS, **(settings or {})}
        self.poll = poll
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.name = name
        self.port = None
        self.reconnects = 0
        self.opened = 0
        self.errors = 0             # exceptions out of the protocol, each one a reopen
        self._error_delay = backoff
        self._open_error = None     # the last reason the port would not open, said once
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-reader", daemon=True)
        self._thread.start()

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._close_port()

    def write(self, data: bytes) -> bool:
        """Write from any thread; False when the port is not open (the caller may retry later)."""
        with self._lock:
            port = self.port
            if port is None:
                return False
            try:
                port.write(data)
                return True
            except (serial.SerialException, OSError):
                return False

    def _open(self):
        extra = {"exclusive": True} if self.url.startswith("/") else {}  # one reader per device
        return serial.serial_for_url(self.url, timeout=self.poll, write_timeout=1,
                                     **self.settings, **extra)

    def _open_failed(self, e):
        """Why the port does not open, said once per cause (not at every retry): a wrong url,
        a port another program holds, a permission, so the status and the log carry a reason (the protocol reports it as a DeviceState)."""
        text = str(e) or type(e).__name__
        if "No such file" in text or "could not open port" in text and "Errno 2" in text:
            why = f"cannot open {self.url}: no such port"
        elif "lock" in text or "Resource temporarily unavailable" in text:
            why = f"cannot open {self.url}: port busy (another program holds it)"
        elif "ermission" in text:
            why = f"cannot open {self.url}: permission denied (the dialout group?)"
        else:
            why = f"cannot open {self.url}: {text}"[:200]
        # after a lost port the disconnect is already said (once per unplug): not again here
        if self._open_error != "lost" and why != self._open_error:
            self._open_error = why
            self.protocol.lost(why, time.monotonic())

    def _close_port(self):
        with self._lock:
            port, self.port = self.port, None
        if port is not None:
            try:
                port.close()
            except (serial.SerialException, OSError):
                pass

    def _run(self):
        delay = self.backoff
        while not self._stop.is_set():
            try:
                delay = self._step(delay)
            except Exception as e:  # noqa: BLE001 - whatever it was, the thread must go on
                self._driver_error(e)

    def _step(self, delay):
        """One read (or one attempt to open); returns the open backoff to use next."""
        if self.port is None:
            try:
                port = self._open()
            except (serial.SerialException, OSError, ValueError) as e:
                self._open_failed(e)
                self.protocol.tick(time.monotonic())
                self._stop.wait(delay)
                return min(delay * 2, self.backoff_max)
            with self._lock:
                self.port = port
            self._open_error = None
            if self.opened:
                self.reconnects += 1
            self.opened += 1
            self.protocol.connected(time.monotonic())
            return self.backoff
        try:
            data = self.port.read(self.port.in_waiting or 1)
        except (serial.SerialException, OSError, TypeError, AttributeError) as e:
            # TypeError/AttributeError: pyserial's posix read after the fd was closed under it
            self._close_port()
            self._open_error = "lost"
            self.protocol.lost(str(e) or type(e).__name__, time.monotonic())
            return delay
        now = time.monotonic()
        if data:
            self.protocol.data(data, now)
            self._error_delay = self.backoff   # input handled: the next error starts afresh
        self.protocol.tick(now)
        return delay

    def _driver_error(self, e):
        self.errors += 1
        reason = f"driver error: {type(e).__name__}: {e}"[:200]
        log.error("%s: %s; reopening the port", self.name, reason, exc_info=True)
        self._close_port()
        try:
            self.protocol.lost(reason, time.monotonic())
        except Exception:  # noqa: BLE001
            log.exception("%s: reporting the error failed too", self.name)
        # doubling, so a protocol that fails on every call costs a log line every 2 s, not a spin
        self._stop.wait(self._error_delay)
        self._error_delay = min(self._error_delay * 2, self.backoff_max)
