"""The house procedures off the happy path (RULES.md, issue #18): the wheel's spins (no-spin,
a number held while paused, two numbers for one spin, a number entered by a supervisor),
corrections of a published result, device faults and dealer errors.

Handlers take the table, the validated input and `eng`, the table engine's own transitions
(`table.Ops`): passed in, not imported, so the imports keep pointing one way. Who may send each
input is in `rights.py`; what a game does with it is asked of the game (`games.py`).
"""
from .expectation import Pending
from .outage import HANDLERS as OUTAGE_HANDLERS
from .protocol import Rejected


def _paused_check(t, kind):
    if t.paused:
        raise Rejected("paused", f"the table is paused ({t.paused}): {kind} waits for resume")


def _awaiting_result(t, kind):
    t.game.check_input(kind)
    if t.round is None or t.phase != "round" or t.game.over(t.round):
        raise Rejected("no_round", "no spin is under way")


def _drop_held(t):
    return tuple(p for p in t.pending if p.kind != "held")


# -- the wheel ----------------------------------------------------------------------------------

def winning_number(t, ev, eng):
    t.game.check_input("winning_number")
    number, spin, revs = ev["number"], ev.get("spin"), ev.get("revolutions")
    if t.round is None:
        # The ball landed but betting was never closed: the bets were open during the spin.
        return eng.irregular(t, "unexpected_result", {"number": number, "spin": spin,
                                                      "why": "no round: betting was not closed"},
                             Pending("result", number, None))
    _awaiting_result(t, "winning_number")
    if t.paused:
        if revs is not None and revs < t.game.min_revolutions:
            return _spin_void(t, spin, None, None, revs)
        # Held, not lost: the round ends with it at resume unless a supervisor decides otherwise
        # (no_spin, manual_number, void_round).
        out = [{"type": "number_held", "round": t.round.number, "number": number, "spin": spin,
                "why": f"the table is paused ({t.paused})"}]
        return t.but(pending=_drop_held(t) + (Pending("held", number, spin),)), out
    rnd, out = t.game.on_number(t.round, number, spin, revs)
    return eng.after_round_step(t.but(round=rnd), out)


def _spin_void(t, spin, reason, by, revs=None):
    if reason is None:
        reason = (f"too few revolutions ({revs})" if revs is not None
                  else "the wheel flagged a no-spin")
    rnd, out = t.game.on_spin_void(t.round, spin, reason, by)
    return t.but(round=rnd, pending=_drop_held(t)), out


def miss_spin(t, ev, eng):
    """The wheel's no-spin flag: the spin is void, the bets stay locked, the ball is spun again."""
    _awaiting_result(t, "miss_spin")
    revs = ev.get("revolutions")
    return _spin_void(t, ev.get("spin"), None if revs is None else f"too few revolutions ({revs})",
                      None)


def no_spin(t, ev, eng):
    """A no-spin declared by the dealer or the supervisor (also while paused)."""
    _awaiting_result(t, "no_spin")
    return _spin_void(t, ev.get("spin"), ev["reason"], ev["by"])


def manual_number(t, ev, eng):
    """The winning number entered by a supervisor (the wheel's reading missing or wrong):
    also while paused, where it ends the pause with the round."""
    _awaiting_result(t, "manual_number")
    out = []
    if t.paused:
        out.append({"type": "round_resumed", "round": t.round.number,
                    **eng.pending_summary(t.pending)})
        t = t.but(paused=None, pending=())
    rnd, more = t.game.on_number(t.round, ev["number"], None, None, (ev["by"], ev["reason"]))
    return eng.after_round_step(t.but(round=rnd), out + more)


def number_mismatch(t, ev, eng):
    """Two numbers for one spin: a malfunction. The table pauses for the supervisor, who keeps
    the first number (resume), enters the right one (manual_number, or correct_result once the
    first was published) or voids the round."""
    t.game.check_input("number_mismatch")
    # a round ends with its first number: the first of two numbers settled the last round ended
    rnd = t.rounds - (t.round is not None)
    if rnd < 1:
        raise Rejected("no_round", "no spin to mismatch")
    detail = {"first": ev["first"], "then": ev["then"], "spin": ev.get("spin")}
    out = [{"type": "irregularity", "code": "number_mismatch", "round": rnd, "detail": detail}]
    if not t.paused:
        out.append({"type": "round_paused", "round": rnd, "reason": "number_mismatch"})
    item = Pending("mismatch", None, rnd)
    return t.but(paused=t.paused or "number_mismatch", pending=t.pending + (item,)), out


def take_held(t):
    """At resume: the newest number held while paused, or None."""
    held = [p for p in t.pending if p.kind == "held"]
    return held[-1] if held else None


# -- corrections --------------------------------------------------------------------------------

def correct_result(t, ev, eng):
    """A published result corrected by a supervisor: a new event that refers to the original
    (`corrects`: its sequence number) and never rewrites it."""
    rnd = ev["round"]
    if ("number" in ev) == ("void" in ev):
        raise Rejected("malformed", "correct_result: give either number (the right result) or "
                                    "void: true (the round's bets refunded)")
    if rnd > t.rounds or (t.round is not None and t.round.number == rnd):
        raise Rejected("no_result", f"round {rnd} has no published result to correct "
                                    f"(rounds finished: up to {t.rounds - (t.round is not None)})")
    result = None
    if "number" in ev:
        result = t.game.corrected_result(t.profile, rnd, ev["number"])
    out = [{"type": "result_corrected", "round": rnd, "corrects": ev["seq"],
            "voided": result is None, "result": result, "reason": ev["reason"], "by": ev["by"]}]
    mine = [p for p in t.pending if p.kind == "mismatch" and p.expect == rnd]
    if mine:
        pending = tuple(p for p in t.pending if not (p.kind == "mismatch" and p.expect == rnd))
        if t.paused == "number_mismatch" and not pending and t.round is None:
            out.append({"type": "round_resumed", "round": None, **eng.pending_summary(())})
            return t.but(paused=None, pending=()), out
        t = t.but(pending=pending)
    return t, out


