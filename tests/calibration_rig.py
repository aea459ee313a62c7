"""What the calibration tests share: virtual shoes on real ptys (closed after the test), and a
step done a moment later from another thread (a card dealt while the command listens)."""
import threading

import pytest

from drivers.virtual_shoe import VirtualShoe


@pytest.fixture
def shoe():
    made = []

    def make(**kw):
        s = VirtualShoe(heartbeat=0.2, **kw)
        s.start()
        made.append(s)
        return s
    yield make
    for s in made:
        s.close()


def later(fn, delay=0.4):
    t = threading.Timer(delay, fn)
    t.start()
    return t
