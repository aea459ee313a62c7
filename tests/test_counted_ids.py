"""A counted engine rejection (beyond its sender's refusal budget: station_refusals.py) has no
`commands` row. Its id was remembered in memory only (the last 1,000, since the start): sent
again after a restart, or after 1,000 later counted ids, it was judged again and could be
applied, the client having been told "rejected" (cold39: a decision with no round, rejected
`no_round`, accepted a round later). Now its id is journaled with its count (table counted_ids,
the newest COUNTED_IDS) and a resend answers `duplicate` with the first answer."""
import json
import os
import sqlite3

from controller.profiles import get_profile
from dealer_station import journal as journal_mod
from dealer_station.station_types import (BrokerUp, Clock, Command, Record, Refuse, Reply)
from controller.cards import CARDS
from drivers.events import CardRead, ShoeHello
from test_station import Rig

EARLY = {"type": "betting_closed", "seats": [1]}     # rejected while no shoe is loaded


class Table:
    def __init__(self, tmp_path):
        self.rig = Rig(os.path.join(tmp_path, "journal.sqlite"), get_profile("luxury21"))
        self.wall, self.mono, self.mid = 1.8e9, 1000.0, 0
        self.start()

    def clock(self):
        self.wall += 0.001
        self.mono += 0.001
        return Clock(self.wall, self.mono)

    def start(self):
        self.rig.recover(self.clock())
        self.rig.step(ShoeHello("VS", "1", "S1", 1, 0), self.clock())
        self.rig.step(BrokerUp(False), self.clock())

    def restart(self):
        self.rig.j.close()
        self.rig.open()
        self.start()

    def ready(self):
        """A shoe loaded and burnt: betting can close."""
        assert self.send({"type": "shoe_loaded"}, "load")[0]["status"] == "accepted"
        seq = 0
        while self.rig.st.table.phase != "ready":
            seq += 1
            self.rig.step(CardRead(CARDS[seq], seq=seq), self.clock())
            assert seq < 20

    def send(self, body, cid):
        self.mid += 1
        ev = Command(json.dumps({**body, "id": cid}).encode(), None, None, self.mid, 1, "bs")
        effects = self.rig.step(ev, self.clock())
        return next(e.payload for e in effects if isinstance(e, Reply)), effects


def _counted_rejection(t, cid):
    for i in range(t.rig.settings.refused_keep):       # the sender's budget, kept in full
        assert t.send(EARLY, f"k{i}")[0]["status"] == "rejected"
    first, effects = t.send(EARLY, cid)
    assert first["status"] == "rejected"
    assert not any(isinstance(e, Record) for e in effects)      # counted, not journaled
    assert any(isinstance(e, Refuse) and e.counted is not None for e in effects)
    return first


def _resent_once_valid(t, cid, first):
    t.ready()
    inputs = t.rig.j.last_input()[0]
    again, effects = t.send(EARLY, cid)           # valid now: betting could close
    assert again == {**first, "status": "duplicate", "original": "rejected"}
    assert not any(isinstance(e, Record) for e in effects)
    assert t.rig.j.last_input()[0] == inputs and t.rig.st.table.phase == "ready"


def test_a_counted_rejection_resent_after_a_restart_is_a_duplicate_not_applied(tmp_path):
    t = Table(tmp_path)
    first = _counted_rejection(t, "X")
    t.restart()
    _resent_once_valid(t, "X", first)
    t.restart()                     # replay of the journal still gives the live state
    assert t.rig.st.table.phase == "ready"
    t.rig.j.close()


def test_a_counted_rejection_resent_after_1001_later_counted_ones_is_a_duplicate(tmp_path):
    t = Table(tmp_path)
    first = _counted_rejection(t, "X")
    for i in range(1001):           # more than the 1,000 remembered in memory
        assert t.send(EARLY, f"n{i}")[0]["status"] == "rejected"
    _resent_once_valid(t, "X", first)
    t.rig.j.close()


def test_counted_ids_are_pruned_to_the_newest_n_and_an_older_one_is_judged_again(
        tmp_path, monkeypatch):
    monkeypatch.setattr(journal_mod, "COUNTED_IDS", 5)
    t = Table(tmp_path)
    _counted_rejection(t, "X")
    for i in range(5):
        t.send(EARLY, f"n{i}")
    ids = [r[0] for r in t.rig.j.db.execute("SELECT id FROM counted_ids ORDER BY n")]
    assert ids == [f"n{i}" for i in range(5)]                 # bounded: X is out
    t.restart()
    t.ready()
    assert t.send(EARLY, "n4")[0]["status"] == "duplicate"
    assert t.send(EARLY, "X")[0]["status"] == "accepted"      # beyond N: judged again (docs)
    t.rig.j.close()


def test_a_journal_from_before_counted_ids_opens_and_gains_the_table(tmp_path):
    t = Table(tmp_path)
    t.rig.j.close()
    db = sqlite3.connect(t.rig.path)
    db.execute("DROP TABLE counted_ids")
    db.commit()
    db.close()
    t.rig.open()
    t.start()
    first = _counted_rejection(t, "X")
    t.restart()
    _resent_once_valid(t, "X", first)
    t.rig.j.close()


def test_the_daemon_writes_a_bursts_ids_with_its_counts(tmp_path):
    """The burst's counts and its counted rejections' ids are one transaction (_flush_position),
    before the held replies and PUBACKs go."""
    from dealer_station.journal import JournalError
    from dealer_station.station_types import AckCommand
    from test_broker_not_mqtt import _daemon_without_broker
    import pytest
    d = _daemon_without_broker(tmp_path)
    d.recover()
    out = []
    d.link.ack = lambda mid, qos: out.append(("ack", mid))
    d.link.reply = lambda payload, rt, corr: out.append(("reply", payload["id"]))
    reply = {"type": "reply", "id": "x", "status": "rejected", "code": "no_round", "reason": "r"}
    burst = [Refuse("command", "no_round", "r", b"{}", "bs", (1.0, 2.0), "engine",
                    ("bs", reply)), Reply(reply, None, None), AckCommand(7, 1)]
    real = d.journal.db
    for e in burst:
        d.do(e)
    d.journal.db = None             # the write refused (a crash's place): nothing, nothing sent
    with pytest.raises((AttributeError, JournalError)):
        d._flush_position()
    d.journal.db = real
    assert out == [] and d.journal.command_reply("bs", "x") is None
    d.counts_write, d.ids_write, d.held_cmd_acks = {}, [], []
    for e in burst:
        d.do(e)
    d._flush_position()
    assert out == [("ack", 7), ("reply", "x")]
    assert d.journal.command_reply("bs", "x") == reply
    assert d.journal.db.execute("SELECT sender, kind, code, at FROM counted_ids").fetchall() == \
        [("bs", "engine", "no_round", 2.0)]
    d.journal.close()


def test_a_long_reason_is_kept_cut_and_a_short_one_whole():
    short = {"type": "reply", "id": "a", "status": "rejected", "code": "paused", "reason": "p"}
    assert journal_mod._kept(short) == short
    long_ = {**short, "reason": "\u00e9" * 1000}             # 2,000 bytes of UTF-8
    kept = journal_mod._kept(long_)
    assert {k: v for k, v in kept.items() if k != "reason"} == \
        {k: v for k, v in short.items() if k != "reason"}
    assert kept["reason"] == "\u00e9" * (journal_mod.REASON_KEPT // 2) + "..."
