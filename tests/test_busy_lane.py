"""The busy lane (dealer_station/loop_queue.py, station_busy.py): a copy of a command already
answered is answered `duplicate` there too; the lane's turn takes its senders in turn; and it is
bounded for QoS 0 floods, the QoS 0 commands beyond it dropped and counted, never silently."""
import json
import logging

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dealer_station import loop_queue
from dealer_station.loop_queue import BUSY, Busy, StampedQueue
from test_broker_not_mqtt import _daemon_without_broker


@pytest.fixture
def daemon(tmp_path):
    d = _daemon_without_broker(tmp_path)
    d.recover()
    d.timer_at = None
    yield d
    d.close()


def _cmd(payload, mid, user, qos=1):
    return ("mqtt", "command", payload, None, None, mid, qos, user)


def test_a_copy_of_an_answered_command_in_the_busy_lane_is_answered_duplicate(daemon,
                                                                             monkeypatch):
    """review38: a copy of an applied command that came while its sender's lane was full was
    answered "busy: not applied, send it again later", untrue of a command the table has; in
    its lane the same copy is answered `duplicate` with the first answer. Now in both. A command
    the table does not have is still refused busy."""
    d = daemon
    d.q = StampedQueue(lane_max=1)
    replies, acked = [], []
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: acked.append(mid))
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: replies.append(payload))
    first = json.dumps({"type": "shoe_loaded", "id": "c-1"}).encode()
    d.q.put(_cmd(first, 1, "alice"))
    d.run_once(0)
    assert [r["id"] for r in replies] == ["c-1"]
    original = replies[0]
    refused = d.journal.db.execute("SELECT COUNT(*) FROM refused").fetchone()[0]
    # a new command holds alice's lane; the copy of c-1 and a new c-3 go to the busy lane
    d.q.put(_cmd(json.dumps({"type": "resume", "id": "c-2"}).encode(), 2, "alice"))
    d.q.put(_cmd(first, 3, "alice"))
    d.q.put(_cmd(json.dumps({"type": "resume", "id": "c-3"}).encode(), 4, "alice"))
    for _ in range(3):
        d.run_once(0)
    assert not d.q.qsize() and sorted(acked) == [1, 2, 3, 4]
    by_id = {r["id"]: r for r in replies[1:]}
    assert by_id["c-1"] == {**original, "status": "duplicate", "original": original["status"]}
    assert by_id["c-3"]["code"] == "busy"
    # the duplicate is no refusal: only c-3's row is added
    assert d.journal.db.execute("SELECT COUNT(*) FROM refused").fetchone()[0] == refused + 1


@settings(max_examples=200, deadline=None)
@given(puts=st.lists(st.sampled_from("abcd"), max_size=300), batch=st.integers(1, 20))
@example(puts=list("aaaabbb"), batch=2)         # b's one behind a's two: FIFO took a, a
def test_each_busy_turn_takes_its_senders_in_turn(puts, batch):
    """A light sender's overflow waited behind all of a flooder's in one FIFO busy lane (fair38):
    now in each busy turn, a sender with commands left after it got at least as many as any
    other sender less one; each sender's own order kept; nothing lost or taken twice."""
    q = StampedQueue(lane_max=2)
    for k, s in enumerate(puts):
        q.put(_cmd(b"x", k, s))
    q.drain()
    lane_of = {k: s for k, s in enumerate(puts)}
    left = {s: max(0, puts.count(s) - 2) for s in "abcd"}     # beyond each lane's 2: busy
    taken = []
    saved, loop_queue.BUSY_BATCH = loop_queue.BUSY_BATCH, batch
    try:
        while True:
            try:
                item = q.take()
            except Exception:
                break
            if type(item) is not Busy:
                taken.append(item[5])
                continue
            got = {}
            for _, it in item:
                got[it[7]] = got.get(it[7], 0) + 1
                taken.append(it[5])
            for s in got:
                left[s] -= got[s]
            most = max(got.values())
            for s in "abcd":
                if left[s] > 0:
                    assert got.get(s, 0) >= most - 1, (s, got, left)
    finally:
        loop_queue.BUSY_BATCH = saved
    assert sorted(taken) == list(range(len(puts)))
    for s in "abcd":
        mine = [k for k in taken if lane_of[k] == s]
        assert len(mine) == puts.count(s)


