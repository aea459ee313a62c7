"""The daemon and the shoe link across restarts: what the shoe resends after a restart must be
exactly what was not journaled (issue 14, item 4). Real daemon, real Mosquitto, virtual shoe."""
import json
import sqlite3
import time

import pytest

from mqtt_rig import wait_for
from test_daemon import rig  # noqa: F401 - the fixture


def shoe_inputs(path):
    """(body, shoe_seq) of every input from the shoe, in order."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT body, shoe_seq FROM inputs WHERE origin='shoe' ORDER BY n").fetchall()
    except sqlite3.OperationalError:     # the daemon has not made its tables yet
        rows = []
    db.close()
    return [(json.loads(b), s) for b, s in rows]


def online(c, after):
    def check():
        for topic, payload in list(c.all)[after:]:
            if topic.endswith("/status"):
                m = json.loads(payload)
                if m.get("state") == "online" and m.get("devices", {}).get("shoe", {}).get("model"):
                    return True
        return False
    return check


def step_until(d, pred, what, timeout=10, each=None):
    """Steps the daemon's loop in this thread until `pred()`; `each()` after every step."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        d.run_once(0.05)
        if each:
            each()
        if pred():
            return
    raise AssertionError(f"{what}: not within {timeout} s")


def test_an_unreadable_card_is_journaled_with_its_seq_acknowledged_and_not_resent_after_a_restart(rig):
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=9)
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe)
    wait_for(online(c, 0), what="the daemon online with its shoe")
    assert c.command({"type": "shoe_loaded"})["status"] == "accepted"
    shoe.unreadable_next()
    shoe.deal()
    rows = wait_for(lambda: [r for r in shoe_inputs(d.journal) if r[0]["type"] == "card_unreadable"],
                    what="the unreadable card journaled")
    seq = rows[0][0]["detail"]["seq"]
    assert rows[0][1] == seq                                   # journaled with its shoe number
    wait_for(lambda: seq not in shoe.sent, what="the unreadable card acknowledged to the shoe")
    d.stop()
    mark = len(c.all)
    d.start()
    wait_for(online(c, mark), what="the daemon back online")
    card = shoe.deal()         # anything resent would come (and be journaled) before this card
    wait_for(lambda: any(r[0]["type"] == "card" for r in shoe_inputs(d.journal)),
             what="the next card journaled")
    got = shoe_inputs(d.journal)
    assert [r[0]["type"] for r in got] == ["card_unreadable", "card"] and got[1][0]["card"] == card
    assert got[1][1] > seq                  # (a status report on reconnect took a number between)


def test_a_heartbeat_far_ahead_does_not_blind_a_table_waiting_for_a_card(rig):
    """Issue 14 item 2 as it was seen: one valid HB 4,000 ahead made thousands of misreads, then
    every real card was dropped as a duplicate while the table waited for a card."""
    from drivers import shoe_protocol as sp
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=9)
    c = rig.client(b.port)
    d = rig.daemon(b.port, shoe)
    wait_for(online(c, 0), what="the daemon online with its shoe")
    assert c.command({"type": "shoe_loaded"})["status"] == "accepted"   # waiting for the burn card
    mark = len(shoe.received)
    shoe._send_raw(sp.encode("HB", (shoe.seq + 4000) % sp.SEQ_MOD))
    wait_for(lambda: any(f.kind in ("ID", "RSND") for f in shoe.received[mark:]),
             what="the driver reacting to the heartbeat")
    # what the driver makes of it settles within its resend tries (4 x 150 ms): watch for longer
    end = time.monotonic() + 1.5
    while time.monotonic() < end and not shoe_inputs(d.journal):
        time.sleep(0.05)
    assert shoe_inputs(d.journal) == []                     # no misread from a frame nobody sent
    cards = [shoe.deal() for _ in range(3)]
    wait_for(lambda: len(shoe_inputs(d.journal)) >= 3, what="three cards journaled")
    got = shoe_inputs(d.journal)
    assert [(r[0]["type"], r[0].get("card")) for r in got] == [("card", x) for x in cards]
    assert not any(m["type"] == "irregularity" for m in c.events.values())


