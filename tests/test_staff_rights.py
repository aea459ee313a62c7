"""Staff identity and rights (controller/rights.py, enforced in the station core): a dealer's
void_round is rejected, a supervisor's is accepted, and both land in the journal's append-only,
hash-chained audit log; identity comes from the login's own commands/<user> topic."""
import json
import sqlite3

import pytest

from controller import rights
from controller.rights import Staff
from dealer_station.config import check_config
from dealer_station.verify import Problem, check_audit
from drivers.events import PanelPress
from integrity_rig import Rig

STAFF = Staff({"d-anna": "dealer", "s-carol": "supervisor", "pit-console": "system"})


def audit(rig):
    return [json.loads(e) for (e,) in rig.j.db.execute("SELECT entry FROM audit ORDER BY n")]


def in_round(tmp_path, staff=STAFF, profile="luxury21"):
    """A table with a round under way (seat 1's first card awaited)."""
    rig = Rig(tmp_path / "journal.sqlite", profile, staff=staff)
    rig.input({"type": "shoe_loaded"})
    rig.input({"type": "card", "card": "As"})   # burn: an ace burns one more
    rig.input({"type": "card", "card": "2c"})
    assert rig.command({"type": "betting_closed", "seats": [1]})["status"] == "accepted"
    assert rig.st.table.round is not None
    return rig


def test_a_dealers_void_is_rejected_and_a_supervisors_accepted_and_logged(tmp_path):
    rig = in_round(tmp_path)
    inputs = rig.j.last_input()[0]
    r = rig.command({"type": "void_round", "reason": "dealer_error", "by": "d-anna"}, user="d-anna")
    assert r["status"] == "rejected" and r["code"] == "not_authorized"
    assert "needs a supervisor" in r["reason"]
    assert rig.j.last_input()[0] == inputs          # never reached the engine nor the journal
    assert rig.st.table.round is not None
    r = rig.command({"type": "void_round", "reason": "dealer_error"}, user="s-carol")
    assert r["status"] == "accepted"
    assert rig.st.table.round is None
    assert any('"type":"round_voided"' in m for m in rig.published)
    log = audit(rig)
    refused, accepted = log[-2], log[-1]
    assert refused["who"] == "d-anna" and refused["role"] == "dealer"
    assert refused["action"] == "void_round" and refused["result"] == "rejected:not_authorized"
    assert refused["input"] is None
    assert accepted["who"] == "s-carol" and accepted["role"] == "supervisor"
    assert accepted["result"] == "accepted" and accepted["reason"] == "dealer_error"
    assert accepted["override"] is True and accepted["input"] == inputs + 1
    assert check_audit(rig.j.db) == len(log)


@pytest.mark.parametrize("cmd,user,code", [
    ({"type": "void_round", "reason": "x"}, None, "not_authorized"),          # the betting system
    ({"type": "void_round"}, "s-carol", "reason_required"),
    ({"type": "void_round", "reason": "x", "by": "s-carol"}, None, "not_logged_in"),
    ({"type": "void_round", "reason": "x", "by": "s-carol"}, "d-anna", "identity_mismatch"),
    ({"type": "void_round", "reason": "x"}, "mallory", "unknown_staff"),
    ({"type": "manual_card", "card": "7h", "reason": "x"}, "d-anna", "not_authorized"),
    ({"type": "decision", "seat": 1, "hand": 0, "action": "hit"}, "d-anna", "not_authorized"),
])
def test_the_wrong_identity_or_role_gets_a_code(tmp_path, cmd, user, code):
    rig = in_round(tmp_path)
    r = rig.command(cmd, user=user)
    assert (r["status"], r["code"]) == ("rejected", code), r
    assert audit(rig)[-1]["result"] == f"rejected:{code}"


def test_a_relay_of_the_system_role_may_name_the_staff_member(tmp_path):
    """The pit console logs staff in by badge and sends on their behalf (`by`)."""
    rig = in_round(tmp_path)
    r = rig.command({"type": "void_round", "reason": "misdeal", "by": "s-carol"}, user="pit-console")
    assert r["status"] == "accepted"
    assert audit(rig)[-1]["who"] == "s-carol"


