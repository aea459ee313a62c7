"""A barcode scanner in USB-serial mode built into a shoe: one barcode payload per line (CR, LF
or CRLF), mapped to cards by the codebook. Scanners double-fire: the same payload again within
`double_fire_window` seconds is suppressed and counted, not dealt twice."""
from .codebook import valid_payload
from .events import CardRead, CardUnreadable, CutCard, DeviceState
from .serial_link import SerialLink

MAX_LINE = 256


class ScannerSession:
    def __init__(self, emit, codebook, double_fire_window=0.3, cut_payload=None, name="scanner"):
        self.emit = emit
        self.cut_payload = cut_payload  # the code printed on the cut card, if it has one
        self.codebook = codebook
        self.window = double_fire_window
        self.name = name
        self.buf = bytearray()
        self.last_payload = None
        self.last_time = None
        self.counts = {"reads": 0, "double_fires": 0, "unknown": 0, "garbled": 0}

    def connected(self, now):
        self.buf = bytearray()
        self.emit(DeviceState(self.name, "connected"))

    def lost(self, reason, now):
        self.emit(DeviceState(self.name, "disconnected", {"reason": reason}))

    def tick(self, now):
        pass

    def data(self, data, now):
        for b in data:
            if b in (0x0A, 0x0D):
                if self.buf:
                    line, self.buf = bytes(self.buf), bytearray()
                    self.line(line, now)
            elif len(self.buf) < MAX_LINE:
                self.buf.append(b)
            else:
                self.buf = bytearray()
                self.counts["garbled"] += 1
                self.emit(CardUnreadable("shoe", {"reason": "scanner line too long"}))

    def line(self, line, now):
        """One whole line (the payload without its terminator): through the codebook."""
        try:
            payload = line.decode("ascii")
        except UnicodeDecodeError:
            payload = None
        if payload is None or not valid_payload(payload):
            self.counts["garbled"] += 1
            self.emit(CardUnreadable("shoe", {"reason": "garbled scanner line",
                                              "bytes": line[:64].hex()}))
            return
        if (payload == self.last_payload and self.last_time is not None
                and now - self.last_time <= self.window):
            self.counts["double_fires"] += 1
            self.last_time = now
            return
        self.last_payload, self.last_time = payload, now
        if payload == self.cut_payload:
            self.emit(CutCard())
            return
        card = self.codebook.get(payload)
        if card is None:
            self.counts["unknown"] += 1
            self.emit(CardUnreadable("shoe", {"reason": "payload not in the codebook",
                                              "payload": payload}))
            return
        self.counts["reads"] += 1
        self.emit(CardRead(card, "shoe", None, None, payload))


class ScannerDriver:
    """start(emit), close(). No commands: a plain scanner only talks."""

    def __init__(self, url, codebook, settings=None, double_fire_window=0.3, cut_payload=None):
        self.url = url
        self.cut_payload = cut_payload
        self.codebook = codebook
        self.settings = settings
        self.window = double_fire_window
        self.session = None
        self.link = None

    def start(self, emit):
        self.session = ScannerSession(emit, self.codebook, self.window, self.cut_payload)
        self.link = SerialLink(self.url, self.session, self.settings, name="scanner")
        self.link.start()

    def close(self):
        if self.link is not None:
            self.link.close()