def test_a_driver_error_shows_in_the_status_and_the_shoe_comes_back(rig, tmp_path):
    """The daemon in this process: a fault in the shoe session (a bug, simulated) makes the
    status say the shoe is down with the reason, the link reopens, and the card comes through."""
    from dealer_station.config import check_config
    from dealer_station.daemon import Daemon
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=9)
    cfg, errors = check_config({
        "table": {"id": "e1", "profile": "luxury21"}, "shoe": {"url": shoe.path},
        "broker": {"port": b.port}, "paths": {"journal": str(tmp_path / "j.sqlite")},
        "metrics": {"enabled": False}})
    assert not errors, errors
    d = Daemon(cfg)
    d.start()
    seen = []
    handle = d.handle

    def handled(item):
        # the shoe's state after every item, not after every loop step: the link reopens 50 ms
        # after the error, and a loop step late under load drained both the down and the up
        handle(item)
        seen.append(dict(d.status()["devices"]["shoe"]))
    d.handle = handled

    def run_until(pred, what, timeout=10):
        step_until(d, pred, what, timeout)
    try:
        run_until(lambda: d.devices["shoe"].get("model"), "the shoe's HELLO")
        d.process({"type": "shoe_loaded"}, "test")
        session = d.shoe.session
        real = session._frame

        def broken_once(f, now):
            if f.kind == "CARD" and not getattr(broken_once, "done", False):
                broken_once.done = True
                raise RuntimeError("a driver bug")
            real(f, now)
        session._frame = broken_once
        card = shoe.deal()
        run_until(lambda: any(s["state"] == "disconnected" for s in seen), "the shoe reported down")
        down = next(s for s in seen if s["state"] == "disconnected")
        assert down["reason"] == "driver error: RuntimeError: a driver bug"
        run_until(lambda: shoe_inputs(str(tmp_path / "j.sqlite")), "the card journaled after the reopen")
        assert d.devices["shoe"]["state"] == "connected" and d.healthy()
        assert [r[0]["card"] for r in shoe_inputs(str(tmp_path / "j.sqlite"))] == [card]
    finally:
        d.close()


def _table_mid_shoe(rig, tmp_path, table_id):
    """A daemon over a real broker and the virtual shoe on a pty: (daemon, shoe, journal path,
    outputs(): every output in the outbox, in order)."""
    from dealer_station.config import check_config
    from dealer_station.daemon import Daemon
    b = rig.broker()
    shoe = rig.shoe(decks=8, seed=9)
    path = str(tmp_path / "j.sqlite")
    cfg, errors = check_config({
        "table": {"id": table_id, "profile": "luxury21"}, "shoe": {"url": shoe.path},
        "broker": {"port": b.port}, "paths": {"journal": path}, "metrics": {"enabled": False}})
    assert not errors, errors
    d = Daemon(cfg)
    d.start()

    def outputs():
        return [json.loads(r[0]) for r in d.journal.db.execute("SELECT body FROM outbox")]
    return d, shoe, path, outputs


def _daemon_again(d, shoe, path, table_id):
    """A new daemon (not started) on the closed daemon `d`'s journal, broker and shoe: a restart."""
    from dealer_station.config import check_config
    from dealer_station.daemon import Daemon
    cfg, errors = check_config({
        "table": {"id": table_id, "profile": "luxury21"}, "shoe": {"url": shoe.path},
        "broker": {"port": d.cfg["broker"]["port"]}, "paths": {"journal": path},
        "metrics": {"enabled": False}})
    assert not errors, errors
    return Daemon(cfg)


