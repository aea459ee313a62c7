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
