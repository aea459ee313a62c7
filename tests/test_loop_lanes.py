"""The loop's lanes (dealer_station/loop_queue.py) driven through the daemon's own `run_once`
over generated interleavings of puts from many sources, passes, a timer deadline and a busy
link: each source's order kept, nothing lost or answered twice, every command answered (handled
or refused busy), a sender's lane never over its bound, and the timer fired only once every item
put before its deadline is handled (cold38's rule)."""
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dealer_station import loop_queue
from dealer_station.loop_queue import Busy, StampedQueue
from dealer_station.station_types import TimerDue
from test_broker_not_mqtt import _daemon_without_broker

SOURCES = ("shoe", "camera", "console", "link", "a", "b", None)   # a, b, None: command senders
LANE_MAX = 3


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = _daemon_without_broker(tmp_path_factory.mktemp("lanes"))
    d.recover()
    yield d
    d.close()


def _item(source, k):
    """(lane given to put, item) as each source puts it (the drivers and the console by their
    putter; the MQTT link's items classified by lane_of)."""
    if source in ("shoe", "camera"):
        return source, ("device", source, k)
    if source == "console":
        return "console", ("console", k)
    if source == "link":
        return None, ("mqtt", "puback", k)
    return None, ("mqtt", "command", b"x", None, None, k, 1, source)


ops = st.lists(st.one_of(st.tuples(st.just("put"), st.sampled_from(SOURCES)),
                         st.tuples(st.just("run"), st.booleans())), max_size=120)


def _source(item):
    return item[1] if item[0] == "device" else "console" if item[0] == "console" else \
        "link" if item[1] == "puback" else item[7]


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops, deadline_at=st.one_of(st.none(), st.integers(0, 120)),
       backlog=st.lists(st.booleans(), min_size=1, max_size=8))
def test_lanes_keep_each_sources_order_lose_nothing_and_the_timer_waits(daemon, monkeypatch,
                                                                         ops, deadline_at, backlog):
    d = daemon
    monkeypatch.setattr(loop_queue, "BUSY_BATCH", 2)
    d.q = StampedQueue(lane_max=LANE_MAX)
    handled, turns = [], iter(backlog * 10_000)

    def record(item):
        for lane, dq in d.q.lanes.items():
            assert not loop_queue.refusable(lane) or len(dq) <= LANE_MAX, (lane, len(dq))
        if type(item) is Busy:
            handled.append(("busy", [it for _, it in item]))
        else:
            handled.append(("item", item))
    monkeypatch.setattr(d, "handle", record)
    monkeypatch.setattr(d.link, "backlog", lambda: 10**6 if next(turns) else 0)
    base = time.monotonic() - 1000.0          # every stamp and the deadline are in the past
    # armed, and due from op number `deadline_at` on: as time goes, every item put after it is
    # stamped past the deadline
    d.timer_at = None if deadline_at is None else time.monotonic() + 3600
    put, stamps = [], {}
    for i, (op, arg) in enumerate(ops):
        if i == deadline_at:
            d.timer_at = d_at(deadline_at, base)
        if op == "put":
            lane, item = _item(arg, i)
            stamps[i] = base + i
            d.q._q.put((base + i, lane, item))    # put as StampedQueue.put does, stamp chosen
            put.append(item)
        elif arg:
            d.run_once(0)
    monkeypatch.setattr(d.link, "backlog", lambda: 0)   # the broker catches up: all answered
    if deadline_at is not None and deadline_at >= len(ops):
        d.timer_at = d_at(deadline_at, base)       # due after the last op
    for _ in range(10 * len(ops) + 10):
        if not d.q.qsize() and d.timer_at is None:
            break
        d.run_once(0)
    assert not d.q.qsize() and d.timer_at is None

    flat = [(kind, it) for kind, x in handled for it in (x if kind == "busy" else [x])]
    items = [it for _, it in flat if not isinstance(it, TimerDue)]
    # nothing lost, nothing twice; every command answered, handled or refused busy
    assert sorted(map(repr, items)) == sorted(map(repr, put))
    # each source's order kept: among what was handled, and among what was refused busy
    for s in SOURCES:
        for kind in ("item", "busy"):
            ks = [it[2] if it[0] == "device" else it[1] if it[0] == "console" else
                  it[2] if it[1] == "puback" else it[5]
                  for k, it in flat if k == kind and not isinstance(it, TimerDue)
                  and _source(it) == s]
            assert ks == sorted(ks), (s, kind, ks)
    # only commands are refused busy, and only beyond their sender's bound
    assert all(it[:2] == ("mqtt", "command") for k, it in flat if k == "busy")
    # the timer: once, after every item put before its deadline, before every item put after
    timers = [i for i, (_, it) in enumerate(flat) if isinstance(it, TimerDue)]
    if deadline_at is None:
        assert timers == []
        return
    assert len(timers) == 1
    t = timers[0]
    key = {"device": 2, "console": 1}
    for i, (kind, it) in enumerate(flat):
        if kind == "busy" or isinstance(it, TimerDue):
            continue      # a command refused busy changes nothing: it may come either side
        k = it[key[it[0]]] if it[0] in key else it[2] if it[1] == "puback" else it[5]
        assert (i < t) == (stamps[k] < d_at(deadline_at, base)), (i, t, it)


