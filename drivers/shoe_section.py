"""The [shoe] section: which card source the table reads (protocol v1 shoe, a line-mode or a
keyboard-mode scanner, or none) and how; `build` makes its driver (imported only when used)."""
from .section import Key, Section

PROTOCOLS = ("v1", "line", "hid", "none")


def _check(cfg, errors):
    shoe = cfg["shoe"]
    if shoe["protocol"] != "none" and not shoe["url"]:
        errors.append(f"shoe.url: required when shoe.protocol is {shoe['protocol']!r}")
    if shoe["protocol"] in ("line", "hid") and not cfg["table"].get("calibration"):
        errors.append(f"table.calibration: {shoe['protocol']} mode needs the codebook of a calibration file")
    if shoe["protocol"] != "none" and cfg["table"]["profile"] == "roulette":
        errors.append("shoe.protocol: a roulette table has no shoe: set none")


CONFIG = Section("shoe", {
    "protocol": Key(str, "v1", choices=PROTOCOLS),
    "url": Key(str, None),
    "baudrate": Key(int, 115200, choices=(9600, 19200, 38400, 57600, 115200, 230400)),
    "min_confidence": Key(int, 90, lo=0, hi=100),
    "resend_timeout_ms": Key(int, 250, lo=20, hi=5000),
    "stall_timeout_s": Key(float, 3.0, lo=0.5, hi=60),
    "status_settle_ms": Key(int, 200, lo=0, hi=1000),    # v1: a STAT must hold this long
    "double_fire_ms": Key(int, 300, lo=0, hi=5000),
    "cut_payload": Key(str, None),
    "layout": Key(str, "us", choices=("us", "uk", "de")),        # hid: the scanner's keyboard
    "suffix": Key(str, "enter", choices=("enter", "tab")),       # hid: the key ending a code
    "code_timeout_ms": Key(int, 100, lo=10, hi=2000),            # hid: last key -> suffix
}, _check)


def build(c, codebook=None, resume=None):
    """The driver for a checked [shoe] section, or None (protocol none). `codebook()` reads the
    calibration's codebook (line and hid modes); `resume` is where a v1 shoe picks up."""
    settings = {"baudrate": c["baudrate"]}
    if c["protocol"] == "v1":
        from .shoe import ShoeDriver
        return ShoeDriver(c["url"], settings, min_confidence=c["min_confidence"],
                          resend_timeout=c["resend_timeout_ms"] / 1000,
                          stall_timeout=c["stall_timeout_s"], auto_ack=False, resume=resume,
                          status_settle=c["status_settle_ms"] / 1000)
    if c["protocol"] == "line":
        from .scanner import ScannerDriver
        return ScannerDriver(c["url"], codebook(), settings, c["double_fire_ms"] / 1000,
                             c["cut_payload"])
    if c["protocol"] == "hid":
        from .hid_scanner import HidScannerDriver
        return HidScannerDriver(c["url"], codebook(), c["layout"], c["suffix"],
                                c["code_timeout_ms"] / 1000, c["double_fire_ms"] / 1000,
                                c["cut_payload"])
    return None