# -- device faults ------------------------------------------------------------------------------

def device_fault(t, ev, eng):
    """A required device down (the shoe unplugged, jammed or silent; the wheel's fault): the
    round under way pauses; betting_closed is refused until it is restored."""
    dev = ev["device"]
    if any(d == dev for d, _ in t.faults):
        raise Rejected("device_down", f"{dev} is already reported down")
    rnd = t.round.number if t.round is not None else None
    out = [{"type": "device_fault", "device": dev, "reason": ev["reason"], "round": rnd}]
    t = t.but(faults=t.faults + ((dev, ev["reason"]),))
    if t.round is None:
        return t, out
    t2, more = eng.irregular(t, "device_fault", {"device": dev, "reason": ev["reason"]},
                             Pending("device", dev, None))
    return t2, out + more


def device_restored(t, ev, eng):
    dev = ev["device"]
    if not any(d == dev for d, _ in t.faults):
        raise Rejected("device_up", f"{dev} is not reported down")
    faults = tuple(f for f in t.faults if f[0] != dev)
    pending = tuple(p for p in t.pending if not (p.kind == "device" and p.card == dev))
    rnd = t.round.number if t.round is not None else None
    out = [{"type": "device_restored", "device": dev, "round": rnd}]
    t = t.but(faults=faults, pending=pending)
    # cleared in time: the round goes on where it stopped, if nothing else holds it (a number
    # the wheel gave meanwhile is held, not an obstacle: it ends the round as at resume)
    if t.paused == "device_fault" and not faults and all(p.kind == "held" for p in pending):
        t2, more = eng.resume(t, {})
        return t2, out + more
    return t, out


# -- dealer errors ------------------------------------------------------------------------------

def dealer_error(t, ev, eng):
    """The dealer reports an error (a card exposed, dealt to the wrong place, a misdeal): the
    round pauses for the supervisor's decision."""
    if not t.game.uses_cards:
        raise Rejected("not_allowed", f"dealer_error has no meaning at a {t.game.name} table")
    if t.round is None:
        raise Rejected("no_round", "no round is under way")
    if any(p.kind == "dealer_error" for p in t.pending):
        raise Rejected("decision_pending", "a dealer error already awaits the supervisor")
    err = ev["error"]
    detail = {"error": err, "by": ev["by"]}
    if "detail" in ev and err != "exposed_hole_card":   # free text may name the hole card
        detail["detail"] = ev["detail"]
    return eng.irregular(t, "dealer_error", detail, Pending("dealer_error", None, err))


def supervisor_decision(t, ev, eng):
    errs = [p for p in t.pending if p.kind == "dealer_error"]
    if not errs:
        raise Rejected("no_dealer_error", "no dealer error awaits a decision")
    err, decision = errs[0].expect, ev["decision"]
    why = f"dealer error ({err}), {decision} by {ev['by']}: {ev['reason']}"
    head = {"type": "supervisor_decided", "round": t.round.number, "error": err,
            "decision": decision, "reason": ev["reason"], "by": ev["by"]}
    if decision == "void":
        t2, out = eng.void_round(t, {"reason": why})
        return t2, [head] + out
    rest = tuple(p for p in t.pending if p.kind != "dealer_error")
    rnd, out = t.round, []
    if decision == "replace":
        # The last card is taken back to the discard rack and its place dealt again.
        u = t.undo
        if u is None or u[1] is not rnd:
            raise Rejected("not_replaceable", "only the last card dealt, with nothing played "
                                              "since, can be replaced: continue or void")
        if err == "exposed_hole_card" and t.game.hidden(rnd) is None:
            raise Rejected("not_replaceable", "the hole card is no longer face down")
        if err == "exposed_hole_card" and t.game.hidden(u[0]) is not None:
            raise Rejected("not_replaceable", "the last card dealt is not the hole card")
        shoe = t.shoe.redirect(u[3], "burn")
        out.append({"type": "card_replaced", "round": rnd.number,
                    "card": None if t.game.hidden(rnd) else u[2], "burned": True})
        t = t.but(round=u[0], shoe=shoe, undo=None)
    elif err == "exposed_hole_card" and t.game.hidden(rnd) is not None:
        rnd, out = t.game.expose_hole(rnd)      # it is public now: the round goes on with it shown
        t = t.but(round=rnd)
    t = t.but(pending=rest)
    if rest or t.faults:
        return t, [head] + out       # still held by another irregularity or a device
    resumed = {"type": "round_resumed", "round": t.round.number, **eng.pending_summary(())}
    t = t.but(paused=None)
    return t, [head] + out + [resumed] + eng.announce(t)


HANDLERS = {"winning_number": winning_number, "miss_spin": miss_spin, "no_spin": no_spin,
            "manual_number": manual_number, "number_mismatch": number_mismatch,
            "correct_result": correct_result, "device_fault": device_fault,
            "device_restored": device_restored, "dealer_error": dealer_error,
            "supervisor_decision": supervisor_decision,
            **OUTAGE_HANDLERS}     # an outage the station could not count (outage.py)
