"""Storage errors name the journal, the cause and the recovery step; one daemon per journal."""
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from dealer_station.journal import Journal, JournalError
from mqtt_rig import ROOT, Broker, Client, DaemonProc, free_port, workdir


def record(j, i, size=2000):
    """One input with one output, as the station's Record gives them to the journal."""
    from dealer_station.station_types import Record
    n = j.last_input()[0] + 1
    j.write(Record(n, time.time(), "test", {"type": "pad", "i": i, "data": "y" * size}, None,
                   ((j.next_seq, json.dumps({"seq": j.next_seq, "d": "z" * size})),), None, None,
                   None))


def fill(j):
    """Record until the journal refuses; returns (inputs committed, the error)."""
    for i in range(100000):
        try:
            record(j, i)
        except JournalError as e:
            return i, e
    raise AssertionError("never full")


def assert_intact(path, committed):
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM inputs").fetchone()[0] == committed
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_a_full_journal_says_disk_full_not_cannot_rollback(tmp_path):
    path = str(tmp_path / "j.sqlite")
    j = Journal(path, "t1", "luxury21")
    j.db.execute("PRAGMA max_page_count=40")     # SQLite's own SQLITE_FULL, as on a full disk
    n, e = fill(j)
    msg = str(e)
    assert path in msg and "disk full" in msg and "free space" in msg, msg
    assert "cannot rollback" not in msg and "\n" not in msg
    assert n > 0 and j.next_seq == n + 1        # the refused input took no sequence number
    j.close()
    assert_intact(path, n)


@contextlib.contextmanager
def tmpfs(d, size):
    d.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                            str(d)]).returncode:
        pytest.skip("needs root and a tmpfs mount")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=True)   # -l: even with a file left open


def test_a_really_full_disk_names_the_file_and_keeps_what_was_committed(tmp_path):
    with tmpfs(tmp_path / "small", "256k") as d:
        path = str(d / "j.sqlite")
        j = Journal(path, "t1", "luxury21")
        n, e = fill(j)
        assert path in str(e) and "disk full" in str(e), e
        assert "cannot rollback" not in str(e)
        j.close()
        assert_intact(path, n)


def test_a_read_only_journal_says_read_only(tmp_path):
    with tmpfs(tmp_path / "ro", "1m") as d:
        path = str(d / "j.sqlite")
        j = Journal(path, "t1", "luxury21")
        record(j, 0)
        j.close()
        subprocess.run(["mount", "-o", "remount,ro", str(d)], check=True)
        with pytest.raises(JournalError) as e:
            Journal(path, "t1", "luxury21")
        assert path in str(e.value) and "read-only" in str(e.value), e.value


def test_a_garbage_journal_says_corrupt_and_where_the_procedure_is(tmp_path):
    path = tmp_path / "j.sqlite"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(JournalError) as e:
        Journal(str(path), "t1", "luxury21")
    msg = str(e.value)
    assert str(path) in msg and "corrupt" in msg and "docs/install.md" in msg, msg


def damaged_journal(d):
    """A journal of a few hundred inputs with pages in the middle overwritten: its header is
    fine (check-config passes), reading it is not."""
    path = str(d / "journal.sqlite")
    j = Journal(path, "t1", "luxury21")
    for i in range(300):
        record(j, i, size=500)
    j.close()
    with open(path, "r+b") as f:
        f.seek(4096 * 4)
        f.write(b"\xa5" * 4096 * 40)
    return path


def test_run_on_a_damaged_journal_exits_2_with_one_line_saying_corrupt(tmp_path):
    path = damaged_journal(tmp_path)
    cfg = tmp_path / "table.toml"
    cfg.write_text(f'[table]\nid = "t1"\nprofile = "luxury21"\n[shoe]\nprotocol = "none"\n'
                   f'[broker]\nport = {free_port()}\n[paths]\njournal = "{path}"\n'
                   f'[metrics]\nenabled = false\n')
    r = subprocess.run([sys.executable, "-m", "dealer_station.cli", "run", "--config", str(cfg)],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"dealer-station: journal {path}: corrupt"), r.stderr
    assert "docs/install.md" in last