def test_the_shoe_unplugged_mid_round_pauses_it_and_replugged_resumes_it(rig, tmp_path):
    """End to end (issue #18): the real driver's disconnect reaches the engine as a journaled
    device_fault, which pauses the round; the shoe's return resumes it where it stopped."""
    d, shoe, path, outputs = _table_mid_shoe(rig, tmp_path, "e2")

    def run_until(pred, what, timeout=10):
        step_until(d, pred, what, timeout)
    try:
        run_until(lambda: d.devices["shoe"].get("model"), "the shoe's HELLO")
        d.process({"type": "shoe_loaded"}, "test")
        while d.station.table.phase == "burn":
            n = len(outputs())
            shoe.deal()
            run_until(lambda: len(outputs()) > n, "the burn card read")
        d.process({"type": "betting_closed", "seats": [1]}, "test")
        shoe.deal()
        run_until(lambda: sum(o["type"] == "card_dealt" and o["round"] == 1
                              for o in outputs()) == 1, "the first card")
        shoe.unplug()
        run_until(lambda: any(o["type"] == "round_paused" for o in outputs()), "the pause")
        paused = next(o for o in outputs() if o["type"] == "round_paused")
        assert paused["reason"] == "device_fault" and paused["round"] == 1
        shoe.replug()
        run_until(lambda: any(o["type"] == "round_resumed" for o in outputs()), "the resume")
        kinds = [o["type"] for o in outputs()]
        assert kinds.index("device_restored") < kinds.index("round_resumed")
        assert kinds[-1] == "awaiting_card"
        db = sqlite3.connect(path)
        origins = db.execute("SELECT origin, body FROM inputs WHERE origin='device'").fetchall()
        db.close()
        assert [json.loads(b)["type"] for _, b in origins] == ["device_fault", "device_restored"]
    finally:
        d.close()


def _burn_and_close_betting(d, shoe, outputs):
    """The shoe met, loaded, its burn cards dealt and read, betting closed on seat 1: the next
    card the shoe deals is the round's first."""
    step_until(d, lambda: d.devices["shoe"].get("model"), "the shoe's HELLO")
    d.process({"type": "shoe_loaded"}, "test")
    while d.station.table.phase == "burn":
        n = len(outputs())
        shoe.deal()
        step_until(d, lambda: len(outputs()) > n, "the burn card read")
    d.process({"type": "betting_closed", "seats": [1]}, "test")


def test_a_bouncing_door_mid_round_is_one_pause_and_one_resume(rig, tmp_path):
    """The cold trial: 200 door flaps published 128 events. Real driver, pty and daemon: a burst
    of 200 STAT reports ending open, then 200 ending closed, reach the engine as one
    device_fault and one device_restored (one pause, one resume), the final state each time."""
    d, shoe, _, outputs = _table_mid_shoe(rig, tmp_path, "e3")

    def kinds(*wanted):
        return [o["type"] for o in outputs() if o["type"] in wanted]
    try:
        _burn_and_close_betting(d, shoe, outputs)
        for i in range(399):
            shoe.status(door="open" if i % 2 == 0 else "closed")   # ends open
        step_until(d, lambda: kinds("round_paused"), "the pause")
        assert d.devices["shoe"]["report"]["door"] == "open"
        for i in range(200):
            shoe.status(door="closed" if i % 2 == 0 else "open")   # ends open ...
        shoe.status(door="closed")                                  # ... then closed
        step_until(d, lambda: kinds("round_resumed"), "the resume")
        shoe.deal()      # after every report in the shoe's sequence: once read, all were seen
        step_until(d, lambda: kinds("card_dealt"), "the card after the reports")
        assert kinds("device_fault", "device_restored", "round_paused", "round_resumed") == [
            "device_fault", "round_paused", "device_restored", "round_resumed"]
        assert d.devices["shoe"]["report"]["door"] == "closed"
    finally:
        d.close()


