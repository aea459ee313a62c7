"""The real daemon (a subprocess) against a real Mosquitto, with a virtual shoe on a pty."""
import json
import os
import subprocess
import sys
import time

import pytest

from controller import get_profile, new_table, step
from dealer_station.signing import ENVELOPE
from drivers.virtual_shoe import VirtualShoe
from mqtt_rig import Broker, Client, DaemonProc, Proxy, ROOT, wait_for, workdir
from table_driver import TableDriver


@pytest.fixture
def rig():
    made = {"daemons": [], "clients": [], "shoes": [], "brokers": []}

    class R:
        def __init__(self):
            self.dir = workdir()

        def broker(self, **kw):
            b = Broker(self.dir, **kw)
            b.start()
            made["brokers"].append(b)
            return b

        def shoe(self, **kw):
            s = VirtualShoe(heartbeat=0.2, **kw)
            s.start()
            made["shoes"].append(s)
            return s

        def daemon(self, port, shoe, **kw):
            d = DaemonProc(self.dir, port, shoe.path, **kw)
            d.start()
            made["daemons"].append(d)
            return d

        def client(self, port, **kw):
            c = Client(port, **kw)
            made["clients"].append(c)
            return c
    yield R()
    for d in made["daemons"]:
        d.stop()
    for c in made["clients"]:
        c.close()
    for s in made["shoes"]:
        s.close()
    for b in made["brokers"]:
        b.stop()


def journal_inputs(path):
    import sqlite3
    db = sqlite3.connect(path)
    rows = [json.loads(r[0]) for r in db.execute("SELECT body FROM inputs ORDER BY n")]
    db.close()
    return rows


def replayed(profile, inputs):
    t = new_table(profile)
    out = []
    for i in inputs:
        t, o = step(t, i)
        out.extend(o)
    return out


def strip(msgs):
    return [{k: v for k, v in m.items() if k not in ENVELOPE} for m in msgs]


@pytest.mark.parametrize("profile,decks,cut", [("luxury21", 8, 208), ("punto_banco", 8, 7)])
def test_a_full_shoe_every_result_received_in_order(rig, profile, decks, cut):
    b = rig.broker()
    shoe = rig.shoe(decks=decks, seed=11, cut_from_back=cut)
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe, profile=profile)
    c.wait_online()
    assert c.command({"type": "shoe_loaded"})["status"] == "accepted"
    drv = TableDriver(c, shoe, get_profile(profile).game, seed=3)
    drv.play(lambda x: x.phase == "shuffle_due", timeout=240)
    c.caught_up(d.journal)
    msgs = c.in_order()
    assert c.gaps() == [] and [m["seq"] for m in msgs] == list(range(1, len(msgs) + 1))
    results = [m for m in msgs if m["type"] == "round_result"]
    assert [r["round"] for r in results] == list(range(1, len(results) + 1))
    assert len(results) >= (8 if profile == "luxury21" else 60)
    assert any(m["type"] == "last_round" for m in msgs)
    # what the subscriber got is exactly what the engine gives for the journaled inputs
    assert strip(msgs) == strip(replayed(get_profile(profile), journal_inputs(d.journal)))
    assert d.alive()


def at_awaiting_card(drv, c, min_events=0):
    """Play until the latest event is an awaited card in a round; returns its seq (not acted on)."""
    state = {}

    def hook(d, e):
        state["last"] = e
    drv.hook = hook
    drv.play(lambda x: x.phase == "round" and x.events > min_events
             and state.get("last", {}).get("type") == "awaiting_card")
    drv.hook = None
    return state["last"]["seq"]


def first_arrivals_increase(client):
    seen = set()
    firsts = []
    for s in client.order:
        if s not in seen:
            seen.add(s)
            firsts.append(s)
    return firsts == sorted(firsts)


def test_broker_killed_and_restarted_mid_round_loses_nothing(rig):
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=5, cut_from_back=208)
    c = rig.client(b.port, name="bs-broker-test")
    d = rig.daemon(b.port, shoe)
    c.wait_online()
    c.command({"type": "shoe_loaded"})
    drv = TableDriver(c, shoe, "blackjack", seed=8)
    last = at_awaiting_card(drv, c, min_events=5)
    b.kill()
    shoe.deal()              # the dealer deals the awaited card while the broker is down
    drv.acted = last
    time.sleep(1.0)
    b.start()
    drv.play(lambda x: len(x.results) >= 3, timeout=90)
    c.caught_up(d.journal)
    assert c.gaps() == [] and first_arrivals_increase(c)
    msgs = c.in_order()
    assert strip(msgs) == strip(replayed(get_profile("luxury21"), journal_inputs(d.journal)))


