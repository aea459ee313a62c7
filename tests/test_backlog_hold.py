"""The commands wait on the MQTT link's backlog (Daemon._open, hold39): while the link is
connected and holds daemon.BACKLOG messages for the broker (at most half paho's in-flight
window), neither a sender's lane nor the busy lane is taken; the devices', the link's own items
and the console's are. A 600-5,000 QoS 1 flood handed over whole (the table's Receive Maximum,
1000) had its own lane answered as fast as the loop could, and the replies held for the burst's
counts were not counted: 555-4,015 messages queued in paho, and a card's event queued there
behind replies waiting for paho's in-flight window."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dealer_station import loop_queue
from dealer_station.loop_queue import BUSY, Busy, StampedQueue, refusable

# the sources, their items and a daemon with no broker, as the lanes' own tests make them
from test_loop_lanes import SOURCES, _item, daemon  # noqa: E402,F401 (daemon: the fixture)


def _command(item):
    return type(item) is Busy or item[:2] == ("mqtt", "command")


ops = st.lists(st.one_of(st.tuples(st.just("put"), st.sampled_from(SOURCES)),
                         st.tuples(st.just("run"), st.booleans(), st.booleans())), max_size=100)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops)
def test_while_the_link_is_backed_up_only_the_commands_wait(daemon, monkeypatch, ops):
    d = daemon
    monkeypatch.setattr(loop_queue, "BUSY_BATCH", 2)
    d.q = StampedQueue(lane_max=3)
    d.timer_at = None
    link = {"high": False, "up": True}
    handled, refused, put = [], [], []

    def record(item):
        if link["high"]:
            # backed up: no command answered while connected; no busy batch at all
            assert not (link["up"] and _command(item)), item
            assert type(item) is not Busy, item
        refused.extend(x for _, x in item) if type(item) is Busy else handled.append(item)
    monkeypatch.setattr(d, "handle", record)
    monkeypatch.setattr(d.link, "backlog", lambda: 10**6 if link["high"] else 0)
    monkeypatch.setattr(d.link.client, "is_connected", lambda: link["up"])
    for i, op in enumerate(ops):
        if op[0] == "put":
            lane, item = _item(op[1], i)
            d.q.put(item, lane)
            put.append(item)
            continue
        link["high"], link["up"] = op[1], op[2]
        d.run_once(0)
        # whatever the link holds, what is not a command is never held back
        assert all(refusable(lane) or lane == BUSY for lane in d.q.lanes), list(d.q.lanes)
        if not (link["high"] and link["up"]):
            assert not any(refusable(lane) for lane in d.q.lanes), list(d.q.lanes)
    link["high"] = False                       # the broker catches up: every command answered
    for _ in range(len(ops) + 5):
        d.run_once(0)
    assert not d.q.qsize()
    assert sorted(map(repr, handled + refused)) == sorted(map(repr, put))   # nothing lost, once
    for s in SOURCES:              # each source's order: among those handled, those refused busy
        for got in (handled, refused):
            mine = [x for x in got if (x[7] if x[:2] == ("mqtt", "command") else x[1]) == s]
            assert mine == [x for x in put if x in mine]


def test_a_flood_answered_into_a_broker_that_does_not_acknowledge_stays_bounded(daemon,
                                                                                  monkeypatch):
    """One login's 1,500 QoS 1 commands handed over at once (no id: malformed, most of them
    refused busy) into a link the broker does not acknowledge: the loop hands the link at most
    half paho's in-flight window (broker.inflight) of them, its own lane's replies and the
    replies held for the counts included, so a card's event is never queued behind them in
    paho; the rest waits, unacknowledged. The broker catching up, every one is
    answered and acknowledged, each once."""
    d = daemon
    d.q = StampedQueue()
    d.timer_at = None
    sent, acked = [], []
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: sent.append(payload))
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: acked.append(mid))
    monkeypatch.setattr(d.link.client, "is_connected", lambda: True)
    out = {"acknowledged": 0}      # by the broker, of the replies sent
    monkeypatch.setattr(d.link, "backlog", lambda: len(sent) - out["acknowledged"])
    n = 1500
    for k in range(n):
        d.q.put(("mqtt", "command", b'{"type":"bogus"}', None, None, k, 1, "m0"))
    for _ in range(50):
        d.run_once(0)                          # the broker acknowledges none of them
        assert len(sent) <= d.cfg["broker"]["inflight"] // 2, len(sent)   # below paho's window
    assert d.q.qsize() > 0
    for _ in range(200):                       # the broker catches up
        if not d.q.qsize() and not d.held_cmd_acks:
            break
        out["acknowledged"] = len(sent)
        d.run_once(0)
    assert len(sent) == n and sorted(acked) == list(range(n))
    assert {p["status"] for p in sent} == {"rejected"}
