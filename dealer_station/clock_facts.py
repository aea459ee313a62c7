"""What the shell knows of the wall clock, for the outage rule (station_alive.py): is it
synchronised, and which boot is this. The core gets both on every `Clock`; it has no I/O.

A Raspberry Pi has no real-time clock: after a power cut it boots with the time fake-hwclock or
systemd-timesyncd saved (or 1970) until NTP syncs, and an outage counted on that clock is wrong.

- Synchronised, as `timedatectl` says it (systemd's ntp_synced): the kernel's `maxerror` under
  16 s (adjtimex, read-only; STA_UNSYNC is no guide: chrony and timesyncd leave it set). The
  service's seccomp filter (`@system-service`, `~@privileged`: `@clock`) refuses even the read
  (EPERM), so there the answer is systemd-timesyncd's `/run/systemd/timesync/synchronized`,
  touched at each sync of this boot (/run is a tmpfs). With chrony or ntpd that file never
  appears: then systemd-timedated is asked over D-Bus (`busctl`, its NTPSynchronized: the same
  maxerror test, made outside the unit's filter), by a thread every TIMEDATED_EVERY_S, so the
  loop never waits on a subprocess. Nothing known: not synchronised (the core then never counts
  an outage across a reboot by the wall clock: no guess).
- The boot: the kernel's boot id, from the unit's `DEALER_STATION_BOOT_ID=%b` (ProcSubset=pid
  hides /proc/sys) or /proc/sys/kernel/random/boot_id; within one boot the monotonic clock
  measures an outage exactly, whatever the wall clock did.
"""
import ctypes
import ctypes.util
import os
import subprocess
import threading
import time

MAXERROR_UNSYNC_US = 16_000_000     # the kernel's NTP_PHASE_LIMIT: past it, unsynchronised
SYNC_FILE = "/run/systemd/timesync/synchronized"
BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
RECHECK_S = 1.0                     # the answer is kept this long (a syscall or a stat a second)
TIMEDATED = ("busctl", "--system", "--timeout=2", "get-property", "org.freedesktop.timedate1",
             "/org/freedesktop/timedate1", "org.freedesktop.timedate1", "NTPSynchronized")
TIMEDATED_EVERY_S = 5.0             # a subprocess: seconds apart, off the loop's thread


class Timex(ctypes.Structure):
    """The start of glibc's struct timex (native longs); the rest is room for the kernel."""
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long),
                ("status", ctypes.c_int), ("_rest", ctypes.c_char * 256)]


_libc = []


def _libc_adjtimex():
    """adjtimex(2) with modes 0 (reads, changes nothing): the kernel's maxerror in µs. Raises
    OSError when refused (a seccomp filter: EPERM)."""
    if not _libc:
        _libc.append(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True))
    tx = Timex()
    if _libc[0].adjtimex(ctypes.byref(tx)) < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return tx.maxerror


def timedated_synced(run=subprocess.run):
    """systemd-timedated's NTPSynchronized (`timedatectl`'s "System clock synchronized"): True,
    False, or None when it cannot be asked (no bus, no busctl, an answer not understood)."""
    try:
        r = run(TIMEDATED, capture_output=True, text=True, timeout=3)
    except (OSError, subprocess.SubprocessError):
        return None
    words = r.stdout.split() if r.returncode == 0 else []
    return {("b", "true"): True, ("b", "false"): False}.get(tuple(words))


class TimedatedPoll:
    """timedated's answer, asked by a daemon thread every `every` seconds once someone wants it
    (`value()` starts it); the last answer is kept (None until the first)."""

    def __init__(self, ask=timedated_synced, every=TIMEDATED_EVERY_S):
        self.ask, self.every = ask, every
        self.answer = None
        self.lock = threading.Lock()
        self.thread = None
        self.stop = threading.Event()

    def _run(self):
        while True:
            self.answer = self.ask()
            if self.stop.wait(self.every):
                return

    def value(self):
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="timedated", daemon=True)
                self.thread.start()
        return self.answer

    def close(self):
        self.stop.set()


TIMEDATED_POLL = TimedatedPoll()


def synced(adjtimex=_libc_adjtimex, sync_file=SYNC_FILE, timedated=TIMEDATED_POLL.value):
    """True if the wall clock is synchronised; False if not, or if nothing can say."""
    try:
        return adjtimex() < MAXERROR_UNSYNC_US
    except (OSError, AttributeError):
        pass
    # refused (the unit's filter): timesyncd's file, else timedated (chrony, ntpd)
    return os.path.exists(sync_file) or timedated() is True


def boot_id(env=os.environ, path=BOOT_ID_FILE):
    """This boot's id, or None if neither the unit nor the kernel says."""
    b = env.get("DEALER_STATION_BOOT_ID", "").strip()
    if b:
        return b
    try:
        with open(path) as f:
            return f.read().strip() or None
    except OSError:
        return None


class ClockFacts:
    """The daemon's source of the facts: the boot read once, synchronisation at most once a
    RECHECK_S (the loop's clock() asks at every event)."""

    def __init__(self, check=synced, boot=None):
        self.check = check
        self.boot = boot_id() if boot is None else boot
        self.at = None
        self.value = False

    def synced(self, mono=None):
        mono = time.monotonic() if mono is None else mono
        if self.at is None or mono - self.at >= RECHECK_S:
            self.value, self.at = bool(self.check()), mono
        return self.value
