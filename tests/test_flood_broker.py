"""A QoS 1 flood held AT THE BROKER (docs/protocol.md, "Busy"): the loop's lanes cannot reach it.

The broker hands the table's session its messages in arrival order, at QoS 1 only as many as the
table's v5 Receive Maximum before their PUBACKs (held until each command is journaled). With
Mosquitto's 20, another sender's command published behind one login's 600 QoS 1 commands was
handled after 557-600 of them (review38; 501-600 here): not yet in the table's queue, not
stamped, so `decision_timeout` could overtake a decision the betting system had sent in time.
`[broker] receive_maximum` (1000) has the broker hand the flood over, and the lanes take the
other sender's command in its turn. Asserted by order and counts, never by wall time."""
import json

import paho.mqtt.client as mqtt
import pytest

from dealer_station.loop_queue import BUSY_BATCH
from mqtt_rig import wait_for
from test_daemon import rig  # noqa: F401 - the fixture
from test_daemon_shoe import step_until

FLOOD = 900          # below receive_maximum (1000): the whole flood can be handed over
BASE = "dealer-station/v1/t1/commands"


def _daemon(rig, tmp_path, broker=None):
    from dealer_station.config import check_config
    from dealer_station.daemon import Daemon
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=9)
    cfg, errors = check_config({
        "table": {"id": "t1", "profile": "luxury21"}, "shoe": {"url": shoe.path},
        "broker": {"port": b.port, **(broker or {})},
        "paths": {"journal": str(tmp_path / "j.sqlite")}, "metrics": {"enabled": False}})
    assert not errors, errors
    d = Daemon(cfg)
    d.start()
    return b, d


def _publisher(port, name):
    p = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=name, protocol=mqtt.MQTTv5)
    p.max_inflight_messages_set(1000)
    p.connect("127.0.0.1", port)
    p.loop_start()
    return p


def _close(pubs, d):
    for p in pubs:
        p.disconnect()
        p.loop_stop()
    d.close()


@pytest.mark.parametrize("sender,topic", [(None, BASE), ("m1", BASE + "/m1")],
                         ids=["betting-system", "another-login"])
def test_a_command_behind_a_qos1_login_flood_reaches_the_table_and_is_answered_in_its_turn(
        rig, tmp_path, sender, topic):
    """The daemon in this process over Mosquitto. Its loop held still (no PUBACK sent), login
    m0 publishes FLOOD malformed QoS 1 commands, then the betting system (`commands`) or another
    login (`commands/m1`) one command. The broker hands that command to the table while every
    command of the flood is still unacknowledged (with a window of 20 it held it behind the
    flood); the loop runs, and it is answered after at most one turn of the flood's lanes (its
    login's next command and one busy batch), with most of the flood still to answer; then every
    command of the flood is answered once."""
    b, d = _daemon(rig, tmp_path)
    c = rig.client(b.port)
    arrived, acked, order, handle = [], [], [], d.handle
    put, ack = d.link.enqueue, d.link.ack
    d.link.enqueue = lambda item: (arrived.append(item[7]) if item[:2] == ("mqtt", "command")
                                   else None, put(item))
    d.link.ack = lambda mid, qos: (acked.append(mid), ack(mid, qos))

    def handled(item):
        if isinstance(item, tuple) and item[:2] == ("mqtt", "command"):
            order.append(item[7])
        elif type(item).__name__ == "Busy":
            order.extend(x[7] for _, x in item)
        handle(item)
    pubs = []
    try:
        step_until(d, lambda: d.devices["commands"].get("state") == "ok", "the probe's echo")
        step_until(d, lambda: not d.q.qsize(), "the loop idle")
        d.handle = handled
        held = len(acked)
        arrived.clear()         # the probe's echo (sender None, as the betting system's)
        pubs = [_publisher(b.port, "m0"), _publisher(b.port, "other")]
        for _ in range(FLOOD):
            last = pubs[0].publish(BASE + "/m0", b'{"type":"bogus"}', qos=1)
        last.wait_for_publish(60)
        pubs[1].publish(topic, json.dumps({"type": "bogus", "id": "x"}), qos=1) \
            .wait_for_publish(60)
        wait_for(lambda: sender in arrived, 30,
                 f"{sender or 'the betting system'}'s command handed to the table while the "
                 f"flood's PUBACKs are held (behind {arrived.count('m0')} of the flood)")
        assert len(acked) == held and arrived.count("m0") == FLOOD   # none of it acknowledged
        step_until(d, lambda: sender in order, "its command answered", timeout=120)
        before = order[:order.index(sender)].count("m0")
        assert before <= 1 + BUSY_BATCH and before < FLOOD, before
        step_until(d, lambda: order.count("m0") >= FLOOD and not d.held_cmd_acks,
                   "the flood answered", timeout=120)
        assert order.count("m0") == FLOOD and len(acked) - held == FLOOD + 1  # each once
        step_until(d, lambda: any(t.endswith("/replies") and '"id": "x"' in p
                                  for t, p in list(c.all)), "its reply at the client")
    finally:
        _close(pubs, d)


