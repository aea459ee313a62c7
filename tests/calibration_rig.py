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


@pytest.fixture
def when_ready(monkeypatch):
    """when_ready(fn): fn, in another thread, once the command says `ready:` (its port is open
    and the device has spoken: a card dealt before then would be dropped with the port's old
    input). Each `ready:` releases one waiting fn, in order."""
    from calibration import cli
    said = threading.Semaphore(0)
    real = cli.say

    def say(text):
        real(text)
        if text.startswith("ready:"):
            said.release()
    monkeypatch.setattr(cli, "say", say)
    made = []

    def run(fn):
        t = threading.Thread(target=lambda: said.acquire(timeout=30) and fn())
        t.start()
        made.append(t)
        return t
    yield run
    for t in made:
        t.join(timeout=35)
