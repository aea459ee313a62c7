"""A virtual shoe behind a real pty: the real drivers talk to it through the same code path as to
hardware (a serial device path). Deals a seeded, shuffled N-deck shoe with a cut card, speaks
protocol v1 or barcode line mode, and injects faults on command (OctoPrint's virtual printer).

The pty path changes on every replug, so the shoe keeps a stable symlink (as udev does for
/dev/serial/by-id/...) and the driver is given that.
"""
import collections
import os
import random
import select
import threading
import time

from controller.cards import CARDS

from . import shoe_protocol as sp
from .pty_link import close_pty, open_pty
from .scratch import scratch_dir


class VirtualShoe:
    def __init__(self, decks=8, seed=1, cut_from_back=None, mode="v1", heartbeat=0.5,
                 link=None, model="VS-1", firmware="1.0", serial_no="VS0001", cut_payload="CUT"):
        if mode not in ("v1", "line"):
            raise ValueError("mode is 'v1' or 'line'")
        self.mode = mode
        self.decks = decks
        self.cards = list(CARDS) * decks
        random.Random(seed).shuffle(self.cards)
        self.deck_of = []                      # which deck each card came from (line-mode codes)
        seen = collections.Counter()
        for c in self.cards:
            self.deck_of.append(seen[c] + 1)
            seen[c] += 1
        self.cut_at = len(self.cards) - cut_from_back if cut_from_back else None
        self.cut_payload = cut_payload
        self.next = 0
        self.heartbeat = heartbeat
        self.model, self.firmware, self.serial_no = model, firmware, serial_no
        self.boot = 1
        self.seq = 0
        self.sent = collections.OrderedDict()  # seq -> frame, unacknowledged, for resend
        self.gate_locked = False
        self.report = ("closed", False, "ok", "ok")   # door, jam, sensor, light: as QST answers
        self.leds = {}
        self.received = []                     # command frames from the host, for tests
        self._fault = collections.deque()      # faults for the next frames
        self._stalled = False
        self._held = []
        self._dir = scratch_dir("vshoe") if link is None else None
        self.path = link or os.path.join(self._dir, "shoe")
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self.master = self.slave = None
        self._thread = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self):
        self._plug()
        self._thread = threading.Thread(target=self._run, name="virtual-shoe", daemon=True)
        self._thread.start()
        return self.path

    def close(self):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)
        self._unplug()
        if self._dir:
            try:
                os.rmdir(self._dir)
            except OSError:
                pass

    def _plug(self):
        with self._lock:
            self.master, self.slave = open_pty(self.path)

    def _unplug(self):
        with self._lock:
            close_pty(self.path, self.master, self.slave)
            self.master = self.slave = None

    # -- faults on command --------------------------------------------------------------------

    def unplug(self):
        """The cable comes out: the host's reads fail, the device path disappears."""
        self._unplug()

    def replug(self):
        self._plug()

    def restart(self):
        """A power cycle: new boot, sequence from 0, the resend buffer is lost."""
        with self._lock:
            self.boot += 1
            self.seq = 0
            self.sent.clear()
            self._send_raw(sp.encode("HELLO", 0, self.model, self.firmware, self.serial_no, self.boot))

    def corrupt_next(self):
        self._fault.append("corrupt")

    def drop_next(self, resendable=True):
        self._fault.append("drop" if resendable else "lose")

    def unreadable_next(self):
        self._fault.append("unreadable")

    def double_fire_next(self):
        self._fault.append("double")

    def foreign_next(self, card="As"):
        self._fault.append(("foreign", card))

    def plant_foreign(self):
        """A card of another deck hidden in the shoe: the last card before the cut card becomes
        one more copy of a card, and the genuine copies of that card still behind the cut are
        moved ahead of it (an order the shuffle could have made), so the table reads the card
        once more than the shoe holds. Returns (card, position), or None when the cut card is out
        or too few cards are left before it. reload() takes the foreign card out again."""
        with self._lock:
            if self.cut_at is None or self.cut_at - 1 - self.next <= 2 * self.decks:
                return None
            start, end, cards = self.next, self.cut_at - 1, self.cards
            card = cards[start]
            behind = [i for i in range(end, len(cards)) if cards[i] == card]
            free = [i for i in range(start + 1, end) if cards[i] != card]
            for i, j in zip(behind, reversed(free)):
                cards[i], cards[j] = cards[j], cards[i]
            cards[end] = card
            return card, end

    def stall(self, on=True):
        """The line stalls: nothing is sent (not even heartbeats) until stall(False)."""
        with self._lock:
            self._stalled = on
            if not on:
                held, self._held = self._held, []
                for data in held:
                    self._send_raw(data)

    # -- dealing ------------------------------------------------------------------------------

    def reload(self, seed, cut_from_back=None):
        """The dealer shuffles and loads the shoe again (same decks, a new order)."""
        with self._lock:
            # the genuine decks (a planted foreign card is out of play after its round)
            self.cards = sorted(list(CARDS) * self.decks, key=CARDS.index)
            random.Random(seed).shuffle(self.cards)
            seen = collections.Counter()
            self.deck_of = []
            for c in self.cards:
                self.deck_of.append(seen[c] + 1)
                seen[c] += 1
            self.cut_at = len(self.cards) - cut_from_back if cut_from_back else None
            self.next = 0

    def codebook(self):
        """Line mode: the payload printed on every physical card -> the card."""
        return {self._payload(c, d): c for c, d in zip(self.cards, self.deck_of)}

    @staticmethod
    def _payload(card, deck):
        return f"D{deck:02d}-{card}"

    def deal(self):
        """The dealer draws the next card. Returns it, or None when the gate is locked or the shoe
        is empty. The cut card comes out on its own when its position is reached."""
        with self._lock:
            if self.gate_locked or self.next >= len(self.cards):
                return None
            if self.cut_at is not None and self.next == self.cut_at:
                self.cut_at = None
                if self.mode == "v1":
                    self._event("CUT")
                else:
                    self._line(self.cut_payload)
            card, deck = self.cards[self.next], self.deck_of[self.next]
            self.next += 1
            fault = self._fault.popleft() if self._fault else None
            if isinstance(fault, tuple):         # a card that is not this shoe's
                card, deck, fault = fault[1], 99, None
            if self.mode == "v1":
                if fault == "unreadable":
                    self._event("UNRD", "no code read")
                else:
                    self._event("CARD", card, 97, fault=fault)
            else:
                payload = "%%??" if fault == "unreadable" else self._payload(card, deck)
                self._line(payload, fault)
            return card

    def status(self, door="closed", jam=False, sensor="ok", light="ok"):
        """The shoe reports a new status (its door opened, ...): kept, and said again in answer
        to every QST (it answered "closed" whatever the door was: a door left open while the
        daemon restarted was reported closed by the QST of its reconnect, cold trial)."""
        with self._lock:
            self.report = (door, jam, sensor, light)
            self._report()

    def _report(self):
        door, jam, sensor, light = self.report
        self._event("STAT", door, int(jam), sensor, light,
                    "locked" if self.gate_locked else "unlocked")

    # -- wire ---------------------------------------------------------------------------------

    def _event(self, kind, *fields, fault=None):
        self.seq = (self.seq + 1) % sp.SEQ_MOD
        frame = sp.encode(kind, self.seq, *fields)
        if fault != "lose":
            self.sent[self.seq] = frame
            while len(self.sent) > 256:
                self.sent.popitem(last=False)
        if fault in ("drop", "lose"):
            return
        if fault == "corrupt":
            frame = frame[:3] + bytes([frame[3] ^ 0x20]) + frame[4:]
        elif fault == "double":
            self._send_raw(frame)
        self._send_raw(frame)

    def _line(self, payload, fault=None):
        data = payload.encode("ascii") + b"\r\n"
        if fault == "corrupt":
            data = b"\x00\xff" + data
        if fault in ("drop", "lose"):
            return
        self._send_raw(data * (2 if fault == "double" else 1))

    def _send_raw(self, data):
        with self._lock:
            if self._stalled:
                self._held.append(data)
                return
            if self.master is None:
                return  # unplugged: the bytes go nowhere
            try:
                os.write(self.master, data)
            except OSError:
                pass

    def _command(self, f):
        self.received.append(f)
        k = f.kind
        with self._lock:
            if k == "ID":
                self._send_raw(sp.encode("HELLO", self.seq, self.model, self.firmware,
                                         self.serial_no, self.boot))
            elif k == "QST":
                self._report()
            elif k == "ACK":
                n = int(f.fields[0])
                for s in list(self.sent):
                    if not sp.seq_after(n, s):
                        del self.sent[s]
            elif k == "RSND":
                n = int(f.fields[0])
                wanted = [n] + (sp.seq_range(n, self.seq) if n != self.seq else [])
                if not sp.seq_after(self.seq, n):
                    lost = [s for s in wanted if s not in self.sent]
                    if lost:
                        self._send_raw(sp.encode("GONE", lost[0], lost[-1]))
                    for s in wanted:
                        if s in self.sent:
                            self._send_raw(self.sent[s])
            elif k == "GATE":
                self.gate_locked = f.fields[0] == "lock"
            elif k == "LED":
                self.leds[f.fields[0]] = f.fields[1]

    def _run(self):
        parser = sp.FrameParser()
        next_hb = time.monotonic() + self.heartbeat
        while not self._stop.is_set():
            fd = self.master
            if fd is None or self.mode == "line":
                if fd is not None:  # line mode: drain whatever the host writes
                    try:
                        r, _, _ = select.select([fd], [], [], 0.05)
                        if r:
                            os.read(fd, 1024)
                    except OSError:
                        pass
                else:
                    time.sleep(0.02)
                continue
            try:
                r, _, _ = select.select([fd], [], [], 0.02)
                data = os.read(fd, 1024) if r else b""
            except (OSError, ValueError):
                data = b""
            for f in parser.feed(data):
                if isinstance(f, sp.Frame):
                    self._command(f)
            now = time.monotonic()
            if now >= next_hb:
                next_hb = now + self.heartbeat
                self._send_raw(sp.encode("HB", self.seq))
