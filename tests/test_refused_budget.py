"""Refused commands under a flood (cold trial: three floods of 20,000 malformed commands grew a
journal to 31 MB, and any login may write its own commands/<login>): each sender's refusals are
kept in full up to a budget per window, the rest counted in one row per sender and window, so
the journal's growth is bounded and kept + counted is every refusal."""
import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.profiles import get_profile
from dealer_station.journal import Journal
from dealer_station.station import Settings, Station
from dealer_station.station_refusals import OTHERS, SENDERS, RefusalBudget
from dealer_station.station_types import Clock, Command, Log, Refuse
from drivers.virtual_shoe import VirtualShoe
from mqtt_rig import Broker, Client, DaemonProc, wait_for, workdir


def _feed(budget, events):
    """Feed (sender, seconds since the last) refusals. Returns (rows per window, kept, counted
    per (window, sender): one more on the row for each, as the journal's upsert adds them)."""
    mono, rows, kept, counted = 1000.0, {}, 0, {}
    for sender, dt in events:
        mono += dt
        effects = budget.refused(sender, "command", "malformed", "not JSON", b"x", mono,
                                 mono + 1.7e9)
        window = budget.start[1]
        for e in effects:
            if not isinstance(e, Refuse):
                continue
            if e.counted is None:
                kept += 1
                rows[window] = rows.get(window, 0) + 1
            else:
                assert e.counted[0] == window
                if (window, e.sender) not in counted:
                    rows[window] = rows.get(window, 0) + 1
                counted[(window, e.sender)] = counted.get((window, e.sender), 0) + 1
    return rows, kept, counted


@settings(max_examples=300, deadline=None)
@given(keep=st.integers(1, 6), window_s=st.floats(1, 120),
       events=st.lists(st.tuples(st.sampled_from([""] + [f"u{i}" for i in range(SENDERS + 8)]),
                                 st.floats(0, 30)), max_size=400))
def test_rows_written_are_bounded_per_window_and_kept_plus_counted_is_every_refusal(
        keep, window_s, events):
    budget = RefusalBudget(keep, window_s)
    rows, kept, counted = _feed(budget, events)
    assert all(n <= budget.bound() for n in rows.values())
    assert kept + sum(counted.values()) == len(events)


def test_a_flood_from_one_login_is_kept_up_to_its_budget_then_counted_and_said_once():
    budget = RefusalBudget(keep=3, window_s=60)
    effects = []
    for i in range(1000):       # two windows and a bit, 0.15 s apart: one sustained flood
        effects += budget.refused("alice", "command", "malformed", f"bad {i}", b"x", 1000 + i * 0.15,
                                  1.7e9 + i * 0.15)
    refuses = [e for e in effects if isinstance(e, Refuse)]
    assert sum(e.counted is None for e in refuses) == 3 * 3          # 3 windows, 3 kept each
    assert sum(e.counted is not None for e in refuses) == 1000 - 9
    assert len({e.counted[0] for e in refuses if e.counted is not None}) == 3    # one row each
    warnings = [e for e in effects if isinstance(e, Log)]
    assert len(warnings) == 1 and "login alice" in warnings[0].text
    # beyond SENDERS logins in one window the rest share one budget (OTHERS), but a kept row
    # still names its own sender
    b2 = RefusalBudget(keep=3, window_s=60)
    many = [b2.refused(f"x{i}", "command", "malformed", "x", b"x", 1000 + i / 100, 1.7e9)
            for i in range(SENDERS + 3)]
    kept = [e.sender for es in many for e in es if isinstance(e, Refuse) and e.counted is None]
    assert kept == [f"x{i}" for i in range(SENDERS + 3)]        # the last 3: OTHERS' budget
    more = b2.refused("x99", "command", "malformed", "x", b"x", 1001, 1.7e9)
    assert [(e.sender, e.counted is not None) for e in more if isinstance(e, Refuse)] == \
        [(OTHERS, True)]                                        # then counted as OTHERS
    # another login has its own budget
    other = budget.refused("alice", "command", "malformed", "x", b"x", 1000 + 250, 1.7e9)
    assert [e.counted for e in other if isinstance(e, Refuse)] == [None]    # a new window


def test_the_station_keeps_a_login_flood_bounded_in_the_journal(tmp_path):
    """Through the station and the journal: 500 malformed commands from one login, budget 5."""
    j = Journal(str(tmp_path / "journal.sqlite"), "t1", "luxury21")
    j.db.execute("PRAGMA synchronous=OFF")
    st_ = Station(Settings("t1", get_profile("luxury21"), refused_keep=5, refused_window_s=60))
    for i in range(500):
        ev = Command(b"{not json %d" % i, None, None, i + 1, 1, "mallory")
        for e in st_.step(ev, Clock(1.7e9 + i * 0.01, 1000 + i * 0.01)):
            if isinstance(e, Refuse):
                j.refuse(e)
    kept = j.db.execute("SELECT sender, COUNT(*) FROM refused GROUP BY sender").fetchall()
    counts = j.db.execute("SELECT sender, count, payload FROM refused_counts").fetchall()
    j.close()
    assert kept == [("mallory", 5)]
    assert counts == [("mallory", 495, b"{not json 5")]