def test_the_busy_lane_is_bounded_for_qos0_and_the_rest_counted(daemon, monkeypatch, caplog):
    """fair38: the busy lane held a QoS 0 flood without bound (~300 B a command). Now it holds
    BUSY_MAX; QoS 0 commands beyond it are dropped (at most once is what QoS 0 asks for) and
    counted by sender: commands_dropped_total and a warning naming the login. QoS 1 ones are
    kept (the broker's window bounds them), and so is a sender's while it holds fewer than its
    lane's bound there (the flooder filling it does not have a light sender's overflow dropped);
    what the lane holds is still answered."""
    d = daemon
    d.q = StampedQueue(lane_max=2)
    d.q.busy_max = 5
    monkeypatch.setattr(d.link, "backlog", lambda: 10**6)     # busy answers held: it fills
    replies = []
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: replies.append(payload))
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: None)
    for k in range(2 + 5 + 30):                                # lane 2, busy 5, then 30 more
        d.q.put(_cmd(b"x", k, "flood", qos=0))
    for k in range(3):                                         # QoS 1 beyond the bound: kept
        d.q.put(_cmd(b"y", 100 + k, "flood", qos=1))
    d.q.put(_cmd(b"z", 200, None, qos=0))                      # the shared topic: its own lane
    for k in range(2 + 3):              # a light sender: its lane's 2, then 2 kept, 1 dropped
        d.q.put(_cmd(b"w", 300 + k, "light", qos=0))
    with caplog.at_level(logging.WARNING, logger="dealer-station"):
        d.run_once(0)
        d.run_once(0)      # no new drop: the drops are said
    assert len(d.q.lanes[BUSY]) == 5 + 3 + 2
    assert d.metrics.counters[("commands_dropped_total", (("qos", "0"),))] == 31
    said = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(said) == 1 and "dropped 31 QoS 0 commands" in said[0] \
        and "login flood 30, login light 1" in said[0], said
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    for _ in range(5):
        d.run_once(0)
    assert not d.q.qsize()
    # answered: flood's lane 2 and busy 8, the shared topic's 1, light's 2 and 2; dropped: 31
    assert len(replies) == 2 + 8 + 1 + 4


def test_a_busy_reply_says_how_full_its_senders_lane_was_not_what_is_left(daemon, monkeypatch):
    """Cold trial (cold40): the busy reply named its sender's lane's length when the busy lane's
    turn came, not when the command was refused: after a flood had drained, "table busy: 0
    commands from this sender are waiting" (and any number below the lane's 32). A command goes
    to the busy lane only when its sender's lane is full: that is what the reply says."""
    d = daemon
    d.q = StampedQueue(lane_max=2)
    replies = []
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: None)
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: replies.append(payload))
    for k in range(6):
        d.q.put(_cmd(json.dumps({"type": "pause", "reason": "x", "id": f"p-{k}"}).encode(), k + 1,
                     "alice"))
    while d.q.qsize():
        d.run_once(0)
    busy = [r for r in replies if r.get("code") == BUSY]
    assert [r["id"] for r in busy] == ["p-2", "p-3", "p-4", "p-5"]
    assert {r["reason"] for r in busy} == {
        "table busy: 2 commands from this sender were waiting when it came; this one was not "
        "applied, send it again later"}


def test_only_the_tables_own_probe_is_spared_the_busy_refusal(daemon, monkeypatch):
    """The queue files an echo by the probe's own prefix (its nonce's random seed) into its
    lane; the busy lane spared anything beginning '{"type":"probe",' (outage40): a command on
    `commands` beyond its lane that merely looked like a probe skipped the batch's refusal and
    was handled in full (answered `malformed`, journaled on its own, ahead of the batch's
    earlier refusals). Now only the table's own probe is spared: a copy of it beyond the probe
    lane is still consumed, never answered."""
    from dealer_station.station_types import BrokerUp, Clock, Probe
    import time
    d = daemon
    prefix = d.q.probe_prefix
    d.q = StampedQueue(lane_max=1)
    d.q.probe_prefix = prefix
    replies = []
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: None)
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: replies.append(payload))
    effects = d.station.step(BrokerUp(False), Clock(time.time(), time.monotonic()))
    [probe] = [e.payload for e in effects if isinstance(e, Probe)]
    d.q.put(_cmd(json.dumps({"type": "resume", "id": "a"}).encode(), 1, None))   # holds the lane
    lookalike = b'{"type":"probe","nonce":"someone-1","id":"f1"}'
    d.q.put(_cmd(lookalike, 2, None))                   # beyond the lane: busy
    d.q.put(_cmd(probe, 3, None))                       # the probe lane
    d.q.put(_cmd(probe, 4, None))                       # a copy beyond it: the busy lane
    for _ in range(4):
        d.run_once(0)
    assert not d.q.qsize()
    by_id = {r["id"]: r for r in replies}
    assert set(by_id) == {"a", "f1"}, replies           # our probe is never answered
    assert by_id["f1"]["code"] == "busy"
    assert d.station.devices["commands"] == {"state": "ok"}


