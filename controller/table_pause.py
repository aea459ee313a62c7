"""Irregularities and the pause (a part of table.py): an irregular read pauses the table and is
kept pending; `pause`, `resume` (which settles the pending reads) and `void_round`."""
from . import procedures
from .protocol import Rejected
from .table_state import _after_round_step, _round_ended, announce


def _irregular(t, code, detail, item):
    rnd = t.round.number if t.round is not None else None
    out = [{"type": "irregularity", "code": code, "round": rnd, "detail": detail}]
    if not t.paused:
        out.append({"type": "round_paused", "round": rnd, "reason": code})
    return t.but(paused=t.paused or code, pending=t.pending + (item,)), out


def _pause(t, ev):
    if t.paused:
        raise Rejected("paused", f"the table is already paused ({t.paused})")
    rnd = t.round.number if t.round is not None else None
    return t.but(paused=ev["reason"]), [{"type": "round_paused", "round": rnd, "reason": ev["reason"]}]


def _pending_summary(pending):
    return {"burned": [p.card for p in pending if p.kind == "unexpected"],
            "removed": [p.card for p in pending if p.kind == "foreign"],
            "unidentified": sum(1 for p in pending if p.kind == "misread")}


def _resume(t, ev):
    if not t.paused:
        raise Rejected("not_paused", "the table is not paused")
    if t.faults:
        raise Rejected("device_down", f"a required device is down ({', '.join(d for d, _ in t.faults)})"
                                      f": the round continues once it is restored, or is voided")
    if any(p.kind == "dealer_error" for p in t.pending):
        raise Rejected("decision_pending", "a dealer error awaits the supervisor's decision "
                                           "(supervisor_decision)")
    rnd = t.round.number if t.round is not None else None
    # Unexpected cards go to the discard rack, foreign cards are taken out of play, unreadable
    # cards never identified are discarded: the round goes on where it stopped.
    out = [{"type": "round_resumed", "round": rnd, **_pending_summary(t.pending)}]
    held = procedures.take_held(t)
    t = t.but(paused=None, pending=())
    if held is not None and t.round is not None:   # the wheel's number that came while paused
        rnd, more = t.game.on_number(t.round, held.card, held.expect, None)
        return _after_round_step(t.but(round=rnd), out + more)
    return t, out + announce(t)


def _void_round(t, ev):
    if t.round is None:
        raise Rejected("no_round", "no round is under way to void")
    out = [{"type": "round_voided", "round": t.round.number, "reason": ev["reason"],
            **_pending_summary(t.pending)}]
    t = t.but(round=None, paused=None, pending=(), finished=None)
    if t.phase == "burn":
        return t, out + announce(t)
    t, out = _round_ended(t, out)
    return t, out + announce(t)
