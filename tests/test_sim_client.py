"""The simulated betting system follows the protocol's client rules (a lost command is sent again
with the same id, a gap is asked for with `resend`), and the simulator's dealer and its loop wait
on signals with deadlines: a press before the daemon's panel exists is not lost, a stuck table
ends play() with an error that says what it waited for."""
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from controller import get_profile
from dealer_station import signing
from dealer_station.sim.bettor import BettingSystem
from dealer_station.sim.dealer_panel import SimPanel
from dealer_station.sim.harness import Harness
from drivers.virtual_shoe import VirtualShoe
from mqtt_rig import ONLINE_S, ROOT, Broker, Client, DaemonProc, wait_for, workdir


def inputs(journal, origin=None):
    db = sqlite3.connect(journal)
    try:
        rows = db.execute("SELECT origin, body FROM inputs ORDER BY n").fetchall()
    except sqlite3.OperationalError:       # not created yet
        rows = []
    db.close()
    return [json.loads(b) for o, b in rows if origin in (None, o)]


def signed_table(public_key=None):
    """A daemon with a signing key, and a betting system that verifies its events with
    `public_key` (default: the daemon's own)."""
    d = workdir()
    b = Broker(d)
    b.start()
    shoe = VirtualShoe(decks=8, seed=4, heartbeat=0.2)
    shoe.start()
    key = os.path.join(d, "events.key")
    signing.generate(key)
    bs = BettingSystem("127.0.0.1", b.port, "t1", get_profile("luxury21"),
                       public_key=public_key or key + ".pub")
    bs.wait_subscribed()
    dp = DaemonProc(d, b.port, shoe.path, extra_config=f'\n[integrity]\nsigning_key = "{key}"\n')
    dp.start()
    watcher = Client(b.port)
    watcher.wait_online()         # subscribed to its commands: a command now is not lost
    watcher.close()
    return bs, dp, shoe, b


@pytest.fixture
def table():
    bs, dp, shoe, b = signed_table()
    yield bs, dp, shoe
    assert not bs.signature_errors          # every event verified: signature and chain
    bs.close()
    dp.stop()
    shoe.close()
    b.stop()


def events(bs, kind, timeout=10):
    """Take events from the betting system's queue until one of `kind`."""
    end = time.monotonic() + timeout
    while True:
        m = bs.events.get(timeout=max(0.01, end - time.monotonic()))
        if m["type"] == kind:
            return m


def test_a_lost_command_is_sent_again_and_the_table_goes_on(table):
    bs, dp, shoe = table
    bs.lose["command"] = 1                          # the broker lost it
    cid = bs.command({"type": "shoe_loaded"})
    events(bs, "shoe_started", timeout=15)          # REPLY_TIMEOUT_S later, sent again
    assert bs.counts["commands_lost"] == 1 and bs.counts["commands_sent_again"] >= 1
    assert bs.counts["reply:accepted"] == 1 and bs.unanswered() == 0
    assert [i["type"] for i in inputs(dp.journal, "command")] == ["shoe_loaded"]
    assert cid


def test_a_lost_reply_gets_the_original_result_once_applied(table):
    bs, dp, shoe = table
    bs.command({"type": "shoe_loaded"})
    events(bs, "shoe_started", timeout=15)
    bs.lose["reply"] = 1                            # applied, but its reply never came back
    bs.command({"type": "pause", "reason": "test"})
    wait_for(lambda: bs.unanswered() == 0, 15, "the pause command's answer")
    assert bs.counts["replies_lost"] == 1 and bs.counts["reply:duplicate"] == 1
    assert [i["type"] for i in inputs(dp.journal, "command")] == ["shoe_loaded", "pause"]


def test_a_gap_in_the_events_is_asked_for_and_filled(table):
    bs, dp, shoe = table
    bs.lose["event"] = 1                            # the first event never arrives
    bs.command({"type": "shoe_loaded"})
    wait_for(lambda: bs.unanswered() == 0, 10, "shoe_loaded's reply")   # the shoe is loaded
    shoe.deal()                                     # the first burn card
    m = events(bs, "card_dealt", timeout=15)        # in order: only once the gap is filled
    assert bs.counts["events_lost"] == 1 and bs.counts["resend_requests"] >= 1
    assert bs.last >= m["seq"] and bs.lost() == 0
    assert not bs.protocol_errors


