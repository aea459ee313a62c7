"""Configuration reload on SIGHUP: what may change under a running table, and what needs a
restart. Timers and journal archiving are read afresh at each use, so a new value takes effect
at the next decision timer or archive; everything else (devices, broker, paths, profile, metrics)
is opened once at start, and a change to it is refused by name, the old value kept."""

# sections whose keys apply without a restart
SAFE = ("timers", "archive", "staff", "commands")


def _flat(cfg):
    out = {}
    for section, values in cfg.items():
        if isinstance(values, dict):
            for k, v in values.items():
                out[f"{section}.{k}"] = v
        else:
            out[section] = getattr(values, "name", values)     # the profile: by its name
    return out


def plan(old, new):
    """(merged configuration, [(key, old value, new value)] applied, [key] needing a restart)."""
    a, b = _flat(old), _flat(new)
    changed = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    applied = [(k, a.get(k), b.get(k)) for k in changed if k.split(".")[0] in SAFE]
    refused = [k for k in changed if k.split(".")[0] not in SAFE]
    merged = {s: (dict(v) if isinstance(v, dict) else v) for s, v in old.items()}
    for k, _, value in applied:
        section, key = k.split(".", 1)
        merged[section][key] = value
    return merged, applied, refused