def test_network_cut_between_daemon_and_broker_loses_nothing(rig):
    b = rig.broker()
    proxy = Proxy(b.port)
    proxy.start()
    shoe = rig.shoe(decks=8, seed=6, cut_from_back=7)
    c = rig.client(b.port)
    d = rig.daemon(proxy.port, shoe, profile="punto_banco")
    c.wait_online()
    c.command({"type": "shoe_loaded"})
    drv = TableDriver(c, shoe, "baccarat", seed=2)
    drv.play(lambda x: len(x.results) >= 2)
    last = at_awaiting_card(drv, c)
    proxy.cut()
    shoe.deal()              # the dealer deals the awaited card while the network is cut
    drv.acted = last
    time.sleep(1.5)
    proxy.restore()
    drv.play(lambda x: len(x.results) >= 6, timeout=60)
    c.caught_up(d.journal)
    assert c.gaps() == [] and first_arrivals_increase(c)
    assert strip(c.in_order()) == strip(replayed(get_profile("punto_banco"), journal_inputs(d.journal)))


def test_malformed_and_out_of_turn_commands_are_rejected_and_change_nothing(rig):
    import random
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=9)
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe)
    c.wait_online()
    c.command({"type": "shoe_loaded"})
    drv = TableDriver(c, shoe, "blackjack", seed=4)
    drv.play(lambda x: x.acted and c.events[x.acted]["type"] == "awaiting_decision")
    rng = random.Random(1)
    bad = [b"", b"{", b"[]", b"null", b'"x"', b"\xff\xfe", b'{"type":"decision"}',
           b'{"id":"x"}', b'{"id":"","type":"resume"}', b'{"id":5,"type":"resume"}',
           json.dumps({"id": "q", "type": "explode"}).encode(), b"{" * 5000]
    ids = []
    c.wait_replies()         # the driver's last decision has had its reply...
    c.caught_up(d.journal)   # ...and its events (the reply goes out before them)
    mark = len(c.all)
    before = len(c.events)
    for i in range(1000):
        kind = i % 4
        if kind == 0:
            c.raw(rng.choice(bad))
        elif kind == 1:   # out of turn: a seat that is not playing now
            ids.append(c.command({"type": "decision", "seat": 7 if i % 8 else 6, "hand": 3,
                                  "action": "hit"}, wait=False))
        elif kind == 2:   # not allowed now
            ids.append(c.command(rng.choice([{"type": "shoe_loaded"}, {"type": "insurance_closed"},
                                             {"type": "resume"}, {"type": "betting_closed", "seats": [1]},
                                             {"type": "manual_card", "card": "ZZ"},
                                             {"type": "decision", "seat": 1, "hand": 0, "action": "fly"}]),
                                 wait=False))
        else:
            ids.append(c.command({"type": rng.choice(["pause", "void_round"])}, wait=False))
    end = time.monotonic() + 60
    while time.monotonic() < end and not all(i in c.replies for i in ids):
        time.sleep(0.05)
    assert all(c.replies[i]["status"] == "rejected" and c.replies[i]["reason"] for i in ids)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        replies = [json.loads(p) for t, p in list(c.all)[mark:] if t.endswith("/replies")]
        if len(replies) >= 1000:
            break
        time.sleep(0.05)
    assert len(replies) == 1000 and all(r["status"] == "rejected" and r["reason"] for r in replies)
    c.caught_up(d.journal)
    new = [c.events[s] for s in sorted(c.events)[before:]]
    assert all(m["type"] == "rejected" for m in new)
    # the refusal budget keeps a sender's first refusals whole (their events); when the lanes were
    # held behind the link (hold39) those kept may all be `busy` ones, which publish no event
    assert new or any(r.get("code") == "busy" for r in replies)
    assert d.alive()
    # the table still plays
    drv.play(lambda x: len(x.results) >= 1, timeout=60)


def test_a_command_repeated_with_the_same_id_is_applied_once(rig):
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=9)
    c = rig.client(b.port)
    rig.daemon(b.port, shoe)
    c.wait_online()
    r1 = c.command({"type": "shoe_loaded", "id": "load-1"})
    c.replies.pop("load-1")
    r2 = c.command({"type": "shoe_loaded", "id": "load-1"})
    assert r1["status"] == "accepted" and r2["status"] == "duplicate" and r2["original"] == "accepted"
    c.caught_up(os.path.join(rig.dir, "journal.sqlite"))
    assert sum(1 for m in c.events.values() if m["type"] == "shoe_started") == 1


