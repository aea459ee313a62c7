"""The station core's commands (a part of `Station`, pure like it): what a command needs read from
the journal first, its response topic, a repeated id answered `duplicate` with the original
result, a malformed one refused, kept and acknowledged (never delivered again), the staff rights
asked before the engine, a correction checked against the result it names, and `resend`.
"""
import json

from controller import rights
from controller.protocol import SCHEMAS, Rejected, validate

from . import commands
from .station_types import AckCommand, Audit, Command, Count, Record, Refuse, Reply

REFUSED_KEEP = 256     # bytes of a refused payload kept: enough to know it, not a way to fill a card
RESPONSE_TOPIC_MAX = 256   # characters of a v5 response topic (the broker's packet limit counts it)
RESEND_IDS = 1000       # resend ids remembered (in memory, since the daemon's start)


def command_key(ev, cid):
    """A command's identity: (its sender, its id). The sender is the login of
    `commands/<login>` (the broker's ACL lets only that login write there), "" for the shared
    `commands` topic (the betting system): each has its own ids, so no sender can take the
    ids another will use (docs/protocol.md, "Commands")."""
    return (ev.user or "", cid)


# bytes of a command's MQTT v5 correlation data the table echoes in its reply. MQTT allows 65535,
# which made the table's own largest reply 78.8 KB and kept the broker's packet limit above it
# (docs/mosquitto/mosquitto.conf); clients use a UUID or a counter (16-36 bytes), the console
# "console:" and an id of at most 64 characters (at most 264 bytes).
CORRELATION_MAX = 512


def correlation_error(correlation):
    """Why a command's correlation data is refused, or None: longer than CORRELATION_MAX."""
    if correlation is not None and len(correlation) > CORRELATION_MAX:
        return (f"correlation data of {len(correlation)} bytes: at most {CORRELATION_MAX} "
                f"(the reply echoes it; this reply carries none)")
    return None


