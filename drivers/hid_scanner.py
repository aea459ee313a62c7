"""A barcode scanner in keyboard mode (USB HID): the code arrives as key presses on an input
event node. Key codes become characters through the scanner's keyboard layout (with Shift,
Caps Lock and AltGr); the suffix key (Enter or Tab) ends a code, which then takes the line-mode
scanner's path (codebook, double-fire suppression, cut card). A code whose suffix has not come
`code_timeout` seconds after its last key is dropped, counted and reported as an unreadable
card: a card passed the reader, so losing it silently would shift every later card.
"""
from .codebook import MAX_PAYLOAD
from .events import CardUnreadable, DeviceState
from .evdev_link import EventLink, records
from .keymap import (EV_KEY, EV_SYN, KEY_CAPSLOCK, KEY_RIGHTALT, LAYOUTS, OTHER_MODIFIERS, SHIFTS,
                     SUFFIX_KEYS, char)
from .scanner import ScannerSession

SYN_REPORT, SYN_DROPPED = 0, 3
BAD = "\ufffd"     # a key the layout does not type (or typed with Ctrl/Alt): the code is garbled


class HidScannerSession:
    def __init__(self, emit, codebook, layout="us", suffix="enter", code_timeout=0.1,
                 double_fire_window=0.3, cut_payload=None, name="scanner"):
        if layout not in LAYOUTS:
            raise ValueError(f"layout: one of {', '.join(LAYOUTS)}, got {layout!r}")
        if suffix not in SUFFIX_KEYS:
            raise ValueError(f"suffix: one of {', '.join(SUFFIX_KEYS)}, got {suffix!r}")
        self.lines = ScannerSession(emit, codebook, double_fire_window, cut_payload, name)
        self.emit = emit
        self.name = name
        self.layout_name, self.layout = layout, LAYOUTS[layout]
        self.suffix = SUFFIX_KEYS[suffix]
        self.timeout = code_timeout
        self.counts = self.lines.counts
        self.counts.update(partial=0, layout_mismatch=0)
        self.refusal = None
        self._reset()

    def _reset(self):
        self.keys = []            # (code, shift, altgr, caps, other modifier) of the code so far
        self.last_key = self.last_stamp = None
        self.shift = set()
        self.altgr = self.other = self.caps = False
        self.rest = b""
        self.dropping = False

    # -- the link's calls ---------------------------------------------------------------------

    def connected(self, now):
        self._reset()
        self.refusal = None
        self.lines.connected(now)

    def refused(self, reason, now):
        if reason != self.refusal:    # once per reason, not on every retry
            self.refusal = reason
            self.emit(DeviceState(self.name, "fault", {"reason": reason}))

    def lost(self, reason, now):
        if self.keys:
            self._drop(now, "scanner unplugged in the middle of a code")
        self.lines.lost(reason, now)

    def tick(self, now):
        if self.keys and now - self.last_key > self.timeout:
            self._drop(now, "scanner code without its suffix key")

    def data(self, data, now):
        events, self.rest = records(self.rest + data)
        for stamp, type_, code, value in events:
            if type_ == EV_SYN and code == SYN_DROPPED:
                # the kernel's buffer overflowed: keys are missing up to the next report, so the
                # code under way cannot be trusted (and the modifiers are read again)
                self.dropping = True
                self.keys.append((None, False, False, False, True))
                self.last_key, self.last_stamp = now, stamp
                self.shift.clear()
                self.altgr = self.other = False
            elif type_ == EV_SYN and code == SYN_REPORT:
                self.dropping = False
            elif type_ == EV_KEY and not self.dropping:
                self.key(code, value, now, stamp)

    # -- keys ---------------------------------------------------------------------------------

    def key(self, code, value, now, stamp=None):
        """value 1 press, 0 release, 2 autorepeat (ignored: a scanner does not hold keys).
        `stamp`: the kernel's time of the key. The gap between two keys of a code is taken from
        these stamps, so a reader thread that was slow to run does not cut a code it had already
        been sent whole; `now` (when read) serves the timer while nothing arrives."""
        down = value == 1
        if code in SHIFTS:
            (self.shift.add if down else self.shift.discard)(code)
        elif code == KEY_RIGHTALT:
            self.altgr = down
        elif code in OTHER_MODIFIERS:
            self.other = down
        elif not down:
            return
        elif code == KEY_CAPSLOCK:
            self.caps = not self.caps
        else:
            if self.keys and (stamp - self.last_stamp if stamp is not None and self.last_stamp
                              is not None else now - self.last_key) > self.timeout:
                self._drop(now, "scanner code without its suffix key")   # before this key counts
            if code in self.suffix:
                if self.keys:
                    self._finish(now)
                return
            self.keys.append((code, bool(self.shift), self.altgr, self.caps, self.other))
            self.last_key, self.last_stamp = now, stamp
            if len(self.keys) > MAX_PAYLOAD:
                self.keys = []
                self.counts["garbled"] += 1
                self.emit(CardUnreadable("shoe", {"reason": "scanner code too long"}))

    def _text(self, layout):
        return "".join(BAD if other else (char(layout, code, shift, altgr, caps) or BAD)
                       for code, shift, altgr, caps, other in self.keys)

    def _drop(self, now, reason):
        text, self.keys = self._text(self.layout), []
        self.counts["partial"] += 1
        self.emit(CardUnreadable("shoe", {"reason": reason, "typed": text}))

    def _finish(self, now):
        text = self._text(self.layout)
        known = self.lines.codebook
        if text not in known and text != self.lines.cut_payload:
            for name, layout in LAYOUTS.items():
                other = self._text(layout)
                if name != self.layout_name and (other in known or other == self.lines.cut_payload):
                    self.keys = []
                    self.counts["layout_mismatch"] += 1
                    self.emit(CardUnreadable("shoe", {
                        "reason": f"keyboard layout mismatch: the scanner types as {name!r}, "
                                  f"shoe.layout is {self.layout_name!r}", "typed": text}))
                    return
        self.keys = []
        self.lines.line(text.encode("utf-8"), now)


class HidScannerDriver:
    """start(emit), close(). `url`: the event node, best its /dev/input/by-id/ name."""

    def __init__(self, url, codebook, layout="us", suffix="enter", code_timeout=0.1,
                 double_fire_window=0.3, cut_payload=None, poll=0.01):
        self.url = url
        self.options = dict(layout=layout, suffix=suffix, code_timeout=code_timeout,
                            double_fire_window=double_fire_window, cut_payload=cut_payload)
        HidScannerSession(None, codebook, layout, suffix)        # bad options fail here
        self.codebook = codebook
        self.poll = poll
        self.session = None
        self.link = None

    def start(self, emit):
        self.session = HidScannerSession(emit, self.codebook, **self.options)
        self.link = EventLink(self.url, self.session, poll=self.poll, name="scanner")
        self.link.start()

    def close(self):
        if self.link is not None:
            self.link.close()
