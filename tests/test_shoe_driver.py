"""The real shoe and scanner drivers over real ptys against the virtual shoe, fault by fault,
and what the round controller receives from them."""
import queue
import time

import pytest

from controller import new_table, profile_from_mapping, step
from drivers.events import CardRead, CardUnreadable, CutCard, DeviceState, ShoeHello, ShoeStatus
from drivers.scanner import ScannerDriver
from drivers.shoe import ShoeDriver
from drivers.virtual_shoe import VirtualShoe


class Rig:
    """A virtual shoe, the real driver on its pty, and the events the driver emitted."""

    def __init__(self, mode="v1", decks=1, seed=3, cut_from_back=None, **options):
        self.shoe = VirtualShoe(decks=decks, seed=seed, cut_from_back=cut_from_back, mode=mode,
                                heartbeat=0.1)
        path = self.shoe.start()
        self.q = queue.Queue()
        if mode == "v1":
            self.driver = ShoeDriver(path, **{"resend_timeout": 0.15, "stall_timeout": 0.6, **options})
        else:
            self.driver = ScannerDriver(path, self.shoe.codebook(), cut_payload="CUT", **options)
        self.driver.start(self.q.put)
        self.events = []
        self.base = 0
        if mode == "v1":
            self.wait(lambda e: isinstance(e, ShoeHello))
            # the driver asks for status on connect: that report takes the first sequence number
            self.base = self.wait(lambda e: isinstance(e, ShoeStatus)).seq
        else:
            self.wait(lambda e: isinstance(e, DeviceState) and e.state == "connected")

    def wait(self, pred, timeout=5.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for e in self.events:
                if pred(e):
                    return e
            try:
                self.events.append(self.q.get(timeout=0.05))
            except queue.Empty:
                pass
        raise AssertionError(f"no such event within {timeout}s; got {self.events}")

    def settle(self, quiet=0.4):
        """Collect until nothing new arrives for `quiet` seconds."""
        while True:
            try:
                self.events.append(self.q.get(timeout=quiet))
            except queue.Empty:
                return self.events

    def cards(self):
        return [e for e in self.events if isinstance(e, (CardRead, CardUnreadable, CutCard))]

    def close(self):
        self.driver.close()
        self.shoe.close()


@pytest.fixture
def rig(request):
    made = []

    def make(**kw):
        r = Rig(**kw)
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


def reads(events):
    return [e.card for e in events if isinstance(e, CardRead)]


def test_every_card_arrives_once_in_order(rig):
    r = rig()
    dealt = [r.shoe.deal() for _ in range(20)]
    r.wait(lambda e: isinstance(e, CardRead) and e.seq == r.base + 20)
    r.settle(0.3)
    assert reads(r.events) == dealt
    assert [e.seq for e in r.events if isinstance(e, CardRead)] == list(range(r.base + 1, r.base + 21))
    assert r.driver.session.counts["bad_frames"] == 0


def test_a_corrupted_frame_is_counted_and_the_card_recovered_by_resend(rig):
    r = rig()
    r.shoe.deal()
    r.shoe.corrupt_next()
    dealt = [r.shoe.deal() for _ in range(3)]
    r.wait(lambda e: isinstance(e, CardRead) and e.seq == r.base + 4)
    r.settle(0.3)
    assert reads(r.events)[1:] == dealt
    c = r.driver.session.counts
    assert c["bad_frames"] == 1 and c["resend_requests"] >= 1 and c["lost_frames"] == 0


def test_a_dropped_frame_is_asked_again_even_when_it_was_the_last(rig):
    r = rig()
    r.shoe.drop_next()
    card = r.shoe.deal()                    # nothing follows: the heartbeat reveals the gap
    got = r.wait(lambda e: isinstance(e, CardRead))
    assert got.card == card and got.seq == r.base + 1
    assert any(f.kind == "RSND" for f in r.shoe.received)


def test_a_frame_that_cannot_be_resent_becomes_an_unreadable_card(rig):
    r = rig()
    first = r.shoe.deal()
    r.shoe.drop_next(resendable=False)
    lost = r.shoe.deal()
    third = r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead) and e.seq == r.base + 3)
    r.settle(0.3)
    seen = r.cards()
    assert [type(e).__name__ for e in seen] == ["CardRead", "CardUnreadable", "CardRead"]
    assert seen[1].detail["seq"] == r.base + 2 and "cannot resend" in seen[1].detail["reason"]
    assert (seen[0].card, seen[2].card) == (first, third) and lost not in (None,)


