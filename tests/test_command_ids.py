"""Each sender has its own command ids (ids41). Ids were one namespace for every sender, so a
login allowed to write its own `commands/<login>` (a staff login, or any login the broker lets
write there) could send commands with the ids the betting system would use next (ids are often
predictable: counters, round + seat): the betting system's real decision with that id was then
answered `duplicate` of the login's refusal (or resend) and never applied, and the decision timer
took the default action. A command is now known by (sender, id): a copy from the same sender is
still a `duplicate`, in memory and after a restart; the same id from another sender is judged on
its own. A journal from before keeps answering `duplicate` for its old ids."""
import json
import sqlite3

import pytest

from controller.rights import Staff
from dealer_station import journal as journal_mod
from dealer_station.loop_queue import StampedQueue
from integrity_rig import Rig
from test_broker_not_mqtt import _daemon_without_broker

RESUME = {"type": "resume"}                  # rejected `not_paused` on a table that plays
RESEND = {"type": "resend", "from": 10 ** 9}     # accepted, publishes nothing
BS = None                                    # the betting system: the plain `commands` topic
STAFF = Staff({"d-anna": "dealer", "s-carol": "supervisor"})


def _ready(rig):
    """A shoe loaded and burnt: betting can close."""
    rig.input({"type": "shoe_loaded"})
    rig.input({"type": "card", "card": "As"})      # burn: an ace burns one more
    rig.input({"type": "card", "card": "2c"})
    assert rig.st.table.phase == "ready"


def _dup(first):
    return {**first, "status": "duplicate", "original": first["status"]}


@pytest.mark.parametrize("squat", ["rejected", "resend", "counted"])
def test_a_login_taking_the_betting_systems_next_id_does_not_stop_its_command(tmp_path, squat):
    """On main: the betting system's betting_closed was answered `duplicate` of mallory's
    refusal (kept or counted) or resend, and not applied."""
    rig = Rig(tmp_path / "journal.sqlite")
    rig.settings.refused_keep = 1            # mallory's second refusal is counted, not kept
    rig.st.s = rig.settings
    _ready(rig)
    if squat == "counted":
        assert rig.command(RESUME, user="mallory", cid="m-0")["status"] == "rejected"
    mallory = rig.command(RESEND if squat == "resend" else RESUME, user="mallory", cid="bc-1")
    assert mallory["status"] == ("accepted" if squat == "resend" else "rejected")
    if squat == "counted":
        assert rig.j.db.execute("SELECT sender FROM counted_ids WHERE id = 'bc-1'").fetchall() \
            == [("mallory",)]
    r = rig.command({"type": "betting_closed", "seats": [1]}, user=BS, cid="bc-1")
    assert r["status"] == "accepted" and "original" not in r
    assert rig.st.table.phase != "ready"            # applied: the round is dealt
    # each one's copy is a duplicate of its own answer
    assert rig.command({"type": "betting_closed", "seats": [1]}, user=BS, cid="bc-1") == _dup(r)
    assert rig.command(RESEND if squat == "resend" else RESUME, user="mallory",
                       cid="bc-1") == _dup(mallory)
    rig.j.close()


def test_a_staff_login_cannot_take_the_betting_systems_ids_either(tmp_path):
    """A dealer's command accepted (journaled) with the id the betting system uses next."""
    rig = Rig(tmp_path / "journal.sqlite", staff=STAFF)
    _ready(rig)
    anna = rig.command({"type": "pause", "reason": "break"}, user="d-anna", cid="r-7")
    assert anna["status"] == "accepted"
    assert rig.command(RESUME, user="d-anna", cid="r-8")["status"] == "accepted"
    r = rig.command({"type": "betting_closed", "seats": [2]}, user=BS, cid="r-7")
    assert r["status"] == "accepted" and rig.st.table.phase != "ready"
    assert rig.command({"type": "pause", "reason": "break"}, user="d-anna", cid="r-7") == \
        _dup(anna)
    rig.j.close()


