"""A config section as the module that uses it declares it (Klipper's habit): its keys with type,
default and range, and the checks across keys. `dealer_station.config` only gathers the sections
and reports every error by section and key; the unit conversions happen in the owner's `build`.

Lives in drivers/ because drivers are the lowest layer that owns sections; nothing here imports
anything heavier than the standard library."""
import re
from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class Section:
    name: str
    keys: dict
    # check(cfg, errors): cross-key checks; cfg holds every section, each key already typed
    check: object = field(default=None, compare=False)


def show(v, secret=False):
    """A value as an error shows it: one line, bounded, and never a secret."""
    if secret:
        name = type(v).__name__
        return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"
    # in the file's own words: TOML says true and false, not Python's True and False
    r = {True: "true", False: "false"}[v] if isinstance(v, bool) else repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def name(s):
    """A section or key name from the file, safe to print on one line."""
    return s if s.isprintable() and len(s) <= 60 else repr(s[:60])


def check_value(section, key, spec, v, errors):
    """The value if it fits the key, else None with the error appended."""
    where = f"{section}.{key}"
    if spec.kind is float and isinstance(v, int) and not isinstance(v, bool):
        try:
            v = float(v)
        except OverflowError:
            # TOML integers have no bound here: one past the largest float raised OverflowError,
            # a traceback instead of the key's error (cold trial)
            errors.append(f"{where}: must be {spec.lo:g}-{spec.hi:g}, got {show(v, spec.secret)}"
                          if spec.lo is not None else f"{where}: too large, got {show(v, spec.secret)}")
            return None
    if spec.kind is int and isinstance(v, bool) or not isinstance(v, spec.kind):
        errors.append(f"{where}: expected {spec.kind.__name__}, got {show(v, spec.secret)}")
        return None
    if spec.choices is not None and v not in spec.choices:
        errors.append(f"{where}: must be one of {', '.join(map(str, spec.choices))}, "
                      f"got {show(v, spec.secret)}")
        return None
    if spec.lo is not None and not (spec.lo <= v <= spec.hi):
        errors.append(f"{where}: must be {spec.lo:g}-{spec.hi:g}, got {show(v, spec.secret)}")
        return None
    if spec.pattern is not None and not re.match(spec.pattern, v):
        errors.append(f"{where}: {show(v, spec.secret)} does not match {spec.pattern}")
        return None
    return v
