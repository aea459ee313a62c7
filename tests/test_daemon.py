"""The real daemon (a subprocess) against a real Mosquitto, with a virtual shoe on a pty."""
import json
import os
import subprocess
import sys
import time

import pytest

from controller import get_profile, new_table, step
from drivers.virtual_shoe import VirtualShoe
from mqtt_rig import Broker, Client, DaemonProc, Proxy, ROOT, workdir
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
    return [{k: v for k, v in m.items() if k not in ("seq", "table", "v", "ts")} for m in msgs]


@pytest.mark.parametrize("profile,decks,cut", [("luxury21", 8, 208), ("punto_banco", 8, 7)])
def test_a_full_shoe_every_result_received_in_order(rig, profile, decks, cut):
    b = rig.broker()
    shoe = rig.shoe(decks=decks, seed=11, cut_from_back=cut)
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe, profile=profile)
    time.sleep(0.5)
    assert c.command({"type": "shoe_loaded"})["status"] == "accepted"
    drv = TableDriver(c, shoe, get_profile(profile).game, seed=3)
    drv.play(lambda x: x.phase == "shuffle_due", timeout=240)
    time.sleep(0.3)
    msgs = c.in_order()
    assert c.gaps() == [] and [m["seq"] for m in msgs] == list(range(1, len(msgs) + 1))
    results = [m for m in msgs if m["type"] == "round_result"]
    assert [r["round"] for r in results] == list(range(1, len(results) + 1))
    assert len(results) >= (8 if profile == "luxury21" else 60)
    assert any(m["type"] == "last_round" for m in msgs)
    # what the subscriber got is exactly what the engine gives for the journaled inputs
    assert strip(msgs) == strip(replayed(get_profile(profile), journal_inputs(d.journal)))
    assert d.alive()
