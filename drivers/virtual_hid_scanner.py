"""A virtual keyboard-mode barcode scanner in a shoe: the virtual shoe's line-mode dealing (seeded
decks, cut card, per-deck codes, faults), typed as `struct input_event` key records into a FIFO.
The real driver opens the FIFO through a stable symlink (as udev gives a real scanner a
/dev/input/by-id/... name) and reads it exactly as it reads an event node.

Each plug makes a new FIFO (event0, event1, ... as a re-plugged scanner gets a new node); an
unplug removes the symlink, then closes the writer (the driver reads end of file) and removes the
node. The FIFO is opened read-write here so that writes never block or fail for want of a reader.

Keyboard faults on top of the shoe's: a code without its suffix key (`partial_next`), a code
typed with another layout (`wrong_layout_next`), an unplug in the middle of a code
(`unplug_mid_code_next`); `corrupt_next` types a key no layout maps (F1).
"""
import os
import threading

from .evdev_link import RECORD, encode
from .keymap import EV_KEY, EV_MSC, EV_SYN, KEY_LEFTSHIFT, KEY_RIGHTALT, LAYOUTS, SUFFIX_KEYS, strokes
from .virtual_shoe import VirtualShoe

KEY_F1 = 59
MSC_SCAN = 4


class VirtualHidScanner(VirtualShoe):
    def __init__(self, decks=8, seed=1, cut_from_back=None, layout="us", suffix="enter",
                 link=None, cut_payload="CUT"):
        super().__init__(decks=decks, seed=seed, cut_from_back=cut_from_back, mode="line",
                         link=link, cut_payload=cut_payload)
        if link is None:
            self.path = os.path.join(self._dir, "usb-Virtual_Barcode_Scanner-event-kbd")
        self.layout = layout
        self.suffix = suffix
        self.plugs = 0
        self.node = None
        self._kb_fault = []

    # -- plugging: a new FIFO node each time, behind the stable symlink ------------------------

    def _plug(self):
        with self._lock:
            self.node = os.path.join(os.path.dirname(self.path), f"event{self.plugs}")
            self.plugs += 1
            if os.path.lexists(self.node):
                os.unlink(self.node)
            os.mkfifo(self.node, 0o600)
            self.master = os.open(self.node, os.O_RDWR | os.O_NONBLOCK)
            tmp = self.path + ".new"
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(self.node, tmp)
            os.replace(tmp, self.path)

    def _unplug(self):
        with self._lock:
            if os.path.lexists(self.path):
                os.unlink(self.path)
            if self.master is not None:
                os.close(self.master)
                self.master = None
            if self.node and os.path.lexists(self.node):
                os.unlink(self.node)

    def _run(self):          # nothing comes back from the host to a keyboard
        self._stop.wait()

    # -- faults -------------------------------------------------------------------------------

    def restart(self):
        raise ValueError("a keyboard-mode scanner has no protocol to restart")

    def status(self, *a, **k):
        raise ValueError("a keyboard-mode scanner sends no status")

    def stall(self, on=True):
        raise ValueError("a keyboard-mode scanner has no line to stall")

    def partial_next(self):
        self._kb_fault.append("partial")

    def wrong_layout_next(self, layout=None):
        other = layout or ("de" if self.layout != "de" else "us")
        self._kb_fault.append(("layout", other))

    def unplug_mid_code_next(self):
        self._kb_fault.append("unplug")

    # -- typing -------------------------------------------------------------------------------

    def _line(self, payload, fault=None):
        if fault in ("drop", "lose"):
            return
        kb = self._kb_fault.pop(0) if self._kb_fault else None
        layout = kb[1] if isinstance(kb, tuple) else self.layout
        recs = self.keystrokes(payload, layout, suffix=kb not in ("partial", "unplug"),
                               corrupt=fault == "corrupt")
        if kb == "unplug":
            self._send_raw(recs[:len(recs) // 2 // RECORD.size * RECORD.size])
            self.unplug()
            return
        self._send_raw(recs * (2 if fault == "double" else 1))

    def keystrokes(self, text, layout=None, suffix=True, corrupt=False):
        """The records a scanner of `layout` sends to type `text` (then its suffix key)."""
        keys = strokes(LAYOUTS[layout or self.layout])
        out = []
        if corrupt:
            out.append(self._tap(KEY_F1))
        for ch in text:
            code, shift, altgr = keys[ch]
            out.append(self._tap(code, KEY_LEFTSHIFT if shift else KEY_RIGHTALT if altgr else None))
        if suffix:
            out.append(self._tap(SUFFIX_KEYS[self.suffix][0]))
        return b"".join(out)

    @staticmethod
    def _tap(code, modifier=None):
        r = []
        if modifier:
            r += [encode(EV_KEY, modifier, 1), encode(EV_SYN, 0, 0)]
        r += [encode(EV_MSC, MSC_SCAN, 0x70000 + code), encode(EV_KEY, code, 1), encode(EV_SYN, 0, 0),
              encode(EV_MSC, MSC_SCAN, 0x70000 + code), encode(EV_KEY, code, 0), encode(EV_SYN, 0, 0)]
        if modifier:
            r += [encode(EV_KEY, modifier, 0), encode(EV_SYN, 0, 0)]
        return b"".join(r)

    def type_raw(self, data):
        """Write records as they are (tests and the benchmark: a code in pieces)."""
        self._send_raw(data)

    def _send_raw(self, data):
        with self._lock:
            if self.master is None:
                return       # unplugged: the keys go nowhere
            view = memoryview(data)
            while view:      # a long code is more than a pipe's atomic write: write it all
                try:
                    n = os.write(self.master, view)
                except BlockingIOError:
                    threading.Event().wait(0.001)
                    continue
                except OSError:
                    return
                view = view[n:]
