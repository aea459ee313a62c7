"""systemd's notify protocol (READY=1, WATCHDOG=1, STATUS=...) without libsystemd: one datagram
to $NOTIFY_SOCKET. A no-op when not started by systemd."""
import os
import socket


class Notifier:
    def __init__(self, env=os.environ):
        addr = env.get("NOTIFY_SOCKET")
        if addr and addr.startswith("@"):
            addr = "\0" + addr[1:]          # abstract namespace
        self.addr = addr
        usec = env.get("WATCHDOG_USEC")
        # ping at half the watchdog period, as sd_watchdog_enabled(3) advises
        self.interval = int(usec) / 2e6 if usec and usec.isascii() and usec.isdigit() and int(usec) > 0 else None
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) if addr else None
        self.last_ping = 0.0

    def send(self, message):
        if self.sock is None:
            return False
        try:
            self.sock.sendto(message.encode(), self.addr)
            return True
        except OSError:
            return False

    def ready(self, status="ready"):
        self.send(f"READY=1\nSTATUS={status}")

    def status(self, text):
        self.send(f"STATUS={text}")

    def watchdog(self, now, healthy):
        """Ping if it is time and everything is healthy; a stalled loop or a dead driver thread
        stops the pings and systemd restarts the service."""
        if self.interval is None or not healthy or now - self.last_ping < self.interval:
            return False
        self.last_ping = now
        return self.send("WATCHDOG=1")

    def stopping(self):
        self.send("STOPPING=1")
