"""The daemon's configuration: TOML, read once, validated strictly.

Every error names its section and key; `check_config` collects them all (for
`dealer-station check-config`), `load_config` raises on the first list of them.
"""
import re
import tomllib
from pathlib import Path

from drivers.section import Key, Section, check_value, name, show


class ConfigError(ValueError):
    def __init__(self, errors):
        self.errors = errors
        super().__init__("\n".join(errors))


TABLE_ID = r"^[a-z0-9][a-z0-9-]{0,31}$"

TABLE = Section("table", {
    "id": Key(str, required=True, pattern=TABLE_ID),
    "profile": Key(str, required=True),
    "calibration": Key(str, None),
})
PATHS = Section("paths", {"journal": Key(str, "/var/lib/dealer-station/journal.sqlite")})


def sections():
    """Every section, from the module that owns it (imported here, when a config is read: none of
    them imports OpenCV or gpiozero)."""
    from drivers import panel, shoe_section, wheel
    from drivers.camera import section as camera

    from . import archive, bridge, integrity, metrics, mqtt_link, station_settings
    from .console import config_check as console
    return (TABLE, shoe_section.CONFIG, mqtt_link.CONFIG, station_settings.CONFIG,
            station_settings.COMMANDS, PATHS,
            panel.CONFIG, wheel.CONFIG, camera.CONFIG, archive.CONFIG, bridge.CONFIG,
            integrity.CONFIG, integrity.STAFF, metrics.CONFIG, console.CONFIG)


def schema():
    """{section: {key: Key}}, in the order a config file is checked."""
    return {s.name: s.keys for s in sections()}


def _names_any(text, keys):
    """Whether `text` names one of the `section.key` names (as a whole name)."""
    return any(re.search(rf"(?<![\w.]){re.escape(k)}(?![\w])", text) for k in keys)


def check_config(data):
    """Validate a parsed TOML mapping. Returns (config dict, list of errors)."""
    owners = sections()
    key_errors = []
    cfg = {}
    known = [o.name for o in owners]
    for section in data:
        if section not in known:
            key_errors.append(f"{name(section)}: unknown section (known: {', '.join(known)})")
    for owner in owners:
        section, keys = owner.name, owner.keys
        given = data.get(section, {})
        if not isinstance(given, dict):
            key_errors.append(f"{section}: expected a table, got {show(given)}")
            given = {}
        out = {}
        for key in given:
            if key not in keys:
                key_errors.append(f"{section}.{name(key)}: unknown key (known: {', '.join(keys)})")
        for key, spec in keys.items():
            # A key in error takes its default (None if required), so the checks across keys
            # below always see values of the right type.
            out[key] = spec.default
            if key in given:
                v = check_value(section, key, spec, given[key], key_errors)
                if v is not None:
                    out[key] = v
            elif spec.required:
                key_errors.append(f"{section}.{key}: missing")
        cfg[section] = out
    errors = []
    for owner in owners:
        if owner.check:
            owner.check(cfg, errors)
    # A key already in error is not blamed a second time for what follows from it, and no other
    # key is judged against its default ("shoe.url: required when shoe.protocol is 'v1'" for a
    # file that wrote protocol = "v2"): a check naming a key in error is left out.
    bad = {e.split(":", 1)[0] for e in key_errors}
    errors = key_errors + [e for e in errors if e.split(":", 1)[0] not in bad
                           and not _names_any(e.split(":", 1)[1], bad)]
    # the profile is read whatever else is wrong (the README promises every error at once),
    # unless its own key is in error
    if cfg.get("table", {}).get("profile") is not None and "table.profile" not in bad:
        from .profiles_file import load_profile
        from controller.profiles import ProfileError
        try:
            cfg["profile"] = load_profile(cfg["table"]["profile"])
        except ProfileError as e:
            errors += [f"table.profile: {x}" for x in e.errors]    # every one, not the first
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
    except ValueError as e:     # TOMLDecodeError, or an integer past 4300 digits
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
    except ValueError as e:     # TOMLDecodeError, or an integer past 4300 digits
        raise ConfigError([f"{path}: not valid TOML: {e}"]) from None


def read_codebook(path):
    """The [codebook] table of a calibration file."""
    from drivers.codebook import codebook_from_mapping
    try:
        return codebook_from_mapping(read_calibration(path).get("codebook"), where=f"{path}: codebook")
    except ValueError as e:
        raise ConfigError([str(e)]) from None
