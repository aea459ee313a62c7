"""The daemon loop's queue: each item with the monotonic time it was put, in per-source lanes.

Stamps. A pass of the loop takes a bounded batch (daemon.PASS_ITEMS, PASS_S), then serves its
timer. With only that, the timer overtook items put before its deadline: a player's decision sent
1.5 s into a 5 s decision timer, queued behind 20,000 malformed commands from one login, was
handled 8 s later, after `decision_timeout` had stood the hand for them ("not_awaiting_decision":
cold trial). The stamp lets the loop handle every item put before the deadline first.

Lanes. One FIFO let any sender delay every other: a card dealt amid 20,000-50,000 malformed
commands was journaled and published 8-40 s late (cold trial). The loop thread moves what was put
into one lane per source (each device's driver, each MQTT sender login, the link's own items,
the console, the loop's resend pages, control) and takes the lanes' heads in turn: each lane in
its order, so a flood from one sender delays only that sender. A sender's lane holds at most
LANE_MAX items; what comes beyond it goes to one more lane, BUSY, whose turn hands the loop up to
BUSY_BATCH of them at once (a `Busy`) to refuse "busy" in one journal transaction
(station_busy.py): answered, counted, and cheaply enough to keep up with a flood. The BUSY lane
takes its senders in turn too (`BusyLane`): one sender's overflow waits behind one batch of a
flooder's, not behind all of it (a FIFO lane answered a light login's 40-command burst's `busy`
6.2-7.8 s after it, behind a 20,000-command QoS 0 flood; now 1.9-3.8 s, most of it the broker's
and paho's own queue: bench_flood_fair.py --light, lows39). The echo of the station's own
commands probe has a lane of its own, PROBE (up to lane_max; its prefix, with the nonce's random
seed, set by the daemon): in the BUSY lane, which the timers do not wait for, it missed its
deadline behind a redelivered backlog on `commands` and the table said "broker ACL?" (cold39). It holds at most BUSY_MAX
commands: QoS 1 ones beyond it are kept (the broker sends the table's session at
most its Receive Maximum unacknowledged: [broker] receive_maximum, 1000, which Mosquitto
overshoots while the table publishes, up to 2,744 measured),
QoS 0 ones beyond it are dropped and counted by sender (`dropped`; the daemon logs and counts
them), except while their sender holds fewer than LANE_MAX there (a flooder filling it does not
have a light sender's overflow dropped): at most once is what QoS 0 asks for, and about 300 B a
command held without bound was a QoS 0 flood's way into the table's memory. The senders' lanes
and the BUSY lane wait while the MQTT link is backed up (`take`'s `busy` and `senders`, set by
Daemon._open): the commands' replies go at the broker's pace; the other lanes never wait.

Why taking sources out of their arrival order is safe: the journal's order is the truth replay
follows, whatever order the loop chose; arrival order across sources was never guaranteed (each
driver has its own reader thread, paho its own, and the broker orders only one publisher's
messages on one topic, which a lane keeps). RULES.md's orderings are within one source (a
device's state and its cards, a login's commands) or against the loop's own timer, which the
stamp keeps: the timer fires only once every item put before its deadline is handled. A card vs
`betting_closed` from another source was a race between two networks before as well.
"""
import collections
import queue
import time

LANE_MAX = 32       # commands one sender's lane holds (a client's burst); the rest: "busy"
BUSY_BATCH = 200    # commands refused busy in one turn (one transaction: ~0.1 ms each here)
BUSY = "busy"       # the lane of the commands beyond their sender's lane
BUSY_MAX = 10_000   # commands the BUSY lane holds (~3 MB); QoS 0 ones beyond it: dropped, counted
PROBE = "probe"     # the lane of the station's own commands probes' echoes


class Busy(tuple):
    """A BUSY lane's turn: the (stamp, item)s to refuse busy, each sender's in the order they
    came, the senders in turn."""


class BusyLane:
    """The BUSY lane: a FIFO per sender lane, taken one command of each sender in turn."""

    def __init__(self):
        self.per = {}                       # sender lane -> deque of (stamp, item)
        self.ring = collections.deque()     # sender lanes holding commands, in turn order
        self.n = 0

    def __len__(self):
        return self.n

    def append(self, lane, entry):
        d = self.per.get(lane)
        if d is None:
            d = self.per[lane] = collections.deque()
            self.ring.append(lane)
        d.append(entry)
        self.n += 1

    def held(self, lane):
        d = self.per.get(lane)
        return len(d) if d else 0

    def take(self, most):
        got = []
        while self.ring and len(got) < most:
            lane = self.ring.popleft()
            d = self.per[lane]
            got.append(d.popleft())
            if d:
                self.ring.append(lane)
            else:
                del self.per[lane]
        self.n -= len(got)
        return got


def lane_of(item):
    """The lane of an item put without one: the MQTT link's (commands by sender login), a
    tool's engine input (LocalInput: its own, as a device's), else control (stop, reload)."""
    if isinstance(item, tuple) and item and item[0] == "mqtt":
        return ("login", item[7]) if item[1] == "command" else "link"
    return "local" if type(item).__name__ == "LocalInput" else "control"