# -- one daemon per journal ----------------------------------------------------------------------

def test_a_journal_opens_once_and_again_after_close_or_death(tmp_path):
    path = str(tmp_path / "j.sqlite")
    j = Journal(path, "t1", "luxury21")
    with pytest.raises(JournalError) as e:
        Journal(path, "t1", "luxury21")
    assert f"pid {os.getpid()}" in str(e.value) and path in str(e.value)
    j.close()
    Journal(path, "t1", "luxury21").close()
    # A holder killed by SIGKILL leaves the lock file, not the lock.
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys; from dealer_station.journal import Journal; "
                               f"Journal({path!r}, 't1', 'luxury21'); print('open', flush=True); "
                               "sys.stdin.read()"], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "open"
    with pytest.raises(JournalError) as e:
        Journal(path, "t1", "luxury21")
    assert f"pid {holder.pid}" in str(e.value)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    Journal(path, "t1", "luxury21").close()


def test_a_second_daemon_on_the_same_journal_stops_at_once_and_leaves_the_first_alone():
    d = workdir()
    b = Broker(d)
    b.start()
    c = Client(b.port, topics=["dealer-station/v1/t1/status", "dealer-station/v1/t1/replies"])
    cfg_dir = os.path.join(d, "a")
    os.mkdir(cfg_dir)
    first = DaemonProc(cfg_dir, b.port, "/dev/null", extra_config="")
    # no shoe: the table's journal and broker session are what is at stake
    with open(first.config) as f:
        text = f.read().replace('protocol = "v1"', 'protocol = "none"')
    with open(first.config, "w") as f:
        f.write(text)
    first.start()
    try:
        end = time.monotonic() + 20
        while not any('"online"' in p for _, p in c.all) and time.monotonic() < end:
            time.sleep(0.02)
        assert any('"online"' in p for _, p in c.all), first.logtext()
        second = subprocess.run([sys.executable, "-m", "dealer_station.cli", "run", "--config",
                                 first.config], capture_output=True, text=True, cwd=ROOT, timeout=30)
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and f"pid {first.proc.pid}" in lines[0], second.stderr
        assert first.journal in lines[0]
        # The first kept its session: one connection, one online status, still answering.
        assert c.command({"type": "pause", "reason": "check"}, timeout=10)["status"] == "accepted"
        assert first.alive()
        assert first.logtext().count("broker connected") == 1, first.logtext()
        # the birth, the commands probe's verdict, the status of the pause: no second birth
        assert sum('"online"' in p for _, p in c.all) <= 3
        assert not any('"offline"' in p for _, p in c.all)
    finally:
        first.stop()
        c.close()
        b.stop()


def test_the_lock_file_names_the_holder(tmp_path):
    path = str(tmp_path / "j.sqlite")
    j = Journal(path, "t1", "luxury21")
    with open(path + ".lock") as f:
        assert json.loads(f.read()) == os.getpid()
    j.close()


def test_a_storage_error_writing_held_counts_at_close_still_closes_the_rest(tmp_path):
    """A burst's counted refusals are written at its end (daemon_effects._flush_position), their
    PUBACKs held until then; close() writes what is left first. Refused there (the disk full that
    ended the loop, still full), close() stopped: the broker link, the devices and the journal
    (its lock) never closed. Now the rest closes, the PUBACKs stay unsent (the broker delivers
    those commands again, to be counted again), and the storage error is raised at the end."""
    from dealer_station.station_types import AckCommand
    from test_broker_not_mqtt import _daemon_without_broker
    d = _daemon_without_broker(tmp_path)
    d.recover()
    acked, closed = [], []
    d.link.ack = lambda mid, qos: acked.append(mid)
    real_close = d.link.close
    d.link.close = lambda *a, **k: (closed.append("link"), real_close(*a, **k))

    def full(counts, remembered=()):
        raise JournalError(f"journal {d.journal.path}: disk full")
    d.journal.count_refused = full
    d.counts_write = {(1.0, "m0", "malformed", "malformed"): ["command", 1.0, 1.0, 3, "r", b""]}
    d.held_cmd_acks = [AckCommand(7, 1)]
    with pytest.raises(JournalError, match="disk full"):
        d.close()
    assert acked == [] and closed == ["link"]
    Journal(d.journal.path, "bj-01", "luxury21").close()  # its lock released: opens again


