"""The broker's packet limit (`max_packet_size` in docs/mosquitto/mosquitto.conf), the table's
first defence against an oversized command: without it one 200 MB command from an authorised
client reached the daemon whole (52 -> 646 MB resident while paho read it; 40 -> 661 MB with
bench/probe_big_command.py), before the table's own 4096-byte check. Run on a real Mosquitto with the shipped configuration (broker_rig.py).

The limit has a floor too: the table's own largest packet, a reply echoing a command's
correlation data, must pass, or the broker disconnects the table and the reply, sent again at
each reconnection, holds it offline (seen at 65536)."""
import json
import os
import re
import sqlite3
import threading

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from broker_rig import SHIPPED, ShippedBroker, make_pki
from dealer_station import commands, station_commands
from dealer_station.sim.broker import MAX_PACKET_SIZE
from drivers.virtual_shoe import VirtualShoe
from mqtt_rig import Client, DaemonProc, wait_for, workdir

USERS = {"t1": "pw-t1", "betting-system": "pw-bs", "bettor-2": "pw-b2"}
# a second betting-system login (one connection per user name: use_username_as_clientid)
BETTOR_2 = ("user bettor-2\ntopic read dealer-station/v1/+/replies/#\n"
            "topic write dealer-station/v1/+/commands\n")
BASE = "dealer-station/v1/t1"
CORRELATION_MAX = station_commands.CORRELATION_MAX   # the most the table echoes (corr41)
REPLY_WORDS = 1024                  # a reply's own fields and wording around what it quotes
SMILE = "\U0001F600"                # 4 bytes of UTF-8, 12 of JSON (ensure_ascii): the most out per in


def largest_table_packet():
    """The largest PUBLISH the table can make, from the code's own bounds: a reply to a response
    topic of RESPONSE_TOPIC_MAX characters (4 bytes each at most), echoing the most correlation
    data it takes (CORRELATION_MAX; MQTT allows 65535: 78.8 KB before corr41), its body quoting a command of commands.MAX_PAYLOAD bytes at up to 3 bytes
    out per byte in. What else the table publishes quotes no more and carries no correlation
    data (its `rejected` event for the same command: checked in the test below)."""
    topic = 2 + 4 * station_commands.RESPONSE_TOPIC_MAX
    props = (1 + 2 + len("application/json")) + (1 + 4) + (1 + 2 + CORRELATION_MAX)
    body = 3 * commands.MAX_PAYLOAD + REPLY_WORDS
    return 1 + 4 + topic + 2 + 4 + props + body   # fixed header, packet id, properties' length


def shipped_limit():
    with open(os.path.join(SHIPPED, "mosquitto.conf")) as f:
        found = re.findall(r"^max_packet_size (\d+)$", f.read(), re.M)
    assert len(found) == 1, f"docs/mosquitto/mosquitto.conf sets max_packet_size {len(found)} times"
    return int(found[0])


def test_the_shipped_limit_takes_the_largest_packet_the_table_makes_and_little_more():
    need = largest_table_packet()
    limit = shipped_limit()
    assert limit >= need, f"max_packet_size {limit}: the table's own reply may be {need} bytes"
    # not far above: what a flood of commands just under it costs the table grows with it
    assert limit <= 2 * need, f"max_packet_size {limit}: more than twice the {need} needed"
    # the test and simulation brokers (table-sim, the studio's edges) run with the same limit
    assert MAX_PACKET_SIZE == limit


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith("VmRSS:"))


