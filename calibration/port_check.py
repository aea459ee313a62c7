"""Open the port before anything else, so a missing, busy or wrong port is an error at once and not
a ten-second wait that ends in a report of 52 missing cards. The drivers themselves reopen
silently (right for the daemon, wrong for a technician waiting for an answer)."""
import fcntl
import os
import re
import stat
import tempfile

import serial

from .shoe_tools import ToolError, explain


def holders(path):
    """'PID 123 (dealer-station run ...)' for every other process that has `path` open, as far as
    /proc lets us see (another user's processes are hidden unless we are root)."""
    try:
        target = os.path.realpath(path)
    except OSError:
        return []
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{fd_dir}/{fd}") == target:
                    found.append(f"PID {pid} ({_command_line(pid)})")
                    break
            except OSError:
                continue
    return found


def _command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
        text = " ".join(os.path.basename(w.decode(errors="replace")) if i == 0 else
                        w.decode(errors="replace") for i, w in enumerate(words) if w)
        if len(text) > 80:                # cut between words, and say so
            text = text[:80].rsplit(" ", 1)[0] + " ..."
        return text or "?"
    except OSError:
        return "?"


def lockers(path):
    """'PID 123 (dealer-station run ...)' for the process holding the port's exclusive lock: the
    one that makes it busy (a pty's virtual device also has it open, but holds no lock)."""
    from dealer_station.lock import flock_holders
    return [f"PID {pid} ({_command_line(pid)})" for pid in flock_holders(os.path.realpath(path))
            if pid != str(os.getpid())]


def check_port(port, protocol=None, baud=None, device="shoe"):
    """Raise a ToolError naming what is wrong with `port`, or return None when it opens."""
    if "://" in port:
        return None                 # a pyserial URL (socket://, loop://): nothing to stat
    if not os.path.exists(port):
        raise ToolError(f"{port}: no such port (is the {device} plugged in?); `shoe-calibrate "
                        f"ports` lists them")
    mode = os.stat(port).st_mode
    if protocol == "hid":
        if not os.access(port, os.R_OK):
            raise ToolError(f"{port}: permission denied: join the input group (docs/install.md)")
        return None
    if stat.S_ISFIFO(mode) or (stat.S_ISCHR(mode) and os.major(os.stat(port).st_rdev) == 13):
        raise ToolError(f"{port}: not a serial port but an input device (a keyboard-mode "
                        f"scanner?): use --protocol hid")
    if not stat.S_ISCHR(mode):
        raise ToolError(f"{port}: not a serial port (not a character device)")
    try:
        s = serial.serial_for_url(port, baudrate=baud or 115200, timeout=0, exclusive=True)
    except (serial.SerialException, OSError, ValueError) as e:
        text = explain(e, port)
        if "busy" in text or "Resource temporarily unavailable" in str(e):
            who = lockers(port) or holders(port)
            text = (f"{port}: port busy: held by {', '.join(who)}" if who else
                    f"{port}: port busy") + "; is dealer-station using it? " \
                                            "(sudo systemctl stop dealer-station)"
        elif "Inappropriate ioctl" in str(e):
            text = f"{port}: not a serial port (a keyboard-mode scanner? use --protocol hid)"
        raise ToolError(text) from None
    s.close()
    # A pty's slave is held open by the virtual device behind it: only real ports are checked
    # for readers that do not lock (two readers share the bytes, each sees half the cards).
    who = [] if os.major(os.stat(port).st_rdev) in range(136, 144) else holders(port)
    if who:
        # it opened (the other program does not lock it), but two readers share the bytes
        raise ToolError(f"{port}: port busy: also open in {', '.join(who)}; is dealer-station "
                        f"using it? Stop it first")
    return None


_claims = []


def claim(port, folder=None):
    """Hold `port` for this command, against another shoe-calibrate: the port check opens and
    closes the port before the driver opens it again, and in between a second run would find it
    free (two readers sharing the cards). A lock file per device, held until release()."""
    name = re.sub(r"[^A-Za-z0-9.-]", "_", os.path.realpath(port)) if "://" not in port else None
    if name is None:
        return None
    path = os.path.join(folder or tempfile.gettempdir(), f"shoe-calibrate-{name}.lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError:          # another user's lock file: the port check above is what we have
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.pread(fd, 16, 0).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise ToolError(f"{port}: port busy: held by PID {pid} ({_command_line(pid)}), another "
                        f"shoe-calibrate; one at a time on a port") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _claims.append(fd)
    return fd


def release():
    while _claims:
        os.close(_claims.pop())
