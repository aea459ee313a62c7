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
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
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

    def release(self):
        if self.fd is not None:
            os.close(self.fd)   # closing the descriptor drops the flock
            self.fd = None
