"""Hostile commands (issue #14 item 1): a poison command gets a reply, is journaled as refused,
is acknowledged (so it is never delivered again), and the table plays on. And the fuzz suite:
arbitrary payloads at the commands topic of the real daemon behind a real Mosquitto."""
import itertools
import json
import sqlite3
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dealer_station import commands
from mqtt_rig import Broker, Client, DaemonProc, workdir
from drivers.virtual_shoe import VirtualShoe

POISON = [
    b"[" * 2000,                                                       # RecursionError before
    json.dumps({"id": "big", "type": "resend", "from": 2 ** 70}).encode(),   # OverflowError
    b'{"id": "sur", "type": "pause", "reason": "\\ud800"}',            # UnicodeEncodeError
    b'{"id": "\\udfff", "type": "pause", "reason": "x"}',
    b'{"id": "nan", "type": "decision", "seat": NaN, "hand": 0, "action": "hit"}',
    b'{"id": "dup", "id": "dup2", "type": "resume"}',
    b'{"id": "inf", "type": "resend", "from": 1e999}',
]


@pytest.mark.parametrize("payload", POISON)
def test_parse_refuses_poison_with_a_command_error_only(payload):
    with pytest.raises(commands.CommandError) as e:
        commands.parse(payload)
    assert e.value.code == "malformed" and e.value.reason


@pytest.mark.parametrize("payload, cid", [
    (json.dumps({"id": "big", "type": "resend", "from": 2 ** 70}).encode(), "big"),
    (b'{"id": "sur", "type": "pause", "reason": "\\ud800"}', "sur"),
    (b'{"id": "nan", "type": "decision", "seat": NaN, "hand": 0, "action": "hit"}', "nan"),
    (b'{"id": "inf", "type": "resend", "from": 1e999}', "inf"),
    (b'{"type": "resend", "id": "a", "from": 1, "from": 2}', "a"),
    (b'{"id": "\\udfff", "type": "pause", "reason": "x"}', None),     # the id itself not text
    (b'{"id": "dup", "id": "dup2", "type": "resume"}', None),          # which one? not guessed
    (b'{"id": "x" "type": "resume"}', None),                            # not JSON at all
    (b'[{"id": "in-a-list"}]', None),
    # the cold trial: nested too deep, the plain id was answered null; an empty id was echoed
    (b'{"id": "deep", "type": "pause", "reason": "x", "x": [[[[[1]]]]]}', "deep"),
    (b'{"id": "deep2", "type": "pause", "x": ' + b"[" * 1500 + b"]" * 1500 + b"}", None),
    (b'{"id": "", "type": "pause", "reason": "x"}', None),
])
def test_a_refused_command_is_answered_with_its_id_when_the_id_itself_is_plain(payload, cid):
    """The cold trial: a key given twice, NaN, a lone surrogate or a huge integer elsewhere in the
    command was answered with "id": null, so a client retrying by id never saw its answer. The id
    is read back when it is given once at the top level and is plain text; otherwise null."""
    with pytest.raises(commands.CommandError) as e:
        commands.parse(payload)
    assert e.value.code == "malformed" and e.value.id == cid


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=64),
       st.sampled_from(['"from": NaN', '"from": 1, "from": 2', '"from": 1e999',
                        '"from": 123456789012345678901', '"reason": "\\ud800"',
                        '"x": [[[[[1]]]]]']))
def test_any_plain_id_is_echoed_whatever_else_is_wrong(cid, defect):
    try:
        cid.encode("utf-8")
    except UnicodeEncodeError:
        return                                   # not text: not a plain id
    payload = '{"type": "resend", "id": %s, %s}' % (json.dumps(cid), defect)
    with pytest.raises(commands.CommandError) as e:
        commands.parse(payload.encode())
    assert e.value.id == cid


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=600))
def test_parse_is_total_on_bytes(payload):
    try:
        commands.parse(payload)
    except commands.CommandError:
        pass


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 80, 2 ** 80)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _encode(v):
    # json.dumps writes NaN/Infinity and lone surrogates as escapes: exactly what a hostile
    # client sends
    return json.dumps(v).encode()


@pytest.fixture(scope="module")
def table():
    d = workdir()
    broker = Broker(d)
    broker.start()
    shoe = VirtualShoe(heartbeat=0.2, decks=8, seed=3)
    shoe.start()
    daemon = DaemonProc(d, broker.port, shoe.path)
    daemon.start()
    c = Client(broker.port)
    assert wait_online(c, timeout=20)
    yield daemon, c
    c.close()
    daemon.stop()
    shoe.close()
    broker.stop()


_probes = itertools.count()


def _probe(c, n=None):
    """A harmless command (resend nothing): its reply means every earlier command was handled."""
    r = c.command({"type": "resend", "from": 10 ** 9, "id": f"probe-{next(_probes)}"}, timeout=10)
    assert r["status"] == "accepted"


def replies(c):
    return [json.loads(p) for t, p in list(c.all) if t.endswith("/replies")]


