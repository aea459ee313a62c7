"""`shoe-calibrate`: set up and verify a table's shoe, scanner, decks and camera."""
import argparse
import os
import sys

from .shoe_tools import ToolError


def progress(done, total, what):
    """A count on the terminal (stderr), silent when it is not one (a log, a pipe, a test)."""
    if sys.stderr.isatty():
        print(f"\r{what}: {done}/{total}", end="", file=sys.stderr, flush=True)


def say(text):
    """A prompt for the technician: stderr, so stdout stays the result."""
    print(text, file=sys.stderr, flush=True)


def card_counter(total, what):
    """on_event for collect(): counts the cards (not the device's other events) as they come."""
    from drivers.events import CardRead, CardUnreadable
    n = [0]

    def tick(e):
        if isinstance(e, (CardRead, CardUnreadable)):
            n[0] += 1
            progress(n[0], total, what)
    tick.count = n
    return tick


def _check_port(a, protocol):
    from .port_check import check_port, claim
    device = getattr(a, "device", None) or ("shoe" if protocol == "v1" else "scanner")
    check_port(a.port, protocol, getattr(a, "baud", None), device)
    claim(a.port)           # kept until the command ends: no second run between check and open


def cmd_ports(a):
    from .port_check import check_port
    from .shoe_tools import list_input_devices, list_ports, probe
    ports = [(p, None, "") for p in a.port] if a.port else list_ports()
    inputs = [] if a.port else list_input_devices()
    if not ports and not inputs:
        print("no serial ports or USB keyboards found (is the shoe plugged in?)")
        return 1
    if not a.port:
        print("USB keyboards (keyboard-mode scanners):" + ("" if inputs else " none found"))
    for node, stable, name, looks in inputs:
        what = "looks like a barcode scanner" if looks else "a USB keyboard (a scanner may be one)"
        print(f"{stable or node}: keyboard-mode input device {name!r}, {what}; try it with "
              f"`shoe-calibrate monitor --device scanner --protocol hid --port {stable or node} "
              f"--codebook FILE`")
    if not a.port:
        print("serial ports:" + ("" if ports else " none found"))
    for dev, stable, desc in ports:
        check_port(dev)
        kind, baud, info = probe(dev, a.timeout)
        name = stable or dev
        if kind == "v1":
            print(f"{name}: dealer-station shoe (protocol v1) at {baud} baud: {info['model']} "
                  f"firmware {info['firmware']} serial {info['serial']}")
        elif kind == "line":
            print(f"{name}: barcode scanner (line mode) at {baud} baud, read {info!r}")
        else:
            print(f"{name}: nothing answered ({desc or 'unknown device'}); for a scanner, scan a "
                  f"card while probing")
    return 0


def load_codebook(path, required=True):
    """The [codebook] of a calibration file, or a ToolError saying what is wrong with it."""
    from drivers.codebook import CodebookError, codebook_from_mapping
    from .files import load
    if not path or not os.path.exists(path):
        if required:
            raise ToolError(f"{path}: no such calibration file (learn the codebook first: "
                            f"`shoe-calibrate learn-codebook`)")
        return None
    cb = load(path).get("codebook")
    if not cb:
        if required:
            raise ToolError(f"{path}: no [codebook] table (learn it first: "
                            f"`shoe-calibrate learn-codebook`)")
        return None
    try:
        return codebook_from_mapping(cb)
    except CodebookError as e:
        raise ToolError(f"{path}: {e}") from None


def _order(path):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError as e:
        raise ToolError(f"--order {path}: {e.strerror}") from None


def merge_codebook(old, new):
    """The codebook that adds `new` (one deck just learned) to `old` (the decks learned before):
    a shoe of several decks whose codes differ per deck is learned a deck at a time. A payload
    already there for another card is an error (the same code cannot name two cards)."""
    clashes = [f"{p!r} is already in the codebook as {old[p]}, this deck has it as {c}"
               for p, c in new.items() if p in old and old[p] != c]
    return {**old, **new}, clashes