def test_same_sender_copies_are_duplicates_after_a_restart_and_other_senders_are_not(tmp_path):
    rig = Rig(tmp_path / "journal.sqlite")
    rig.settings.refused_keep = 1
    rig.st.s = rig.settings
    first = {}
    for who in (BS, "mallory"):
        first[who, "k"] = rig.command(RESUME, user=who, cid="k")       # kept: a commands row
        first[who, "c"] = rig.command(RESUME, user=who, cid="c")       # counted: counted_ids
        assert first[who, "k"]["status"] == first[who, "c"]["status"] == "rejected"
    rows = rig.j.db.execute("SELECT id, sender FROM commands ORDER BY sender").fetchall()
    assert rows == [("k", ""), ("k", "mallory")]
    rig.j.close()
    rig.open()
    _ready(rig)                         # now a resume is still rejected, betting_closed valid
    for key, reply in first.items():
        assert rig.command(RESUME, user=key[0], cid=key[1]) == _dup(reply)
    # a third sender's same ids: its own, judged (and applied)
    assert rig.command({"type": "pause", "reason": "x"}, user="s-bob", cid="k")["status"] == \
        "accepted"
    assert rig.command(RESUME, user="s-bob", cid="c")["status"] == "accepted"
    rig.j.close()


@pytest.mark.parametrize("counted", [False, True])
def test_a_rights_refusal_is_remembered_by_its_sender_and_id(tmp_path, counted):
    """On main a command refused by the staff rights kept no id: its copy was judged again, and
    applied once the table allowed it (a dealer's `resume` refused during an irregularity's
    pause, its copy applied after the supervisor had paused the table again). Now its copy is a
    `duplicate` (kept or counted, after a restart too); another sender's same id is its own."""
    rig = Rig(tmp_path / "journal.sqlite", staff=STAFF)
    rig.settings.refused_keep = 1
    rig.st.s = rig.settings
    _ready(rig)
    if counted:                 # anna's budget spent: her next refusal is counted
        assert rig.command({"type": "void_round", "reason": "x"}, user="d-anna",
                           cid="v-0")["code"] == "not_authorized"
    first = rig.command({"type": "betting_closed", "seats": [1]}, user="d-anna", cid="x-1")
    assert first["code"] == "not_authorized"
    assert rig.j.db.execute("SELECT sender, kind FROM counted_ids WHERE id = 'x-1'").fetchall() \
        == [("d-anna", "rights")]
    assert rig.command({"type": "betting_closed", "seats": [1]}, user="d-anna",
                       cid="x-1") == _dup(first)
    rig.j.close()
    rig.open()
    assert rig.command({"type": "betting_closed", "seats": [1]}, user="d-anna",
                       cid="x-1") == _dup(first)
    audit = rig.j.db.execute("SELECT COUNT(*) FROM audit WHERE entry LIKE '%x-1%'").fetchone()[0]
    assert audit == (0 if counted else 1)            # the copies are no new staff decision
    r = rig.command({"type": "betting_closed", "seats": [1]}, user=BS, cid="x-1")
    assert r["status"] == "accepted" and rig.st.table.phase != "ready"
    rig.j.close()


OLD_COMMANDS = """CREATE TABLE commands (
    id TEXT PRIMARY KEY, input_n INTEGER, reply TEXT NOT NULL) WITHOUT ROWID"""
OLD_COUNTED = """CREATE TABLE counted_ids (
    n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, sender TEXT NOT NULL, kind TEXT NOT NULL,
    code TEXT NOT NULL, at REAL NOT NULL, reply TEXT NOT NULL)"""


