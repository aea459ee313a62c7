"""Well-formed commands the table refuses, under a flood (flood38): refused by the staff rights
(an audit entry each) or rejected by the engine with the table unchanged (a journaled input, its
`rejected` event and its reply each). Each sender's first `refused_keep` refusals of a window, of
any kind, are kept in full; the rest are counted per sender, window, kind and code. Every
command is answered; kept + counted is every refusal; and replay of the journal rebuilds the
state the live table had (a counted rejection changed nothing, so replay needs no row of it)."""
import json
import sqlite3

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.rights import Staff
from dealer_station.journal import Journal
from dealer_station.station_refusals import SENDERS
assert len(SENDERS_ := ["bs", "d-anna", "s-carol", "", "mallory"]) < SENDERS
from dealer_station.station_types import Audit, Command, Record, Refuse, Reply
from drivers.virtual_shoe import VirtualShoe
from integrity_rig import Rig
from mqtt_rig import Broker, Client, DaemonProc, wait_for, workdir
from test_purity import _dump

STAFF = Staff({"d-anna": "dealer", "s-carol": "supervisor", "bs": "system"})
# (what, command): each is well formed; whether it is refused depends on who and when
COMMANDS = [
    ("decision", {"type": "decision", "seat": 1, "hand": 0, "action": "hit"}),
    ("decision_7", {"type": "decision", "seat": 7, "hand": 0, "action": "stand"}),
    ("bet_after_close", {"type": "betting_closed", "seats": [1, 2]}),
    ("insurance", {"type": "insurance_closed", "seats": {}}),
    ("void", {"type": "void_round", "reason": "misdeal"}),
    ("pause", {"type": "pause", "reason": "break"}),
    ("resume", {"type": "resume"}),
]


def in_round(path, keep, window_s=10.0):
    rig = Rig(path, staff=STAFF)
    rig.settings.refused_keep, rig.settings.refused_window_s = keep, window_s
    rig.st.s = rig.settings
    rig.input({"type": "shoe_loaded"})
    rig.input({"type": "card", "card": "As"})      # burn: an ace burns one more
    rig.input({"type": "card", "card": "2c"})
    assert rig.command({"type": "betting_closed", "seats": [1]}, user="bs")["status"] == \
        "accepted"
    return rig


def rows(rig, sql):
    return rig.j.db.execute(sql).fetchall()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keep=st.integers(1, 4),
       mix=st.lists(st.tuples(st.sampled_from(SENDERS_), st.sampled_from(range(len(COMMANDS))),
                              st.sampled_from([0.0, 0.01, 0.5, 3.0, 12.0]),
                              st.booleans(), st.booleans()),
                    min_size=1, max_size=120))
