"""Shoe and scanner steps of the calibration tool: find the port, learn the codebook, verify the
decks in the shoe, repeated read tests, and a monitor of what a device really sends. Every step
goes through the production drivers."""
import glob
import os
import queue
import re
import time
from collections import Counter

import serial

from controller.cards import CARDS
from drivers import shoe_protocol as sp
from drivers.events import CardRead, CardUnreadable, CutCard, DeviceState

BAUDS = (115200, 57600, 38400, 19200, 9600)


class ToolError(RuntimeError):
    """A clear error for the technician."""


def explain(e, port):
    text = str(e)
    if "ermission" in text:
        return (f"{port}: permission denied: add yourself to the dialout group "
                f"(sudo usermod -aG dialout $USER, then log in again)")
    if "busy" in text or "lock" in text:
        return f"{port}: port busy: is dealer-station (or another program) using it?"
    if "No such file" in text or "could not open" in text:
        return f"{port}: no such port (is the shoe plugged in?)"
    return f"{port}: {text}"


def list_ports():
    """[(device, stable name or None, description)] of the serial ports on this machine."""
    from serial.tools import list_ports as lp
    by_id = {os.path.realpath(p): p for p in glob.glob("/dev/serial/by-id/*")}
    return [(p.device, by_id.get(os.path.realpath(p.device)), p.description or "")
            for p in sorted(lp.comports(), key=lambda p: p.device)]


def probe(port, timeout=1.5, bauds=BAUDS):
    """What answers on `port`: ('v1', baud, hello fields) for a protocol-v1 shoe, ('line', baud,
    first line) for a barcode scanner (the technician scans a card while it listens), or
    (None, None, None)."""
    for baud in bauds:
        try:
            lock = {"exclusive": True} if port.startswith("/") else {}   # not under a reader
            s = serial.serial_for_url(port, baudrate=baud, timeout=0.05, **lock)
        except (serial.SerialException, OSError) as e:
            raise ToolError(explain(e, port)) from None
        try:
            s.reset_input_buffer()
            s.write(sp.encode("ID"))
            parser = sp.FrameParser()
            buf = b""
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                data = s.read(256)
                for f in parser.feed(data):
                    if isinstance(f, sp.Frame) and f.kind == "HELLO":
                        return "v1", baud, {"model": f.fields[1], "firmware": f.fields[2],
                                            "serial": f.fields[3], "boot": f.fields[4]}
                buf += data
                for line in re.split(rb"[\r\n]+", buf)[:-1]:
                    if line and not line.startswith(b"$") and line.isascii() and line.decode().isprintable():
                        return "line", baud, line.decode()
        finally:
            s.close()
    return None, None, None


def collect(driver, count=None, idle=3.0, total=600.0, on_event=None, answer_within=None,
            complete=None, grace=1.5, on_ready=None):
    """Run a started-on-demand driver, gathering card events until `count` cards, or `idle`
    seconds without one (from the start, then from the last card: the technician has
    finished), or `total` seconds. `answer_within`: seconds for the device to say anything
    (a v1 shoe answers its identity) before it is called silent. `complete(events)`: true when
    the deck is whole, which ends it after `grace` seconds more (for a trailing extra card)."""
    q = queue.Queue()
    driver.start(q.put)
    events = []
    t0 = last = time.monotonic()
    answered = answer_within is None
    ready = False
    try:
        while time.monotonic() - t0 < total:
            if not answered and time.monotonic() - t0 > answer_within:
                raise ToolError(f"{getattr(driver, 'url', 'the port')}: opened, but the device "
                                f"said nothing in {answer_within:g} s: wrong port or baud rate? "
                                f"(`shoe-calibrate ports --port PORT` probes it)")
            try:
                e = q.get(timeout=0.1)
            except queue.Empty:
                limit = grace if complete and events and complete(events) else idle
                if (answered and time.monotonic() - last > limit):
                    break      # nothing for `idle` seconds: the technician has finished
                continue
            if not isinstance(e, DeviceState) or answer_within is None:
                answered = True
            if answered and not ready:
                ready = True
                last = time.monotonic()
                if on_ready:
                    on_ready()
            if on_event:
                on_event(e)
            if isinstance(e, (CardRead, CardUnreadable, CutCard)):
                events.append((time.monotonic(), e))
                last = time.monotonic()
                if count is not None and sum(1 for _, x in events if not isinstance(x, CutCard)) >= count:
                    break
    finally:
        driver.close()
    return events