def refusable(lane):
    """A sender's lane: its excess can be answered (refused busy) instead of held."""
    return isinstance(lane, tuple) and lane[0] == "login"


class StampedQueue:
    def __init__(self, lane_max=LANE_MAX):
        # SimpleQueue: its put() may be called from a signal handler (request_stop) that runs
        # while the loop's own get() holds the lock of a queue.Queue: that put deadlocked the
        # daemon for good (a SIGTERM at the wrong moment; found by a killed table-sim's orphan)
        self._q = queue.SimpleQueue()
        self.lane_max = lane_max
        self.lanes = {}                     # lane -> deque of (stamp, item); only the loop's
        self.ring = collections.deque()     # lanes holding items, in turn order
        self.stamp = None                   # when the item last taken was put (monotonic)
        self.busy_max = BUSY_MAX
        self.dropped = {}                   # login -> QoS 0 commands dropped (BUSY full)
        self.probe_prefix = None            # how the station's probes begin (its nonce's seed)

    # -- any thread -------------------------------------------------------------------------

    def put(self, item, lane=None):
        self._q.put((time.monotonic(), lane, item))

    def putter(self, lane):
        """`put` for one source (a driver's `emit`, the console's callback)."""
        return lambda item: self.put(item, lane)

    # -- the loop's thread only ------------------------------------------------------------

    def _file(self, entry):
        stamp, lane, item = entry
        if lane is None:
            lane = lane_of(item)
            if lane == ("login", None) and self.probe_prefix is not None \
                    and bytes(item[2][:len(self.probe_prefix)]) == self.probe_prefix \
                    and len(self.lanes.get(PROBE, ())) < self.lane_max:
                # the echo of the station's probe: not behind the shared topic's flood in the
                # BUSY lane, which the timers do not wait for; so the probe's deadline (a timer)
                # comes only once an echo received before it is handled (a replay of our
                # probes beyond lane_max is filed as any command)
                lane = PROBE
        d = self.lanes.get(lane)
        if d is None:
            d = self.lanes[lane] = collections.deque()
        if refusable(lane) and len(d) >= self.lane_max:
            b = self.lanes.get(BUSY)
            if b is None:
                b = self.lanes[BUSY] = BusyLane()
            # full: a QoS 0 command (the MQTT link's tuple: item[6]) is dropped, unless its
            # sender holds fewer than lane_max there (a light sender's overflow is not dropped
            # for a flooder's: the lane holds at most busy_max + lane_max a sender)
            if item[6] == 0 and len(b) >= self.busy_max and b.held(lane) >= self.lane_max:
                self.dropped[lane[1]] = self.dropped.get(lane[1], 0) + 1
                return
            if not b:
                self.ring.append(BUSY)
            b.append(lane, (stamp, item))
            return
        if not d:
            self.ring.append(lane)
        d.append((stamp, item))

    def drain(self, timeout=0.0, busy=True, senders=True):
        """Move what was put into the lanes; wait up to `timeout` when nothing can be taken
        (`busy`: whether the BUSY lane can; `senders`: whether the senders' lanes can)."""
        if timeout and not any(self._open(lane, busy, senders) for lane in self.ring):
            try:
                self._file(self._q.get(True, timeout))
            except queue.Empty:
                return
        while True:
            try:
                self._file(self._q.get_nowait())
            except queue.Empty:
                return

    def oldest(self):
        """The stamp of the oldest item held in a lane, or None. Not the BUSY lane's: a command
        refused busy changes nothing, so it need not be answered before a timer."""
        return min((self.lanes[k][0][0] for k in self.ring if k != BUSY), default=None)

    @staticmethod
    def _open(lane, busy, senders):
        return busy if lane == BUSY else senders or not refusable(lane)

    def take(self, before=None, busy=True, senders=True):
        """The next lane's head, in turn (only items put before `before`, if given; the BUSY
        lane only if `busy`, at most that many of it if a number; the senders' lanes only if
        `senders`); sets `stamp`. Raises queue.Empty."""
        for _ in range(len(self.ring)):
            lane = self.ring.popleft()
            d = self.lanes[lane]
            if not self._open(lane, busy, senders) or lane != BUSY and before is not None \
                    and d[0][0] >= before:
                self.ring.append(lane)
                continue
            if lane == BUSY:
                got = d.take(BUSY_BATCH if busy is True else min(busy, BUSY_BATCH))
                self.stamp, item = got[0][0], Busy(got)
            else:
                self.stamp, item = d.popleft()
            if d:
                self.ring.append(lane)
            else:
                del self.lanes[lane]        # a sender gone quiet leaves nothing behind
            return item
        raise queue.Empty

    def get(self, block=True, timeout=None):
        """One item, lanes in turn (the daemon's start, before the loop runs)."""
        self.drain(timeout if block and timeout else 0.0)
        if not self.ring and block and timeout is None:
            self._file(self._q.get())
        return self.take()

    def get_nowait(self):
        return self.get(False)

    def qsize(self):
        return self._q.qsize() + sum(len(d) for d in self.lanes.values())

    def empty(self):
        return self.qsize() == 0
