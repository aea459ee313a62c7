"""A pseudo-terminal for a virtual device, reached through a stable symlink (as udev gives real
devices a /dev/serial/by-id/... name), so the real driver opens it like hardware."""
import os
import tty


def open_pty(link):
    """Open a raw pty pair and point `link` at its device. Returns (master fd, slave fd)."""
    master, slave = os.openpty()
    tty.setraw(slave)  # bytes pass untouched: no echo, no CR/LF translation
    tmp = link + ".new"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(os.ttyname(slave), tmp)
    os.replace(tmp, link)
    return master, slave


def close_pty(link, *fds):
    if os.path.lexists(link):
        os.unlink(link)
    for fd in fds:
        if fd is not None:
            os.close(fd)