def test_a_forged_probe_with_the_tables_own_seed_is_refused_busy(daemon, monkeypatch):
    """cold41: the busy lane spared anything beginning with the table's probe prefix (its
    nonce's seed), which any client that can read `commands` learns from the first probe: a
    flood of `{"type":"probe","nonce":"<seed>-<any number>"}` beyond its lane was handled in full
    and answered `malformed`, never `busy` (3,000 of 3,000 through the real daemon). Only a probe
    the table sent is spared now: a forged number beyond the lane is refused busy, and the
    table's own probe, beyond its lane too, is still consumed and never answered."""
    from dealer_station.station_types import BrokerUp, Clock, Probe
    import time
    d = daemon
    prefix = d.q.probe_prefix
    d.q = StampedQueue(lane_max=1)
    d.q.probe_prefix = prefix
    replies = []
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: None)
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: replies.append(payload))
    effects = d.station.step(BrokerUp(False), Clock(time.time(), time.monotonic()))
    [probe] = [e.payload for e in effects if isinstance(e, Probe)]
    forged = [prefix + f'{n}","id":"f{n}"}}'.encode() for n in (999, 1000)]
    d.q.put(_cmd(json.dumps({"type": "resume", "id": "a"}).encode(), 1, None))   # holds the lane
    d.q.put(_cmd(forged[0], 2, None))                    # the probe lane (its prefix)
    d.q.put(_cmd(forged[1], 3, None))                    # beyond it: the busy lane
    d.q.put(_cmd(probe, 4, None))                        # ours, beyond the probe lane too
    for _ in range(5):
        d.run_once(0)
    assert not d.q.qsize()
    by_id = {r["id"]: r for r in replies}
    assert set(by_id) == {"a", "f999", "f1000"}, replies
    assert by_id["f999"]["code"] == "malformed"          # in a lane: read, an unknown type
    assert by_id["f1000"]["code"] == "busy", by_id["f1000"]
    assert d.station.devices["commands"] == {"state": "ok"}


def test_a_busy_reply_echoes_no_correlation_data_too_long_to_echo(daemon, monkeypatch):
    """corr41: the table echoes at most CORRELATION_MAX bytes of a command's correlation data,
    so its own largest reply stays under the broker's packet limit (docs/mosquitto/mosquitto.conf):
    a command refused busy echoes a short one as ever and none when it is longer, as its lane."""
    from dealer_station.station_commands import CORRELATION_MAX
    d = daemon
    d.q = StampedQueue(lane_max=1)
    replies = []
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: None)
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: replies.append((payload, cd)))
    corr = {"b-0": b"a" * 16, "b-1": b"b" * 16, "b-2": b"c" * CORRELATION_MAX,
            "b-3": b"d" * (CORRELATION_MAX + 1), "b-4": b"e" * 60000}
    for k, (cid, cd) in enumerate(corr.items()):
        d.q.put(("mqtt", "command", json.dumps({"type": "pause", "reason": "x", "id": cid}).encode(),
                 None, cd, k + 1, 1, "alice"))
    while d.q.qsize():
        d.run_once(0)
    got = {p["id"]: (p, cd) for p, cd in replies}
    assert {i for i, (p, _) in got.items() if p.get("code") == BUSY} >= {"b-2", "b-3", "b-4"}
    assert got["b-2"][1] == corr["b-2"]
    assert got["b-3"][1] is None and got["b-4"][1] is None