def list_input_devices(proc="/proc/bus/input/devices", dev="/dev/input"):
    """[(event node, stable name or None, device name, looks like a scanner)] of the USB
    keyboards on this machine: a keyboard-mode scanner is one to the kernel. Read from /proc,
    which needs no permission on the nodes."""
    try:
        text = open(proc).read()
    except OSError:
        return []
    stable = {os.path.realpath(p): p for p in glob.glob(os.path.join(dev, "by-id", "*-event-kbd"))}
    out = []
    for block in text.split("\n\n"):
        name = re.search(r'^N: Name="(.*)"$', block, re.M)
        handlers = re.search(r"^H: Handlers=(.*)$", block, re.M)
        if not name or not handlers or "Bus=0003" not in block:      # USB only
            continue
        words = handlers.group(1).split()
        event = next((w for w in words if w.startswith("event")), None)
        if "kbd" not in words or event is None:
            continue
        node = os.path.join(dev, event)
        link = stable.get(os.path.realpath(node))
        looks = bool(SCANNER_WORDS.search(name.group(1) + " " + (link or "")))
        out.append((node, link, name.group(1), looks))
    return out


SCANNER_WORDS = re.compile(r"scan|barcode|bar code|honeywell|zebra|symbol|datalogic|newland|"
                           r"netum|inateck|tera|eyoyo|metrologic|opticon|code ?reader", re.I)


def make_driver(protocol, port, codebook=None, baud=None, layout="us", suffix="enter"):
    settings = {"baudrate": baud} if baud else None
    if protocol == "hid":
        if codebook is None:
            raise ToolError("a keyboard-mode scanner needs the codebook (--codebook FILE)")
        from drivers.hid_scanner import HidScannerDriver
        return HidScannerDriver(port, codebook, layout=layout, suffix=suffix)
    if protocol == "v1":
        from drivers.shoe import ShoeDriver
        return ShoeDriver(port, settings, min_confidence=0)
    if protocol == "line":
        if codebook is None:
            raise ToolError("line mode needs the codebook (--codebook FILE)")
        from drivers.scanner import ScannerDriver
        return ScannerDriver(port, codebook, settings)
    raise ToolError(f"unknown protocol {protocol!r}: v1, line or hid")


CARD_AT_END = re.compile(r"([A2-9TJQK][shdc])$")


def named_cards(lines, rx=None):
    """The card each payload names, when the deck's codes name their cards: the pattern's
    `card` group, or else every payload ending in a card name, all different (D01-As, D01-Kh).
    None when the codes are opaque."""
    if rx is not None and "card" in rx.groupindex:
        names = [(m.group("card") if (m := rx.fullmatch(p)) else None) for p in lines]
        return names
    names = [(m.group(1) if (m := CARD_AT_END.search(p)) else None) for p in lines]
    if len(names) >= 2 and None not in names and len(set(names)) == len(names):
        return names
    return None


def learn_codebook(lines, order=None, pattern=None):
    """Map scanned payloads to the cards of `order` (the reference deck's stated order, default
    the standard order As 2s .. Ks Ah .. Kc). Refuses duplicates, payloads not of the deck's
    symbology (`pattern`, a regular expression the payloads must match), and, when the payloads
    name their cards, a payload whose card is not the one the order has at its place (the
    deck was scanned out of order: the codebook would deal wrong cards)."""
    order = list(order or CARDS)
    book, errors = {}, []
    rx = re.compile(pattern) if pattern else None
    names = named_cards(lines, rx)
    for i, payload in enumerate(lines):
        if i >= len(order):
            errors.append(f"scan {i + 1}: {payload!r}: more scans than cards in the stated order")
            continue
        if rx and not rx.fullmatch(payload):
            errors.append(f"scan {i + 1}: {payload!r} is not a code of this deck (pattern {pattern})")
        elif payload in book:
            errors.append(f"scan {i + 1}: {payload!r} was already scanned for {book[payload]}")
        elif names is not None and names[i] != order[i]:
            errors.append(f"scan {i + 1}: {payload!r} names {names[i]}, but the stated order has "
                          f"{order[i]} here: the deck is out of order")
        else:
            book[payload] = order[i]
    if len(lines) < len(order):
        errors.append(f"{len(order) - len(lines)} cards of the stated order were not scanned")
    return book, errors


