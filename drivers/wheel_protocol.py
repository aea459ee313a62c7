"""Cammegh SlingShot 2 (SS2) roulette wheel controller: packet parsing (developer guide V2.10;
`shared/fixtures/cammegh/README.md`). Pure: lines in, parsed packets out, never raises."""
import re
from dataclasses import dataclass

STATES = {1: "before_game", 2: "place_bets", 3: "ball_in_rim", 4: "no_more_bets",
          5: "winning_number", 6: "close_table", 7: "ball_not_detected"}
FLAGS = {1: "ball not detected", 2: "ball turning with the wheel", 4: "sensor/motor/encoder fault",
         8: "failed launch"}

_STATUS = re.compile(r"\*X;([1-7]);(\d{3});( \d|\d\d|  );([0-9A-Fa-f]);(\d{3});([01])")
_NUMBER = re.compile(r" ?(\d{1,2}|000?0?)")
_REPLY = re.compile(r"\*([A-Za-z]) ?(.*)")


@dataclass(frozen=True)
class Status:
    state: int
    spin: int
    number: int | None      # the last winning number, None before the first spin
    flags: int
    rpm: float
    direction: str          # "clockwise" / "anticlockwise"

    @property
    def name(self):
        return STATES[self.state]


@dataclass(frozen=True)
class NumberLine:
    number: int | None      # None for the double-zero codes (00, 000, 0000): not on this wheel
    raw: str


@dataclass(frozen=True)
class Reply:
    command: str
    text: str


@dataclass(frozen=True)
class Garbled:
    raw: str
    reason: str


def parse_line(line):
    """One line without its end -> Status | NumberLine | Reply | Garbled."""
    if not isinstance(line, str):
        try:
            line = line.decode("ascii")
        except UnicodeDecodeError:
            return Garbled(repr(line), "not ASCII")
    m = _STATUS.fullmatch(line)
    if m:
        num = m.group(3)
        n = None if num == "  " else int(num)
        if n is not None and n > 36:
            return Garbled(line, f"winning number {n} is not on a single-zero wheel")
        return Status(int(m.group(1)), int(m.group(2)), n, int(m.group(4), 16),
                      int(m.group(5)) / 10, "clockwise" if m.group(6) == "0" else "anticlockwise")
    if line.startswith("*X"):
        return Garbled(line, "malformed status packet")
    m = _NUMBER.fullmatch(line)
    if m:
        digits = m.group(1)
        if set(digits) == {"0"} and len(digits) >= 2:
            return NumberLine(None, line)   # 00 / 38 / 39 on double-zero units
        n = int(digits)
        if n > 36:
            return Garbled(line, f"winning number {n} is not on a single-zero wheel")
        return NumberLine(n, line)
    m = _REPLY.fullmatch(line)
    if m:
        return Reply(m.group(1), m.group(2))
    return Garbled(line, "unknown line")


class LineSplitter:
    """Bytes -> lines on CR and/or LF."""

    def __init__(self, limit=256):
        self.buf = bytearray()
        self.limit = limit

    def feed(self, data):
        lines = []
        for b in data:
            if b in (0x0A, 0x0D):
                if self.buf:
                    lines.append(bytes(self.buf))
                    self.buf = bytearray()
            elif len(self.buf) < self.limit:
                self.buf.append(b)
        return lines