def cmd_learn(a):
    from .files import save, writable
    from .shoe_tools import collect, learn_codebook
    from drivers.scanner import ScannerDriver
    from .shoe_tools import make_driver
    order = _order(a.order) if a.order else None
    want = 52 if order is None else len(order)
    # what would make the result unwritable is found now, not after the whole deck is scanned
    before = {} if a.replace else dict(writable(a.calibration).get("codebook") or {})
    seen = []
    _check_port(a, a.protocol)
    # an empty codebook: every payload comes back as unreadable with the payload in its detail
    drv = (make_driver("hid", a.port, {}, layout=a.layout, suffix=a.suffix) if a.protocol == "hid"
           else ScannerDriver(a.port, {}, {"baudrate": a.baud}, double_fire_window=0.3))
    events = collect(drv, count=want, idle=a.idle, on_event=card_counter(want, "scanned"),
                     on_ready=lambda: say(f"ready: scan the {want} cards of the reference deck "
                                          f"in the stated order ({a.order or 'As 2s .. Ks, Ah .. Kc'})"))
    if sys.stderr.isatty():
        print(file=sys.stderr)
    for _, e in events:
        seen.append(e.detail.get("payload"))
    book, errors = learn_codebook([p for p in seen if p], order, a.pattern)
    merged, clashes = merge_codebook(before, book)
    errors += clashes
    for err in errors[:12]:
        print(f"refused: {err}")
    if len(errors) > 12:
        print(f"refused: ... and {len(errors) - 12} more")
    if clashes and not a.keep_partial:
        print("codebook not written: these codes are in the codebook already for other cards "
              "(--replace starts a new codebook)")
        return 1
    if errors and not a.keep_partial:
        print("codebook not written: scan the reference deck again in the stated order")
        return 1
    if clashes:                        # --keep-partial: the codes learned before stay as they were
        merged = {**book, **before}
    save(a.calibration, {"codebook": merged}, "learn-codebook")
    added = len(merged) - len(before)
    print(f"{a.calibration}: codebook of {len(merged)} payloads written ({added} added"
          + (f" to the {len(before)} learned before" if before else "") + ")")
    return 0


def _verify(a, passes=1):
    from .shoe_tools import make_driver
    from .files import report_folder
    # everything that could fail after the pass is checked before `ready:`
    book = load_codebook(a.calibration, required=a.protocol in ("line", "hid"))
    _check_port(a, a.protocol)
    made = report_folder(a.report_dir)
    try:
        return _check_decks(a, passes, make_driver(a.protocol, a.port, book, a.baud, a.layout,
                                                   a.suffix))
    except ToolError:
        if made and not os.listdir(a.report_dir):
            os.rmdir(a.report_dir)      # no report was written: leave no empty folder either
        raise


