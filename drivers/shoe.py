"""The smart shoe (protocol v1): `ShoeDriver`, the shoe on a serial URL, its session
(drivers/shoe_session.py: sequence tracking, resend, acknowledgement, heartbeat watchdog) on the
link's reader thread and its commands framed here. ShoeSession (which tests import from here),
STAT_WORDS, _shape and log stay importable from here as before the split."""
import logging

from . import shoe_protocol as sp
from .serial_link import SerialLink
from .shoe_reports import STAT_WORDS
from .shoe_session import ShoeSession, _shape

__all__ = ["ShoeDriver", "ShoeSession", "STAT_WORDS", "_shape", "log"]

log = logging.getLogger(__name__)      # "drivers.shoe": the session's parts log to it


class ShoeDriver:
    """A protocol-v1 shoe on a serial URL. start(emit), command(name, *args), close()."""

    def __init__(self, url, settings=None, **session_options):
        self.url = url
        self.settings = settings
        self.options = session_options
        self.session = None
        self.link = None

    def start(self, emit):
        self.link = SerialLink(self.url, None, self.settings, name="shoe")
        self.session = ShoeSession(emit, self.link.write, **self.options)
        self.link.protocol = self.session
        self.link.start()

    def command(self, name, *args):
        """`gate lock|unlock`, `led NAME on|off|blink`, `status`, `ack SEQ`. False if the shoe
        is unplugged."""
        frames = {"gate": ("GATE", 1), "led": ("LED", 2), "status": ("QST", 0), "ack": ("ACK", 1)}
        if name not in frames or len(args) != frames[name][1]:
            raise ValueError(f"shoe command {name!r} {args}: expected gate lock|unlock, "
                             f"led NAME on|off|blink, status, or ack SEQ")
        return self.link.write(sp.encode(frames[name][0], *args))

    def close(self):
        if self.link is not None:
            self.link.close()