class PeakRss(threading.Thread):
    """The daemon's resident memory, sampled every 10 ms: its peak while a command comes."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, rss_kb(pid), threading.Event()

    def run(self):
        while not self.done.wait(0.01):
            self.peak = max(self.peak, rss_kb(self.pid))

    def stop(self):
        self.done.set()
        self.join()
        return self.peak


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("packet-limit")
    d = workdir()
    broker = ShippedBroker(d, USERS, make_pki(str(tmp / "pki")), acl_extra=BETTOR_2)
    broker.start()
    shoe = VirtualShoe(decks=8, seed=4, heartbeat=0.2)
    shoe.start()
    pw = tmp / "pw-t1"
    pw.write_text("pw-t1\n")
    daemon = DaemonProc(d, broker.port, shoe.path)
    with open(daemon.config) as f:
        text = f.read()
    with open(daemon.config, "w") as f:
        f.write(text.replace("[broker]\n", f'[broker]\nusername = "t1"\npassword_file = "{pw}"\n'))
    daemon.start()
    bs = Client(broker.port, user=("betting-system", "pw-bs"))
    try:
        bs.wait_online()
        yield broker, daemon, bs
    finally:
        bs.close()
        daemon.stop()
        broker.stop()
        shoe.close()


def sender(port):
    """The second betting-system login, a raw paho client; returns (client, disconnect reasons)."""
    seen = []
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="bettor-2", protocol=mqtt.MQTTv5)
    c.username_pw_set("bettor-2", "pw-b2")
    c.on_disconnect = lambda cl, u, f, rc, p: seen.append(str(rc))
    connected = threading.Event()
    c.on_connect = lambda cl, u, f, rc, p: connected.set()
    c.connect("127.0.0.1", port)
    c.loop_start()
    assert connected.wait(10), "bettor-2 did not connect"
    return c, seen


def refused_rows(journal):
    db = sqlite3.connect(journal, timeout=5)
    try:
        return db.execute("SELECT COUNT(*) FROM refused").fetchone()[0]
    finally:
        db.close()


@pytest.mark.parametrize("size", [200_000, 32 * 2 ** 20])
def test_a_command_over_the_limit_never_reaches_the_table_which_keeps_serving(table, size):
    broker, daemon, bs = table
    assert bs.command({"type": "pause", "reason": "before"})["status"] == "accepted"
    refused, log_at, broker_log_at = (refused_rows(daemon.journal), len(daemon.logtext()),
                                      len(broker.logtext()))
    before = rss_kb(daemon.proc.pid)
    peak = PeakRss(daemon.proc.pid)
    peak.start()
    c, seen = sender(broker.port)
    try:
        payload = b'{"id": "huge", "type": "pause", "reason": "' + b"x" * size + b'"}'
        c.publish(f"{BASE}/commands", payload, qos=1)
        del payload
        # the broker disconnects its sender; before packet41 the table refused it (too large to
        # read its id: answered with "id": null)
        wait_for(lambda: seen or None in bs.replies, 60, "the sender's disconnect or the reply")
    finally:
        c.loop_stop()       # the client would send it again at each reconnection, and be
        c.disconnect()      # disconnected again: a client that sees this must drop the message
    after = bs.command({"type": "resume"})
    grew_kb = peak.stop() - before
    assert None not in bs.replies, f"the table was handed the command: {bs.replies[None]}"
    assert refused_rows(daemon.journal) == refused
    # a v5 client reads the broker's DISCONNECT (0x95) when its packet is in the socket's buffers
    # whole (200 kB: 15 of 15 here), else its own write fails first (1 MB: 1 of 15)
    assert seen and seen[0] in ("Packet too large", "Unspecified error"), seen
    assert "Client bettor-2 disconnected due to oversize packet." in broker.logtext()[broker_log_at:]
    # the table went on: its next command answered, its connection never dropped, its memory flat
    assert after["status"] == "accepted"
    new_log = daemon.logtext()[log_at:]
    assert daemon.alive() and "broker disconnected" not in new_log, new_log
    # before packet41, 32 MiB read whole by paho: 40 -> 152 MB resident (200 MB: 40 -> 661 MB)
    assert grew_kb < 8 * 1024, f"the daemon grew by {grew_kb} kB"


def test_the_largest_packet_the_table_makes_passes_and_the_table_keeps_serving(table):
    """A command carrying the most correlation data MQTT allows, the longest response topic the
    table takes (4-byte characters) and 4096 bytes of 4-byte characters the refusal quotes: its
    reply is larger than the command itself. Under a limit below it (65536) the broker
    disconnected the table at the reply, and again at each reconnection when it sent it again."""
    broker, daemon, bs = table
    prefix = f"{BASE}/replies/"
    topic = prefix + SMILE * (station_commands.RESPONSE_TOPIC_MAX - len(prefix))
    got, granted = [], len(bs.granted)
    bs.c.message_callback_add(topic, lambda c, u, m: got.append(m))
    bs.c.subscribe(topic, qos=1)
    wait_for(lambda: len(bs.granted) > granted, 10, "the response topic's SUBACK")
    n = (commands.MAX_PAYLOAD - len(json.dumps({"id": "w", "type": "pause", "reason": ""}))) // 4
    payload = json.dumps({"id": "w", "type": "pause", "reason": SMILE * n}, ensure_ascii=False)
    assert commands.MAX_PAYLOAD - 4 < len(payload.encode()) <= commands.MAX_PAYLOAD
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = topic
    props.CorrelationData = b"c" * CORRELATION_MAX
    log_at = len(daemon.logtext())
    bs.c.publish(f"{BASE}/commands", payload.encode(), qos=1, properties=props)
    wait_for(lambda: got, 20, "the reply on the response topic")
    m = got[0]
    reply = json.loads(m.payload)
    assert reply["id"] == "w" and reply["status"] == "rejected", reply
    assert m.properties.CorrelationData == b"c" * CORRELATION_MAX
    # its size, as the broker counts it (less a few header bytes): over 65536, which refused it
    size = len(m.payload) + len(m.topic.encode()) + CORRELATION_MAX + len("application/json")
    assert MAX_PACKET_SIZE // 2 < size <= largest_table_packet(), size
    # the rest the table published (its `rejected` event quotes the same reason) is smaller
    rest = [len(p.encode()) + len(t) for t, p in list(bs.all) if not t.startswith(prefix[:-1])]
    assert rest and max(rest) < size - CORRELATION_MAX, max(rest)
    # the table answers on (a resend of nothing: accepted whatever the table's state)
    assert bs.command({"type": "resend", "from": 10 ** 9})["status"] == "accepted"
    new_log = daemon.logtext()[log_at:]
    assert daemon.alive() and "broker disconnected" not in new_log, new_log


def test_correlation_data_too_long_to_echo_is_refused_and_the_reply_carries_none(table):
    """MQTT lets a command carry 65535 bytes of correlation data and the table echoed it all,
    which kept the broker's limit above 78.8 KB. Now more than CORRELATION_MAX is refused
    `malformed`, answered on its response topic without it (its id names it), and never applied."""
    broker, daemon, bs = table
    topic = f"{BASE}/replies/corr41"
    got, granted = [], len(bs.granted)
    bs.c.message_callback_add(topic, lambda c, u, m: got.append(m))
    bs.c.subscribe(topic, qos=1)
    wait_for(lambda: len(bs.granted) > granted, 10, "the response topic's SUBACK")
    for n, cid in ((CORRELATION_MAX + 1, "long-corr"), (10_000, "longer-corr")):
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = topic
        props.CorrelationData = b"k" * n
        bs.c.publish(f"{BASE}/commands", json.dumps({"type": "pause", "id": cid}).encode(),
                     qos=1, properties=props)
    wait_for(lambda: len(got) >= 2, 20, "both replies on the response topic")
    for m in got:
        reply = json.loads(m.payload)
        assert reply["status"] == "rejected" and reply["code"] == "malformed", reply
        assert "correlation data" in reply["reason"], reply
        assert getattr(m.properties, "CorrelationData", None) is None
    # at the limit it is echoed as ever
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = topic
    props.CorrelationData = b"k" * CORRELATION_MAX
    bs.c.publish(f"{BASE}/commands", json.dumps({"type": "resend", "from": 10 ** 9,
                                                 "id": "corr-ok"}).encode(), qos=1, properties=props)
    wait_for(lambda: len(got) >= 3, 20, "the third reply")
    assert json.loads(got[2].payload)["status"] == "accepted"
    assert got[2].properties.CorrelationData == b"k" * CORRELATION_MAX