class StationCommands:
    """Station's commands; the state (`resends`, `pending`, `table`) and `process` are Station's."""

    def reads(self, event):
        """What the shell must look up in the journal before stepping `event`:
        {"command_reply": (sender, id)}, {"outbox_at": seq} (the first row at or after seq), or
        {}. A command is known by (its sender, its id): `command_key`."""
        if isinstance(event, Command):
            try:
                cmd = commands.parse(event.payload)
            except commands.CommandError:
                return {}
            key = command_key(event, cmd["id"])
            if cmd["type"] == "resend":
                if key in self.resends:
                    return {}               # answered already: nothing is read or resent
                # ids are one namespace per sender: a resend reusing a journaled command's id is
                # its duplicate
                start = cmd.get("from")
                if isinstance(start, int) and not isinstance(start, bool) and start >= 1:
                    return {"command_reply": key, "outbox_at": start}  # the rest page by page
                return {"command_reply": key}
            seq = cmd.get("seq")
            if cmd["type"] == "correct_result" and isinstance(seq, int) and not isinstance(seq, bool) \
                    and seq >= 1:
                return {"command_reply": key, "outbox_at": seq}   # the result it corrects
            return {"command_reply": key}
        return {}

    def _response_topic(self, rt):
        """A v5 response topic must lie in this table's replies tree: elsewhere a client could
        have the table publish into its own events or status topics (a forged event), or where
        the broker's ACL drops it unseen."""
        base = self.s.replies_topic
        if rt is None or ((rt == base or rt.startswith(base + "/"))
                          and len(rt) <= RESPONSE_TOPIC_MAX and not any(c in rt for c in "+#\0")):
            return None
        return (f"response topic must be {base} or under {base}/ (a table publishes its replies "
                f"nowhere else)")

    def _command(self, ev, clock, reads):
        try:
            bad_topic = self._response_topic(ev.response_topic)
            if bad_topic:
                ev = ev._replace(response_topic=None)
            bad_corr = correlation_error(ev.correlation)
            if bad_corr:
                ev = ev._replace(correlation=None)      # the reply is small: its id names it
            if bad_topic or bad_corr:
                try:         # the reply names the command it refuses, when the command has an id
                    cid = commands.parse(ev.payload)["id"]
                except commands.CommandError as e:
                    cid = e.id
                raise commands.CommandError("malformed", bad_topic or bad_corr, cid)
            cmd = commands.parse(ev.payload)
            # One id, one command, whatever its type (cold trial: a resend reusing a decision's
            # id ran, and a decision reusing a resend's id was applied): a reuse is a duplicate.
            # Each sender's own ids (ids41: a login sending the ids the betting system would use
            # next had its decisions answered `duplicate` of the login's refusals, never applied)
            key = command_key(ev, cmd["id"])
            prior = (self.resends.get(key) or self.refusals.ids.get(key)
                     or reads.get("command_reply"))
            if prior is not None:
                effects, reply = [], {**prior, "status": "duplicate", "original": prior["status"]}
            else:
                # a resend too (cold40: a login not in [staff], another table's included, had
                # any table publish up to 10,000 events again per resend)
                confirmer = cmd.get("confirmed_by")
                d = rights.decide(self.s.staff, cmd["type"], cmd.get("by"), ev.user,
                                  cmd.get("reason"), bool(self.table.pending),
                                  confirmed_by=confirmer if isinstance(confirmer, str) else None)
                if d.code is None and cmd["type"] == "correct_result":
                    self._corrects(cmd, reads.get("outbox_row"))
                if d.code is not None:
                    reply = {"type": "reply", "id": cmd["id"], "status": "rejected",
                             "code": d.code, "reason": d.reason}
                    effects = self._counted(ev, clock, "rights", reply)
                    if effects is None:     # kept in full: its audit entry, its id with it
                        effects = [e._replace(remember=(key[0], reply)) if isinstance(e, Audit)
                                   else e for e in self._refuse_right(clock, "command",
                                                                      cmd["type"], cmd["id"], d)]
                elif cmd["type"] == "resend":
                    effects, reply = self._resend(cmd, reads.get("outbox_row"))
                    self.resends[key] = reply
                    while len(self.resends) > RESEND_IDS:
                        self.resends.popitem(last=False)
                else:
                    body = commands.to_input(cmd)
                    need = SCHEMAS.get(body["type"], {}).get("by")
                    if d.who is not None and "by" not in body and need and need[1]:
                        body["by"] = d.who     # required: the login the broker vouched for
                    effects, _, reply = self.process(
                        body, "command", clock, command_id=cmd["id"], decision=d,
                        action=cmd["type"], counted=lambda r: self._counted(ev, clock, "engine", r))
                    # journaled under its sender's name (the journal's commands, ids41)
                    effects = [e._replace(sender=key[0]) if isinstance(e, Record) else e
                               for e in effects]
        except commands.CommandError as e:
            # kept before the PUBACK: a poison command is on record once, never delivered again
            # ...up to its sender's budget, then counted (station_refusals.py): a flood cannot
            # fill the card
            effects = self.refusals.refused(ev.user or "", "command", e.code, e.reason,
                                            bytes(ev.payload[:REFUSED_KEEP]), clock.mono,
                                            clock.wall)
            effects.append(Count("commands_refused_total", (("code", e.code),)))
            reply = {"type": "reply", "id": e.id, "status": "rejected", "code": e.code,
                     "reason": e.reason}
        return effects + [Reply(reply, ev.response_topic, ev.correlation),
                          AckCommand(ev.mid, ev.qos)]

    def _counted(self, ev, clock, kind, reply):
        """A well-formed command refused by the staff rights, or rejected by the engine with the
        table unchanged (`process` asks only then: nothing there for replay to rebuild), beyond
        its sender's budget: [effects] that count it (station_refusals.py); None within the
        budget, where it is kept in full (its audit entry; its input, event and reply)."""
        over = self.refusals.over(ev.user or "", kind, reply["code"], reply["reason"],
                                  bytes(ev.payload[:REFUSED_KEEP]), clock.mono, clock.wall)
        if over is None:
            return None
        effects, first = over
        if first:     # the audit log says where the rest of this sender's refusals went
            b = self.refusals
            # the budget's sender: OTHERS ("+") for those beyond the first SENDERS of a window
            who = next(e.sender for e in effects if isinstance(e, Refuse)) or None
            note = rights.Decision(who, None, False, None,
                                   f"more than {b.keep} refused in {b.window_s:g} s: the rest "
                                   f"counted in refused_counts (window_at {b.start[1]!r})")
            effects.insert(0, Audit(self._audit_entry(clock, "command", "refusals_counted", None,
                                                      note, f"counted:{kind}")))
        # remembered in memory until the burst's write, and journaled with its count (the
        # Refuse's `remember`): after a restart the journal answers `duplicate` (ids39). A rights
        # refusal too (ids41: its copy was judged again, and could be applied once the table's
        # state allowed it, e.g. a dealer's `resume` after the supervisor's)
        self.refusals.remember(command_key(ev, reply["id"]), reply)
        effects = [e._replace(remember=(ev.user or "", reply)) if isinstance(e, Refuse)
                   else e for e in effects]
        return effects + [Count("rejected_total", (("code", reply["code"]),))]

    @staticmethod
    def _corrects(cmd, row):
        """A correction names the published result it corrects by its sequence number: that
        message must be the round's `round_result` (or an earlier correction of it). The engine
        cannot see sequence numbers; without this a voided round could be given a result."""
        try:    # a malformed command first (a "seq" of "40" was "no_such_result"), as any other
            validate(commands.to_input(cmd))
        except Rejected as e:
            raise commands.CommandError(e.code, e.reason, cmd["id"]) from None
        try:
            m = json.loads(row[1]) if row is not None and row[0] == cmd["seq"] else None
        except (TypeError, ValueError):
            m = None
        if not isinstance(m, dict) or m.get("type") not in ("round_result", "result_corrected") \
                or m.get("round") != cmd["round"]:
            what = (f"a {m.get('type')} of round {m.get('round')}" if isinstance(m, dict)
                    else "no message")
            raise commands.CommandError(
                "no_such_result", f"correct_result.seq: {cmd['seq']} is {what}, not the result of "
                f"round {cmd['round']}", cmd["id"])

    def _resend(self, cmd, first):
        start = cmd.get("from")
        if not isinstance(start, int) or isinstance(start, bool) or start < 1:
            raise commands.CommandError("malformed", "resend.from: the first sequence number wanted",
                                        cmd["id"])
        # as every other command: a field it does not take is an error, never silently dropped
        extra = sorted(set(cmd) - {"type", "id", "from", "by", "reason"})
        if extra:
            raise commands.CommandError("malformed", f"resend.{extra[0]}: unknown field", cmd["id"])
        # Coalesced: an event already on its way (queued, or handed to the broker and not yet
        # acknowledged: paho delivers it, or wanted by an earlier resend) is not queued again.
        # 20 resends from 20 consumers of one gap, at once, republished the tail 20 times (63
        # events: 1,260; up to 10,000 each). The journal's outbox numbers have no holes after
        # its first row (archive.py prunes from the front): the range is known from that row.
        effects, seq, coalesced = [], None, 0
        if first is not None and first[0] < self.next_seq:
            on_way = {s for s, _ in self.pending} | self.inflight | self.resend.seqs()
            seq, coalesced, effects = self.resend.ask(first[0], self.next_seq - 1, on_way)
        reply = {"type": "reply", "id": cmd["id"], "status": "accepted",
                 "seq": list(seq) if seq else None, "coalesced": coalesced}
        return effects, reply
