"""The shoe link trusts no single frame: frames that pass the CRC but lie about sequence numbers
or carry unusable fields, sent over a real pty into the real driver (issue 14, items 2 and 3)."""

from drivers import shoe_protocol as sp
from drivers.events import CardRead, CardUnreadable, DeviceState, ShoeHello
from mqtt_rig import wait_for
from test_shoe_driver import Rig, reads, rig  # noqa: F401 - the fixture

MOD = sp.SEQ_MOD


def inject(r, kind, *fields):
    r.shoe._send_raw(sp.encode(kind, *fields))


def asked_since(r, n, kinds=("ID", "RSND")):
    """The driver has written an ID or RSND to the shoe since it had received n commands."""
    return lambda: any(f.kind in kinds for f in r.shoe.received[n:])


def deal_and_read(r, n=3):
    dealt = [r.shoe.deal() for _ in range(n)]
    r.wait(lambda e: len(reads(r.events)) >= n)
    return dealt


def unreadable(r):
    return [e for e in r.events if isinstance(e, CardUnreadable)]


def test_a_heartbeat_far_ahead_neither_floods_misreads_nor_blinds_the_shoe(rig):
    r = rig()
    n = len(r.shoe.received)
    inject(r, "HB", (r.base + 4000) % MOD)
    wait_for(asked_since(r, n))
    r.settle(0.8)                        # what the driver makes of it (the old code: 4000 misreads)
    dealt = deal_and_read(r)
    r.settle(0.3)
    assert reads(r.events) == dealt and unreadable(r) == []
    assert r.driver.session.counts["implausible"] >= 1


def test_an_unasked_hello_far_ahead_or_from_another_boot_is_checked_not_believed(rig):
    r = rig()
    n = len(r.shoe.received)
    inject(r, "HELLO", (r.base + 4000) % MOD, "VS-1", "1.0", "VS0001", r.shoe.boot)
    inject(r, "HELLO", 3, "VS-1", "1.0", "VS0001", r.shoe.boot + 7)
    wait_for(asked_since(r, n, ("ID",)))
    r.settle(0.8)
    dealt = deal_and_read(r)
    r.settle(0.3)
    assert reads(r.events) == dealt and unreadable(r) == []
    assert [e.card for e in r.events if isinstance(e, CardRead)] == dealt
    assert all(e.boot == r.shoe.boot for e in r.events if isinstance(e, ShoeHello))


def test_a_small_spurious_gap_is_checked_with_the_shoe_before_any_misread(rig):
    r = rig()
    n = len(r.shoe.received)
    inject(r, "HB", r.base + 10)         # the shoe never sent 1-10: it ignores the RSND
    wait_for(asked_since(r, n))
    wait_for(lambda: r.driver.session.gap_deadline is None, timeout=5)
    r.settle(0.5)
    dealt = deal_and_read(r)
    r.settle(0.3)
    assert reads(r.events) == dealt and unreadable(r) == []


def test_a_different_frame_under_a_used_number_is_reported_the_same_frame_is_not(rig):
    r = rig()
    card = r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead))
    other = "As" if card != "As" else "Kd"
    inject(r, "CARD", r.base + 1, card, 97)        # the very frame again: provably a duplicate
    inject(r, "CARD", r.base + 1, other, 97)       # another card under that number: reported
    e = r.wait(lambda e: isinstance(e, CardUnreadable))
    assert e.detail["read"] == other and "conflict" in e.detail["reason"] and e.seq is None
    r.settle(0.4)
    assert len(unreadable(r)) == 1 and r.driver.session.counts["duplicates"] == 1
    nxt = r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead) and e.card == nxt and e.seq == r.base + 2)


def test_a_genuine_jump_past_the_resend_window_is_one_reported_gap(rig):
    r = rig()
    with r.shoe._lock:                   # the shoe sent 500 events the host never saw
        r.shoe.seq += 500
        r.shoe.sent.clear()
    e = r.wait(lambda e: isinstance(e, CardUnreadable))
    to = r.base + 500
    assert e.seq == to and e.detail["seq"] == to and "jumped" in e.detail["reason"]
    card = r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead) and e.card == card and e.seq == to + 1)
    r.settle(0.3)
    assert len(unreadable(r)) == 1 and r.driver.session.counts["jumps"] == 1


