"""Dealer-station shoe protocol v1: framing, checksum and the frame vocabulary (docs/shoe-protocol.md).

Pure functions and a byte-stream parser with no I/O, so the reader thread only moves bytes and
the parser can be tested on any byte sequence.

A frame is one ASCII line:  $TYPE,field,field...*CCCC\\r\\n
CCCC is the CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection, no final XOR) of the
bytes between '$' and '*', as four upper-case hex digits.
"""
from dataclasses import dataclass

MAX_FRAME = 120          # bytes from '$' to the end of the line; longer is garbage
# shoe -> host. Event frames carry their own sequence number; HB and HELLO carry the last one sent.
EVENT_TYPES = {"CARD": 2, "UNRD": 1, "CUT": 0, "STAT": 5}   # type: fields after the seq
INFO_TYPES = {"HB": 0, "HELLO": 4, "GONE": 2}
# host -> shoe
COMMANDS = {"ID": 0, "QST": 0, "ACK": 1, "RSND": 1, "LED": 2, "GATE": 1}
HEX_DIGITS = b"0123456789ABCDEF"   # the checksum's digits: upper case only (docs/shoe-protocol.md)
SEQ_MOD = 10000          # sequence numbers 0-9999, wrapping
# The furthest ahead of the last delivered event a frame's sequence number may be before the host
# believes it: the shoe keeps at least this many unacknowledged events to resend, so a larger jump
# cannot be recovered frame by frame and is far more likely a corrupt frame that passed the CRC.
MAX_GAP = 64


def crc16(data: bytes) -> int:
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def encode(kind, *fields) -> bytes:
    body = ",".join((kind,) + tuple(str(f) for f in fields)).encode("ascii")
    return b"$" + body + b"*" + f"{crc16(body):04X}".encode("ascii") + b"\r\n"


@dataclass(frozen=True)
class Frame:
    kind: str
    fields: tuple

    @property
    def seq(self):
        """The sequence number (event frames, HB, HELLO), else None."""
        if self.kind in EVENT_TYPES or self.kind in ("HB", "HELLO"):
            return int(self.fields[0])
        return None

    @property
    def boot(self):
        """HELLO only: the shoe's power-up count."""
        return int(self.fields[4]) if self.kind == "HELLO" else None


@dataclass(frozen=True)
class BadFrame:
    data: bytes
    reason: str


def decode(line: bytes):
    """One line without its end (starting at '$') -> Frame or BadFrame. Never raises."""
    if not line.startswith(b"$"):
        return BadFrame(line, "no '$' start")
    star = line.rfind(b"*")
    if star < 0 or len(line) - star != 5:
        return BadFrame(line, "no '*CCCC' checksum")
    body = line[1:star]
    check = line[star + 1:]
    # exactly as the spec writes it: int(x, 16) alone would also take 'f998', '+F99', '0xF9', 'F_98'
    if not all(c in HEX_DIGITS for c in check):
        return BadFrame(line, "checksum not four upper-case hex digits")
    try:
        text = body.decode("ascii")
    except ValueError:
        return BadFrame(line, "body not ASCII text")
    want = int(check, 16)
    if crc16(body) != want:
        return BadFrame(line, "checksum mismatch")
    parts = text.split(",")
    kind, fields = parts[0], tuple(parts[1:])
    arity = EVENT_TYPES.get(kind)
    if arity is not None:
        arity += 1
    else:
        arity = INFO_TYPES.get(kind, COMMANDS.get(kind))
        if arity is not None and kind in ("HB", "HELLO"):
            arity += 1
    if arity is None:
        return BadFrame(line, f"unknown frame type {kind!r}")
    if len(fields) != arity:
        return BadFrame(line, f"{kind} takes {arity} fields, got {len(fields)}")
    # Every number the host reads is checked here, so the session never meets one it cannot use.
    numeric = {"HELLO": (0, 4), "GONE": (0, 1)}.get(kind, (0,) if kind in EVENT_TYPES or kind == "HB" else ())
    for i in numeric:
        if not _digits(fields[i]):
            what = "boot count" if kind == "HELLO" and i == 4 else "sequence number"
            return BadFrame(line, f"bad {what} {fields[i]!r}")
        if (kind != "HELLO" or i == 0) and int(fields[i]) >= SEQ_MOD:
            return BadFrame(line, f"sequence number out of range: {fields[i]}")
    # a confidence is a number too: "-98" or "250" is not a low-confidence read but a frame the
    # host cannot read (the spec: 0-100, plain digits)
    if kind == "CARD" and not (_digits(fields[2]) and int(fields[2]) <= 100):
        return BadFrame(line, f"bad confidence {fields[2]!r} (0-100)")
    return Frame(kind, fields)


def _digits(text):
    """Plain decimal digits (no sign, space or underscore that int() would accept), bounded."""
    return 0 < len(text) <= 9 and text.isascii() and text.isdigit()


class FrameParser:
    """Bytes in, frames out. Resynchronises on every '$'; anything that is not a whole valid
    frame is returned as a BadFrame (one per run of garbage) and counted."""

    def __init__(self):
        self.buf = bytearray()
        self.in_frame = False
        self.bad = 0

    def feed(self, data: bytes):
        out = []
        for b in data:
            if b == 0x24:  # '$' starts a frame, whatever came before
                if self.buf:
                    out.append(self._bad(bytes(self.buf), "interrupted by a new frame"))
                self.buf = bytearray(b"$")
                self.in_frame = True
            elif b in (0x0A, 0x0D):
                if self.buf:
                    line = bytes(self.buf)
                    self.buf = bytearray()
                    if self.in_frame:
                        f = decode(line)
                        if isinstance(f, BadFrame):
                            self.bad += 1
                        out.append(f)
                    else:
                        out.append(self._bad(line, "garbage between frames"))
                self.in_frame = False
            else:
                self.buf.append(b)
                if len(self.buf) > MAX_FRAME:
                    out.append(self._bad(bytes(self.buf), "line too long"))
                    self.buf = bytearray()
                    self.in_frame = False
        return out

    def _bad(self, data, reason):
        self.bad += 1
        return BadFrame(data, reason)


def seq_after(a, b):
    """True when sequence number b comes after a (modulo SEQ_MOD, within half the range)."""
    return 0 < (b - a) % SEQ_MOD < SEQ_MOD // 2


def seq_range(a, b):
    """The sequence numbers after a up to b, inclusive."""
    if not 0 <= b < SEQ_MOD:
        raise ValueError(f"sequence number out of range: {b}")   # would never be reached
    out = []
    n = (a + 1) % SEQ_MOD
    while True:
        out.append(n)
        if n == b:
            return out
        n = (n + 1) % SEQ_MOD