def test_manual_card_and_resend_and_response_topic(rig):
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=9)
    mine = "dealer-station/v1/t1/replies/bs-7"    # a response topic under the table's replies
    c = rig.client(b.port, topics=["dealer-station/v1/t1/events", mine,
                                   "dealer-station/v1/t1/status"])
    rig.daemon(b.port, shoe, profile="punto_banco")
    c.wait_online()
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = mine
    props.CorrelationData = b"corr-42"
    got = []
    c.c.message_callback_add(mine, lambda cl, u, m: got.append(
        (json.loads(m.payload), m.properties.CorrelationData)))
    c.c.publish("dealer-station/v1/t1/commands", json.dumps({"type": "shoe_loaded", "id": "s1"}),
                qos=1, properties=props)
    end = time.monotonic() + 10
    while not got and time.monotonic() < end:
        time.sleep(0.02)
    assert got[0][0]["status"] == "accepted" and got[0][1] == b"corr-42"
    c.c.publish("dealer-station/v1/t1/commands", json.dumps(
        {"type": "manual_card", "card": "7h", "id": "m1"}), qos=1, properties=props)
    end = time.monotonic() + 10
    while len(got) < 2 and time.monotonic() < end:
        time.sleep(0.02)
    c.caught_up(os.path.join(rig.dir, "journal.sqlite"))
    dealt = [m for m in c.events.values() if m["type"] == "card_dealt"]
    assert dealt[0]["card"] == "7h"
    count = len(c.events)
    c.events.clear()
    c.c.publish("dealer-station/v1/t1/commands", json.dumps({"type": "resend", "from": 1, "id": "r1"}),
                qos=1, properties=props)
    end = time.monotonic() + 10
    while len(c.events) < count and time.monotonic() < end:
        time.sleep(0.02)
    assert sorted(c.events) == list(range(1, count + 1))


def test_decision_timeout_is_journaled_and_recovery_rearms_it(rig):
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=21)
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe, timers={"decision_s": 1.0})
    c.wait_online()
    c.command({"type": "shoe_loaded"})
    drv = TableDriver(c, shoe, "blackjack", seed=4)
    drv.act_decisions = False
    orig = drv.act

    def act(e):
        if e["type"] == "awaiting_decision":
            drv.acted = e["seq"]        # let the timer decide
            return
        orig(e)
    drv.act = act
    drv.play(lambda x: len(x.results) >= 1, timeout=90)
    inputs = journal_inputs(d.journal)
    assert any(i["type"] == "decision_timeout" for i in inputs)
    assert strip(c.in_order()) == strip(replayed(get_profile("luxury21"), inputs))
    # kill while a decision is awaited: after restart the timer fires without any command
    seen = drv.acted
    drv.play(lambda x: x.acted > seen and c.events[x.acted]["type"] == "awaiting_decision",
             timeout=60)
    d.kill()
    d.start()
    n = len([i for i in journal_inputs(d.journal) if i["type"] == "decision_timeout"])
    end = time.monotonic() + 15
    while time.monotonic() < end:
        if len([i for i in journal_inputs(d.journal) if i["type"] == "decision_timeout"]) > n:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the re-armed timer did not fire")


def test_recovery_voids_a_round_after_a_long_outage(rig):
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=21)
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe, timers={"void_after_outage_s": 1})
    c.wait_online()
    c.command({"type": "shoe_loaded"})
    drv = TableDriver(c, shoe, "blackjack", seed=4)
    drv.play(lambda x: x.phase == "round" and x.events > 8)
    d.kill()
    time.sleep(2.0)
    d.start()
    end = time.monotonic() + 15
    while time.monotonic() < end and not any(m["type"] == "round_voided" for m in c.events.values()):
        time.sleep(0.05)
    v = [m for m in c.events.values() if m["type"] == "round_voided"]
    assert v and "down for" in v[0]["reason"]


def test_a_restart_after_quiet_running_counts_only_the_time_down(rig):
    """The real daemon, killed twice in one round: restarted at once, then running quietly (no
    input) longer than the limit, killed and restarted at once. The table was down a few
    seconds each time: the round goes on. Counted from the last input it was voided 'down for
    15 s' (limit 10 s); the loop's alive_at stamp (every 2.5 s here) says when it last ran."""
    import sqlite3
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=21)
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe, timers={"void_after_outage_s": 10})
    c.wait_online()
    c.command({"type": "shoe_loaded"})
    drv = TableDriver(c, shoe, "blackjack", seed=4)
    drv.play(lambda x: x.phase == "round" and x.events > 8)

    def restart(k):
        d.kill()
        d.start()
        wait_for(lambda: d.logtext().count("recovered:") >= k, 30, "the daemon's recovery")
    restart(2)
    time.sleep(14.0)              # running, the round waiting, nothing journaled
    db = sqlite3.connect(d.journal)
    stamp = db.execute("SELECT value FROM meta WHERE key='alive_at'").fetchone()
    db.close()
    restart(3)
    time.sleep(1.0)               # its void, if any, published
    assert not [m for m in c.events.values() if m["type"] == "round_voided"], d.logtext()[-2000:]
    assert stamp is not None and time.time() - float(stamp[0].split()[0]) < 15