def d_at(deadline_at, base):
    return base + deadline_at + 0.5


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flood=st.integers(0, 60), sources=st.lists(st.sampled_from(SOURCES), min_size=1,
                                                  max_size=12))
@example(flood=0, sources=["b", "b", "b", "b", "shoe"])     # the bound missed b's busy lane
def test_whatever_one_sender_floods_every_sources_first_item_comes_in_the_first_round(
        daemon, monkeypatch, flood, sources):
    """The cold trial's shape: one login's flood queued ahead of everything else. Each other
    source's first item is taken in the first round of the lanes: after at most one item (or
    one busy batch) of each lane, not after the flood."""
    d = daemon
    d.q = StampedQueue(lane_max=LANE_MAX)
    d.timer_at = None
    order = []
    monkeypatch.setattr(d, "handle", order.append)
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    for k in range(flood):
        d.q.put(_item("a", k)[1])
    for k, s in enumerate(sources):
        lane, item = _item(s, 1000 + k)
        d.q.put(item, lane)
    d.run_once(0)
    lanes = ({"a"} if flood else set()) | set(sources)
    # and the busy lane, if any sender's commands overflowed its lane (not only the flood's:
    # four of b's put the busy lane ahead of the shoe's first item, as it should)
    over = any(sources.count(s) + (flood if s == "a" else 0) > LANE_MAX
               for s in ("a", "b", None))
    rounds = len(lanes) + over
    for s in set(sources) - {"a"}:
        first = next(i for i, it in enumerate(order) if type(it) is not Busy and
                     _source(it) == s)
        assert first < rounds, (s, first, rounds)


def test_a_defect_refusing_one_command_busy_loses_none_of_its_batch(daemon, monkeypatch):
    """A busy batch is many commands: a defect while refusing one of them (an exception in
    station_busy.busy) costs that one only, as `handle` does for one item. It was the whole
    batch's: those before it acknowledged with their kept refusals never written, those after
    it taken from the queue and never answered, acknowledged or journaled."""
    from dealer_station import daemon as daemon_mod
    d = daemon
    d.q = StampedQueue(lane_max=1)
    d.timer_at = None
    acked, replied = [], []
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: acked.append(mid))
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: replied.append(payload))
    real = daemon_mod.busy

    def busy(station, ev, clock, waiting, reads=None):
        if ev.payload == b"defect":
            raise ZeroDivisionError("a defect")
        return real(station, ev, clock, waiting, reads)
    monkeypatch.setattr(daemon_mod, "busy", busy)
    before = d.journal.db.execute("SELECT COUNT(*) FROM refused").fetchone()[0]
    payloads = [b"x0", b"x1", b"x2", b"defect", b"x4", b"x5"]   # x0 has the lane, the rest: busy
    for mid, p in enumerate(payloads):
        d.q.put(("mqtt", "command", p, None, None, 500 + mid, 1, "flooder"))
    for _ in range(5):
        d.run_once(0)
    assert not d.q.qsize()
    assert sorted(acked) == [500 + mid for mid in range(len(payloads))]     # each once
    assert len(replied) == len(payloads) - 1       # the defect's own command: acknowledged only
    kept = d.journal.db.execute("SELECT COUNT(*) FROM refused").fetchone()[0] - before
    assert kept == len(payloads) - 1               # within the budget: each kept in full


def test_a_defect_journaling_a_busy_batch_acknowledges_it_and_the_loop_goes_on(daemon,
                                                                             monkeypatch):
    """Not a storage error (those end the process, unacknowledged): a defect in the batch's
    transaction. Each of its commands is acknowledged (or it would come back at every
    reconnect) and the loop goes on, as `handle` does for one item."""
    d = daemon
    d.q = StampedQueue(lane_max=1)
    d.timer_at = None
    acked = []
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: acked.append(mid))
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: None)

    def refuse_many(rs):
        raise TypeError("a defect")
    monkeypatch.setattr(d.journal, "refuse_many", refuse_many)
    for mid in range(4):                       # the first has the lane, the rest: busy
        d.q.put(("mqtt", "command", b"x%d" % mid, None, None, 600 + mid, 1, "flooder2"))
    for _ in range(4):
        d.run_once(0)
    assert not d.q.qsize() and sorted(acked) == [600, 601, 602, 603]