def _check_decks(a, passes, drv):
    from .charts import bar_chart
    from .files import report, report_base
    from .shoe_tools import collect, verify
    from drivers.events import CardRead
    expected = 52 * a.decks * passes
    decks = a.decks * passes

    def complete(events):       # every card of the decks read: end soon, not after --idle
        return sum(1 for _, e in events if isinstance(e, CardRead)) >= expected and \
            not verify(events, decks)["missing"]
    events = collect(drv, count=expected + 50, idle=a.idle, on_event=card_counter(expected, "cards"),
                     answer_within=a.answer if a.protocol == "v1" else None, complete=complete,
                     on_ready=lambda: say(f"ready: pass the {expected} cards through the reader"))
    if sys.stderr.isatty():
        print(file=sys.stderr)
    res = verify(events, a.decks * passes)
    session = getattr(drv, "session", None)
    garbage = session.counts.get("bad_frames", session.counts.get("garbled", 0)) if session else 0
    if not res["reads"] and not res["foreign"] and garbage:
        raise ToolError(f"{a.port}: only undecodable bytes arrived ({garbage} bad frames): wrong "
                        f"baud rate? `shoe-calibrate ports --port {a.port}` finds it")
    name = "read-test" if passes > 1 else "verify-shoe"
    base = report_base(a.report_dir, name)
    times = [t for t, _ in events]
    gaps = [round(1000 * (b - t), 1) for t, b in zip(times, times[1:])]
    buckets = [0] * 10
    for g in gaps:
        buckets[min(9, int(g // 100))] += 1
    png = bar_chart(buckets, [f"{i * 100}" + ("+" if i == 9 else "") for i in range(10)],
                    f"Read intervals: {len(gaps)} between {res['reads']} cards",
                    base + "-read-intervals.png", xlabel="interval between reads (ms, from)",
                    ylabel="reads")
    lines = [f"- decks: {a.decks}" + (f" x {passes} passes" if passes > 1 else ""),
             f"- cards read: {res['reads']} of {res['cards_expected']}",
             f"- read rate: {100 * res['read_rate']:.2f}%",
             f"- unreadable passes: {res['unreadable']}",
             f"- read interval: p50 {res['interval_ms']['p50']} ms, p95 {res['interval_ms']['p95']} ms"]
    problems = ([f"- missing: {c} x{n}" for c, n in res["missing"].items()]
                + [f"- extra: {c} x{n}" for c, n in res["extra"].items()]
                + [f"- foreign: {p}" for p in res["foreign"]])
    if passes > 1:
        res["ok"] = res["read_rate"] >= a.threshold and not res["extra"] and not res["foreign"] \
            and not res["missing"]
        if res["read_rate"] < a.threshold:
            problems.append(f"- read rate {100 * res['read_rate']:.2f}% below the threshold "
                            f"{100 * a.threshold:.2f}%")
    elif res["unreadable"]:
        # a FAIL must say why: an unreadable pass may have been any card, an extra one too
        problems.append(f"- unreadable passes: {res['unreadable']} (each may have been any card)")
    problems = problems or ["- none"]
    path = report(base, f"{'Read test' if passes > 1 else 'Shoe check'} ({a.port})",
                  a.operator, res, [("Figures", lines), ("Missing, extra and foreign cards", problems)],
                  [png])
    print(("PASS" if res["ok"] else "FAIL") + f": {res['reads']} cards read; " +
          "; ".join(p.lstrip("- ") for p in problems) + f"; report {path}")
    return 0 if res["ok"] else 1


def cmd_verify(a):
    return _verify(a)


def cmd_read_test(a):
    return _verify(a, a.passes)


def cmd_monitor(a):
    from .shoe_tools import monitor
    book = None
    if a.codebook:
        book = load_codebook(a.codebook)
    if a.device == "scanner" and book is None:
        raise ToolError("--codebook FILE: the scanner's payloads are read through the codebook")
    _check_port(a, a.protocol or ("v1" if a.device == "shoe" else "line"))
    say(f"{a.port}: open; printing what the {a.device} sends (Ctrl-C ends)")
    monitor(a.device, a.port, book, lambda s: print(s, flush=True), a.json,
            protocol=a.protocol, layout=a.layout, suffix=a.suffix,
            answer_within=a.answer if a.device == "shoe" and a.protocol in (None, "v1") else None)
    return 0


def _scanner_options(s, protocols, default):
    s.add_argument("--protocol", choices=protocols, default=default,
                   help="hid: a keyboard-mode USB scanner, --port /dev/input/by-id/...-event-kbd")
    s.add_argument("--layout", choices=["us", "uk", "de"], default="us",
                   help="hid: the scanner's keyboard layout")
    s.add_argument("--suffix", choices=["enter", "tab"], default="enter",
                   help="hid: the key the scanner ends a code with")


def parser():
    p = argparse.ArgumentParser(prog="shoe-calibrate", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("ports", help="list serial ports and probe each for a shoe or scanner")
    s.add_argument("--port", action="append", default=[], help="probe this port (repeatable)")
    s.add_argument("--timeout", type=float, default=1.5)
    s.set_defaults(func=cmd_ports)
    s = sub.add_parser("learn-codebook", help="scan a reference deck in a stated order")
    s.add_argument("--port", required=True)
    s.add_argument("--baud", type=int, default=115200)
    s.add_argument("--order", help="a file with the cards in scanning order (default As 2s .. Kc)")
    s.add_argument("--pattern", help="regular expression every payload of this deck matches")
    s.add_argument("--calibration", default="calibration.toml")
    s.add_argument("--idle", type=float, default=10.0, help="seconds without a scan that end it")
    s.add_argument("--keep-partial", action="store_true")
    s.add_argument("--replace", action="store_true",
                   help="start a new codebook (default: this deck's codes are added to it)")
    _scanner_options(s, ["line", "hid"], "line")
    s.set_defaults(func=cmd_learn)
    for name, help_, func in (("verify-shoe", "check every card of N decks passes the reader", cmd_verify),
                              ("verify-deck", "check one deck", cmd_verify),
                              ("read-test", "repeated passes: read rate and misreads", cmd_read_test)):
        s = sub.add_parser(name, help=help_)
        s.add_argument("--port", required=True)
        _scanner_options(s, ["v1", "line", "hid"], "v1")
        s.add_argument("--baud", type=int, default=None)
        s.add_argument("--decks", type=int, default=1 if name == "verify-deck" else 8)
        s.add_argument("--calibration", default="calibration.toml", help="for the codebook (line mode)")
        s.add_argument("--operator", required=True, help="who ran the check (kept in the report)")
        s.add_argument("--report-dir", default="calibration-reports")
        s.add_argument("--idle", type=float, default=10.0)
        s.add_argument("--answer", type=float, default=3.0,
                       help="v1: seconds for the shoe to answer before the port is called silent")
        if name == "read-test":
            s.add_argument("--passes", type=int, default=3)
            s.add_argument("--threshold", type=float, default=0.995)
        s.set_defaults(func=func)
    s = sub.add_parser("monitor", help="print every event a device sends, through its driver")
    s.add_argument("--device", choices=["shoe", "scanner", "wheel"], required=True)
    s.add_argument("--port", required=True)
    s.add_argument("--codebook", help="a calibration file with the codebook (scanner)")
    s.add_argument("--json", action="store_true")
    s.add_argument("--answer", type=float, default=3.0,
                   help="shoe (v1): seconds for it to answer before the port is called silent")
    _scanner_options(s, ["v1", "line", "hid"], None)
    s.set_defaults(func=cmd_monitor)
    from .camera_cli import add_parser as add_camera_parser
    add_camera_parser(sub)
    return p


def main(argv=None):
    a = parser().parse_args(argv)
    try:
        return a.func(a)
    except ToolError as e:
        print(f"shoe-calibrate: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        from .port_check import release
        release()


if __name__ == "__main__":
    sys.exit(main())
