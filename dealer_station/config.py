"""The daemon's configuration: TOML, read once, validated strictly.

Every error names its section and key; `check_config` collects them all (for
`dealer-station check-config`), `load_config` raises on the first list of them.
"""
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path


class ConfigError(ValueError):
    def __init__(self, errors):
        self.errors = errors
        super().__init__("\n".join(errors))


@dataclass(frozen=True)
class Key:
    kind: type
    default: object = None
    required: bool = False
    lo: float | None = None
    hi: float | None = None
    choices: tuple | None = None
    pattern: str | None = None
    secret: bool = False          # never echoed in an error


TABLE_ID = r"^[a-z0-9][a-z0-9-]{0,31}$"

SCHEMA = {
    "table": {
        "id": Key(str, required=True, pattern=TABLE_ID),
        "profile": Key(str, required=True),
        "calibration": Key(str, None),
    },
    "shoe": {
        "protocol": Key(str, "v1", choices=("v1", "line", "hid", "none")),
        "url": Key(str, None),
        "baudrate": Key(int, 115200, choices=(9600, 19200, 38400, 57600, 115200, 230400)),
        "min_confidence": Key(int, 90, lo=0, hi=100),
        "resend_timeout_ms": Key(int, 250, lo=20, hi=5000),
        "stall_timeout_s": Key(float, 3.0, lo=0.5, hi=60),
        "double_fire_ms": Key(int, 300, lo=0, hi=5000),
        "cut_payload": Key(str, None),
        "layout": Key(str, "us", choices=("us", "uk", "de")),        # hid: the scanner's keyboard
        "suffix": Key(str, "enter", choices=("enter", "tab")),       # hid: the key ending a code
        "code_timeout_ms": Key(int, 100, lo=10, hi=2000),            # hid: last key -> suffix
    },
    "broker": {
        "host": Key(str, "127.0.0.1", pattern=r"^[A-Za-z0-9._:\[\]-]{1,253}$"),
        "port": Key(int, 1883, lo=1, hi=65535),
        "username": Key(str, None),
        "password": Key(str, None, secret=True),
        "password_file": Key(str, None),
        "tls": Key(bool, False),
        "ca_file": Key(str, None),
        "cert_file": Key(str, None),
        "key_file": Key(str, None),
        "keepalive_s": Key(int, 15, lo=5, hi=600),
        "session_expiry_s": Key(int, 86400, lo=60, hi=7 * 86400),
        "message_expiry_s": Key(int, 86400, lo=60, hi=7 * 86400),
        "topic_prefix": Key(str, "dealer-station/v1", pattern=r"^[A-Za-z0-9_/-]{1,64}$"),
        "reconnect_min_s": Key(int, 1, lo=1, hi=60),
        "reconnect_max_s": Key(int, 10, lo=1, hi=600),
        "inflight": Key(int, 100, lo=1, hi=1000),
    },
    "timers": {
        "decision_s": Key(float, 20.0, lo=0, hi=600),
        "insurance_s": Key(float, 10.0, lo=0, hi=600),
        "void_after_outage_s": Key(float, 600.0, lo=0, hi=86400),
    },
    "paths": {
        "journal": Key(str, "/var/lib/dealer-station/journal.sqlite"),
    },
    "panel": {
        "enabled": Key(bool, False),
        "pin_factory": Key(str, "lgpio", choices=("lgpio", "native", "mock")),
        "hold_s": Key(float, 1.0, lo=0.2, hi=5.0),
        "bounce_ms": Key(int, 50, lo=0, hi=500),
        "pins": Key(dict, None),
        "mock_socket": Key(str, None),
    },
    "wheel": {
        "enabled": Key(bool, False),
        "url": Key(str, None),
        "baudrate": Key(int, 9600, choices=(9600, 19200, 38400, 57600, 115200)),
        "poll_s": Key(float, 0.0, lo=0, hi=5),
        "failed_launch_s": Key(float, 3.0, lo=0.05, hi=60),
        "no_ball_s": Key(float, 5.0, lo=0.05, hi=120),
        "auto_start": Key(bool, True),
    },
    "camera": {
        "enabled": Key(bool, False),
        "source": Key(str, "/dev/video0"),
        "mode": Key(str, "barcode", choices=("barcode", "visual")),
        "decoder": Key(str, "zxing", choices=("zxing", "pyzbar")),
        "symbology": Key(str, "qrcode", choices=("qrcode", "code128", "datamatrix")),
        "templates": Key(str, None),
        "stable_frames": Key(int, 3, lo=1, hi=30),
        "gone_frames": Key(int, 8, lo=1, hi=300),
    },
    # journal archival (docs/install.md): at each new shoe (roulette: every keep_rounds rounds)
    "archive": {
        "enabled": Key(bool, False),
        "dir": Key(str, "/var/lib/dealer-station/archive"),
        "keep_shoes": Key(int, 2, lo=1, hi=100),
        "keep_rounds": Key(int, 1000, lo=10, hi=1_000_000),
    },
    # game integrity (docs/install.md, "Keys"): the events' signing key, the installed files'
    # hashes checked at start
    "integrity": {
        "signing_key": Key(str, None),
        "manifest": Key(str, None),
    },
    # staff and their roles (controller rights: dealer_station/rights.py); absent: not enforced
    "staff": {
        "dealer": Key(list, []),
        "supervisor": Key(list, []),
        "system": Key(list, []),
        "require_login": Key(bool, True),
        "reason_codes": Key(list, []),
    },
    "metrics": {
        "enabled": Key(bool, True),
        "bind": Key(str, "127.0.0.1"),
        "port": Key(int, 9464, lo=0, hi=65535),
    },
}


