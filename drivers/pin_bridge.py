"""Mock pins another process can reach: gpiozero's MockFactory with a Unix-socket wiring harness,
so the table simulator presses the daemon's buttons and reads its lights through the same seam as
real wiring (a pin factory), and the daemon's panel code cannot tell the difference.

One request per line, one answer per line:
    drive PIN 0|1     drive an input pin low (0, a pressed active-low button) or high -> ok
    state PIN         the pin's level -> 0 or 1
    states            every pin in use -> JSON {"PIN": level}
Anything else is answered `error: ...` and changes nothing.
"""
import json
import os
import socket
import threading

from gpiozero.pins.mock import MockFactory


class BridgedMockFactory(MockFactory):
    def __init__(self, path, **kw):
        super().__init__(**kw)
        self.path = path
        try:
            os.unlink(path)          # left by a daemon that was killed
        except FileNotFoundError:
            pass
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(path)
        self._server.listen(4)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="pin-bridge", daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn):
        with conn, conn.makefile("rw") as f:
            for line in f:
                f.write(self.answer(line.split()) + "\n")
                f.flush()

    def answer(self, words):
        usage = f"error: unknown request {' '.join(words)!r} (drive PIN 0|1, state PIN, states)"
        shapes = {("states", 1), ("state", 2), ("drive", 3)}
        if not words or (words[0], len(words)) not in shapes or (
                words[0] == "drive" and words[2] not in ("0", "1")):
            return usage
        try:
            if words[0] == "states":
                return json.dumps({str(p).removeprefix("GPIO"): int(p.state)
                                   for p in list(self.pins.values())})
            pin = self.pin(int(words[1]))
            if words[0] == "state":
                return str(int(pin.state))
            pin.drive_low() if words[2] == "0" else pin.drive_high()
            return "ok"
        except ValueError as e:
            return f"error: {e}"
        except Exception as e:          # a pin gpiozero refuses (an output, say): say so, go on
            return f"error: {type(e).__name__}: {e}"

    def close(self):
        self._stop.set()
        self._server.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        super().close()


def bridge_request(path, line, timeout=2.0):
    """Send one request to a bridged mock factory and return its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(line.encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.decode().strip()
