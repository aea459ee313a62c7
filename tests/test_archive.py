"""Journal archival: old shoes leave the journal only after they are written to an archive and read
back; recovery does not need them; the archive replays to the outputs that were published."""
import gzip
import json
import os
import random
import sqlite3
import subprocess
import sys

import pytest

from controller import checkpoint, get_profile
from controller.autoplay import hit_below_17, play_shoe
from controller.cards import CARDS
from dealer_station import archive as ar
from dealer_station.config import check_config
from dealer_station.daemon import Daemon
from dealer_station.replay import replay_lines
from dealer_station.signing import ENVELOPE

ROOT = __import__("os").path.dirname(__import__("os").path.dirname(__import__("os").path.abspath(__file__)))


def daemon(path):
    cfg, errors = check_config({"table": {"id": "t1", "profile": "luxury21"},
                                "shoe": {"protocol": "none"}, "metrics": {"enabled": False},
                                "paths": {"journal": str(path)}})
    assert not errors
    d = Daemon(cfg)
    d.journal.db.execute("PRAGMA synchronous=OFF")    # speed: durability is not under test here
    return d


def played(path, shoes=3, rounds=3, cut_at=None):
    d = daemon(path)
    d.recover()
    p = get_profile("luxury21")
    for s in range(shoes):
        cards = list(CARDS) * 8
        random.Random(s).shuffle(cards)
        for ev, _ in play_shoe(p, cards, hit_below_17, max_rounds=rounds, table=d.table,
                               cut_at=cut_at):
            d.process(ev, "test")
    d.process({"type": "betting_closed", "seats": [1]}, "test")    # a round under way
    d.journal.mark_sent([s for s, _ in d.journal.unsent()], force=True)
    return d


def bodies(db_path):
    db = sqlite3.connect(db_path)
    out = [json.loads(r[0]) for r in db.execute("SELECT body FROM outbox ORDER BY seq")]
    ins = [json.loads(r[0]) for r in db.execute("SELECT body FROM inputs ORDER BY n")]
    db.close()
    return ins, out


def strip(msgs):
    return [{k: v for k, v in m.items() if k not in ENVELOPE} for m in msgs]


def test_archive_prunes_old_shoes_and_nothing_is_lost(tmp_path):
    j = tmp_path / "journal.sqlite"
    d = played(j)
    before = checkpoint.encode(d.table.but(round=None))
    next_seq = d.journal.next_seq
    d.journal.close()
    all_inputs, all_outputs = bodies(j)
    r = ar.archive(str(j), str(tmp_path / "arch"), keep_shoes=1)
    assert r["inputs"] > 0 and r["outputs"] > 0
    assert ar.verify(r["archive"]) == {k: r[k] for k in ("inputs", "outputs", "commands", "refused")}
    kept_inputs, kept_outputs = bodies(j)
    assert kept_inputs[0]["type"] == "shoe_loaded" and len(kept_inputs) + r["inputs"] == len(all_inputs)
    assert len(kept_outputs) + r["outputs"] == len(all_outputs)
    # recovery without the archived part: the same table, the sequence goes on
    d2 = daemon(j)
    d2.recover()
    assert checkpoint.encode(d2.table.but(round=None)) == before
    assert d2.journal.next_seq == next_seq and d2.recovery["mismatches"] == 0
    d2.journal.close()
    # the archive then the journal replay to everything that was published
    with gzip.open(r["archive"], "rt") as f:
        lines = f.read().splitlines()
    replayed = list(replay_lines(get_profile("luxury21"), lines + [json.dumps(i) for i in kept_inputs]))
    assert strip(replayed) == strip(all_outputs)


def test_unsent_outputs_are_never_archived(tmp_path):
    j = tmp_path / "journal.sqlite"
    d = played(j)
    db = d.journal.db
    first_shoe2 = db.execute("SELECT MIN(input_n) FROM outbox WHERE json_extract(body, '$.type') "
                             "= 'shoe_started' AND seq > 1").fetchone()[0]
    d.journal.close()
    db = sqlite3.connect(j)        # the broker acknowledged nothing after that input's outputs
    first_unacked = db.execute("SELECT MIN(seq) FROM outbox WHERE input_n >= ?",
                               (first_shoe2 + 5,)).fetchone()[0]
    db.execute("UPDATE meta SET value = ? WHERE key = 'acked_through'", (first_unacked - 1,))
    db.commit()
    db.close()
    r = ar.archive(str(j), str(tmp_path / "arch"), keep_shoes=1)
    assert r["before_input"] <= first_shoe2 + 5
    db = sqlite3.connect(j)
    assert db.execute("SELECT COUNT(*) FROM outbox WHERE seq >= ?", (first_unacked,)).fetchone()[0] > 0
    db.close()


