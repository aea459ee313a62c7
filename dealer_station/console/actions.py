"""What a page may send, from the table's own tables: who may send each action and whether it
needs a reason is controller/rights.py's one table (MQTT, panel and console alike), read at its
strictest (as after an irregularity: the console's buttons resolve them); each action's fields
are its engine input's (controller/protocol.py). Only the list of actions offered is kept here."""
from controller import rights
from controller.protocol import SCHEMAS

from ..commands import ENGINE_COMMANDS

OFFERED = ("pause", "resume", "void_round", "manual_card", "no_spin", "manual_number",
           "correct_result", "dealer_error", "supervisor_decision")
CONSOLE_ROLES = (rights.DEALER, rights.SUPERVISOR)


def _fields(kind):
    # by: the logged-in account (the console fills it); source: manual_card's is "manual"
    own = tuple(f for f in SCHEMAS[ENGINE_COMMANDS[kind]] if f not in ("by", "source"))
    return own if "reason" in own else own + ("reason",)     # the audit log's why


def _needs_reason(kind):
    reason = SCHEMAS[ENGINE_COMMANDS[kind]].get("reason")
    return rights.required(kind, True).override or bool(reason and reason[1])


ACTIONS = {k: _fields(k) for k in OFFERED}          # action -> the fields a page may give
NEEDS_REASON = {k for k in OFFERED if _needs_reason(k)}
RIGHTS = {role: {k for k in OFFERED if role in rights.required(k, True).roles}
          for role in CONSOLE_ROLES}


def check(staff, account, body):
    """None if `account` may send `body` from a page, else (HTTP status, reply)."""
    kind = body.get("type") if isinstance(body, dict) else None
    if kind not in ACTIONS:
        return 400, {"status": "rejected", "code": "malformed",
                     "reason": f"unknown action {kind!r}; known: {', '.join(ACTIONS)}"}
    reason = body.get("reason")
    d = rights.decide(staff, kind, None, account, reason, True)
    if d.code == "not_authorized":
        return 403, {"status": "rejected", "code": d.code, "reason": f"{d.reason} (you are {account})"}
    extra = set(body) - {"type", *ACTIONS[kind]}
    if extra:
        return 400, {"status": "rejected", "code": "malformed",
                     "reason": f"{kind}.{sorted(extra)[0]}: unknown field"}
    if d.code is not None or (kind in NEEDS_REASON and not (isinstance(reason, str) and reason.strip())):
        return 400, {"status": "rejected", "code": d.code or "reason_required",
                     "reason": f"{kind}: say why (reason)"}
    return None