def test_an_unreadable_card_is_reported_as_such(rig):
    r = rig()
    r.shoe.unreadable_next()
    r.shoe.deal()
    e = r.wait(lambda e: isinstance(e, CardUnreadable))
    assert e.detail == {"seq": r.base + 1, "reason": "no code read"}


def test_low_confidence_reads_are_refused_not_guessed(rig):
    r = rig(min_confidence=98)             # the virtual shoe reports 97
    card = r.shoe.deal()
    e = r.wait(lambda e: isinstance(e, CardUnreadable))
    assert e.detail["read"] == card and e.detail["confidence"] == 97
    assert not reads(r.events)


def test_double_fire_is_delivered_once(rig):
    r = rig()
    r.shoe.double_fire_next()
    a = r.shoe.deal()
    b = r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead) and e.seq == r.base + 2)
    r.settle(0.3)
    assert reads(r.events) == [a, b]
    assert r.driver.session.counts["duplicates"] == 1


def test_unplug_and_replug_lose_nothing_and_report_once_each(rig):
    r = rig()
    a = r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead))
    r.shoe.unplug()
    r.wait(lambda e: isinstance(e, DeviceState) and e.state == "disconnected")
    during = [r.shoe.deal(), r.shoe.deal()]  # dealt while the cable was out
    time.sleep(0.3)
    r.shoe.replug()
    r.wait(lambda e: isinstance(e, CardRead) and e.seq == r.base + 3, timeout=8)
    r.settle(0.4)
    assert reads(r.events) == [a] + during
    states = [e.state for e in r.events if isinstance(e, DeviceState)]
    assert states.count("disconnected") == 1 and states.count("connected") == 2
    assert r.driver.link.reconnects == 1


def test_a_stalled_line_is_a_fault_and_recovers(rig):
    r = rig()
    r.shoe.stall(True)
    card = r.shoe.deal()
    e = r.wait(lambda e: isinstance(e, DeviceState) and e.state == "fault")
    assert "stalled" in e.detail["reason"]
    r.shoe.stall(False)
    got = r.wait(lambda e: isinstance(e, CardRead))
    assert got.card == card
    r.wait(lambda e: isinstance(e, DeviceState) and e.state == "connected" and e.detail)


def test_a_shoe_restart_loses_pending_frames_as_unreadable_not_silently(rig):
    r = rig()
    r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead))
    r.shoe.stall(True)
    r.shoe.deal()                          # sent into a stalled line, then the shoe reboots
    r.shoe._held.clear()
    r.shoe.stall(False)
    hellos = sum(isinstance(e, ShoeHello) for e in r.events)
    r.shoe.restart()
    r.wait(lambda e: sum(isinstance(x, ShoeHello) for x in r.events) > hellos)   # it is back
    # after the reboot the shoe counts from 0 again; the host must not treat 1 as a duplicate
    c = r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead) and e.card == c and e.seq == 1)