def test_resume_after_an_irregularity_needs_a_supervisor(tmp_path):
    rig = in_round(tmp_path)
    # a plain pause: the dealer may resume it
    assert rig.command({"type": "pause", "reason": "break"}, user="d-anna")["status"] == "accepted"
    assert rig.command({"type": "resume"}, user="d-anna")["status"] == "accepted"
    rig.input({"type": "card_unreadable"})            # a misread: irregular, paused
    assert rig.st.table.pending
    r = rig.command({"type": "resume", "reason": "misread"}, user="d-anna")
    assert r["code"] == "not_authorized"
    r = rig.command({"type": "resume", "reason": "misread"}, user="s-carol")
    assert r["status"] == "accepted" and not rig.st.table.paused


def test_the_panel_key_is_the_supervisor(tmp_path):
    rig = in_round(tmp_path)
    rig.st.devices["panel"] = {"state": "connected", "key": False}
    rig.input({"type": "card_unreadable"})
    rig.step(PanelPress("resume"))                    # the dealer alone: refused
    assert rig.st.table.paused and audit(rig)[-1]["result"] == "rejected:not_authorized"
    rig.step(PanelPress("key", armed=True))
    rig.step(PanelPress("void", armed=True))
    assert rig.st.table.round is None
    assert audit(rig)[-1]["who"] == "panel-key" and audit(rig)[-1]["result"] == "accepted"


def shoe_started(rig):
    return [json.loads(m) for m in rig.published if '"type":"shoe_started"' in m]


def test_a_dealer_loads_a_shoe_whose_manual_inspection_a_supervisor_confirmed(tmp_path):
    """002 3.1.2: the dealer and the pit boss check the cards together; the dealer loads the shoe.
    The sender (the dealer's own login) is checked as the sender; the supervisor who confirmed
    the inspection is data about it: recorded, and a supervisor in [staff]."""
    rig = Rig(tmp_path / "journal.sqlite", staff=STAFF)
    inputs = rig.j.last_input()[0]
    for confirmer, code in (("d-anna", "not_authorized"), ("nobody", "unknown_staff"),
                            ("pit-console", "not_authorized")):
        r = rig.command({"type": "shoe_loaded", "inspection": "manual", "confirmed_by": confirmer},
                        user="d-anna")
        assert r["status"] == "rejected" and r["code"] == code, r
        assert confirmer in r["reason"]
    # the dealer naming the supervisor as the sender is someone else's identity
    r = rig.command({"type": "shoe_loaded", "inspection": "manual", "by": "s-carol"}, user="d-anna")
    assert r["status"] == "rejected" and r["code"] == "identity_mismatch"
    assert rig.j.last_input()[0] == inputs and not shoe_started(rig)    # nothing reached the engine
    r = rig.command({"type": "shoe_loaded", "inspection": "manual", "confirmed_by": "s-carol"},
                    user="d-anna")
    assert r["status"] == "accepted", r
    assert shoe_started(rig)[-1]["inspection"] == {"method": "manual", "confirmed_by": "s-carol"}
    log = audit(rig)
    assert [(e["who"], e.get("confirmed_by"), e["result"]) for e in log[1:]] == [
        ("d-anna", "d-anna", "rejected:not_authorized"), ("d-anna", "nobody", "rejected:unknown_staff"),
        ("d-anna", "pit-console", "rejected:not_authorized"), ("s-carol", None,
                                                               "rejected:identity_mismatch"),
        ("d-anna", "s-carol", "accepted")]
    assert log[-1]["role"] == "dealer" and log[-1]["input"] == inputs + 1
    # a pit console (system) relaying for the dealer, and a supervisor confirming her own check
    rig.input({"type": "card", "card": "5c"})                            # the burn card
    r = rig.command({"type": "shoe_loaded", "inspection": "manual", "confirmed_by": "s-carol",
                     "by": "d-anna"}, user="pit-console")
    assert r["status"] == "accepted" and audit(rig)[-1]["who"] == "d-anna"
    rig.input({"type": "card", "card": "5d"})
    r = rig.command({"type": "shoe_loaded", "inspection": "manual", "confirmed_by": "s-carol"},
                    user="s-carol")
    assert r["status"] == "accepted"
    assert check_audit(rig.j.db) == len(audit(rig))