def test_a_mix_of_refused_commands_is_bounded_counted_exactly_and_replays_to_the_live_state(
        tmp_path_factory, keep, mix):
    rig = in_round(tmp_path_factory.mktemp("j") / "journal.sqlite", keep)
    windows = {}                  # window start -> {sender: [kept, {counted keys}]}
    refused = answered = 0
    for i, (who, what, dt, card, malformed) in enumerate(mix):
        rig.wall += dt
        if card:                  # the round moves on between commands: state that replay needs
            rig.input({"type": "card", "card": ["9h", "Kd", "5s", "Tc"][i % 4]})
        payload = (b"{not json %d" % i if malformed else
                   json.dumps({"id": f"m{i}", **COMMANDS[what][1]}).encode())
        effects = rig.step(Command(payload, None, None, i + 1, 1, who or None))
        reply = next(e.payload for e in effects if isinstance(e, Reply))
        answered += 1
        if reply["status"] != "rejected":
            continue
        refused += 1
        start = rig.st.refusals.start          # the budget's window (None: never asked)
        w = windows.setdefault(start and start[1], {})
        budget = w.setdefault(who, [0, set()])      # fewer senders than SENDERS: each its own
        counted = [e for e in effects if isinstance(e, Refuse) and e.counted is not None]
        kept = (any(isinstance(e, Refuse) and e.counted is None for e in effects)
                or any(isinstance(e, Record) for e in effects)
                or any(isinstance(e, Audit) and "refusals_counted" not in e.entry[0]
                       for e in effects))
        assert kept != bool(counted), effects           # one or the other, never both
        budget[0] += kept
        budget[1] |= {(e.kind, e.code) for e in counted}
    assert answered == len(mix)
    # rows per window bounded: per sender, its kept ones plus one per counted kind and code
    per_sender = rig.st.refusals.bound() // (SENDERS + 1)
    for w in windows.values():
        for kept, keys in w.values():
            assert kept <= keep and kept + len(keys) <= per_sender
    # kept + counted is every refusal, read back from the journal
    kept = (rows(rig, "SELECT COUNT(*) FROM refused")[0][0]
            + rows(rig, "SELECT COUNT(*) FROM commands WHERE reply LIKE '%\"rejected\"%'")[0][0]
            + sum(json.loads(e).get("result", "").startswith("rejected:")
                  and json.loads(e)["input"] is None
                  for (e,) in rows(rig, "SELECT entry FROM audit")))
    counted = rows(rig, "SELECT COALESCE(SUM(count), 0) FROM refused_counts")[0][0]
    assert kept + counted == refused
    # replay of the journal rebuilds the live state, with the outputs journaled for each input
    live, seq, n = _dump(rig.st.table), rig.st.next_seq, rig.st.next_n
    rig.crash()
    assert _dump(rig.st.table) == live and (rig.st.next_seq, rig.st.next_n) == (seq, n)
    assert rig.st.recovery["mismatches"] == 0
    rig.j.close()


def test_an_engine_flood_from_one_login_is_counted_and_its_ids_stay_duplicates(tmp_path):
    rig = in_round(tmp_path / "journal.sqlite", keep=3, window_s=3600)
    inputs0 = rows(rig, "SELECT COUNT(*) FROM inputs")[0][0]
    for i in range(50):        # seat 7 is not in play: the engine rejects each, the table unchanged
        r = rig.command({"type": "decision", "seat": 7, "hand": 0, "action": "hit"}, user="bs",
                        cid=f"d{i}")
        assert r["status"] == "rejected" and r["code"] == "not_awaiting_decision", r
    assert rows(rig, "SELECT COUNT(*) FROM inputs")[0][0] == inputs0 + 3
    assert rows(rig, "SELECT sender, kind, code, count FROM refused_counts") == \
        [("bs", "engine", "not_awaiting_decision", 47)]
    audit = [json.loads(e) for (e,) in rows(rig, "SELECT entry FROM audit")]
    assert [(a["who"], a["result"]) for a in audit if a["action"] == "refusals_counted"] == \
        [("bs", "counted:engine")]          # the audit log says where the rest went, once
    # a counted one sent again with its id: its first answer, as a journaled one's would be
    again = rig.command({"type": "decision", "seat": 7, "hand": 0, "action": "hit"}, user="bs",
                        cid="d40")
    assert again["status"] == "duplicate" and again["original"] == "rejected"
    rig.j.close()


def test_a_journal_with_the_earlier_counts_table_opens_with_its_rows_as_malformed(tmp_path):
    path = str(tmp_path / "journal.sqlite")
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE refused_counts (window_at REAL NOT NULL, sender TEXT NOT NULL, "
               "origin TEXT NOT NULL, first_at REAL NOT NULL, last_at REAL NOT NULL, count "
               "INTEGER NOT NULL, code TEXT NOT NULL, reason TEXT NOT NULL, payload BLOB NOT "
               "NULL, PRIMARY KEY (window_at, sender)) WITHOUT ROWID")
    db.execute("INSERT INTO refused_counts VALUES (1.0, 'eve', 'command', 1.0, 2.0, 480, "
               "'malformed', 'not JSON', x'7b')")
    db.commit()
    db.close()
    j = Journal(path, "t1", "luxury21")
    j.refuse(Refuse("command", "malformed", "not JSON", b"{", "eve", (1.0, 3.0)))
    got = j.db.execute("SELECT sender, kind, code, count, first_at, last_at "
                       "FROM refused_counts").fetchall()
    j.close()
    assert got == [("eve", "malformed", "malformed", 481, 1.0, 3.0)]


