"""A Linux input device node (/dev/input/event*) read as raw `struct input_event` records, grabbed
for this process alone, reopened when it goes away (a scanner unplugged and plugged back gets a
new event node: open it by its stable /dev/input/by-id/... name).

No python-evdev: reading the records and one ioctl (EVIOCGRAB) is all a keyboard-mode scanner
needs, and the standard library does both, so the daemon gains no compiled dependency.

The record is the kernel's `struct input_event { struct timeval time; __u16 type; __u16 code;
__s32 value; }`, whose time is two C longs on both 64-bit and 32-bit kernels (the uAPI keeps the
`long` layout for 32-bit user space even with a 64-bit time_t), so the format is the platform's
native `llHHi`: 24 bytes on 64-bit (aarch64, x86_64), 16 bytes on 32-bit Raspberry Pi OS (armhf).

The seam: the driver opens a path and reads records. A FIFO carrying the same records stands in
for the device in tests and table-sim; EVIOCGRAB on a FIFO fails with ENOTTY, which is taken as
"no grab available" for a FIFO only (any other node that refuses it is not an input device).
"""
import errno
import fcntl
import os
import select
import stat
import struct
import time

from .serial_link import SerialLink

RECORD = struct.Struct("@llHHi")          # sec, usec, type, code, value
EVIOCGRAB = 0x40044590                   # _IOW('E', 0x90, int)
READ_SIZE = RECORD.size * 170            # whole records, under a pipe's atomic 4 KiB


def _ioctl(fd, request, arg):            # a seam for tests: the grab without an input device
    return fcntl.ioctl(fd, request, arg)


def _open(path):                         # and the refusals a root test run cannot meet
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)


class DeviceError(OSError):
    """Opening or grabbing failed; str() is the technician's explanation."""


def explain(err, path):
    e = err.errno
    if e in (errno.ENOENT, errno.ENODEV, errno.ENXIO):
        return f"{path}: no such device (is the scanner plugged in? ls -l /dev/input/by-id/)"
    if e in (errno.EACCES, errno.EPERM):
        return (f"{path}: permission denied: the user needs the input group "
                f"(docs/install.md: the udev rule and the group)")
    if e == errno.EBUSY:
        return (f"{path}: busy: another program has grabbed the scanner "
                f"(a second dealer-station, or shoe-calibrate monitor?)")
    if e in (errno.ENOTTY, errno.EINVAL):
        return f"{path}: not an input event device (give /dev/input/by-id/...-event-kbd)"
    return f"{path}: {err.strerror or err}"


class EventDevice:
    """An open, grabbed event node, with the small part of pyserial's port interface that
    SerialLink uses (read, in_waiting, close)."""
    in_waiting = 0

    def __init__(self, path, poll=0.01):
        self.path = path
        self.poll = poll
        self.grabbed = False
        try:
            self.fd = _open(path)
        except OSError as e:
            raise DeviceError(e.errno, explain(e, path)) from None
        try:
            _ioctl(self.fd, EVIOCGRAB, 1)    # no key reaches a console or another reader
            self.grabbed = True
        except OSError as e:
            if not (e.errno == errno.ENOTTY and stat.S_ISFIFO(os.fstat(self.fd).st_mode)):
                os.close(self.fd)
                raise DeviceError(e.errno, explain(e, path)) from None

    def read(self, _n=None):
        r, _, _ = select.select([self.fd], [], [], self.poll)
        if not r:
            return b""
        try:
            data = os.read(self.fd, READ_SIZE)
        except BlockingIOError:
            return b""
        if not data:   # a FIFO whose writer went away: the virtual scanner was unplugged
            raise OSError(errno.ENODEV, "device removed")
        return data

    def close(self):
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)          # closing releases the grab


class EventLink(SerialLink):
    """SerialLink's reader thread and reconnection over an event node. A failure to open is
    also told to the protocol (`refused(reason, now)`) so it can be reported, once per reason."""

    def _open(self):
        try:
            return EventDevice(self.url, self.poll)
        except DeviceError as e:
            self.protocol.refused(e.strerror, time.monotonic())
            raise

    def _open_failed(self, e):
        """Already told, as a fault, by _open: not a second time as a disconnect."""


def records(buf):
    """Split bytes into whole records: ([(time, type, code, value)], the incomplete rest). The
    time is the kernel's stamp of the event (wall clock), in seconds."""
    n = len(buf) - len(buf) % RECORD.size
    return [(sec + usec / 1e6, t, c, v) for sec, usec, t, c, v in RECORD.iter_unpack(buf[:n])], buf[n:]


def encode(type_, code, value, t=None):
    t = time.time() if t is None else t
    sec = int(t)
    return RECORD.pack(sec, int((t - sec) * 1e6), type_, code, value)