def test_the_table_asks_the_broker_for_its_receive_maximum(rig, tmp_path):
    """The window is the table's own: `[broker] receive_maximum` in its CONNECT. At 30, the
    broker hands it 30 of a login's flood before its first PUBACK, and no more (Mosquitto takes a
    v5 client's Receive Maximum in place of its max_inflight_messages, 20)."""
    b, d = _daemon(rig, tmp_path, {"receive_maximum": 30})
    arrived, put = [], d.link.enqueue
    d.link.enqueue = lambda item: (arrived.append(item[7]) if item[:2] == ("mqtt", "command")
                                   else None, put(item))
    pubs = []
    try:
        step_until(d, lambda: d.devices["commands"].get("state") == "ok", "the probe's echo")
        step_until(d, lambda: not d.q.qsize(), "the loop idle")
        arrived.clear()         # the probe's echo
        pubs = [_publisher(b.port, "m0"), _publisher(b.port, "other")]
        for _ in range(100):
            last = pubs[0].publish(BASE + "/m0", b'{"type":"bogus"}', qos=1)
        last.wait_for_publish(60)
        wait_for(lambda: len(arrived) >= 30, 30, "the first 30 of the flood at the table")
        # a marker behind the flood, from the same publisher session order: the broker has
        # handled every message before it once the marker's PUBACK is back
        pubs[1].publish(BASE + "/m2", b"{}", qos=1).wait_for_publish(60)
        assert arrived == ["m0"] * 30
    finally:
        _close(pubs, d)


def test_a_decision_sent_in_time_behind_a_qos1_flood_is_not_overtaken_by_its_timeout(
        rig, tmp_path):
    """review38's High, end to end: seat 1 is to decide; login m0 floods FLOOD QoS 1 commands
    and the betting system sends seat 1's decision behind them, before the decision timer's
    deadline. The table is handed the decision while the flood is unacknowledged, stamped before
    the deadline; the deadline passes (the loop held still, as behind a long flood) and the loop
    runs: the decision is applied, and no `decision_timeout` stands the hand for it. With a
    window of 20 the decision stayed at the broker, unstamped, and the timer could overtake it."""
    import time
    from test_daemon import journal_inputs
    b, d = _daemon(rig, tmp_path)
    c = rig.client(b.port)
    arrived, put = [], d.link.enqueue
    d.link.enqueue = lambda item: (arrived.append(item[7]) if item[:2] == ("mqtt", "command")
                                   else None, put(item))
    pubs = []
    try:
        step_until(d, lambda: d.devices["commands"].get("state") == "ok", "the probe's echo")
        for body in ({"type": "shoe_loaded"}, "As", "2c", d.table.game.betting_closed([1]),
                     "Ts", "5c", "7s", "2c"):   # burn; seat 1 T 7, the dealer 5 and a hole card
            d.process({"type": "card", "card": body} if isinstance(body, str) else body, "test")
        assert d.timer_at is not None             # seat 1's decision timer
        step_until(d, lambda: not d.q.qsize(), "the loop idle")
        arrived.clear()
        pubs = [_publisher(b.port, "m0"), _publisher(b.port, "bs")]
        for _ in range(FLOOD):
            last = pubs[0].publish(BASE + "/m0", b'{"type":"bogus"}', qos=1)
        last.wait_for_publish(60)
        decision = {"type": "decision", "id": "d-1", "seat": 1, "hand": 0, "action": "stand"}
        pubs[1].publish(BASE, json.dumps(decision), qos=1).wait_for_publish(60)
        wait_for(lambda: None in arrived, 30, "the decision handed to the table behind the "
                 f"flood (behind {arrived.count('m0')} of it)")
        # the deadline passes now, after the decision came (as behind a flood longer than the
        # decision timer): the station's timer and the loop's wake-up both moved to this instant
        d.station.timer = (time.monotonic(),) + d.station.timer[1:]
        d.timer_at = d.station.timer[0]
        step_until(d, lambda: any(t.endswith("/replies") and '"d-1"' in p for t, p in list(c.all)),
                   "the decision's reply", timeout=120)
        reply = next(json.loads(p) for t, p in list(c.all)
                     if t.endswith("/replies") and '"d-1"' in p)
        assert reply["status"] == "accepted", reply
        kinds = [i["type"] for i in journal_inputs(str(tmp_path / "j.sqlite"))]
        assert "decision" in kinds and "decision_timeout" not in kinds, kinds
    finally:
        _close(pubs, d)


