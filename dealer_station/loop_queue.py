"""The daemon loop's queue: each item with the monotonic time it was put.

A pass of the loop takes a bounded batch (daemon.PASS_ITEMS, PASS_S), then serves its timer. With
only that, the timer overtook items put before its deadline: a player's decision sent 1.5 s into
a 5 s decision timer, queued behind 20,000 malformed commands from one login, was handled 8 s
later, after `decision_timeout` had stood the hand for them ("not_awaiting_decision": cold trial).
The stamp lets the loop handle every item put before the deadline first, as one long pass did,
and still report between passes."""
import queue
import time


class StampedQueue:
    def __init__(self):
        # SimpleQueue: its put() may be called from a signal handler (request_stop) that runs
        # while the loop's own get() holds the lock of a queue.Queue: that put deadlocked the
        # daemon for good (a SIGTERM at the wrong moment; found by a killed table-sim's orphan)
        self._q = queue.SimpleQueue()
        self.stamp = None          # when the item last taken was put (monotonic)

    def put(self, item):
        self._q.put((time.monotonic(), item))

    def get(self, block=True, timeout=None):
        self.stamp, item = self._q.get(block, timeout)
        return item

    def get_nowait(self):
        return self.get(False)

    def qsize(self):
        return self._q.qsize()

    def empty(self):
        return self._q.empty()