def test_a_real_flood_of_well_formed_refusals_keeps_the_journal_bounded(tmp_path):
    """The real daemon behind Mosquitto, `[staff]` and `refused_keep = 4`: the betting system's
    login floods decisions with no round under way (the engine rejects each), a dealer floods
    void_round (the staff rights refuse each); a supervisor's pause among them is accepted.
    Every command is answered; the journal keeps 4 of each sender in full and counts the rest
    (on the code before, each rejection was an input, an event and a reply, each refusal an
    audit entry)."""
    d = workdir()
    broker = Broker(d)
    broker.start()
    shoe = VirtualShoe(heartbeat=0.2, decks=8, seed=3)
    shoe.start()
    daemon = DaemonProc(d, broker.port, shoe.path, extra_config=(
        '\n[staff]\ndealer = ["d-anna"]\nsupervisor = ["s-carol"]\nsystem = ["bs"]\n'
        "\n[commands]\nrefused_keep = 4\nrefused_window_s = 3600\n"))
    daemon.start()
    c = Client(broker.port)
    try:
        c.wait_online()
        db = sqlite3.connect(daemon.journal, timeout=30)
        inputs0, audit0 = (db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                           for t in ("inputs", "audit"))
        db.close()
        n, chunk = 300, 40
        for i in range(n):
            who, cmd = (("bs", {"type": "decision", "seat": 1, "hand": 0, "action": "hit"})
                        if i % 2 == 0 else ("d-anna", {"type": "void_round", "reason": "x"}))
            if i == n // 2:
                c.c.publish(f"{c.base}/commands/s-carol",
                            json.dumps({"id": "p", "type": "pause", "reason": "break"}), qos=1)
            c.c.publish(f"{c.base}/commands/{who}", json.dumps({"id": f"f{i}", **cmd}), qos=1)
            if i % chunk == chunk - 1:
                # 20 a sender at a time, under a sender's lane (32: loop_queue.LANE_MAX), so the
                # budget is what is measured, not the lanes' `busy` (a loaded CI machine let
                # more than 32 of one sender wait)
                wait_for(lambda: all(f"f{k}" in c.replies for k in range(i + 1)), 60,
                         "the chunk's replies")
        wait_for(lambda: all(f"f{i}" in c.replies for i in range(n)) and "p" in c.replies, 120,
                 "a reply to every command")
        daemon.stop()
        assert c.replies["p"]["status"] == "accepted"
        codes = {c.replies[f"f{i}"]["code"] for i in range(0, n, 2)}
        assert codes <= {"no_round", "paused"} and \
            {c.replies[f"f{i}"]["code"] for i in range(1, n, 2)} == {"not_authorized"}
        db = sqlite3.connect(daemon.journal)
        inputs, audit = (db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                         for t in ("inputs", "audit"))
        assert inputs - inputs0 == 4 + 1                # bs's 4 kept, and the pause
        counted = dict(db.execute("SELECT sender || ':' || kind, SUM(count) FROM refused_counts "
                                  "GROUP BY sender, kind"))
        db.close()
        assert counted == {"bs:engine": n // 2 - 4, "d-anna:rights": n // 2 - 4}
        # d-anna's 4 refusals, bs's 4 rejections (staff-authorized: audited), the pause and
        # one entry each saying where the rest of a sender's went
        assert audit - audit0 == 4 + 4 + 1 + 2
        assert "refused commands from login bs" in daemon.logtext()
    finally:
        c.close()
        daemon.stop()
        shoe.close()
        broker.stop()