def _show(v, secret=False):
    """A value as an error shows it: one line, bounded, and never a secret."""
    if secret:
        name = type(v).__name__
        return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _name(s):
    """A section or key name from the file, safe to print on one line."""
    return s if s.isprintable() and len(s) <= 60 else repr(s[:60])


def _check(section, key, spec, v, errors):
    where = f"{section}.{key}"
    if spec.kind is float and isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    if spec.kind is int and isinstance(v, bool) or not isinstance(v, spec.kind):
        errors.append(f"{where}: expected {spec.kind.__name__}, got {_show(v, spec.secret)}")
        return None
    if spec.choices is not None and v not in spec.choices:
        errors.append(f"{where}: must be one of {', '.join(map(str, spec.choices))}, "
                      f"got {_show(v, spec.secret)}")
        return None
    if spec.lo is not None and not (spec.lo <= v <= spec.hi):
        errors.append(f"{where}: must be {spec.lo:g}-{spec.hi:g}, got {_show(v, spec.secret)}")
        return None
    if spec.pattern is not None and not re.match(spec.pattern, v):
        errors.append(f"{where}: {_show(v, spec.secret)} does not match {spec.pattern}")
        return None
    return v


def check_config(data):
    """Validate a parsed TOML mapping. Returns (config dict, list of errors)."""
    key_errors = []
    cfg = {}
    for section in data:
        if section not in SCHEMA:
            key_errors.append(f"{_name(section)}: unknown section (known: {', '.join(SCHEMA)})")
    for section, keys in SCHEMA.items():
        given = data.get(section, {})
        if not isinstance(given, dict):
            key_errors.append(f"{section}: expected a table, got {_show(given)}")
            given = {}
        out = {}
        for key in given:
            if key not in keys:
                key_errors.append(f"{section}.{_name(key)}: unknown key (known: {', '.join(keys)})")
        for key, spec in keys.items():
            # A key in error takes its default (None if required), so the checks across keys
            # below always see values of the right type.
            out[key] = spec.default
            if key in given:
                v = _check(section, key, spec, given[key], key_errors)
                if v is not None:
                    out[key] = v
            elif spec.required:
                key_errors.append(f"{section}.{key}: missing")
        cfg[section] = out
    errors = []
    shoe, broker = cfg["shoe"], cfg["broker"]
    if shoe["protocol"] != "none" and not shoe["url"]:
        errors.append(f"shoe.url: required when shoe.protocol is {shoe['protocol']!r}")
    if shoe["protocol"] in ("line", "hid") and not cfg["table"].get("calibration"):
        errors.append(f"table.calibration: {shoe['protocol']} mode needs the codebook of a calibration file")
    if broker["tls"] and not broker["ca_file"]:
        errors.append("broker.ca_file: required when broker.tls is true")
    if bool(broker["cert_file"]) != bool(broker["key_file"]):
        errors.append("broker.key_file: a client certificate needs both cert_file and key_file")
    if broker["password"] and broker["password_file"]:
        errors.append("broker.password_file: give password or password_file, not both")
    if (broker["password"] or broker["password_file"]) and not broker["username"]:
        errors.append("broker.username: a password needs a username")
    panel = cfg["panel"]
    if panel["enabled"]:
        from drivers.panel import BUTTONS, LIGHTS, SEAT_LIGHTS
        pins = panel["pins"] or {}
        if not pins:
            errors.append("panel.pins: a table of part = GPIO number is needed when the panel is enabled")
        for name, pin in pins.items():
            if name not in BUTTONS + LIGHTS + SEAT_LIGHTS + ("buzzer",):
                errors.append(f"panel.pins.{_name(name)}: unknown part (known: "
                              f"{', '.join(BUTTONS + LIGHTS + SEAT_LIGHTS + ('buzzer',))})")
            elif not isinstance(pin, int) or isinstance(pin, bool) or not 0 <= pin <= 27:
                errors.append(f"panel.pins.{name}: a BCM GPIO number 0-27, got {_show(pin)}")
        if panel["mock_socket"] and panel["pin_factory"] != "mock":
            errors.append("panel.mock_socket: only mock pins are driven through a socket "
                          f"(pin_factory is {panel['pin_factory']!r})")
        numbers = [p for p in pins.values() if isinstance(p, int)]
        if len(set(numbers)) != len(numbers):
            errors.append("panel.pins: a GPIO pin is given to two parts")
    wheel = cfg["wheel"]
    if wheel["enabled"] and not wheel["url"]:
        errors.append("wheel.url: required when the wheel is enabled")
    if shoe["protocol"] != "none" and cfg["table"]["profile"] == "roulette":
        errors.append("shoe.protocol: a roulette table has no shoe: set none")
    cam = cfg["camera"]
    if cam["enabled"]:
        if not cfg["table"].get("calibration"):
            errors.append("table.calibration: the camera needs the zones of a calibration file")
        if cam["mode"] == "visual" and not cam["templates"]:
            errors.append("camera.templates: visual recognition needs the folder of templates")
        if cam["mode"] == "barcode" and cam["decoder"] == "pyzbar" and cam["symbology"] == "datamatrix":
            errors.append("camera.decoder: pyzbar cannot read DataMatrix, use zxing")
    if "staff" in data and isinstance(data["staff"], dict):
        from controller.rights import staff_errors
        errors += staff_errors(cfg["staff"])
    cfg["staff"]["enabled"] = "staff" in data
    if broker["reconnect_max_s"] < broker["reconnect_min_s"]:
        errors.append("broker.reconnect_max_s: must not be below reconnect_min_s")
    # A key already in error is not blamed a second time for what follows from it.
    bad = {e.split(":", 1)[0] for e in key_errors}
    errors = key_errors + [e for e in errors if e.split(":", 1)[0] not in bad]
    if not errors:
        from .profiles_file import load_profile
        from controller.profiles import ProfileError
        try:
            cfg["profile"] = load_profile(cfg["table"]["profile"])
        except ProfileError as e:
            errors.append(f"table.profile: {e}")
    return cfg, errors


def read_config(path):
    """Parse and validate a config file, then open and check every file it names (what `run`
    will open: config_files.py); raise ConfigError with every error."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise ConfigError([f"{path}: {e.strerror}"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"{path}: not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([f"{path}: not valid TOML: {e}"]) from None
    cfg, errors = check_config(data)
    if not errors:
        from .config_files import check_files
        errors = check_files(cfg)
    if errors:
        raise ConfigError(errors)
    return cfg


def read_calibration(path):
    """The calibration file: [codebook], [zones] (name = [[x, y], ...]), [camera] settings."""
    try:
        return tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise ConfigError([f"{path}: {e.strerror}"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"{path}: not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([f"{path}: not valid TOML: {e}"]) from None


def read_codebook(path):
    """The [codebook] table of a calibration file."""
    from drivers.codebook import codebook_from_mapping
    try:
        return codebook_from_mapping(read_calibration(path).get("codebook"), where=f"{path}: codebook")
    except ValueError as e:
        raise ConfigError([str(e)]) from None