def _as_before_ids41(path):
    """The journal's two id tables as a version before ids41 wrote them (its DDL verbatim)."""
    db = sqlite3.connect(path)
    db.executescript(f"""
        ALTER TABLE commands RENAME TO c_new; {OLD_COMMANDS};
        INSERT INTO commands SELECT id, input_n, reply FROM c_new; DROP TABLE c_new;
        ALTER TABLE counted_ids RENAME TO k_new; {OLD_COUNTED};
        INSERT INTO counted_ids SELECT n, id, sender, kind, code, at, reply FROM k_new;
        DROP TABLE k_new;""")
    db.close()


def test_a_journal_from_before_ids41_opens_and_keeps_its_old_ids(tmp_path):
    """Its `commands` rows kept no sender: each stays one id for everyone (ANY_SENDER), as it
    was, so the betting system's old ids are still `duplicate` (and so is any sender's copy);
    its counted ids kept theirs: each is its sender's own. New commands are per sender."""
    path = tmp_path / "journal.sqlite"
    rig = Rig(path)
    rig.settings.refused_keep = 1
    rig.st.s = rig.settings
    old = {"a": rig.command({"type": "shoe_loaded"}, user=BS, cid="a"),
           "m": rig.command(RESUME, user="mallory", cid="m"),         # kept
           "mc": rig.command(RESUME, user="mallory", cid="mc"),       # counted
           "b": rig.command(RESUME, user=BS, cid="b"),                # kept
           "bc": rig.command(RESUME, user=BS, cid="bc")}              # counted
    assert old["a"]["status"] == "accepted"
    rig.j.close()
    _as_before_ids41(str(path))
    for _ in range(2):                       # migrated once; opened again, unchanged
        rig.open()
        db = rig.j.db
        assert sorted(db.execute("SELECT id, sender FROM commands")) == \
            [("a", "#"), ("b", "#"), ("m", "#")]
        assert sorted(db.execute("SELECT id, sender FROM counted_ids")) == \
            [("bc", ""), ("mc", "mallory")]
        assert not db.execute("SELECT 1 FROM sqlite_master WHERE name LIKE '%_v1'").fetchall()
        rig.j.close()
    rig.open()
    rig.input({"type": "card", "card": "As"})
    rig.input({"type": "card", "card": "2c"})
    for cid in ("a", "b", "m"):              # old commands rows: a duplicate from anyone
        for who in (BS, "mallory", "s-bob"):
            assert rig.command(RESUME, user=who, cid=cid) == _dup(old[cid])
    assert rig.command(RESUME, user=BS, cid="bc") == _dup(old["bc"])
    assert rig.command(RESUME, user="mallory", cid="mc") == _dup(old["mc"])
    # a counted id kept its sender: another's same id is judged on its own
    r = rig.command({"type": "betting_closed", "seats": [1]}, user=BS, cid="mc")
    assert r["status"] == "accepted"
    assert rig.j.db.execute("SELECT sender FROM commands WHERE id = 'mc'").fetchall() == [("",)]
    rig.j.close()


def test_the_busy_lane_answers_duplicate_only_to_the_same_sender(tmp_path, monkeypatch):
    """daemon.py's "the answer its id already has" path: bob's command with alice's id, refused
    busy (his lane full) was answered `duplicate` of alice's command, untrue: never applied."""
    d = _daemon_without_broker(tmp_path)
    d.recover()
    d.timer_at = None
    d.q = StampedQueue(lane_max=1)
    replies = []
    monkeypatch.setattr(d.link, "backlog", lambda: 0)
    monkeypatch.setattr(d.link, "ack", lambda mid, qos: None)
    monkeypatch.setattr(d.link, "reply", lambda payload, rt=None, cd=None: replies.append(payload))

    def put(cmd, mid, user):
        d.q.put(("mqtt", "command", json.dumps(cmd).encode(), None, None, mid, 1, user))

    put({"type": "shoe_loaded", "id": "c-1"}, 1, "alice")
    d.run_once(0)
    assert replies[0]["status"] == "accepted"
    # each lane held by a new command; the same id c-1 behind it: to the busy lane
    put({**RESUME, "id": "h-a"}, 2, "alice")
    put({**RESUME, "id": "h-b"}, 3, "bob")
    put({"type": "shoe_loaded", "id": "c-1"}, 4, "alice")
    put({"type": "shoe_loaded", "id": "c-1"}, 5, "bob")
    for _ in range(4):
        d.run_once(0)
    assert not d.q.qsize()
    got = [(r["id"], r["status"], r.get("code")) for r in replies[1:] if r["id"] == "c-1"]
    assert sorted(got) == [("c-1", "duplicate", None), ("c-1", "rejected", "busy")]
    d.close()