def test_a_restart_after_many_status_reports_resumes_after_them_with_no_misread(rig, tmp_path):
    """The cold trial: 70 STAT frames since the last card, then a restart: the driver resumed at
    the last card, met a HELLO more than MAX_GAP ahead and reported "shoe sequence jumped", a
    false misread that paused the table. Every STAT frame delivered is acknowledged and its
    position kept, so the restarted daemon resumes after the last one and nothing is lost."""
    d, shoe, path, outputs = _table_mid_shoe(rig, tmp_path, "e4")
    try:
        _burn_and_close_betting(d, shoe, outputs)
        for _ in range(35):
            shoe.status(door="open")
            shoe.status()
        step_until(d, lambda: d.shoe.session.last == shoe.seq and d.q.empty(),
                   "every status report delivered and stepped")
        assert shoe.seq - shoe_inputs(path)[-1][1] > 64     # more than MAX_GAP since the card
        step_until(d, lambda: not shoe.sent, "every frame acknowledged to the shoe")
    finally:
        d.close()
    d = _daemon_again(d, shoe, path, "e4")
    try:
        assert d.station.shoe_resume() == (shoe.boot, shoe.seq)     # after the last report
        d.start()
        step_until(d, lambda: d.devices["shoe"].get("model"), "the shoe's HELLO again")
        before = len(shoe_inputs(path))
        card = shoe.deal()
        step_until(d, lambda: any(b["type"] == "card" for b, _ in shoe_inputs(path)[before:]),
                   "the next card journaled")
        assert d.shoe.session.counts["jumps"] == 0
        assert [(b["type"], b.get("card")) for b, _ in shoe_inputs(path)[before:]] == [
            ("card", card)]
        assert not d.station.table.paused
        last = d.journal.db.execute("SELECT body FROM outbox ORDER BY seq DESC LIMIT 2").fetchall()
        assert [json.loads(b)["type"] for b, in last] == ["awaiting_card", "card_dealt"]
    finally:
        d.close()


def test_a_shoe_status_change_mid_round_publishes_the_retained_status_once(rig, tmp_path):
    """The cold trial: each door change published the retained status twice (the report, then
    the fault state the driver derived from it, as two events; on the return, two in one step).
    One change of the shoe's status, one status document, already showing the whole change."""
    d, shoe, _, outputs = _table_mid_shoe(rig, tmp_path, "e5")
    published = []
    real = d.link.publish_status
    d.link.publish_status = lambda doc: (published.append(doc), real(doc))
    try:
        step_until(d, lambda: d.devices["broker"]["state"] == "connected", "the broker")
        _burn_and_close_betting(d, shoe, outputs)
        for door, state, output in (("open", "fault", "round_paused"),
                                    ("closed", "ok", "round_resumed")):
            mark = len(published)
            shoe.status(door=door)
            step_until(d, lambda: any(o["type"] == output for o in outputs())
                       and d.devices["shoe"]["state"] == state and d.q.empty(),
                       f"the door {door}")
            shown = [(p["devices"]["shoe"]["report"]["door"], p["devices"]["shoe"]["state"])
                     for p in published[mark:]]
            assert shown == [(door, state)]
    finally:
        d.close()


def test_a_burst_of_status_reports_is_kept_in_one_write_and_acknowledged_only_after_it(rig,
                                                                                       tmp_path):
    """A door chattering: every STAT frame's position was one journal write (an fsync, 2-8 ms
    measured here: a third of the loop's time at 100 frames a second). The frames queued in one
    burst are kept in one write of the newest position; every frame is still acknowledged, in
    order, and none before a position at or past it is written (nothing a restart could lose)."""
    d, shoe, path, outputs = _table_mid_shoe(rig, tmp_path, "e5")
    writes, acks = [], []
    real_set, real_cmd = d.journal.set_meta, d.shoe.command

    def set_meta(key, value):
        real_set(key, value)
        if key == "shoe_pos":
            writes.append(int(value.split(":")[1]))

    def command(name, *args):
        if name == "ack":
            acks.append((args[0], writes[-1] if writes else None))
        return real_cmd(name, *args)
    d.journal.set_meta, d.shoe.command = set_meta, command
    try:
        _burn_and_close_betting(d, shoe, outputs)
        writes.clear()
        acks.clear()
        first = shoe.seq + 1
        for _ in range(35):
            shoe.status(door="open")
            shoe.status()
        # the driver reads all 70 while the loop is not stepped: one burst on the queue
        wait_for(lambda: d.shoe.session.last == shoe.seq, 10, "every report read by the driver")
        step_until(d, lambda: d.q.empty() and not shoe.sent, "every frame acknowledged")
        stats = list(range(first, shoe.seq + 1))
        assert writes == [shoe.seq], writes                 # one write, the newest position
        assert [a for a, _ in acks] == stats                # each frame acknowledged, in order
        assert all(kept is not None and kept >= a for a, kept in acks), acks
    finally:
        d.close()
    j = sqlite3.connect(path)
    try:
        pos = j.execute("SELECT value FROM meta WHERE key='shoe_pos'").fetchone()[0]
    finally:
        j.close()
    assert int(pos.split(":")[1]) == shoe.seq


