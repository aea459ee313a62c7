"""An exception escaping the engine is a defect: it becomes an `internal_error` irregularity that
pauses the table, the input kept and the state otherwise unchanged; never a crash (a crash on a
journaled input repeats at every restart)."""
import json
import sqlite3

import pytest

import controller.table as table_mod
from controller import get_profile, guarded_step, new_table, step


@pytest.fixture
def broken_betting(monkeypatch):
    def boom(t, ev):
        raise KeyError("Qh")     # a message that names a card must not reach the wire
    monkeypatch.setitem(table_mod._HANDLERS, "betting_closed", boom)


def _loaded():
    t, _ = step(new_table(get_profile("luxury21")), {"type": "shoe_loaded"})
    for c in ["5h", "9c", "Kd", "3s", "8h"][:1]:
        t, _ = step(t, {"type": "card", "card": c})
    return t


def test_an_engine_exception_pauses_the_table_and_keeps_the_state(broken_betting):
    t = _loaded()
    seen = []
    t2, out = guarded_step(t, {"type": "betting_closed", "seats": [1], "ts": "T"}, seen.append)
    assert [o["type"] for o in out] == ["irregularity", "round_paused"]
    assert out[0]["code"] == "internal_error"
    assert out[0]["detail"] == {"input": "betting_closed", "error": "KeyError"}
    assert all(o["ts"] == "T" for o in out)
    assert "Qh" not in json.dumps(out)
    assert isinstance(seen[0], KeyError)
    assert t2.paused == "internal_error"
    for f in table_mod.Table.__slots__:
        if f != "paused":
            assert getattr(t2, f) is getattr(t, f), f
    # the pit boss resumes as after any irregularity
    t3, out = guarded_step(t2, {"type": "resume"})
    assert out[0]["type"] == "round_resumed" and t3.paused is None


def test_while_paused_an_engine_exception_adds_no_second_pause(broken_betting):
    t, _ = step(_loaded(), {"type": "pause", "reason": "x"})
    t2, out = guarded_step(t, {"type": "betting_closed", "seats": [1]})
    assert [o["type"] for o in out] == ["irregularity"] and t2 is t


def test_the_daemon_journals_the_input_and_pauses(broken_betting, tmp_path):
    from dealer_station.config import read_config
    from dealer_station.daemon import Daemon
    cfg_path = tmp_path / "table.toml"
    journal = tmp_path / "journal.sqlite"
    cfg_path.write_text(f'[table]\nid = "t1"\nprofile = "luxury21"\n[shoe]\nprotocol = "none"\n'
                        f'[paths]\njournal = "{journal}"\n[metrics]\nenabled = false\n')
    d = Daemon(read_config(str(cfg_path)))
    d.recover()
    d.process({"type": "shoe_loaded"}, "command")
    msgs, _ = d.process({"type": "betting_closed", "seats": [1]}, "command")
    types = [json.loads(m)["type"] for _, m in msgs]
    assert types == ["irregularity", "round_paused"]
    assert d.table.paused == "internal_error"
    d.journal.close()
    db = sqlite3.connect(journal)
    bodies = [json.loads(r[0])["type"] for r in db.execute("SELECT body FROM inputs ORDER BY n")]
    assert bodies == ["shoe_loaded", "betting_closed"]
    # recovery replays it to the same state, without raising
    d2 = Daemon(read_config(str(cfg_path)))
    d2.recover()
    assert d2.table.paused == "internal_error" and d2.recovery["mismatches"] == 0
    d2.journal.close()