def test_a_confirmer_only_with_a_manual_inspection(tmp_path):
    rig = Rig(tmp_path / "journal.sqlite", staff=None)
    for cmd in ({"inspection": "manual"}, {"inspection": "scanner", "confirmed_by": "s-carol"},
                {"confirmed_by": "s-carol"}):
        r = rig.command({"type": "shoe_loaded", **cmd})
        assert r["status"] == "rejected" and r["code"] == "malformed", (cmd, r)
    # without [staff] nothing is refused; the confirmer is still recorded
    assert rig.command({"type": "shoe_loaded", "inspection": "manual", "confirmed_by": "sup-02",
                        "by": "d-anna"})["status"] == "accepted"
    assert shoe_started(rig)[-1]["inspection"] == {"method": "manual", "confirmed_by": "sup-02"}
    assert audit(rig)[-1]["confirmed_by"] == "sup-02" and audit(rig)[-1]["who"] == "d-anna"


def test_without_staff_nothing_is_refused_but_overrides_are_logged(tmp_path):
    rig = in_round(tmp_path, staff=None)
    assert rig.command({"type": "void_round", "reason": "x"})["status"] == "accepted"
    assert audit(rig)[-1]["action"] == "void_round" and audit(rig)[-1]["role"] is None


def test_the_audit_log_is_append_only_and_chained(tmp_path):
    rig = in_round(tmp_path)
    rig.command({"type": "void_round", "reason": "x"}, user="d-anna")
    rig.command({"type": "void_round", "reason": "x"}, user="s-carol")
    rig.crash()                                       # the chain goes on after a restart
    rig.command({"type": "shoe_loaded"}, user="d-anna")
    n = check_audit(rig.j.db)
    assert n == 5                                     # two starts of the software, three decisions
    assert [e["action"] for e in audit(rig)] == ["start", "void_round", "void_round", "start",
                                                  "shoe_loaded"]
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        rig.j.db.execute("UPDATE audit SET entry = 'x' WHERE n = 1")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        rig.j.db.execute("DELETE FROM audit WHERE n = 2")
    # one forged by going around SQLite's triggers is found
    rig.j.db.execute("DROP TRIGGER audit_no_update")
    rig.j.db.execute("UPDATE audit SET entry = replace(entry, 'd-anna', 's-carol') WHERE n = 2")
    with pytest.raises(Problem, match="audit entry 2: altered"):
        check_audit(rig.j.db)


def test_the_rights_table_names_every_command():
    from dealer_station.commands import ENGINE_COMMANDS
    assert set(ENGINE_COMMANDS) <= set(rights.RIGHTS)
    assert rights.RIGHTS["void_round"].roles == {"supervisor"}


def test_staff_config_is_validated():
    base = {"table": {"id": "t1", "profile": "luxury21"}, "shoe": {"protocol": "none"}}
    cfg, errors = check_config({**base, "staff": {"dealer": ["anna"], "supervisor": ["anna"]}})
    assert errors == ["staff.supervisor: 'anna' already has the role dealer"]
    cfg, errors = check_config({**base, "staff": {"boss": ["x"]}})
    assert errors and errors[0].startswith("staff.boss: unknown key")
    cfg, errors = check_config({**base, "staff": {"supervisor": ["s-carol"]}})
    assert not errors and Staff.from_config(cfg["staff"]).roles == {"s-carol": "supervisor"}
    cfg, errors = check_config(base)
    assert Staff.from_config(cfg["staff"]) is None