def test_an_inputs_ts_is_when_the_table_received_it_not_when_the_loop_handled_it(daemon,
                                                                                monkeypatch):
    """docs/protocol.md: an event's `ts` is when the daemon received the input that caused it.
    It was when the loop handled it: a command queued 5 s behind a flood carried the later
    time, so a decision received before its deadline (which the timer honours: the stamp rule
    above) was on record after it. The input's `ts`, and its events', are now its queue stamp
    (the journal's `at` and the audit's stay when it was handled)."""
    import datetime
    import json as json_
    d = daemon
    d.q = StampedQueue()
    d.timer_at = None
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: None)
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: None)
    cmd = json_.dumps({"type": "pause", "id": "ts-1", "reason": "test"}).encode()
    d.q._q.put((time.monotonic() - 5.0, None, ("mqtt", "command", cmd, None, None, 7, 1, None)))
    d.run_once(0)
    n, at, body = d.journal.db.execute(
        "SELECT n, at, body FROM inputs ORDER BY n DESC LIMIT 1").fetchone()
    ts = datetime.datetime.fromisoformat(json_.loads(body)["ts"]).timestamp()
    assert json_.loads(body)["type"] == "pause"
    assert 4.9 < at - ts < 6.0, (at, ts)
    events = [json_.loads(b) for (b,) in d.journal.db.execute(
        "SELECT body FROM outbox WHERE input_n = ?", (n,))]
    assert events and all(e["ts"] == json_.loads(body)["ts"] for e in events)


def test_a_probe_echo_queued_in_time_behind_a_flood_on_commands_is_no_acl_fault(tmp_path,
                                                                               monkeypatch):
    """cold39: a restart with a backlog of redelivered commands on the shared `commands` topic
    (past its lane, in the BUSY lane, which the timers do not wait for, and not answered while
    the link is backed up); the probe's echo, received before its deadline, waited there, the
    probe's deadline came first and the log said "commands not delivered: broker ACL?". The echo
    now has a lane of its own (the timer waits for it) and is judged by when it was received."""
    from dealer_station.station_types import BrokerUp, Clock, Probe, Timer
    d = _daemon_without_broker(tmp_path)
    try:
        d.recover()
        monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: None)
        monkeypatch.setattr(d.link, "ack", lambda mid, qos: None)
        monkeypatch.setattr(d, "_open", lambda: (0, True))      # the link backed up: busy waits
        t0 = time.monotonic() - 10.0                              # the deadline is 5 s past
        effects = d.station.step(BrokerUp(False), Clock(time.time() - 10.0, t0))
        [probe] = [e.payload for e in effects if isinstance(e, Probe)]
        [wake] = [e.deadline for e in effects if isinstance(e, Timer)]
        d.timer_at = wake
        for k in range(3 * loop_queue.LANE_MAX):                  # the redelivered backlog
            cmd = b'{"type":"nope","id":"r%d"}' % k
            d.q._q.put((t0 + 1.0, None, ("mqtt", "command", cmd, None, None, k + 1, 1, None)))
        d.q._q.put((t0 + 2.0, None, ("mqtt", "command", probe, None, None, 999, 1, None)))
        for _ in range(20):
            d.run_once(0)
        assert d.station.devices["commands"] == {"state": "ok"}
    finally:
        d.close()


def test_healthz_follows_a_change_of_health_at_the_end_of_the_pass(tmp_path, monkeypatch):
    """cold39 (Low): /healthz said "unhealthy: broker connecting" ~0.6 s after the table was
    online: the loop refreshed it only every 0.5 s. A change of the health is published at the
    end of the pass that made it."""
    d = _daemon_without_broker(tmp_path)
    try:
        d.recover()
        monkeypatch.setattr(d, "healthy", lambda: True)          # no link thread here
        d.run_once(0)
        assert d.metrics.healthz()[1].startswith("unhealthy: broker connecting")
        d.station.devices["broker"] = {"state": "connected", "session_present": False}
        d.station.devices["commands"] = {"state": "ok"}
        d.metrics_at = time.monotonic()                         # just published
        d.run_once(0)
        assert d.metrics.healthz() == (200, "ok\n")
    finally:
        d.close()