def test_cards_drawn_while_the_daemon_was_down_and_the_shoe_rebooted_are_all_reported(rig, tmp_path):
    """The cold trial: the daemon killed, the shoe power-cycled (a new boot, its numbers from 1),
    two cards drawn, the daemon back: the driver took the new boot's HELLO ("last 2") as its
    starting point and the two cards were never reported, not even as misreads. Frames of a
    new boot sent before the host heard of it are still in the shoe: asked for from 1."""
    d, shoe, path, outputs = _table_mid_shoe(rig, tmp_path, "e6")
    try:
        _burn_and_close_betting(d, shoe, outputs)
        mark, events = len(shoe_inputs(path)), len(outputs())   # the round's cards from here
        first = shoe.deal()
        step_until(d, lambda: any(b.get("card") == first for b, _ in shoe_inputs(path)[mark:]),
                   "the first card journaled")
        step_until(d, lambda: not shoe.sent, "every frame acknowledged to the shoe")
    finally:
        d.close()
    shoe.restart()                               # power cycle: boot + 1, numbers from 1
    drawn = [shoe.deal(), shoe.deal()]           # nobody listening
    d = _daemon_again(d, shoe, path, "e6")
    try:
        before = len(shoe_inputs(path))
        d.start()
        step_until(d, lambda: len([b for b, _ in shoe_inputs(path)[before:]
                                   if b["type"] in ("card", "card_unreadable")]) >= 2,
                   "the two cards drawn while the daemon was down")
        step_until(d, lambda: not shoe.sent and d.q.empty(), "every frame acknowledged")
        got = [(b["type"], b.get("card"), s) for b, s in shoe_inputs(path)[before:]]
        assert got == [("card", drawn[0], 1), ("card", drawn[1], 2)], got
        # the connect's QST answer (STAT 3 of the new boot) was called a conflict with the
        # previous boot's numbers, "reported", though nothing was (the next cold trial)
        assert d.shoe.session.counts["conflicts"] == 0, d.shoe.session.counts
        nxt = shoe.deal()                       # and on from there
        step_until(d, lambda: any(b.get("card") == nxt for b, _ in shoe_inputs(path)),
                   "the next card")
        assert [b.get("card") for b, _ in shoe_inputs(path)[before:]] == [*drawn, nxt]
    finally:
        d.close()


def test_door_reports_sent_while_the_daemon_was_down_are_no_misread_after_its_restart(rig, tmp_path):
    """The cold trial: the daemon killed, 80 door reports (more than MAX_GAP) sent meanwhile, the
    daemon back: "the shoe's sequence jumped", a false misread that paused the round, though the
    shoe still held every report. Now asked for and delivered; the next card is dealt."""
    d, shoe, path, outputs = _table_mid_shoe(rig, tmp_path, "e7")
    try:
        _burn_and_close_betting(d, shoe, outputs)
        step_until(d, lambda: not shoe.sent and d.q.empty(), "every frame acknowledged")
    finally:
        d.close()
    for _ in range(40):                          # nobody listening
        shoe.status(door="open")
        shoe.status()
    d = _daemon_again(d, shoe, path, "e7")
    try:
        before = len(shoe_inputs(path))
        d.start()
        step_until(d, lambda: not shoe.sent and d.q.empty(), "every report acknowledged")
        card = shoe.deal()
        step_until(d, lambda: any(b.get("card") == card for b, _ in shoe_inputs(path)),
                   "the next card journaled")
        assert [(b["type"], b.get("card")) for b, _ in shoe_inputs(path)[before:]] == [
            ("card", card)]
        assert d.shoe.session.counts["jumps"] == 0 and not d.station.table.paused
    finally:
        d.close()


class Crash(BaseException):
    """The process dies here (not an Exception: the loop's handler of defects must not catch it)."""


