"""A serial port by URL, read in its own thread, reopened with capped backoff when it fails.

The framing and the device's session live in a protocol object (pyserial's model: transport apart
from framing). The link calls, from its reader thread only:
    protocol.connected(now)        the port is open (again)
    protocol.data(bytes, now)      bytes arrived
    protocol.lost(reason, now)     the port failed; it will be reopened
    protocol.tick(now)             at least every `poll` seconds, for timers
The protocol turns these into events and calls `emit`; it never blocks.
"""
import threading
import time

import serial

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
            if self.port is None:
                try:
                    port = self._open()
                except (serial.SerialException, OSError, ValueError):
                    self.protocol.tick(time.monotonic())
                    self._stop.wait(delay)
                    delay = min(delay * 2, self.backoff_max)
                    continue
                with self._lock:
                    self.port = port
                if self.opened:
                    self.reconnects += 1
                self.opened += 1
                delay = self.backoff
                self.protocol.connected(time.monotonic())
            try:
                data = self.port.read(self.port.in_waiting or 1)
            except (serial.SerialException, OSError, TypeError, AttributeError) as e:
                # TypeError/AttributeError: pyserial's posix read after the fd was closed under it
                self._close_port()
                self.protocol.lost(str(e) or type(e).__name__, time.monotonic())
                continue
            now = time.monotonic()
            if data:
                self.protocol.data(data, now)
            self.protocol.tick(now)