def test_status_frames_and_commands(rig):
    r = rig()
    st = r.wait(lambda e: isinstance(e, ShoeStatus))
    assert (st.door, st.jam, st.gate) == ("closed", False, "unlocked")
    r.shoe.status(door="open")
    e = r.wait(lambda e: isinstance(e, ShoeStatus) and e.door == "open").change
    assert e.state == "fault" and e.detail["reason"] == "door open"     # one event, one change
    assert r.driver.command("gate", "lock")
    deadline = time.monotonic() + 3
    while not r.shoe.gate_locked and time.monotonic() < deadline:
        time.sleep(0.02)
    assert r.shoe.gate_locked and r.shoe.deal() is None   # no card can be drawn
    r.driver.command("led", "deal", "blink")
    deadline = time.monotonic() + 3
    while r.shoe.leds != {"deal": "blink"} and time.monotonic() < deadline:
        time.sleep(0.02)
    assert r.shoe.leds == {"deal": "blink"}
    with pytest.raises(ValueError):
        r.driver.command("explode")


def test_the_controller_receives_a_lost_card_as_a_misread_and_a_foreign_card_as_foreign(rig):
    r = rig(decks=1)
    one_deck = profile_from_mapping({"base": "punto_banco", "name": "pb-1deck", "decks": 1})
    t = new_table(one_deck)
    t, _ = step(t, {"type": "shoe_loaded"})
    first = r.shoe.deal()
    r.shoe.foreign_next(first)             # a second copy of a card in a one-deck shoe
    r.shoe.deal()
    r.shoe.drop_next(resendable=False)
    r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardUnreadable))
    r.settle(0.3)
    outs = []
    for e in r.cards():
        t, out = step(t, e.as_input())
        outs.extend(out)
    codes = [o["code"] for o in outs if o["type"] == "irregularity"]
    assert codes == ["foreign_card", "misread"]


# -- line mode ----------------------------------------------------------------------------------

def test_line_mode_reads_payloads_through_the_codebook(rig):
    r = rig(mode="line", cut_from_back=50)
    dealt = [r.shoe.deal() for _ in range(3)]
    r.wait(lambda e: isinstance(e, CardRead) and len(reads(r.events)) == 3)
    got = [e for e in r.events if isinstance(e, CardRead)]
    assert [e.card for e in got] == dealt and all(e.payload.startswith("D01-") for e in got)


def test_line_mode_double_fire_suppressed_and_counted(rig):
    r = rig(mode="line")
    r.shoe.double_fire_next()
    a = r.shoe.deal()
    b = r.shoe.deal()
    r.wait(lambda e: isinstance(e, CardRead) and e.card == b and len(reads(r.events)) >= 2)
    r.settle(0.3)
    assert reads(r.events) == [a, b]
    assert r.driver.session.counts["double_fires"] == 1


def test_line_mode_unknown_payload_and_garbage_are_unreadable_with_detail(rig):
    r = rig(mode="line")
    r.shoe.unreadable_next()
    r.shoe.deal()
    e = r.wait(lambda e: isinstance(e, CardUnreadable))
    assert e.detail in ({"reason": "payload not in the codebook", "payload": "%%??"},)
    r.shoe.corrupt_next()
    r.shoe.deal()
    e = r.wait(lambda e: isinstance(e, CardUnreadable) and "garbled" in e.detail["reason"])


def test_line_mode_cut_card_and_unplug(rig):
    r = rig(mode="line", decks=1, cut_from_back=51)
    r.shoe.deal()
    r.shoe.deal()                             # the cut card comes out before the second card
    r.wait(lambda e: isinstance(e, CutCard))
    r.shoe.unplug()
    r.wait(lambda e: isinstance(e, DeviceState) and e.state == "disconnected")
    r.shoe.replug()
    r.wait(lambda e: isinstance(e, DeviceState) and e.state == "connected" and e is not r.events[0])


@pytest.mark.parametrize("sep", [b"\r", b"\n", b"\r\n"])
def test_line_mode_accepts_cr_lf_and_crlf(sep):
    from drivers.scanner import ScannerSession
    got = []
    s = ScannerSession(got.append, {"X1": "As", "X2": "Kd"})
    s.data(b"X1" + sep + b"X2" + sep, 0.0)
    s.data(b"X1" + sep, 5.0)
    assert [e.card for e in got] == ["As", "Kd", "As"]


