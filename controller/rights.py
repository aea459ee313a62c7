"""Staff rights: who may give which command (issue #16). Pure: the station core asks `decide`.

RIGHTS is the one table command type -> the roles allowed. A new command is one line here
(the house procedures of issue #18 included: `dealer` inputs may also come from a supervisor;
`system` inputs come from a device driver or the daemon itself, never from a person).
Roles: `dealer` (the table's dealer, the panel without the pit boss key), `supervisor` (pit boss,
the panel's key), `system` (the betting system's own part of a round). An override (a command that
changes what the table decided or the cards it read) needs a supervisor and a reason code.
"""
from typing import NamedTuple

DEALER, SUPERVISOR, SYSTEM = "dealer", "supervisor", "system"
ROLES = (DEALER, SUPERVISOR, SYSTEM)


class Right(NamedTuple):
    roles: frozenset
    override: bool = False          # needs a reason; always in the audit log
    irregular: "Right | None" = None  # what applies instead while irregular reads are pending


PLAY = Right(frozenset({SYSTEM, SUPERVISOR}))                # the betting system runs the round
STAFF = Right(frozenset({DEALER, SUPERVISOR, SYSTEM}))       # anyone at the table
OVERRIDE = Right(frozenset({SUPERVISOR}), override=True)     # a supervisor, with a reason code
DEVICE = Right(frozenset({SYSTEM}))                          # the table's own drivers

RIGHTS = {
    "betting_closed": PLAY,
    "decision": PLAY,
    "insurance_closed": PLAY,
    "shoe_loaded": STAFF,
    "pause": STAFF,
    "resume": STAFF._replace(irregular=OVERRIDE),   # after an irregularity: an override
    "void_round": OVERRIDE,
    "manual_card": OVERRIDE,
    # the house procedures (issue #18)
    "no_spin": STAFF,                  # the dealer or supervisor declares the spin void
    "miss_spin": DEVICE,               # the wheel's own flag (or its revolution count)
    "number_mismatch": DEVICE,         # the wheel driver: two numbers for one spin
    "manual_number": OVERRIDE,         # the winning number entered by hand, with a reason
    "correct_result": OVERRIDE,        # a published result corrected, with a reason
    "dealer_error": STAFF,             # exposed card, card to the wrong place, misdeal
    "supervisor_decision": OVERRIDE,   # continue, replace or void after a dealer error
    "device_fault": DEVICE,            # the daemon, from a driver's state
    "device_restored": DEVICE,
    "outage_unmeasured": DEVICE,       # the station at a restart (controller/outage.py)
    "outage_measured": DEVICE,
    "resend": STAFF,                   # events again: the betting system, anyone at the table
}


class Decision(NamedTuple):
    who: str | None
    role: str | None
    override: bool
    code: str | None          # None: allowed
    reason: str | None        # why refused (for the reply), or the staff's reason (allowed)
    confirmed_by: str | None = None   # the supervisor who confirmed it (a manual inspection)


class Staff:
    """The configuration's [staff]: staff id -> role, and the rules of identity."""

    def __init__(self, roles, require_login=True, reason_codes=()):
        self.roles = dict(roles)
        self.require_login = require_login
        self.reason_codes = tuple(reason_codes)

    @classmethod
    def from_config(cls, section):
        """The [staff] section, or None (not enforced) when no role names a login."""
        roles = {who: role for role in ROLES for who in (section or {}).get(role) or ()}
        if not roles:
            return None
        return cls(roles, section.get("require_login", True), section.get("reason_codes") or ())


STAFF_ID_MAX = 64


def sender_login(login):
    """The login a command names by its topic (commands/<login>), as the table keeps it: a topic
    level can be 64 KB, and the login is kept in every refusal's row, audit entry and queue lane
    (cold41: 200 resends from 30 KB logins grew the journal by 12 MB). One longer than any staff
    id is cut to STAFF_ID_MAX and marked with a "…", so it can never equal a staff id (one
    character longer than the longest) and is refused as unknown like any other stranger."""
    if login is None or len(login) <= STAFF_ID_MAX:
        return login
    return login[:STAFF_ID_MAX] + "\u2026"