def _crash_after_the_position_is_written(d):
    """Arms a crash between the batched `shoe_pos` write and the ACKs held behind it: the write
    is committed, then the first held ACK kills the daemon before it reaches the shoe."""
    real_set, real_cmd = d.journal.set_meta, d.shoe.command
    written = []

    def set_meta(key, value):
        real_set(key, value)
        if key == "shoe_pos":
            written.append(value)

    def command(name, *args):
        if name == "ack" and written:
            raise Crash(f"killed after shoe_pos {written[-1]} was written, before ACK {args[0]}")
        return real_cmd(name, *args)
    d.journal.set_meta, d.shoe.command = set_meta, command
    return written


def _dead(d):
    """What a SIGKILL leaves: the journal as committed, no ACK sent, no flush, no last status."""
    d.shoe.close()
    d.link.client.loop_stop()
    d.link.client.socket() and d.link.client.socket().close()
    d.journal.close()


@pytest.mark.parametrize("then_card", [True, False], ids=["card-after-statuses", "statuses-only"])
def test_a_crash_between_the_position_write_and_the_held_acks_loses_nothing_and_repeats_nothing(
        rig, tmp_path, then_card):
    """docs/shoe-protocol.md rule 10: the daemon writes the shoe's position once per burst of
    STAT frames and holds their ACKs until it is written. Killed between that write and the ACKs
    (the crash point injected at the seam: the first held ACK raises), the shoe still holds every
    frame unacknowledged. After the restart: every card drawn is journaled and published exactly
    once, in order, no misread, no jump, no conflict, and the shoe is acknowledged up to its last
    frame. `card-after-statuses`: a card's journal record flushed the position inside the burst
    (and the card was not yet written); `statuses-only`: the burst's end flushed it."""
    table = "e8" if then_card else "e9"
    d, shoe, path, outputs = _table_mid_shoe(rig, tmp_path, table)
    try:
        _burn_and_close_betting(d, shoe, outputs)
        mark, events = len(shoe_inputs(path)), len(outputs())   # the round's cards from here
        first = shoe.deal()
        step_until(d, lambda: any(b.get("card") == first for b, _ in shoe_inputs(path)[mark:]),
                   "the first card journaled")
        step_until(d, lambda: not shoe.sent and d.q.empty(), "every frame acknowledged")
    except BaseException:
        d.close()
        raise
    written = _crash_after_the_position_is_written(d)
    for _ in range(10):
        shoe.status(door="open")
        shoe.status()
    drawn = [first] + ([shoe.deal()] if then_card else [])
    # the driver reads the whole burst before the loop steps: one batch, one write
    wait_for(lambda: d.shoe.session.last == shoe.seq, 10, "the burst read by the driver")
    with pytest.raises(Crash):
        step_until(d, lambda: False, "the crash point", timeout=10)
    _dead(d)
    assert written and shoe.sent, "killed with the position written and frames unacknowledged"
    journaled = len(shoe_inputs(path))
    d = _daemon_again(d, shoe, path, table)
    try:
        d.start()
        step_until(d, lambda: not shoe.sent and d.q.empty() and len(
            [b for b, _ in shoe_inputs(path)[mark:] if b["type"] == "card"]) == len(drawn),
            "every frame acknowledged after the restart")
        nxt = shoe.deal()                        # and on from there
        drawn.append(nxt)
        step_until(d, lambda: any(b.get("card") == nxt for b, _ in shoe_inputs(path)[mark:]),
                   "the next card")
        step_until(d, lambda: not shoe.sent and d.q.empty(), "the next card acknowledged")
        rows = shoe_inputs(path)
        # each card once, in order; nothing else from the shoe
        assert [b["card"] for b, _ in rows[mark:] if b["type"] == "card"] == drawn
        assert len(rows) == journaled + len(drawn) - 1, rows[journaled:]
        out = [json.loads(r[0]) for r in d.journal.db.execute("SELECT body FROM outbox")]
        dealt = [o for o in out[events:] if o["type"] == "card_dealt"]
        assert len(dealt) == len(drawn), dealt               # each card published once
        assert [o["seq"] for o in out] == list(range(1, len(out) + 1))
        counts = d.shoe.session.counts
        assert counts["lost_frames"] == counts["jumps"] == counts["conflicts"] == 0, counts
        assert not d.station.table.paused
    finally:
        d.close()