def test_events_signed_with_another_key_are_reported_and_never_applied(tmp_path):
    """The betting system holding the wrong public key (another table's, a forger's): every event
    fails its signature, none is applied, and each is counted."""
    signing.generate(str(tmp_path / "other.key"))
    bs, dp, shoe, b = signed_table(public_key=str(tmp_path / "other.key.pub"))
    try:
        bs.command({"type": "shoe_loaded"})
        wait_for(lambda: bs.unanswered() == 0, 10, "shoe_loaded's reply")
        wait_for(lambda: bs.signature_errors, 10, "the first event's verification")
        assert all(why == "the signature does not verify" for _, why in bs.signature_errors)
        assert bs.signature_errors[0][0] == 1 and bs.last == 0 and bs.events.empty()
    finally:
        bs.close()
        dp.stop()
        shoe.close()
        b.stop()


def test_a_press_before_the_daemons_panel_exists_is_not_lost(tmp_path):
    d = workdir()
    b = Broker(d)
    b.start()
    # a shoe that never says HELLO: the daemon waits for it (3 s) after opening its pin socket
    # and before making its buttons
    master, slave = os.openpty()
    panel = SimPanel(os.path.join(d, "panel.sock"))
    dp = DaemonProc(d, b.port, os.ttyname(slave), extra_config="\n" + panel.config())
    dp.start()
    try:
        # the socket opens after the daemon's Python start-up: ONLINE_S, as its online status
        wait_for(lambda: os.path.exists(panel.path), ONLINE_S, "the panel's pin socket")
        panel.hold("shoe_loaded")
        wait_for(lambda: inputs(dp.journal, "panel"), 15, "the press in the journal")
        assert [i["type"] for i in inputs(dp.journal, "panel")] == ["shoe_loaded"]
    finally:
        dp.stop()
        b.stop()
        os.close(master)
        os.close(slave)


def test_play_gives_up_on_a_stuck_table_and_says_what_it_waited_for(tmp_path):
    h = Harness("luxury21", rounds=50, speed=0, out=io.StringIO(), workdir=str(tmp_path),
                camera=False)
    h.start()
    try:
        h.daemon.send_signal(signal.SIGSTOP)       # the table hangs
        t0 = time.monotonic()
        with pytest.raises(TimeoutError) as e:
            h.play(stall_s=2)
        assert time.monotonic() - t0 < 10
        assert "nothing from the table for 2 s, waiting for" in str(e.value)
        assert "rounds resulted" in str(e.value)
    finally:
        h.daemon.send_signal(signal.SIGCONT)
        h.close()


def test_table_sim_with_lost_commands_replies_and_events_loses_nothing(tmp_path):
    faults = tmp_path / "lost.json"
    faults.write_text(json.dumps([{"round": 2, "fault": "lost_command"},
                                  {"round": 4, "fault": "lost_reply"},
                                  {"round": 6, "fault": "lost_event"}]))
    report = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "dealer_station.sim_cli", "--profile", "punto_banco",
                        "--rounds", "8", "--speed", "0", "--plain", "--no-camera",
                        "--faults", str(faults), "--report", str(report)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    r = json.loads(report.read_text())
    assert r["rounds_resulted"] + r["rounds_voided"] == 8 and r["messages_lost"] == 0
    assert r["faults_injected"] == {"lost_command": 1, "lost_event": 1, "lost_reply": 1}
    assert r["commands_sent_again"] >= 2 and r["resend_requests"] >= 1
    assert r["commands_unanswered"] == 0 and r["protocol_errors"] == 0 and r["balances_match"]
    assert r["events_signed"] and r["signature_errors"] == 0   # the resent ones verified too


def test_a_daemon_that_exits_at_start_is_said_at_once(tmp_path):
    """The wait for the daemon's online status is a long ceiling (a starved start-up takes
    18-28 s); a daemon that exited is not waited for: its exit code and log, at once."""
    h = Harness("luxury21", rounds=1, speed=0, out=io.StringIO(), workdir=str(tmp_path),
                camera=False, extra_toml="[no_such_section]\nx = 1\n")
    t0 = time.monotonic()
    try:
        with pytest.raises(RuntimeError) as e:
            h.start()
    finally:
        h.close()
    assert "the daemon exited (code" in str(e.value) and "daemon.log" in str(e.value)
    assert time.monotonic() - t0 < 30
