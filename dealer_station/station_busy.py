"""A command beyond its sender's lane (loop_queue.py LANE_MAX), answered at once: refused `busy`
(pure: no I/O, no clock; the station's own refusal budget and response-topic rule).

It is refused, kept or counted by the station's refusal budget exactly as a malformed command
(station_refusals.py: nothing silently lost), answered with a reply saying the table is busy
(the sender may send it again), and acknowledged once the loop has journaled the refusal. Its
type is not looked at: a legitimate command sent amid its own sender's flood is refused too, and
said so; commands from other senders are in their own lanes and never reach here.

A copy of a command already answered (its sender's id journaled with a reply, a remembered
resend or a counted rejection) is answered `duplicate` with that answer, as in its lane (station_commands):
"not applied, send it again" was untrue of it (review38)."""
from . import commands
from .station_commands import REFUSED_KEEP, command_key, correlation_error
from .station_types import AckCommand, Count, Reply

BUSY = "busy"


def busy(station, ev, clock, waiting, reads=None):
    """[effects] for the Command `ev` refused busy; `waiting`: its sender's lane's length when it
    came (the lane's bound: only a full lane sends a command here; what is left when its turn
    comes says nothing, down to 0 after a flood, cold40);
    `reads`: the journal's reply to its id, as for `step` ({"command_reply": reply or None})."""
    try:
        cid = known = commands.parse(ev.payload)["id"]
    except commands.CommandError as e:
        cid, known = e.id, None          # malformed in its lane too, not a duplicate
    bad_topic = station._response_topic(ev.response_topic)
    rt = None if bad_topic else ev.response_topic
    # too long to echo (station_commands.CORRELATION_MAX): the reply carries none
    corr = None if correlation_error(ev.correlation) else ev.correlation
    # a flood delays the probe (station.py, cold38): on `commands` too, where step's echo()
    # counts it (the loop never refuses our own probe busy: daemon._answer_busy)
    station.probe.other(clock.received_mono)
    key = command_key(ev, known)        # the sender's own ids (ids41)
    prior = known is not None and not bad_topic and (
        station.resends.get(key) or station.refusals.ids.get(key)
        or (reads or {}).get("command_reply"))
    if prior:
        return [Reply({**prior, "status": "duplicate", "original": prior["status"]}, rt,
                      corr), AckCommand(ev.mid, ev.qos)]
    reason = (f"table busy: {waiting} commands from this sender were waiting when it came; "
              f"this one was not applied, send it again later")
    effects = station.refusals.refused(ev.user or "", "command", BUSY, reason,
                                       bytes(ev.payload[:REFUSED_KEEP]), clock.mono, clock.wall)
    effects.append(Count("commands_refused_total", (("code", BUSY),)))
    return effects + [Reply({"type": "reply", "id": cid, "status": "rejected", "code": BUSY,
                             "reason": reason}, rt, corr),
                      AckCommand(ev.mid, ev.qos)]
