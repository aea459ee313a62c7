"""Scratch directories of the virtual devices and table-sim that a SIGKILL cannot leave behind
for long: each is named with its owner's PID, and the next one made removes those whose owner has
died (a killed process cannot clean up after itself, and a directory cannot die with it)."""
import os
import re
import shutil
import tempfile


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:         # another user's: alive
        return True
    return True


def stale(prefix, folder=None):
    """The `prefix-PID-*` directories in `folder` whose PID is no longer running."""
    folder = folder or tempfile.gettempdir()
    rx = re.compile(re.escape(prefix) + r"-(\d+)-[^/]+$")
    out = []
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        m = rx.match(name)
        path = os.path.join(folder, name)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))) \
                and os.path.isdir(path) and not os.path.islink(path):
            out.append(path)
    return out


def scratch_dir(prefix, folder=None):
    """A new `prefix-PID-XXXXXXXX` directory, after removing the ones killed owners left."""
    for path in stale(prefix, folder):
        shutil.rmtree(path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{prefix}-{os.getpid()}-", dir=folder)


KEPT_RUNS = 20


def prune_kept(prefix, keep=KEPT_RUNS, folder=None):
    """Remove the files `prefix-YYYYmmdd-HHMMSS-PID-*` (what a finished run keeps for its user:
    table-sim's daemon log and public key) of all but the newest `keep` runs whose PID no longer
    runs. Kept on purpose, they would otherwise fill /tmp on a machine that runs it for months.
    Returns the paths removed."""
    folder = folder or tempfile.gettempdir()
    rx = re.compile(re.escape(prefix) + r"-(\d{8}-\d{6})-(\d+)-[^/]+$")
    runs = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    for name in names:
        m = rx.match(name)
        path = os.path.join(folder, name)
        if m and os.path.isfile(path) and not os.path.islink(path):
            runs.setdefault((m.group(1), int(m.group(2))), []).append(path)
    removed = []
    for stamp, pid in sorted(runs, reverse=True)[keep:]:
        if pid != os.getpid() and not _alive(pid):
            for path in runs[(stamp, pid)]:
                try:
                    os.unlink(path)
                    removed.append(path)
                except OSError:
                    pass
    return removed