def test_a_counted_rejections_reply_waits_for_its_count_to_be_written(tmp_path):
    """A counted engine rejection is not journaled: only its count, written at the burst's end.
    Its reply went out at once and only its PUBACK waited, so a crash before the write left a
    client told "rejected" and the broker holding the command, delivered again after the restart
    and applied (a round later: review). Now the reply waits with the PUBACK; the write refused
    (the crash's place), neither goes out; written, both go, in order."""
    from dealer_station.station_types import AckCommand, Refuse, Reply
    from test_broker_not_mqtt import _daemon_without_broker
    d = _daemon_without_broker(tmp_path)
    d.recover()
    out = []
    d.link.ack = lambda mid, qos: out.append(("ack", mid))
    d.link.reply = lambda payload, rt, corr: out.append(("reply", payload["id"]))
    burst = [Refuse("command", "no_round", "no round", b"{}", "bs", (1.0, 2.0), "engine"),
             Reply({"type": "reply", "id": "x", "status": "rejected"}, None, None),
             AckCommand(7, 1)]
    for e in burst:
        d.do(e)
    assert out == []
    written = d.journal.count_refused
    d.journal.count_refused = lambda counts, remembered=(): (_ for _ in ()).throw(
        JournalError(f"journal {d.journal.path}: disk full"))
    with pytest.raises(JournalError):
        d._flush_position()
    assert out == []
    d.journal.count_refused = written
    d.counts_write, d.held_cmd_acks = {}, []
    for e in burst:
        d.do(e)
    d._flush_position()
    assert out == [("ack", 7), ("reply", "x")]     # the PUBACK first: the test below says why
    d.journal.close()


def test_a_crash_amid_a_bursts_held_replies_never_leaves_an_answered_command_unacknowledged(
        tmp_path):
    """A counted refusal is remembered by id in memory only (a restart forgets it). Its reply
    went out before its PUBACK: a kill -9 between the two (paho writes its packets in order)
    left the client answered "rejected" and the broker holding the command, delivered again
    after the restart and judged afresh (cold39: killed mid-flood, `c2-bs-15` was answered
    `no_round`, then `not_awaiting_decision`: a decision that had become valid would have been
    applied). Now each command's PUBACK goes to the link just before its reply: a crash at any
    point of that order leaves each command answered and acknowledged, neither (the broker
    delivers it again) or, one at most, acknowledged only (the client sends it again with its
    id): never answered and delivered again."""
    from dealer_station.station_types import AckCommand, Refuse, Reply
    from test_broker_not_mqtt import _daemon_without_broker
    d = _daemon_without_broker(tmp_path)
    d.recover()
    wire = []          # what paho would write, in order: a crash may cut it anywhere
    d.link.ack = lambda mid, qos: wire.append(("ack", mid))
    d.link.reply = lambda payload, rt, corr: wire.append(("reply", int(payload["id"])))
    for mid in (7, 8, 9):
        for e in (Refuse("command", "no_round", "no round", b"{}", "bs", (1.0, 2.0), "engine"),
                  Reply({"type": "reply", "id": str(mid), "status": "rejected"}, None, None),
                  AckCommand(mid, 1)):
            d.do(e)
    d._flush_position()
    assert sorted(wire) == [("ack", 7), ("ack", 8), ("ack", 9), ("reply", 7), ("reply", 8),
                            ("reply", 9)]
    for cut in range(len(wire) + 1):
        out = wire[:cut]
        answered = {m for k, m in out if k == "reply"}
        acked = {m for k, m in out if k == "ack"}
        assert answered <= acked, f"a crash after {out}: {answered - acked} answered, " \
                                  f"delivered again and judged afresh"
        assert len(acked - answered) <= 1, f"a crash after {out}: {acked - answered} unanswered"
    assert [m for k, m in wire if k == "reply"] == [7, 8, 9]    # the replies in their order
    d.journal.close()
