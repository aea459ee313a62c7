"""The table engine: `step(table, input) -> (table, outputs)`.

The shoe lifecycle (shoe loaded -> burn -> rounds -> cut card -> last round -> shuffle due), the
rounds of each game, irregularities and pause / resume / void. Pure: no I/O, no clock, no
randomness; a Table is never changed in place, so an old state stays valid (replay, audit).
An input that is malformed or not allowed now gives one `rejected` output and the same Table.

This module dispatches the inputs; the state and what it waits for are in table_state.py, the
shoe's and the cards' inputs in table_cards.py, the round's in table_round.py, irregularities
and pause / resume / void in table_pause.py, each importing only the ones before it; their names
are importable from here as before.
"""
from . import procedures
from .protocol import Rejected, validate
from .table_cards import _card, _card_seen, _card_unreadable, _cut_card, _shoe_loaded
from .table_pause import _irregular, _pause, _pending_summary, _resume, _void_round
from .table_round import _betting_closed, _decision, _decision_timeout, _insurance_closed
from .table_state import Table, _after_round_step, announce, expect, new_table  # noqa: F401

ANNOUNCEMENTS = frozenset(("awaiting_card", "awaiting_decision", "insurance_offered",
                           "awaiting_result"))


def step(t, event):
    """Apply one input. Returns (new table, list of output dicts)."""
    try:
        ev = validate(event)
        t2, out = _HANDLERS[ev["type"]](t, ev)
    except Rejected as r:
        kind = event.get("type") if isinstance(event, dict) else None
        rej = {"type": "rejected", "input": kind if isinstance(kind, str) else None,
               "code": r.code, "reason": r.reason}
        if isinstance(event, dict) and "id" in event:
            rej["id"] = event["id"]
        out = [rej]
        t2 = t
        ev = event if isinstance(event, dict) else {}
    if t2.paused:  # nothing is asked of the dealer or the players while paused
        out = [o for o in out if o["type"] not in ANNOUNCEMENTS]
    if "ts" in ev:
        ts = ev["ts"]
        for o in out:
            o["ts"] = ts
    return t2, out


_HANDLERS = {
    "shoe_loaded": _shoe_loaded, "card": _card, "card_unreadable": _card_unreadable,
    "cut_card": _cut_card, "betting_closed": _betting_closed, "decision": _decision,
    "insurance_closed": _insurance_closed, "decision_timeout": _decision_timeout,
    "pause": _pause, "resume": _resume, "void_round": _void_round,
    "card_seen": _card_seen,
}


class Ops:
    """The engine's transitions the procedures (procedures.py) build on."""
    irregular = staticmethod(_irregular)
    void_round = staticmethod(_void_round)
    resume = staticmethod(_resume)
    after_round_step = staticmethod(_after_round_step)
    announce = staticmethod(announce)
    pending_summary = staticmethod(_pending_summary)


for _kind, _f in procedures.HANDLERS.items():
    _HANDLERS[_kind] = (lambda f: lambda t, ev: f(t, ev, Ops))(_f)