def test_a_real_flood_on_a_small_budget_is_kept_and_counted_to_the_last_command(tmp_path):
    """The real daemon behind Mosquitto, `[commands] refused_keep = 4`: 3 senders (the shared
    topic and two logins' own topics) flood malformed QoS 1 commands; every one is answered,
    and the journal's refused rows plus its counts are exactly what was sent."""
    d = workdir()
    broker = Broker(d)
    broker.start()
    shoe = VirtualShoe(heartbeat=0.2, decks=8, seed=3)
    shoe.start()
    daemon = DaemonProc(d, broker.port, shoe.path,
                        extra_config="\n[commands]\nrefused_keep = 4\nrefused_window_s = 3600\n")
    daemon.start()
    c = Client(broker.port)
    try:
        wait_for(lambda: any(t.endswith("/status") and '"online"' in p for t, p in list(c.all)),
                 60, "the daemon online")
        sent = {"": 300, "alice": 200, "bob": 7}
        for who, n in sent.items():
            topic = f"{c.base}/commands" + (f"/{who}" if who else "")
            for i in range(n):
                c.c.publish(topic, b"not json %d" % i, qos=1)
        total = sum(sent.values())
        wait_for(lambda: sum(t.endswith("/replies") for t, _ in list(c.all)) >= total, 120,
                 "a reply to every command")
        daemon.stop()
        db = sqlite3.connect(daemon.journal)
        kept = dict(db.execute("SELECT sender, COUNT(*) FROM refused GROUP BY sender"))
        counted = dict(db.execute("SELECT sender, SUM(count) FROM refused_counts GROUP BY sender"))
        db.close()
        assert kept == {"": 4, "alice": 4, "bob": 4}
        assert counted == {"": 296, "alice": 196, "bob": 3}
        assert "refused commands from login alice" in daemon.logtext()
    finally:
        c.close()
        daemon.stop()
        shoe.close()
        broker.stop()


def test_an_archive_takes_the_counted_rows_of_its_shoes_and_the_sum_stays_exact(tmp_path):
    """A counted row before the archive's cut goes to the archive file (its count and sample),
    then out of the journal; one counted after stays; and one more counted in a window whose
    row was archived starts a new row: archive + journal is still every refusal."""
    import gzip
    import json

    from dealer_station import archive as ar
    from test_archive import played
    path = tmp_path / "journal.sqlite"
    d = played(path)
    d.journal.refuse(Refuse("command", "malformed", "not JSON", b"kept", "mallory"))
    d.journal.db.execute("UPDATE refused SET at = 1000.0")      # before the cut: archived
    old = Refuse("command", "malformed", "not JSON", b"old", "alice", (1000.0, 1000.5))
    for _ in range(7):
        d.journal.refuse(old)
    new = Refuse("command", "malformed", "not JSON", b"new", "bob", (4e9, 4e9))
    for _ in range(3):
        d.journal.refuse(new)
    d.journal.close()
    r = ar.archive(str(path), str(tmp_path / "arch"), keep_shoes=1)
    assert ar.verify(r["archive"])["refused"] == r["refused"] == 2
    with gzip.open(r["archive"]) as f:
        lines = [json.loads(b) for b in f if b'"kind":"refused"' in b]
    # a kept row's line names its sender, as a counted row's does
    assert [(x["sender"], bytes.fromhex(x["payload_hex"])) for x in lines if "counted" not in x] \
        == [("mallory", b"kept")]
    lines = [x for x in lines if "counted" in x]
    assert [(x["sender"], x["refused"], x["counted"], bytes.fromhex(x["payload_hex"]))
            for x in lines] == [("alice", "malformed", 7, b"old")]
    j = Journal(str(path), "t1", "luxury21")
    j.refuse(old._replace(counted=(1000.0, 1001.0)))    # alice's window goes on after the cut
    rows = j.db.execute("SELECT sender, count FROM refused_counts ORDER BY sender").fetchall()
    j.close()
    assert rows == [("alice", 1), ("bob", 3)]


def test_senders_rotating_through_the_shared_budget_are_said_once_per_flood():
    """fair38: SENDERS + 4 logins flooding all along, in another order each window. A login that
    had the shared budget in one window and its own in the next was said again ("refused
    commands from login u19 ...") though its flood went on; the log says a flood once: each
    login's first counted refusal, not again while it is counted window after window."""
    budget = RefusalBudget(keep=1, window_s=60)
    logins = [f"u{i}" for i in range(SENDERS + 4)]
    said = []
    for w in range(4):                               # four windows of one sustained flood
        order = logins if w % 2 == 0 else logins[::-1]
        for k in range(3):                           # 1 kept, 2 counted a login a window
            for i, who in enumerate(order):
                t = w * 60 + k * 10 + i * 0.01
                said += [e.text for e in budget.refused(who, "command", "malformed", "x", b"x",
                                                        1000 + t, 1.7e9 + t)
                         if isinstance(e, Log)]
    assert sorted(t.split()[4].rstrip(":") for t in said) == sorted(logins), said
    # those beyond the first SENDERS say so, and under which sender their counts are
    assert sum(f"counted together as sender {OTHERS}" in t for t in said) == 4


def test_a_login_named_like_the_shared_budget_is_not_confused_with_it():
    """A login literally named `*` was the budget of the senders beyond the first SENDERS
    (sender "*"): its refusals used up theirs, and their counted rows and its own were one
    sender "*". The others' budget is now OTHERS, which no MQTT login can be (a topic level with
    a wildcard is no topic): `*` is a login like any other."""
    budget = RefusalBudget(keep=1, window_s=60)

    def senders(who):
        return [(e.sender, e.counted is not None) for e in
                budget.refused(who, "command", "malformed", "x", b"x", 1000, 1.7e9)
                if isinstance(e, Refuse)]
    assert senders("*") == [("*", False)]                       # kept, its own budget
    for i in range(SENDERS):                # `*` and x0..x14 named; x15 the others' first
        senders(f"x{i}")
    others, star = senders("y"), senders("*")
    assert star == [("*", True)]                                # counted as itself...
    assert others == [(OTHERS, True)] and others != star        # ...apart from the others