def test_a_hello_with_a_bad_boot_is_a_counted_drop_and_the_reader_lives_on(rig):
    r = rig()
    bad = b"HELLO,0,VS-1,1.0,VS0001,x"
    r.shoe._send_raw(b"$" + bad + b"*" + f"{sp.crc16(bad):04X}".encode() + b"\r\n")
    wait_for(lambda: r.driver.session.counts["bad_frames"] == 1)
    dealt = deal_and_read(r)
    assert reads(r.events) == dealt and r.driver.link._thread.is_alive()
    assert r.driver.link.errors == 0


def test_an_exception_in_the_session_marks_the_shoe_down_and_the_link_reopens(rig):
    r = rig()
    session = r.driver.session
    real = session._frame

    def broken_once(f, now):
        if f.kind == "CARD" and not getattr(broken_once, "done", False):
            broken_once.done = True
            raise RuntimeError("a driver bug")
        real(f, now)
    session._frame = broken_once
    card = r.shoe.deal()
    e = r.wait(lambda e: isinstance(e, DeviceState) and e.state == "disconnected")
    assert "driver error: RuntimeError: a driver bug" in e.detail["reason"]
    r.wait(lambda e: isinstance(e, DeviceState) and e.state == "connected" and e is not r.events[0])
    got = r.wait(lambda e: isinstance(e, CardRead))   # asked again after the reconnect
    assert got.card == card and r.driver.link.errors == 1 and r.driver.link._thread.is_alive()


def test_no_card_of_a_bad_or_conflicting_frame_reaches_the_log(caplog):
    """The log never names a card (it may be the hole card, docs/architecture.md "Secrets"): a
    CARD frame corrupted on the line (its CRC fails, or its '$' is lost), and a frame conflicting
    with a number already used, are logged by their kind and size or number, never their fields."""
    import logging
    from drivers.shoe import ShoeSession
    got = []
    s = ShoeSession(got.append, lambda b: None)
    s.connected(0.0)
    s.data(sp.encode("HELLO", 0, "X", "1", "S", 1), 0.0)
    s.data(sp.encode("CARD", 1, "Kd", 98), 0.1)                  # the hole card, say
    good = sp.encode("CARD", 2, "Qh", 98)
    bad = good[:3] + bytes([good[3] ^ 0x20]) + good[4:]          # a flipped bit: CRC fails
    with caplog.at_level(logging.WARNING, logger="drivers.shoe"):
        s.data(bad, 10.0)
        s.data(good[6:], 20.0)                                   # its '$' and type lost: 'Qh,98*..'
        s.data(sp.encode("CARD", 1, "Kd", 97), 30.0)             # number 1 again, other content
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "bad frame dropped (checksum mismatch)" in text
    assert "bad frame dropped (garbage between frames)" in text
    assert "CARD 1 conflicts with what was delivered" in text
    assert "Kd" not in text and "Qh" not in text


def _unseen(r, n, cards=()):
    """The shoe sent `n` events the host never saw (door reports, then `cards`), keeping the
    last 256 unacknowledged to resend, as the virtual shoe does."""
    with r.shoe._lock:
        for i in range(n):
            r.shoe.seq += 1
            tail = i - (n - len(cards))
            frame = (sp.encode("CARD", r.shoe.seq, cards[tail], 97) if tail >= 0 else
                     sp.encode("STAT", r.shoe.seq, "open" if i % 2 else "closed", 0, "ok", "ok",
                               "unlocked"))
            r.shoe.sent[r.shoe.seq] = frame
            while len(r.shoe.sent) > 256:
                r.shoe.sent.popitem(last=False)


def test_a_long_run_of_frames_the_shoe_still_holds_is_asked_for_not_called_lost(rig):
    """The cold trial: 80 door reports sent while the daemon was down (killed, restarting) were
    past MAX_GAP, and the confirmed HELLO was reported at once as "sequence jumped", a false
    misread that paused the table; the shoe still held every one of them. A confirmed jump is
    asked for like any gap: nothing unreadable, every frame delivered in order."""
    r = rig()
    _unseen(r, 80, cards=("Kd", "7h"))
    r.wait(lambda e: isinstance(e, CardRead) and e.card == "7h")
    r.settle(0.3)
    assert unreadable(r) == [] and r.driver.session.counts["jumps"] == 0
    assert [(e.card, e.seq) for e in reads_of(r)] == [("Kd", r.base + 79), ("7h", r.base + 80)]