def test_table_sim_shoe_command_serves_a_pty_that_the_driver_reads():
    import subprocess
    import sys
    p = subprocess.Popen([sys.executable, "-m", "dealer_station.sim_cli", "shoe", "--pty",
                          "--decks", "2", "--seed", "4"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        path = p.stdout.readline().strip()
        q = queue.Queue()
        d = ShoeDriver(path, resend_timeout=0.15)
        d.start(q.put)
        # the shoe's HELLO: the port is open and the session started (what came before is gone)
        while not isinstance(q.get(timeout=5), ShoeHello):
            pass
        p.stdin.write("deal 3\n")
        p.stdin.flush()
        dealt = p.stdout.readline().split()
        got = []
        end = time.monotonic() + 5
        while len(got) < 3 and time.monotonic() < end:
            try:
                e = q.get(timeout=0.1)
            except queue.Empty:
                continue
            if isinstance(e, CardRead):
                got.append(e.card)
        d.close()
        assert got == dealt and len(dealt) == 3
        p.stdin.write("bogus\n")
        p.stdin.flush()
        assert p.stdout.readline().startswith("error: unknown command")
    finally:
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait(timeout=5)


FAULTS = ["none", "corrupt", "drop", "lose", "unreadable", "double", "foreign", "unplug", "stall"]
# what the controller must see, per mode: [] = every card exactly once
EXPECTED = {
    "v1": {"none": [], "corrupt": [], "drop": [], "double": [], "unplug": [], "stall": [],
           "lose": ["misread"], "unreadable": ["misread"], "foreign": ["foreign_card"]},
    # line mode: a garbled line or a code not in the codebook is an unreadable card
    "line": {"none": [], "double": [], "unplug": [], "corrupt": ["misread"],
             "unreadable": ["misread"], "foreign": ["misread"]},
}


@pytest.mark.parametrize("mode", ["v1", "line"])
@pytest.mark.parametrize("fault", FAULTS)
def test_what_the_controller_receives_for_each_fault(rig, mode, fault):
    """Six cards through the real driver with a fault on the third, fed to the engine during a
    burn of ten cards (the table resumes after each irregularity): every card arrives exactly once,
    or the engine raises a clear irregularity where one was lost."""
    if fault not in EXPECTED[mode]:
        pytest.skip(f"{mode} mode has no {fault}: no sequence numbers, no heartbeat")
    r = rig(mode=mode, decks=1, seed=8)
    r.shoe.cards.remove("Kd")
    r.shoe.cards.insert(0, "Kd")           # exposed first: ten cards to burn
    one_deck = profile_from_mapping({"base": "punto_banco", "name": "pb-1deck", "decks": 1})
    t = new_table(one_deck)
    t, _ = step(t, {"type": "shoe_loaded"})
    dealt = [r.shoe.deal(), r.shoe.deal()]
    simple = {"corrupt": r.shoe.corrupt_next, "drop": r.shoe.drop_next,
              "unreadable": r.shoe.unreadable_next, "double": r.shoe.double_fire_next}
    if fault in simple:
        simple[fault]()
    elif fault == "lose":
        r.shoe.drop_next(resendable=False)
    elif fault == "foreign":
        r.shoe.foreign_next(dealt[1])
    elif fault == "unplug":
        if mode == "line":
            # a plain scanner cannot resend: a card still in the pty when it is unplugged is
            # lost, so the two dealt before are read first (a loaded CI machine lost both)
            r.wait(lambda e: len(r.cards()) >= 2)
        r.shoe.unplug()
        r.wait(lambda e: isinstance(e, DeviceState) and e.state == "disconnected")
        if mode == "line":                  # a plain scanner cannot resend: deal after replug
            r.shoe.replug()
            r.wait(lambda e: sum(isinstance(x, DeviceState) and x.state == "connected"
                                 for x in r.events) >= 2)
    elif fault == "stall":
        r.shoe.stall(True)
    dealt += [r.shoe.deal() for _ in range(4)]
    if fault == "unplug" and mode == "v1":
        time.sleep(0.2)
        r.shoe.replug()
    if fault == "stall":
        r.wait(lambda e: isinstance(e, DeviceState) and e.state == "fault")
        r.shoe.stall(False)
    r.wait(lambda e: len(r.cards()) >= 6, timeout=8)
    r.settle(0.5)
    codes = []
    placed = 0
    for e in r.cards():
        t, out = step(t, e.as_input())
        codes += [o["code"] for o in out if o["type"] == "irregularity"]
        placed += sum(o["type"] == "card_dealt" for o in out)
        if t.paused:
            t, _ = step(t, {"type": "resume"})
    assert codes == EXPECTED[mode][fault]
    assert len(r.cards()) == 6 and placed + len(codes) == 6    # one event per card drawn
    if not codes:
        assert [e.card for e in r.cards()] == dealt            # in order, none lost or doubled
        assert t.shoe.burned == 5


def test_the_virtual_shoe_answers_qst_with_the_status_it_last_reported():
    """The cold trial: the door opened on the virtual shoe while the daemon was down (kill -9),
    the daemon restarted and asked QST, as on every connect; the shoe answered "closed" whatever
    its door was, and the table showed a closed door. A shoe answers QST with its status now,
    across a restart (power cycle) too: the door is where it was."""
    from drivers import shoe_protocol as sp
    shoe = VirtualShoe(decks=1, seed=1)          # not started: frames captured, not sent
    sent = []
    shoe._send_raw = sent.append
    qst = sp.FrameParser().feed(sp.encode("QST"))[0]

    def answer():
        del sent[:]
        shoe._command(qst)
        [f] = sp.FrameParser().feed(b"".join(sent))
        return f.kind, list(f.fields[1:5])

    assert answer() == ("STAT", ["closed", "0", "ok", "ok"])
    shoe.status(door="open", jam=True, light="low")
    assert answer() == ("STAT", ["open", "1", "ok", "low"])
    shoe.restart()
    assert answer() == ("STAT", ["open", "1", "ok", "low"])
    shoe.status(door="closed")
    assert answer() == ("STAT", ["closed", "0", "ok", "ok"])


def test_the_virtual_shoe_console_refuses_a_bad_argument_clearly():
    """`table-sim shoe --pty` reads commands from a person: `foreign` without its card said
    'error: list index out of range', `deal -5` dealt nothing and said nothing."""
    from dealer_station.sim_cli import _command
    shoe = VirtualShoe(decks=1, seed=1)          # not started: no pty needed to parse
    for cmd, rest, says in [("foreign", [], r"foreign CARD: the card the next read gives"),
                            ("foreign", ["ZZ"], r"got 'ZZ'"),
                            ("deal", ["-5"], r"deal N: N is a number of cards, at least 1"),
                            ("deal", ["x"], r"got 'x'")]:
        with pytest.raises(ValueError, match=says):
            _command(shoe, cmd, rest)
    assert _command(shoe, "foreign", ["As"]) == "ok"
    assert len(_command(shoe, "deal", ["2"]).split()) == 2


def test_the_virtual_consoles_name_the_commands_they_know_and_refuse_a_bad_status():
    """An unknown command said only "unknown command 'dael'"; `status door=ajar` sent a STAT the
    protocol has no word for, `status colour=red` ended the console with a TypeError."""
    from dealer_station.sim_cli import _command, _wheel_command
    from drivers.virtual_wheel import VirtualWheel
    shoe = VirtualShoe(decks=1, seed=1)          # not started: nothing is sent
    with pytest.raises(ValueError, match=r"unknown command 'dael'; known: deal, foreign, status, "
                                         r"corrupt, drop, lose, unreadable, double, unplug, replug, "
                                         r"restart, stall, unstall, codebook, quit"):
        _command(shoe, "dael", [])
    for rest in (["door=ajar"], ["colour=red"], ["open"], ["jam=yes"]):
        with pytest.raises(ValueError, match=r"status: .*expected door=open\|closed jam=0\|1 "
                                             r"sensor=ok\|fault light=ok\|low"):
            _command(shoe, "status", rest)
    assert shoe.seq == 0                          # no STAT made of any of them
    w = VirtualWheel()                            # not started either
    assert _wheel_command(w, ["spin"]) == ("error: unknown command 'spin'; known: miss_spin, "
                                           "failed_launch, no_ball, fault, garble, double_number, "
                                           "ball_out, respin, quit")
    assert _wheel_command(w, ["no_ball", "x"]).startswith("error: no_ball PERIODS: a number")
    assert _wheel_command(w, ["no_ball", "3"]) == "ok" and w.persist["no_ball"] == 3
    assert _wheel_command(w, ["quit"]) is None


def test_table_sim_names_its_commands_for_one_it_does_not_know():
    """`table-sim shoes` said "unrecognized arguments: shoes", naming neither shoe nor wheel."""
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "dealer_station.sim_cli", "shoes", "--pty"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == ("table-sim: unknown command 'shoes'; known: shoe --pty, wheel --pty, "
                                "or none for a whole table (table-sim --help)")


def test_the_wheel_console_gives_a_person_the_no_spin_table_sim_plays():
    """The cold trial: table-sim's `no_spin` fault (the ball leaves the wheel, the dealer
    declares a no-spin, the ball is launched again) could not be played by a person on
    `table-sim wheel --pty`: it knew no ball_out nor respin (nor double_number)."""
    from dealer_station.sim_cli import _wheel_command
    from drivers.virtual_wheel import VirtualWheel
    w = VirtualWheel()                            # not started: its state is set by hand
    assert _wheel_command(w, ["respin"]).startswith("error: respin: no ball is out")
    assert _wheel_command(w, ["ball_out"]) == "ok" and "ball_out" in w.faults
    w.state = 4                                   # the spin waits for its number: none comes
    assert _wheel_command(w, ["respin"]) == "ok"
    assert "ball_out" not in w.faults and w.state == 2      # launched again, the same game
    assert _wheel_command(w, ["double_number"]) == "ok" and "double_number" in w.faults


def test_table_sim_refuses_a_negative_count_or_pace_and_says_faults_it_will_not_reach(tmp_path):
    """`--rounds -3` started a table that played nothing (exit 1), `--speed -1` played as 0; a
    scenario's faults after `--rounds` were silently never injected (exit 0, none in the report)."""
    import json
    import subprocess
    import sys

    def run(*args):
        return subprocess.run([sys.executable, "-m", "dealer_station.sim_cli", *args],
                              capture_output=True, text=True, timeout=60)
    for opt, value in (("--rounds", "-3"), ("--speed", "-1"), ("--speed", "nan"),
                       ("--progress", "-5"), ("--tables", "0")):
        p = run("--profile", "roulette", opt, value)
        assert p.returncode == 2 and p.stderr.startswith(f"table-sim: {opt} "), (opt, p.stderr)
        assert "Traceback" not in p.stderr and "broker" not in p.stderr    # nothing started
    f = tmp_path / "s.json"
    f.write_text(json.dumps([{"round": 1, "fault": "no_spin"}, {"round": 5, "fault": "no_spin"},
                             {"round": 9, "fault": "miss_spin"}]))
    # an unreachable broker: the table does not start, the warning came before
    p = run("--profile", "roulette", "--rounds", "2", "--faults", str(f),
            "--broker", "mqtt://127.0.0.1:1")
    assert ("table-sim: 2 of the scenario's faults come after round 2 and are not injected "
            "(the first: no_spin at round 5)") in p.stderr, p.stderr
