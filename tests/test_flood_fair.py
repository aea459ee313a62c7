"""A flood from one sender delays only that sender (dealer_station/loop_queue.py's lanes).

The cold trial: 20,000-50,000 malformed commands from one or 20 logins, and the cards dealt
during them were journaled and published 8-40 s late, behind every command in the loop's one
FIFO queue. Asserted here by order and counts, never by wall time."""
import json
import sqlite3

import paho.mqtt.client as mqtt

from dealer_station.loop_queue import BUSY_BATCH
from mqtt_rig import wait_for
from test_daemon import rig  # noqa: F401 - the fixture
from test_daemon_shoe import shoe_inputs, step_until

FLOOD = 5000


def test_a_card_dealt_behind_a_login_flood_is_journaled_and_published_before_most_of_it(
        rig, tmp_path):
    """The daemon in this process over Mosquitto and the virtual shoe. Its loop held still, one
    login's FLOOD malformed QoS 0 commands reach its queue, then the dealer deals a card; the
    loop runs. Each turn of the shoe's lane waits for one turn of the flood's (the login's next
    command and one batch of its commands refused busy), not for the flood: the card is
    journaled, and its event published, before the rest of the flood is answered; and every
    command of the flood is answered once (kept or counted by the refusal budget, and replied
    to). On one FIFO queue the card came after all FLOOD."""
    from dealer_station.config import check_config
    from dealer_station.daemon import Daemon
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=9)
    c = rig.client(b.port)
    journal = str(tmp_path / "j.sqlite")
    cfg, errors = check_config({
        "table": {"id": "t1", "profile": "luxury21"}, "shoe": {"url": shoe.path},
        "broker": {"port": b.port}, "paths": {"journal": journal},
        "metrics": {"enabled": False}})
    assert not errors, errors
    d = Daemon(cfg)
    d.start()
    answered, handle = [], d.handle

    def handled(item):              # what the loop answers, in order: flood commands, the shoe's
        if isinstance(item, tuple) and item[:2] == ("mqtt", "command") and item[7] == "m0":
            answered.append("flood")
        elif type(item).__name__ == "Busy":
            answered.extend("flood" for _, x in item if x[7] == "m0")
        elif type(item).__name__ == "CardRead":
            answered.append("card")
        elif type(item).__module__ == "drivers.events":
            answered.append("shoe")       # a STAT frame's report: the shoe's lane, before the card
        handle(item)
    flooder = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="m0",
                          protocol=mqtt.MQTTv5)
    try:
        step_until(d, lambda: d.devices["shoe"].get("model"), "the shoe's HELLO")
        d.process({"type": "shoe_loaded"}, "test")     # the table waits for the burn card
        step_until(d, lambda: not d.q.qsize(), "the loop idle")
        d.handle = handled
        flooder.max_inflight_messages_set(1000)
        flooder.connect("127.0.0.1", b.port)
        flooder.loop_start()
        for _ in range(FLOOD):       # QoS 0: not flow-controlled, all of it reaches the daemon
            last = flooder.publish("dealer-station/v1/t1/commands/m0", b'{"type":"bogus"}', qos=0)
        last.wait_for_publish(60)
        wait_for(lambda: d.q.qsize() >= FLOOD, 60, "the flood in the daemon's queue")
        emitted, session = [], d.shoe.session
        session.emit = lambda e, put=session.emit: (put(e), emitted.append(e))
        card = shoe.deal()
        wait_for(lambda: any(type(e).__name__ == "CardRead" for e in emitted), 30,
                 "the card in the daemon's queue")
        step_until(d, lambda: answered.count("flood") >= FLOOD and shoe_inputs(journal),
                   "the flood answered and the card journaled", timeout=120)
        assert [r[0]["card"] for r in shoe_inputs(journal)] == [card]
        at = answered.index("card")
        before, ahead = answered[:at].count("flood"), answered[:at].count("shoe")
        # each turn of the shoe's lane (its own items ahead of the card, in order, then the card)
        # waits for one turn of the flood: the login's next command and one busy batch
        assert answered.count("flood") == FLOOD and ahead <= 2, (at, ahead)
        assert before <= (1 + ahead) * (1 + BUSY_BATCH), (before, ahead)
        db = sqlite3.connect(journal)
        n = db.execute("SELECT n FROM inputs WHERE origin = 'shoe'").fetchone()[0]
        seqs = {s for (s,) in db.execute("SELECT seq FROM outbox WHERE input_n = ?", (n,))}
        kept = db.execute("SELECT COUNT(*) FROM refused WHERE sender = 'm0'").fetchone()[0]
        counted = db.execute("SELECT COALESCE(SUM(count), 0) FROM refused_counts "
                             "WHERE sender = 'm0'").fetchone()[0]
        db.close()
        assert seqs and kept + counted == FLOOD           # nothing lost, nothing twice

        def replies():
            return [p for t, p in list(c.all) if t.endswith("/replies")]
        step_until(d, lambda: len(replies()) >= FLOOD and
                   seqs <= {json.loads(p)["seq"] for t, p in list(c.all) if t.endswith("/events")},
                   "every reply and the card's event at the client", timeout=60)
        got = list(c.all)
        first = min(i for i, (t, p) in enumerate(got)
                    if t.endswith("/events") and json.loads(p)["seq"] in seqs)
        later = sum(t.endswith("/replies") for t, _ in got[first:])
        assert len(replies()) == FLOOD and later >= FLOOD - before, (later, before)
        codes = {json.loads(p)["code"] for p in replies()}
        assert codes == {"malformed", "busy"}
    finally:
        flooder.disconnect()
        flooder.loop_stop()
        d.close()