def staff_errors(section):
    """Errors of a [staff] section, by key."""
    errors = []
    seen = {}
    for role in ROLES:
        for who in section.get(role) or ():
            if not isinstance(who, str) or not 0 < len(who) <= STAFF_ID_MAX or not who.isprintable():
                errors.append(f"staff.{role}: staff ids are strings of 1-64 printable characters")
            elif who in seen:
                errors.append(f"staff.{role}: {who!r} already has the role {seen[who]}")
            else:
                seen[who] = role
    for code in section.get("reason_codes") or ():
        if not isinstance(code, str) or not 0 < len(code) <= 64:
            errors.append("staff.reason_codes: reason codes are strings of 1-64 characters")
    return errors


def required(kind, irregular):
    r = RIGHTS.get(kind, OVERRIDE)            # a command not in the table: the strictest
    return r.irregular if irregular and r.irregular is not None else r


def decide(staff, kind, by, user, reason, irregular, panel=False, confirmed_by=None):
    """May this command be applied? `by`: the staff id the command names (or None); `user`: the
    login the broker vouches for (the `commands/<user>` topic its ACL gives that user alone) or
    None; `panel`: the panel's own identity ("panel" or "panel-key"), already trusted;
    `confirmed_by`: the supervisor a command names as having confirmed it (a manual shoe
    inspection: 002 3.1.2, the dealer and the pit boss check the cards together, the dealer loads
    the shoe). The sender is checked as the sender; the confirmer is data about the act, recorded,
    and must be a supervisor in [staff].
    `staff` None: rights are not enforced (every decision allowed, overrides still logged)."""
    d = _decide(staff, kind, by, user, reason, irregular, panel)
    if confirmed_by is None:
        return d
    d = d._replace(confirmed_by=confirmed_by)
    if d.code is not None or staff is None:
        return d
    role = staff.roles.get(confirmed_by)
    if role is None:
        return d._replace(code="unknown_staff", reason=f"the confirming supervisor "
                                                       f"{confirmed_by!r} is not in the table's [staff]")
    if role != SUPERVISOR:
        return d._replace(code="not_authorized", reason=f"{kind} is confirmed by a supervisor, "
                                                        f"{confirmed_by} is a {role}")
    return d


def _decide(staff, kind, by, user, reason, irregular, panel):
    right = required(kind, irregular)
    reason = reason if isinstance(reason, str) and reason.strip() else None
    if staff is None:
        return Decision(by or user, None, right.override, None, reason)
    if panel:
        who, role = by, SUPERVISOR if by == "panel-key" else DEALER
    else:
        if by is not None and (not isinstance(by, str) or not 0 < len(by) <= 64):
            return Decision(None, None, right.override, "malformed", "by: a staff id of 1-64 characters")
        if user is not None and by is not None and by != user and staff.roles.get(user) != SYSTEM:
            return Decision(by, None, right.override, "identity_mismatch",
                            f"logged in as {user!r}, the command names {by!r}")
        who = by or user
        if who is None:
            role = SYSTEM        # the betting system on the plain commands topic
        else:
            role = staff.roles.get(who)
            if role is None:
                return Decision(who, None, right.override, "unknown_staff",
                                f"{who!r} is not in the table's [staff]")
            if user is None and staff.require_login and role != SYSTEM:
                return Decision(who, role, right.override, "not_logged_in",
                                f"a {role} acts through the login's own topic (commands/<user>)")
    if role not in right.roles:
        return Decision(who, role, right.override, "not_authorized",
                        f"{kind} needs a {' or '.join(sorted(right.roles))}, {who or 'the sender'} "
                        f"is a {role}")
    if right.override and not panel:
        if reason is None:
            return Decision(who, role, True, "reason_required", f"{kind} is an override: give a reason")
        if staff.reason_codes and reason not in staff.reason_codes:
            return Decision(who, role, True, "reason_required",
                            f"reason must be one of {', '.join(staff.reason_codes)}")
    return Decision(who, role, right.override, None, reason)
