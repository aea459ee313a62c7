"""`guarded_step`: `step`, made total. An exception escaping the engine is a defect of ours, not
of the input; it must not take the table down (the daemon would crash on the same journaled
input at every restart). It becomes an `internal_error` irregularity that pauses the table, the
state otherwise unchanged; the pit boss resumes or voids as for any irregularity.

Deterministic like `step` (the same defect raises again on replay, giving the same outputs), so
the journal and replay stay exact. The outputs name the input's type and the exception's class
only: an exception's message may hold a card, and the wire must never carry the hole card.
"""
from .table import step

_NAME_MAX = 40


def _name(v):
    return v if isinstance(v, str) and len(v) <= _NAME_MAX else None


def guarded_step(t, event, on_error=None):
    """`step(t, event)`, or the internal_error outputs. `on_error(exception)` lets the caller
    keep the traceback for the engineers (in the local log, never on the wire)."""
    try:
        return step(t, event)
    except Exception as e:
        if on_error is not None:
            on_error(e)
        kind = event.get("type") if isinstance(event, dict) else None
        rnd = t.round.number if t.round is not None else None
        out = [{"type": "irregularity", "code": "internal_error", "round": rnd,
                "detail": {"input": _name(kind), "error": type(e).__name__}}]
        if not t.paused:
            out.append({"type": "round_paused", "round": rnd, "reason": "internal_error"})
            t = t.but(paused="internal_error")
        ts = event.get("ts") if isinstance(event, dict) else None
        if ts is not None:
            for o in out:
                o["ts"] = ts
        return t, out
