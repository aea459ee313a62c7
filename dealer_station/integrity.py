"""Software integrity: the installed files' hashes, recorded at install, checked at start.

`dealer-station manifest --out FILE` (run by scripts/install) writes one line per file of the
installed packages (`controller`, `drivers`, `calibration`, `dealer_station`):

    <sha256 hex>  <path relative to the packages' folder>

The daemon, with `integrity.manifest` set, hashes the same files at start and refuses to open the
table when one differs, is missing or was added (a changed rule, a planted module): it publishes
the retained status `integrity_failed` naming the first such file and exits 3 (systemd does not
restart it: RestartPreventExitStatus=3). Byte-exact: a file is either the one installed or not.

Also the configuration's hash, written with each start into the audit log (the round export
names the software and configuration that played a round).
"""
import dataclasses
import hashlib
import json
import os
from pathlib import Path

from drivers.section import Key, Section

# game integrity (docs/install.md, "Keys and software integrity"): the events' signing key, the
# installed files' hashes checked at start
CONFIG = Section("integrity", {
    "signing_key": Key(str, None),
    "manifest": Key(str, None),
})


def _staff_check(cfg, errors):
    from controller.rights import staff_errors
    errors += staff_errors(cfg["staff"])


# staff and their roles (controller/rights.py); enforced when a role names a login
STAFF = Section("staff", {
    "dealer": Key(list, []),
    "supervisor": Key(list, []),
    "system": Key(list, []),
    "require_login": Key(bool, True),
    "reason_codes": Key(list, []),
}, _staff_check)

PACKAGES = ("controller", "drivers", "calibration", "dealer_station")
# beside the packages: the console script's entry, which must load when the package does not
MODULES = ("dealer_station_main.py",)
SKIP_DIRS = {"__pycache__"}


class IntegrityError(RuntimeError):
    def __init__(self, file, why):
        super().__init__(f"{file}: {why}")
        self.file = file
        self.why = why


def packages_root():
    """The folder holding the packages (site-packages, or the source tree of an editable install)."""
    import dealer_station
    return Path(dealer_station.__file__).resolve().parent.parent


def _files(root):
    for pkg in PACKAGES:
        base = root / pkg
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
            for name in sorted(filenames):
                if name.endswith((".pyc", ".pyo")):
                    continue
                p = Path(dirpath) / name
                yield p.relative_to(root).as_posix(), p
    for name in MODULES:
        if (root / name).exists():     # missing: `check` names it, the manifest holding it
            yield name, root / name


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()


def manifest(root=None):
    """{relative path: sha256} of the installed files."""
    root = Path(root) if root else packages_root()
    return {rel: _sha256(p) for rel, p in _files(root)}


def write_manifest(out, root=None):
    m = manifest(root)
    text = "".join(f"{h}  {rel}\n" for rel, h in sorted(m.items()))
    tmp = f"{out}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    return len(m)


def read_manifest(path):
    want = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("  ", 1)
            if len(parts) != 2 or len(parts[0]) != 64:
                raise IntegrityError(path, f"line {i}: not '<sha256>  <file>'")
            want[parts[1]] = parts[0]
    return want


def check(manifest_path, root=None):
    """None when every installed file is the one recorded; else IntegrityError for the first
    (in path order) that differs, is missing, or is not in the manifest."""
    want = read_manifest(manifest_path)
    have = manifest(root)
    for rel in sorted(want.keys() | have.keys()):
        if rel not in have:
            raise IntegrityError(rel, "missing (it is in the manifest)")
        if rel not in want:
            raise IntegrityError(rel, "not in the manifest (a file added after the install)")
        if want[rel] != have[rel]:
            raise IntegrityError(rel, f"changed (sha256 {have[rel][:16]}..., installed "
                                      f"{want[rel][:16]}...)")
    return len(want)


def config_hash(cfg):
    """SHA-256 of the configuration in force (the validated values, not the file's comments)."""
    def default(o):
        if dataclasses.is_dataclass(o):
            return dataclasses.asdict(o)
        return repr(o)
    text = json.dumps(cfg, sort_keys=True, separators=(",", ":"), default=default)
    return hashlib.sha256(text.encode()).hexdigest()
