"""The round's own inputs (a part of table.py): betting closed (a round starts), the players'
decisions, a decision's timeout and insurance closed."""
from .expectation import Pending
from .protocol import Rejected
from .table_pause import _irregular
from .table_state import _after_round_step


def _betting_closed(t, ev):
    p = t.profile
    if t.paused:
        raise Rejected("paused", f"the table is paused ({t.paused})")
    if t.round is not None:
        raise Rejected("round_in_progress", f"round {t.round.number} is under way")
    if t.phase == "no_shoe":
        raise Rejected("no_shoe", "no shoe is loaded")
    if t.phase == "shuffle_due":
        raise Rejected("shuffle_due", "the last round of this shoe is over: shuffle and load a new shoe")
    if t.faults:
        raise Rejected("device_down", f"betting does not close on a round while a required device "
                                      f"is down ({', '.join(d for d, _ in t.faults)})")
    rnd, out = t.game.start(p, t.rounds + 1, ev.get("seats"))
    if t.phase == "burn":  # the round may not be dealt before the burn is complete
        t = t.but(round=rnd, rounds=rnd.number, seen=(), finished=None, early=())
        t2, more = _irregular(t, "burn_incomplete", {"required": t.shoe.burn_required,
                                                     "burned": t.shoe.burned,
                                                     "exposed": t.shoe.exposed},
                              Pending("burn_incomplete", None, None))
        return t2, out + more
    t = t.but(round=rnd, rounds=rnd.number, phase="round", seen=(), finished=None, early=())
    return t, out


def _round_input(t, kind):
    if t.paused:
        raise Rejected("paused", f"the table is paused ({t.paused})")
    if t.round is None or t.phase != "round":
        raise Rejected("no_round", "no round is being played")
    t.game.check_input(kind)


def _decision(t, ev):
    _round_input(t, "decision")
    rnd, out = t.game.on_decision(t.round, ev["seat"], ev["hand"], ev["action"])
    return _after_round_step(t.but(round=rnd), out)


def _decision_timeout(t, ev):
    _round_input(t, "decision_timeout")
    rnd, out = t.game.on_timeout(t.round, ev["seat"], ev["hand"])
    return _after_round_step(t.but(round=rnd), out)


def _insurance_closed(t, ev):
    _round_input(t, "insurance_closed")
    rnd, out = t.game.on_insurance_closed(t.round)
    return _after_round_step(t.but(round=rnd), out)