@pytest.mark.parametrize("damage", ["byte", "cut", "line"])
def test_a_damaged_archive_is_named(tmp_path, damage):
    j = tmp_path / "journal.sqlite"
    played(j).journal.close()
    r = ar.archive(str(j), str(tmp_path / "arch"), keep_shoes=1)
    with gzip.open(r["archive"], "rb") as f:
        data = f.read()
    if damage == "byte":
        i = data.index(b'"card":"') + 9
        data = data[:i] + (b"h" if data[i:i + 1] != b"h" else b"s") + data[i + 1:]
    elif damage == "cut":
        data = data[:len(data) // 2]
    else:
        lines = data.splitlines(keepends=True)
        data = b"".join(lines[:3] + lines[4:])
    with gzip.open(r["archive"], "wb") as f:
        f.write(data)
    with pytest.raises(ar.ArchiveError, match="archive"):
        ar.verify(r["archive"])


def test_the_command_archives_and_replay_reads_the_archive(tmp_path):
    j = tmp_path / "journal.sqlite"
    played(j, shoes=2).journal.close()
    cli = [sys.executable, "-m", "dealer_station.cli"]
    p = subprocess.run(cli + ["journal", "archive", "--journal", str(j), "--out", str(tmp_path / "a")],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and "nothing to archive" in p.stdout     # 2 shoes, 2 kept
    p = subprocess.run(cli + ["journal", "archive", "--journal", str(j), "--out", str(tmp_path / "a"),
                              "--keep-shoes", "1"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout)
    p = subprocess.run(cli + ["journal", "verify", r["archive"]], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0 and json.loads(p.stdout)["inputs"] == r["inputs"]
    p = subprocess.run(cli + ["replay", "--profile", "luxury21", r["archive"]], capture_output=True,
                       text=True, cwd=ROOT)
    assert p.returncode == 0 and '"type":"shoe_started"' in p.stdout
    p = subprocess.run(cli + ["journal", "archive", "--journal", str(tmp_path / "nope.sqlite"),
                              "--out", str(tmp_path / "a")], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 1 and "no such journal" in p.stderr and p.stdout == ""


def test_recovery_replays_from_the_last_checkpoint_not_the_journal(tmp_path):
    """A journal of several shoes: a restart replays at most the rounds since the last checkpoint
    (issue #14 item 5: before, it replayed from the newest shoe start, counting the outbox per
    input as it went)."""
    j = tmp_path / "journal.sqlite"
    d = played(j, shoes=3, rounds=40, cut_at=400)      # shoes of some 19 rounds
    total = d.journal.last_input()[0]
    d.journal.close()
    d2 = daemon(j)
    r = d2.recover()
    d2.journal.close()
    assert r["from_checkpoint"] > 0 and r["mismatches"] == 0
    # at most CHECKPOINT_ROUNDS (10) rounds, not the whole 19-round shoe
    assert r["inputs_replayed"] < total / 6


def test_a_pickled_checkpoint_is_never_loaded(tmp_path):
    """Checkpoints written by older versions were pickles of engine classes: unpickling one runs
    whatever it names. It is passed over (with a warning) and recovery replays from further back."""
    import pickle
    j = tmp_path / "journal.sqlite"
    d = played(j, shoes=1, rounds=3)
    want = checkpoint.encode(d.table.but(round=None))
    d.journal.close()

    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('unpickled')",))
    db = sqlite3.connect(j)
    db.execute("DELETE FROM checkpoints")
    db.execute("INSERT INTO checkpoints VALUES (?, ?)", (5, pickle.dumps(Boom())))
    db.commit()
    db.close()
    d2 = daemon(j)
    r = d2.recover()
    assert r["from_checkpoint"] == 0 and r["mismatches"] == 0
    assert checkpoint.encode(d2.table.but(round=None)) == want
    d2.journal.close()


def test_the_daemon_archives_at_each_new_shoe_when_configured(tmp_path):
    cfg, errors = check_config({"table": {"id": "t1", "profile": "luxury21"},
                                "shoe": {"protocol": "none"}, "metrics": {"enabled": False},
                                "paths": {"journal": str(tmp_path / "journal.sqlite")},
                                "archive": {"enabled": True, "dir": str(tmp_path / "arch"),
                                            "keep_shoes": 1}})
    assert not errors, errors
    d = Daemon(cfg)
    d.journal.db.execute("PRAGMA synchronous=OFF")
    d.recover()
    p = get_profile("luxury21")
    for s in range(3):
        cards = list(CARDS) * 8
        random.Random(s).shuffle(cards)
        for ev, _ in play_shoe(p, cards, hit_below_17, max_rounds=2, table=d.table):
            d.process(ev, "test")
            d.journal.mark_sent([q for q, _ in d.journal.unsent()], force=True)
    files = sorted((tmp_path / "arch").iterdir())
    assert len(files) == 2 and all(ar.verify(str(f))["inputs"] > 0 for f in files)
    first = d.journal.db.execute("SELECT MIN(n) FROM inputs").fetchone()[0]
    assert d.journal.db.execute("SELECT json_extract(body, '$.type') FROM inputs WHERE n = ?",
                                (first,)).fetchone()[0] == "shoe_loaded"
    snap = d.status()["snapshot"]
    d.journal.close()
    d2 = Daemon(cfg)
    d2.recover()
    assert d2.status()["snapshot"] == snap and d2.recovery["mismatches"] == 0
    d2.journal.close()


def test_a_later_archive_replays_to_exactly_what_it_holds(tmp_path):
    """Each archive starts where the previous one ended: its header carries the table before its
    first input, so a dispute over shoe 3 needs only shoe 3's file."""
    j = tmp_path / "journal.sqlite"
    played(j, shoes=4, rounds=3).journal.close()
    a1 = ar.archive(str(j), str(tmp_path / "a"), keep_shoes=3)
    a2 = ar.archive(str(j), str(tmp_path / "a"), keep_shoes=1)
    assert a1 and a2 and a1["archive"] != a2["archive"]
    assert ar.archive(str(j), str(tmp_path / "a"), keep_shoes=1) is None   # nothing more: no file
    assert len(list((tmp_path / "a").iterdir())) == 2
    for a in (a1, a2):
        with gzip.open(a["archive"], "rt") as f:
            lines = f.read().splitlines()
        held = [json.loads(x)["body"] for x in lines if '"kind":"output"' in x]
        got = list(replay_lines(get_profile("luxury21"), lines))
        assert strip(got) == strip(held) and held
    assert json.loads(gzip.open(a2["archive"], "rt").readline())["start"]["shoes"] == 1


def test_export_a_time_range_replays_to_the_outputs_recorded(tmp_path):
    j = tmp_path / "journal.sqlite"
    played(j, shoes=2).journal.close()
    db = sqlite3.connect(j)
    db.execute("UPDATE inputs SET at = 1796040000 + n")       # one input a second, for the range
    db.commit()
    n_max = db.execute("SELECT MAX(n) FROM inputs").fetchone()[0]
    # an input in the middle of a round of the second shoe
    mid = next(n for (n, body) in db.execute("SELECT n, body FROM inputs ORDER BY n DESC")
               if json.loads(body)["type"] == "card" and n < n_max - 10)
    db.close()
    cli = [sys.executable, "-m", "dealer_station.cli"]
    out = tmp_path / "dispute.jsonl"
    p = subprocess.run(cli + ["journal", "export", "--journal", str(j), "--from",
                              str(1796040000 + mid), "--to", "2026-12-01T00:00:00",
                              "--format", "jsonl", "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    head = lines[0]
    assert head["archive"] == "dealer-station-export" and head["from_input"] < mid
    assert head["to_input"] == n_max and head["start"] is not None     # widened to its round
    assert f"exported inputs {head['from_input']}..{n_max}" in p.stderr
    recorded = [x["body"] for x in lines[1:] if x["kind"] == "output"]
    replayed = list(replay_lines(get_profile("luxury21"), out.read_text().splitlines()))
    assert strip(replayed) == strip(recorded) and recorded
    p = subprocess.run(cli + ["journal", "export", "--journal", str(j), "--from", "yesterday",
                              "--to", "1"], capture_output=True, text=True, cwd=ROOT)
    # errors on standard error, never mixed into an export written on standard output
    assert p.returncode == 1 and "'yesterday': not a time" in p.stderr and p.stdout == ""
    p = subprocess.run(cli + ["journal", "export", "--journal", str(j), "--from",
                              "2026-11-30T15:00:00", "--to", "2026-11-30T14:00:00"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 1 and "--from 2026-11-30T15:00:00 is later than --to " \
        "2026-11-30T14:00:00: swap them" in p.stderr and p.stdout == ""
    p = subprocess.run(cli + ["journal", "export", "--journal", str(j), "--from", "10", "--to",
                              "20"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 1 and "no input in that time range (the journal's inputs run from " \
        "2026-11-30T12:00:01 to 2026-11-30T12:" in p.stderr and p.stdout == ""


def test_a_time_range_export_is_owner_only_like_the_journal(tmp_path):
    """The range may end in a round under way: its inputs name the hole card. The file is as
    private as the journal and `dealer-station export`'s, whatever the caller's umask."""
    j = tmp_path / "journal.sqlite"
    played(j, shoes=1).journal.close()
    out = tmp_path / "dispute.jsonl"
    old = os.umask(0o022)
    try:
        p = subprocess.run([sys.executable, "-m", "dealer_station.cli", "journal", "export",
                            "--journal", str(j), "--from", "2020-01-01T00:00:00", "--to",
                            "2099-01-01T00:00:00", "--format", "jsonl", "--out", str(out)],
                           capture_output=True, text=True, cwd=ROOT)
    finally:
        os.umask(old)
    assert p.returncode == 0, p.stderr
    assert out.stat().st_mode & 0o077 == 0 and out.read_text()