def test_what_the_shoe_no_longer_holds_of_a_long_run_is_one_reported_span(rig):
    """A real loss is still caught: of 300 events unseen the shoe holds the last 256; the first
    44 are one reported span (the round pauses), the rest delivered after it."""
    r = rig()
    _unseen(r, 300, cards=("Qs",))
    r.wait(lambda e: isinstance(e, CardRead) and e.card == "Qs")
    r.settle(0.3)
    lost = unreadable(r)
    assert len(lost) == 1 and lost[0].seq == r.base + 44, lost
    assert f"frames {r.base + 1}-{r.base + 44}" in lost[0].detail["reason"]
    assert "jumped" in lost[0].detail["reason"]
    assert [(e.card, e.seq) for e in reads_of(r)] == [("Qs", r.base + 300)]
    assert r.events.index(lost[0]) < r.events.index(reads_of(r)[0])


def reads_of(r):
    return [e for e in r.events if isinstance(e, CardRead)]


def test_a_rebooted_shoe_whose_new_events_were_acknowledged_elsewhere_is_one_reported_span(rig):
    """A new boot's events sent before this host heard of it are asked for from 1 (cards drawn
    while the daemon was down); those the shoe no longer holds (another host acknowledged them: a
    shoe swapped in with a past) are one reported span, not one misread each, nor nothing."""
    r = rig()
    with r.shoe._lock:                   # power cycle, 40 events, acknowledged by another host
        r.shoe.boot += 1
        r.shoe.seq = 40
        r.shoe.sent.clear()
        r.shoe._send_raw(sp.encode("HELLO", 40, r.shoe.model, r.shoe.firmware,
                                   r.shoe.serial_no, r.shoe.boot))
    e = r.wait(lambda e: isinstance(e, CardUnreadable))
    assert e.seq == 40 and "frames 1-40" in e.detail["reason"], e
    card = r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead) and e.card == card and e.seq == 41)
    r.settle(0.3)
    assert len(unreadable(r)) == 1


def _resumed_session(boot=1, last=37):
    """A session resumed from a journal (the daemon restarted) at `last` of `boot`: (session,
    events emitted, frames written to the shoe)."""
    from drivers.shoe import ShoeSession
    got, wrote = [], []
    s = ShoeSession(got.append, wrote.append, auto_ack=False, resume=(boot, last))
    s.connected(0.0)                    # ID and QST
    return s, got, wrote


def test_a_rebooted_shoes_first_frames_are_no_conflict_before_its_restart_is_confirmed(caplog):
    """Last session's cold trial: at every start after a shoe reboot the log warned "STAT 3
    conflicts with what was delivered under that number; reported and resynchronising", though
    nothing was reported: the answer to the connect's QST, numbered in the new boot, was compared
    with the previous boot's numbers while the new boot's HELLO waited to be said twice. Now it
    is held until the restart is confirmed, then taken as the new boot's, with 1-2 asked for."""
    import logging
    from drivers.events import ShoeStatus
    s, got, wrote = _resumed_session(boot=1, last=37)
    c1, c2 = sp.encode("CARD", 1, "9c", 98), sp.encode("CARD", 2, "4h", 98)
    stat = sp.encode("STAT", 3, "closed", 0, "ok", "ok", "unlocked")
    with caplog.at_level(logging.INFO, logger="drivers.shoe"):
        s.data(sp.encode("HELLO", 2, "VS-1", "1.0", "VS0001", 2), 0.01)   # a new boot: asked again
        s.data(stat, 0.02)                                                # the QST's answer
        s.tick(0.3)                                                       # the ID asked again
        s.data(sp.encode("HELLO", 3, "VS-1", "1.0", "VS0001", 2), 0.31)   # confirmed
        assert wrote[-1] == sp.encode("RSND", 1)
        s.data(c1 + c2 + stat, 0.32)                                      # the shoe resends 1-3
        s.tick(0.6)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "conflicts" not in text and s.counts["conflicts"] == 0, text
    assert "STAT 3 held until the shoe's restart (boot 2) is confirmed" in text
    assert [(type(e).__name__, e.seq) for e in got if isinstance(e, (CardRead, CardUnreadable,
                                                                     ShoeStatus))] == [
        ("CardRead", 1), ("CardRead", 2), ("ShoeStatus", 3)]
    assert not any(isinstance(e, CardUnreadable) for e in got)