def verify(events, decks):
    """The start-of-day check: every card of `decks` decks exactly once per deck."""
    counts = Counter()
    foreign, unreadable = [], []
    times = []
    for t, e in events:
        if isinstance(e, CardRead):
            counts[e.card] += 1
            times.append(t)
        elif isinstance(e, CardUnreadable):
            d = e.detail
            raw = d.get("payload") or (d.get("reason", "").split("not a card: ")[-1].strip("'")
                                       if "not a card" in d.get("reason", "") else None)
            if raw is not None:
                foreign.append(raw)       # not one of the 52, or a code not in the codebook
            else:
                unreadable.append(d.get("reason", "unreadable"))
    missing = {c: decks - counts[c] for c in CARDS if counts[c] < decks}
    extra = {c: counts[c] - decks for c in CARDS if counts[c] > decks}
    reads = sum(counts.values())
    passes = reads + len(unreadable) + len(foreign)
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    return {"decks": decks, "cards_expected": 52 * decks, "reads": reads,
            "missing": missing, "extra": extra, "foreign": foreign,
            "unreadable": len(unreadable), "read_rate": reads / passes if passes else 0.0,
            "interval_ms": {"p50": round(1000 * gaps[len(gaps) // 2], 1) if gaps else None,
                            "p95": round(1000 * gaps[int(len(gaps) * 0.95)], 1) if gaps else None},
            "ok": not missing and not extra and not foreign and not unreadable}


def describe(e):
    """One line for the monitor: what the device sent, decoded."""
    d = {"event": type(e).__name__}
    d.update({k: getattr(e, k) for k in getattr(e, "__dataclass_fields__", {})})
    return d


def monitor(device, port, codebook=None, out=print, json_lines=False, total=None, protocol=None,
            layout="us", suffix="enter", answer_within=None):
    """Print each decoded event as it arrives until stopped or the port closes. A keyboard-mode
    scanner that cannot be opened (missing, busy, not permitted) is an error, not a wait; so is
    a v1 shoe that says nothing (not even its identity) in `answer_within` seconds."""
    import json
    if device == "wheel":
        from drivers.wheel import WheelDriver
        driver = WheelDriver(port)
    else:
        protocol = protocol or ("v1" if device == "shoe" else "line")
        driver = make_driver(protocol, port, codebook, layout=layout, suffix=suffix)
    opened = False
    q = queue.Queue()
    driver.start(q.put)
    t0 = time.monotonic()
    answered = answer_within is None
    try:
        while total is None or time.monotonic() - t0 < total:
            if not answered and time.monotonic() - t0 > answer_within:
                raise ToolError(f"{port}: opened, but the device said nothing in "
                                f"{answer_within:g} s: wrong port or baud rate? "
                                f"(`shoe-calibrate ports --port {port}` probes it)")
            try:
                e = q.get(timeout=0.2)
            except queue.Empty:
                continue
            answered = answered or not isinstance(e, DeviceState)
            d = describe(e)
            out(json.dumps(d, default=str) if json_lines else
                " ".join(f"{k}={v}" for k, v in d.items()))
            if isinstance(e, DeviceState) and e.state == "connected":
                opened = True
            if isinstance(e, DeviceState) and e.state == "fault" and protocol == "hid" and not opened:
                raise ToolError(e.detail["reason"])
            if isinstance(e, DeviceState) and e.state == "disconnected":
                break     # the port closed
    except KeyboardInterrupt:
        pass
    finally:
        driver.close()