def test_a_broker_killed_amid_a_handed_over_flood_loses_no_command(rig, tmp_path):
    """Nothing lost with the larger window: the broker has handed the table FLOOD commands of
    one login and another sender's, the loop has answered a few of them (the rest held, their
    busy turn waiting for the link), and the broker is killed (SIGKILL; its store saved at every change) and started again. The PUBACKs held for
    the rest were never sent, so the broker delivers those again to the table's session: every
    command is journaled (kept or counted) and answered, by id, at the client, though some
    twice (a command answered before the kill whose PUBACK was lost)."""
    import sqlite3
    b, d = _daemon(rig, tmp_path)
    c = rig.client(b.port)
    arrived, order, handle, put = [], [], d.handle, d.link.enqueue
    d.link.enqueue = lambda item: (arrived.append(item[7]) if item[:2] == ("mqtt", "command")
                                   else None, put(item))

    def handled(item):
        if isinstance(item, tuple) and item[:2] == ("mqtt", "command"):
            order.append(item[7])
        elif type(item).__name__ == "Busy":
            order.extend(x[7] for _, x in item)
        handle(item)
    ids = {f"f-{k}" for k in range(FLOOD)} | {"x"}

    def replied():
        return {json.loads(p).get("id") for t, p in list(c.all) if t.endswith("/replies")}
    pubs = []
    try:
        step_until(d, lambda: d.devices["commands"].get("state") == "ok", "the probe's echo")
        step_until(d, lambda: not d.q.qsize(), "the loop idle")
        d.handle = handled
        arrived.clear()
        pubs = [_publisher(b.port, "m0"), _publisher(b.port, "other")]
        for k in range(FLOOD):
            last = pubs[0].publish(BASE + "/m0", json.dumps({"type": "bogus", "id": f"f-{k}"}),
                                   qos=1)
        last.wait_for_publish(60)
        pubs[1].publish(BASE + "/m1", json.dumps({"type": "bogus", "id": "x"}), qos=1) \
            .wait_for_publish(60)
        wait_for(lambda: "m1" in arrived, 30, "the flood and m1's command at the table")
        # the busy lane held, the senders' lanes not (as while the link's backlog is high and
        # it is not connected: Daemon._open): the lane's 32 answered, most of the flood waits
        d._open = lambda: (False, True)
        step_until(d, lambda: len(order) >= 32, "part of the flood answered")
        held = d.q.qsize()
        b.kill()
        b.start()
        del d._open
        assert held >= FLOOD - 100, held      # held, unacknowledged, when the broker died
        step_until(d, lambda: ids <= replied(), "every command answered at the client",
                   timeout=180)
        step_until(d, lambda: not d.q.qsize() and not d.held_cmd_acks, "the loop idle")
        db = sqlite3.connect(str(tmp_path / "j.sqlite"))
        kept = db.execute("SELECT COUNT(*) FROM refused WHERE sender IN ('m0', 'm1')") \
            .fetchone()[0]
        counted = db.execute("SELECT COALESCE(SUM(count), 0) FROM refused_counts "
                             "WHERE sender IN ('m0', 'm1')").fetchone()[0]
        db.close()
        assert kept + counted >= FLOOD + 1 and order.count("m0") >= FLOOD, (kept, counted)
    finally:
        _close(pubs, d)