def test_a_frame_before_a_restart_hello_that_proves_false_is_asked_for_not_lost():
    """The frames held while a new boot waited to be confirmed were real frames of the old boot
    when the shoe, asked again, says its old boot (the first HELLO was a corrupt frame that
    passed the CRC): they are taken as the old boot's then, each once."""
    s, got, wrote = _resumed_session(boot=1, last=37)
    card = sp.encode("CARD", 38, "9c", 98)
    s.data(sp.encode("HELLO", 3, "VS-1", "1.0", "VS0001", 9), 0.01)       # not true
    s.data(card, 0.02)                                                    # held
    s.tick(0.3)
    s.data(sp.encode("HELLO", 38, "VS-1", "1.0", "VS0001", 1), 0.31)      # the old boot, 38 sent
    assert wrote[-1] == sp.encode("RSND", 38)
    s.data(card, 0.32)
    assert [(e.card, e.seq) for e in got if isinstance(e, CardRead)] == [("9c", 38)]
    assert s.counts["conflicts"] == 0 and not [e for e in got if isinstance(e, CardUnreadable)]


def test_a_conflicting_status_frame_is_logged_as_what_is_done_with_it(caplog):
    """A STAT under a number already used is not a card (nothing left the shoe): the log said
    "reported" of it though nothing was; it now says it was dropped and asks the shoe for its
    status again (QST), and a conflicting CARD still says it was reported, and is."""
    import logging
    s, got, wrote = _resumed_session(boot=1, last=0)
    s.data(sp.encode("HELLO", 0, "VS-1", "1.0", "VS0001", 1), 0.01)
    s.data(sp.encode("CARD", 1, "9c", 98) + sp.encode("STAT", 2, "closed", 0, "ok", "ok",
                                                      "unlocked"), 0.02)
    n = len(wrote)
    with caplog.at_level(logging.WARNING, logger="drivers.shoe"):
        s.data(sp.encode("STAT", 2, "open", 0, "ok", "ok", "unlocked"), 0.03)
        assert sp.encode("QST") in wrote[n:]
        before = len(got)
        s.data(sp.encode("CARD", 1, "Kd", 98), 0.04)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "shoe: STAT 2 conflicts with what was delivered under that number: dropped (a status "
        "report: no card left the shoe), the status asked for again; resynchronising",
        "shoe: CARD 1 conflicts with what was delivered under that number: reported as an "
        "unreadable card; resynchronising"], lines
    assert [e.detail["reason"] for e in got[before:] if isinstance(e, CardUnreadable)] == [
        "sequence conflict: number already used"]


def test_a_rebooted_shoes_heartbeat_is_not_taken_for_the_previous_boots_number():
    """The docs' commands (a Mosquitto, `table-sim shoe --pty`, `dealer-station run`): a table
    whose shoe had sent one status (boot 1, last 1) when the daemon stopped; the shoe power-cycled
    and two cards drawn; the daemon back. The new boot's "HB 3" (and its QST's STAT 3), waiting
    for the restart to be confirmed, were taken as boot 1's numbers 2-3: asked for (RSND 2), the
    second card journaled as boot 1's frame 2 and acknowledged, then "frames 1-3 are not
    accounted for" (the first card a misread); with the STAT left alone, the HB still made the
    confirmation report boot 1's frames 2-3 lost (two false misreads). Now every card once, no
    misread."""
    s, got, wrote = _resumed_session(boot=1, last=1)
    c1, c2 = sp.encode("CARD", 1, "6d", 98), sp.encode("CARD", 2, "Kc", 98)
    stat = sp.encode("STAT", 3, "closed", 0, "ok", "ok", "unlocked")
    s.data(sp.encode("HELLO", 2, "VS-1", "1.0", "VS0001", 2), 0.01)    # not yet believed
    s.data(stat + sp.encode("HB", 3), 0.02)
    s.tick(0.1)
    s.data(sp.encode("HB", 3), 0.2)
    s.tick(0.3)                                                         # the ID asked again
    s.data(sp.encode("HELLO", 3, "VS-1", "1.0", "VS0001", 2), 0.31)    # confirmed
    assert [w for w in wrote if w.startswith(b"$RSND")] == [sp.encode("RSND", 1)]
    s.data(c1 + c2 + stat + sp.encode("HB", 3), 0.32)
    s.tick(0.6)
    assert [(type(e).__name__, e.seq) for e in got if isinstance(e, (CardRead, CardUnreadable))
            ] == [("CardRead", 1), ("CardRead", 2)]
    assert s.counts["lost_frames"] == s.counts["jumps"] == s.counts["conflicts"] == 0
