"""An outage the station could not measure (RULES.md: a fault during a round pauses it; not
cleared in time, the round is voided and refunded).

At a restart the station counts how long the table was down; with a wall clock it cannot trust
(a Raspberry Pi has no real-time clock: it boots with a saved or a 1970 time until NTP syncs)
it does not guess: `outage_unmeasured` pauses the round as an irregularity, for the supervisor
(`resume` with a reason, or `void_round`), or until the station can count it after all:
`outage_measured` then voids the round past the limit, or lets it go on if nothing else holds
it. Handlers as in procedures.py (`eng`: the table engine's transitions)."""
from .expectation import Pending
from .protocol import Rejected


def outage_unmeasured(t, ev, eng):
    if t.round is None:
        raise Rejected("no_round", "no round is under way")
    if any(p.kind == "outage" for p in t.pending):
        raise Rejected("outage_pending", "an unmeasured outage already holds the round")
    return eng.irregular(t, "outage_unmeasured", {"reason": ev["reason"]},
                         Pending("outage", None, None))


def outage_measured(t, ev, eng):
    if not any(p.kind == "outage" for p in t.pending):
        raise Rejected("no_outage", "no unmeasured outage holds the round")
    secs, limit = ev["seconds"], ev["limit"]
    rnd = t.round.number if t.round is not None else None
    out = [{"type": "outage_measured", "round": rnd, "seconds": secs,
            "limit": limit}]
    if secs > limit and t.round is not None:
        t2, more = eng.void_round(t, {"reason": f"the table was down for {secs:.0f} s "
                                                f"(limit {limit:g} s)"})
        return t2, out + more
    pending = tuple(p for p in t.pending if p.kind != "outage")
    t = t.but(pending=pending)
    # counted in time: the round goes on where it stopped, if nothing else holds it
    if t.paused == "outage_unmeasured" and not pending and not t.faults:
        t2, more = eng.resume(t, {})
        return t2, out + more
    return t, out


HANDLERS = {"outage_unmeasured": outage_unmeasured, "outage_measured": outage_measured}