def wait_online(c, timeout, after=0):
    """The daemon's retained `online` status, arrived after the `after`-th message: its signal
    that it has recovered and is connected."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for t, p in list(c.all)[after:]:
            if t.endswith("/status") and json.loads(p).get("state") == "online":
                return True
        time.sleep(0.02)
    return False


def test_poison_commands_are_answered_refused_on_record_and_not_redelivered(table):
    daemon, c = table
    before = len(replies(c))
    for p in POISON:
        c.raw(p)
    _probe(c)
    got = replies(c)[before:]
    assert sum(r["status"] == "rejected" and r["code"] == "malformed" for r in got) == len(POISON)
    assert daemon.alive()
    db = sqlite3.connect(daemon.journal)
    refused = [r[0] for r in db.execute("SELECT payload FROM refused")]
    db.close()
    # each kept (its first 256 bytes: enough to know it, not a way to fill the card)
    assert all(p[:256] in refused for p in POISON) and all(len(r) <= 256 for r in refused)
    # restart: the broker must not deliver any of them again (they were acknowledged)
    daemon.stop()
    mark, rmark = len(c.all), len(replies(c))
    daemon.start()
    assert wait_online(c, timeout=20, after=mark)
    _probe(c)
    again = [r for r in replies(c)[rmark:] if r.get("code") == "malformed"]
    assert again == []
    r = c.command({"type": "shoe_loaded"})
    assert r["status"] in ("accepted", "rejected") and daemon.alive()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(payload=st.one_of(
    st.binary(max_size=300),
    JSON.map(_encode),
    st.fixed_dictionaries({"id": st.text(min_size=1, max_size=70), "type": st.sampled_from(
        sorted(commands.ENGINE_COMMANDS) + ["resend"])},
        optional={"seat": JSON, "hand": JSON, "action": JSON, "seats": JSON, "from": JSON,
                  "reason": JSON, "card": JSON}).map(_encode),
    st.integers(1, 5000).map(lambda n: b"[" * n),
    st.integers(1, 2000).map(lambda n: b'{"a":' * n)))
def test_fuzz_the_commands_topic(table, payload):
    daemon, c = table
    c.raw(payload)
    _probe(c)
    assert daemon.alive()


def test_after_the_fuzz_the_table_still_plays_and_the_sequence_has_no_gap(table):
    daemon, c = table
    for ev in ({"type": "void_round", "reason": "fuzz"}, {"type": "resume"}):
        c.command(ev)
    r = c.command({"type": "resend", "from": 1})
    assert r["status"] == "accepted" and r["seq"][0] == 1
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (not c.events or max(c.events) < r["seq"][1]):
        time.sleep(0.02)
    assert max(c.events) >= r["seq"][1] and c.gaps() == []
    assert daemon.alive()


def _publish(c, payload, retain=False, response_topic=None):
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
    props = Properties(PacketTypes.PUBLISH)
    if response_topic:
        props.ResponseTopic = response_topic
    c.c.publish(f"{c.base}/commands", payload, qos=1, retain=retain, properties=props)


def test_a_response_topic_outside_the_replies_tree_is_refused(table):
    """A client naming the table's own events (or status) topic as its response topic would have
    the table publish a forged message there."""
    daemon, c = table
    for bad in (f"{c.base}/events", f"{c.base}/status", "elsewhere/x", f"{c.base}/replies/+"):
        before = len(c.all)
        _publish(c, json.dumps({"type": "pause", "id": "rt-x", "reason": "r"}), response_topic=bad)
        _probe(c)
        got = [(t, json.loads(p)) for t, p in list(c.all)[before:]]
        assert not any(t.endswith(("/events", "/status")) and m.get("type") == "reply" for t, m in got)
        refused = [m for t, m in got if t.endswith("/replies") and m.get("code") == "malformed"]
        assert refused and "response topic" in refused[-1]["reason"]
    # under the replies tree it is honoured
    _publish(c, json.dumps({"type": "resend", "id": "rt-ok", "from": 10 ** 9}),
             response_topic=f"{c.base}/replies/bs-1")
    _probe(c)


def test_a_retained_command_is_not_delivered_again_at_each_restart(table):
    daemon, c = table
    _publish(c, b'{"type": "pause", "id": "ret-1", "reason": NaN}', retain=True)
    _probe(c)
    mark = len(replies(c))
    for _ in range(2):
        daemon.stop()
        n = len(c.all)
        daemon.start()
        assert wait_online(c, timeout=20, after=n)
        _probe(c)
    assert [r for r in replies(c)[mark:] if r.get("code") == "malformed"] == []
    _publish(c, b"", retain=True)          # clear it from the broker


def test_a_login_longer_than_any_staff_id_is_kept_cut(table):
    """A topic level can be 64 KB, and the login after commands/ was kept whole in every refusal's
    row, audit entry and queue lane (cold41: 200 resends from 30 KB logins grew the journal by
    12 MB). Now it is cut to 64 characters and marked, so it cannot be any staff id either."""
    daemon, c = table
    long_login = "x" * 20000       # its packet under the broker's limit (24576 as shipped)
    before = len(replies(c))
    for i in range(5):
        c.c.publish(f"{c.base}/commands/{long_login}",
                    json.dumps({"type": "no_such_command", "id": f"long-{i}"}), qos=1)

    def got():
        return [r for r in replies(c)[before:] if str(r.get("id")).startswith("long-")]
    end = time.monotonic() + 15
    while len(got()) < 5 and time.monotonic() < end:
        time.sleep(0.05)
    assert len(got()) == 5 and all(r.get("code") == "malformed" for r in got()), got()
    db = sqlite3.connect(daemon.journal)
    rows = [r[0] for r in db.execute("SELECT sender FROM refused")]
    db.close()
    assert ("x" * 64 + "\u2026") in rows, rows[-5:]
    assert not any("x" * 65 in r for r in rows)
    assert daemon.alive()
