"""What the shell knows of the wall clock, for the outage rule (station_alive.py): is it
synchronised, and which boot is this. The core gets both on every `Clock`; it has no I/O.

A Raspberry Pi has no real-time clock: after a power cut it boots with the time fake-hwclock or
systemd-timesyncd saved (or 1970) until NTP syncs, and an outage counted on that clock is wrong.

- Synchronised, as `timedatectl` says it (systemd's ntp_synced): the kernel's `maxerror` under
  16 s (adjtimex, read-only; STA_UNSYNC is no guide: chrony and timesyncd leave it set). The
  service's seccomp filter (`@system-service`, `~@privileged`: `@clock`) refuses even the read
  (EPERM), so there the answer is systemd-timesyncd's `/run/systemd/timesync/synchronized`,
  touched at each sync of this boot (/run is a tmpfs). Neither known: not synchronised (the
  core then never counts an outage across a reboot by the wall clock: no guess).
- The boot: the kernel's boot id, from the unit's `DEALER_STATION_BOOT_ID=%b` (ProcSubset=pid
  hides /proc/sys) or /proc/sys/kernel/random/boot_id; within one boot the monotonic clock
  measures an outage exactly, whatever the wall clock did.
"""
import ctypes
import ctypes.util
import os
import time

MAXERROR_UNSYNC_US = 16_000_000     # the kernel's NTP_PHASE_LIMIT: past it, unsynchronised
SYNC_FILE = "/run/systemd/timesync/synchronized"
BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
RECHECK_S = 1.0                     # the answer is kept this long (a syscall or a stat a second)


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


def synced(adjtimex=_libc_adjtimex, sync_file=SYNC_FILE):
    """True if the wall clock is synchronised; False if not, or if nothing can say."""
    try:
        return adjtimex() < MAXERROR_UNSYNC_US
    except (OSError, AttributeError):
        return os.path.exists(sync_file)


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