def test_journal_is_private_and_check_config_names_every_error(rig, tmp_path):
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=1)
    d = rig.daemon(b.port, shoe)
    wait_for(lambda: "recovered:" in d.logtext(), 10, "the daemon's recovery")
    assert os.stat(d.journal).st_mode & 0o077 == 0
    bad = tmp_path / "bad.toml"
    bad.write_text('[table]\nid = "Bad Id"\nprofile = "luxury21"\ncolour = "red"\n'
                   '[shoe]\nbaudrate = 12\n[broker]\nport = 0\ntls = true\n[nonsense]\n'
                   '[panel]\nenabled = true\nmock_socket = "/run/p.sock"\n[panel.pins]\nresume = 13\n')
    p = subprocess.run([sys.executable, "-m", "dealer_station.cli", "check-config", str(bad)],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 1
    for want in ("table.id:", "table.colour: unknown key", "shoe.baudrate: must be one of",
                 "broker.port: must be 1-65535", "nonsense: unknown section", "broker.ca_file",
                 "shoe.url: required", "panel.mock_socket: only mock pins"):
        assert want in p.stdout, (want, p.stdout)
    p = subprocess.run([sys.executable, "-m", "dealer_station.cli", "check-config", d.config],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and "ok" in p.stdout


def play_with_kills(rig, kills, rounds=5, seed=31):
    """A luxury21 table for `rounds` rounds; the daemon is SIGKILLed (and restarted at once) when
    the betting system has seen each event count in `kills`. Returns (outputs, results, events)."""
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=seed, cut_from_back=208)
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe)
    c.wait_online()
    c.command({"type": "shoe_loaded", "id": "load"})
    drv = TableDriver(c, shoe, "blackjack", seed=seed)
    todo = sorted(kills)
    done = []

    def hook(x, e):
        while todo and x.events >= todo[0]:
            todo.pop(0)
            d.kill()
            done.append(e["seq"])
            d.start()
    drv.hook = hook
    drv.play(lambda x: len(x.results) >= rounds, timeout=300)
    c.caught_up(d.journal, timeout=20)
    assert c.gaps() == []
    return strip(c.in_order()), strip(drv.results), drv.events, done, c


def test_sigkill_at_fifty_random_points_loses_nothing_and_changes_no_result(rig):
    import random
    clean, results, n_events, _, _ = play_with_kills(rig, [])
    points = sorted(random.Random(2026).sample(range(2, n_events - 2), 50))
    rig2 = type(rig)()
    got, results2, _, killed_at, c = play_with_kills(rig2, points)
    assert len(killed_at) == 50
    assert results2 == results
    assert got[:len(clean)] == clean
    assert c.repeats >= 0  # repeats were dropped by sequence number, none missing (no gaps)


def test_a_subscriber_to_everything_never_sees_the_hole_card_before_its_reveal(rig):
    b = rig.broker()
    shoe = rig.shoe(decks=1, seed=12, cut_from_back=20)
    spy = rig.client(b.port, topics=["#"])
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe, extra_profile='base = "luxury21"\nname = "lux-1deck"\n'
                   'decks = 1\ncut_card_from_back = 20\ncut_card_tolerance = 52\n')
    c.wait_online()
    c.command({"type": "shoe_loaded"})
    drv = TableDriver(c, shoe, "blackjack", seed=5, seats=(1, 2, 3))
    drv.play(lambda x: x.phase == "shuffle_due", timeout=120)
    spy.caught_up(d.journal)
    msgs = list(spy.all)
    reveals = [i for i, (t, p) in enumerate(msgs) if '"type":"hole_card_revealed"' in p]
    assert len(reveals) >= 3
    log = d.logtext()
    for i in reveals:
        hole = json.loads(msgs[i][1])["card"]
        before = [p for t, p in msgs[:i]]
        assert not any(f'"{hole}"' in p for p in before), hole
        assert f'"{hole}"' not in log and f"'{hole}'" not in log


def test_the_example_configuration_is_valid():
    p = subprocess.run([sys.executable, "-m", "dealer_station.cli", "check-config",
                        os.path.join(ROOT, "docs", "table.example.toml")],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stdout


def test_every_status_the_broker_carries_says_the_broker_is_connected(rig):
    """The first retained status (the birth) said `"broker": {"state": "connecting"}`: statuses
    made while the shoe said hello, before the link was up, were queued by paho and delivered on
    connect, ahead of the birth. A status travels through the broker: it can only say connected."""
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=5)
    c = rig.client(b.port, name="bs-birth-test")
    c.subscribed.wait(10)
    rig.daemon(b.port, shoe)
    c.wait_online()
    c.command({"type": "shoe_loaded"})
    online = [s for s in c.statuses() if s.get("state") == "online"]
    assert online and all(s["devices"]["broker"]["state"] == "connected" for s in online), online