def test_the_journal_answers_a_sender_its_own_reply(tmp_path):
    d = _daemon_without_broker(tmp_path)
    j = d.journal
    reply = {"type": "reply", "id": "x", "status": "rejected", "code": "no_round", "reason": "r"}
    j.db.execute("INSERT INTO commands (id, sender, input_n, reply) VALUES ('x', 'al', NULL, ?)",
                 (json.dumps(reply),))
    assert j.command_reply("al", "x") == reply
    assert j.command_reply("", "x") is None and j.command_reply("bo", "x") is None
    j.db.execute("INSERT INTO commands (id, sender, input_n, reply) VALUES ('y', ?, NULL, ?)",
                 (journal_mod.ANY_SENDER, json.dumps(reply)))
    assert j.command_reply("", "y") == j.command_reply("bo", "y") == reply
    d.close()


# -- through the real daemon, behind the tests' Mosquitto ---------------------------------------

def test_through_the_daemon_a_login_squatting_ids_does_not_stop_the_betting_system():
    from mqtt_rig import Broker, Client, DaemonProc, wait_for, workdir
    from drivers.virtual_shoe import VirtualShoe
    d = workdir()
    broker = Broker(d)
    broker.start()
    shoe = VirtualShoe(heartbeat=0.2, decks=8, seed=3)
    shoe.start()
    daemon = DaemonProc(d, broker.port, shoe.path)
    daemon.start()
    c = Client(broker.port)
    try:
        c.wait_online()

        def replies():
            return [json.loads(p) for t, p in list(c.all) if t.endswith("/replies")]

        def send(cmd, who=None):
            before = len(replies())
            topic = f"{c.base}/commands" + (f"/{who}" if who else "")
            c.subscribed.wait(10)
            c.c.publish(topic, json.dumps(cmd), qos=1)
            wait_for(lambda: any(r.get("id") == cmd["id"] for r in replies()[before:]), 20,
                     f"the reply to {cmd}")
            return next(r for r in replies()[before:] if r.get("id") == cmd["id"])

        # mallory takes the ids the betting system uses next: a refusal and a resend
        m1 = send({**RESUME, "id": "sq-1"}, "mallory")
        m2 = send({**RESEND, "id": "sq-2"}, "mallory")
        assert m1["status"] == "rejected" and m2["status"] == "accepted"
        p = send({"type": "pause", "reason": "break", "id": "sq-1"})
        assert p["status"] == "accepted" and "original" not in p        # main: duplicate
        r = send({**RESUME, "id": "sq-2"})
        assert r["status"] == "accepted" and "original" not in r
        daemon.stop()
        mark = len(c.all)
        daemon.start()
        wait_for(lambda: any(t.endswith("/status") and json.loads(p).get("state") == "online"
                             for t, p in list(c.all)[mark:]), 30, "the daemon online again")
        # after the restart: each sender's copy is a duplicate of its own answer (the resends
        # were remembered in memory only: documented, a resend's copy resends again)
        assert send({"type": "pause", "reason": "break", "id": "sq-1"}) == _dup(p)
        assert send({**RESUME, "id": "sq-2"}) == _dup(r)
        assert send({**RESUME, "id": "sq-1"}, "mallory") == _dup(m1)
        assert daemon.alive()
    finally:
        c.close()
        daemon.stop()
        shoe.close()
        broker.stop()
