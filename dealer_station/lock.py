"""One process per journal: an exclusive flock on `<journal>.lock`, holding the holder's PID.

Two daemons on one journal take over each other's MQTT session and race for the outbox's
sequence numbers, so the second must stop before it opens anything. flock is released by the
kernel when the holder dies (even by SIGKILL): a stale lock file never blocks a restart.
"""
import fcntl
import os


class LockedError(RuntimeError):
    pass


class InstanceLock:
    def __init__(self, journal_path):
        self.path = os.path.realpath(journal_path) + ".lock"
        self.fd = None

    def acquire(self):
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # the first line (the daemon notes more below it for `status`)
            holder = (os.pread(fd, 32, 0).decode("ascii", "replace").split("\n")[0].strip()
                      or "unknown")
            os.close(fd)
            raise LockedError(f"{self.path[:-5]} is in use by another dealer-station process "
                              f"(pid {holder}): one daemon per journal; stop that one first") from None
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def note(self, line):
        """Add a line for `dealer-station status` (where the metrics endpoint really listens:
        `[metrics] port = 0` takes any free port, which only the daemon knows)."""
        if self.fd is not None:
            os.lseek(self.fd, 0, os.SEEK_END)
            os.write(self.fd, f"{line}\n".encode())

    def release(self):
        if self.fd is not None:
            os.close(self.fd)   # closing the descriptor drops the flock
            self.fd = None


def flock_holders(path, locks="/proc/locks"):
    """PIDs holding a flock on `path` (a lock file, a serial port opened exclusively), from
    /proc/locks: it needs no permission and takes no lock (trying the flock ourselves could make
    a daemon starting at that moment fail)."""
    try:
        st = os.stat(path)
        with open(locks) as f:
            table = f.read()
    except OSError:
        return []
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return [w[4] for w in (x.split() for x in table.splitlines())
            if len(w) > 5 and w[1] == "FLOCK" and w[5] == key]


def held(journal_path, locks="/proc/locks"):
    """(pid, notes) of the process holding the journal's lock, or None when no process does."""
    path = os.path.realpath(journal_path) + ".lock"
    pids = flock_holders(path, locks)
    if not pids:
        return None
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:          # the service user's file (0600): running, its notes unread
        return pids[0], {}
    notes = dict(x.split(" ", 1) for x in lines[1:] if " " in x)
    return (lines[0].strip() if lines else "?"), notes
