"""The station core: the daemon's own rules, with no I/O.

`Station.step(event, clock, reads) -> [effects]` (and the functional form `step`). Like h11, a
state machine object that owns its state and does nothing but compute: no SQLite, no paho, no
serial, no clock (time arrives as a `Clock` with each event), no threads. The daemon
(daemon.py) is a loop that takes an event, asks `reads(event)` for what the station needs to
look up in the journal (a command id's earlier reply, the outbox for a resend), steps the station
and carries out the effects in order. The rules here:

- every input is journaled before anything else happens for it (`Record` comes first), and the
  shoe is acknowledged and the command's PUBACK sent only after it;
- a command repeated with the same id is answered `duplicate` with the original result; a
  malformed one is refused, kept and acknowledged (never delivered again);
- outputs are published in sequence order with a bounded in-flight window, marked sent on their
  PUBACK; `resend` queues the journal's events again;
- decision and insurance timers are armed from the announcement and fire only if the table still
  waits for the same thing; after a restart they are re-armed from the journaled announcement;
- a round interrupted longer than `void_after_outage_s` is voided at recovery;
- where the shoe resumes after a restart; the wheel's automatic start; device health in the status;
- the broker link (station_broker.py): a status only while the broker is connected, a CONNECT
  left unanswered said after `broker.connack_timeout_s`, a refusal said once per cause.
"""
import datetime
import json
import traceback
from collections import OrderedDict, deque

from controller import checkpoint, expect, guarded_step, new_table, rights
from controller.protocol import SCHEMAS
from controller.snapshot import public_snapshot
from drivers.events import (CardGone, CardRead, CardSeen, CardUnreadable, CutCard, DeviceState,
                            PanelPress, ShoeHello, ShoeStatus, WheelException, WheelState,
                            WinningNumber)
from drivers.panel import panel_view
from drivers.section import Key, Section

from . import commands, signing
from .station_broker import BrokerWatch
from .station_types import (AckCommand, AckShoe, Archive, Audit, BrokerConnecting, BrokerDown,
                            BrokerUp, Command, Count, LocalInput, Log, Publish, Published, Record,
                            Refresh, Refuse, Reply, SetMeta, Status, Stop, Timer, TimerDue,
                            WheelCommand, Lights, MarkSent)

ANNOUNCE = ("awaiting_decision", "insurance_offered")
STATUS_CHANGES = {"shoe_started", "round_result", "round_voided", "round_paused", "round_resumed",
                  "shuffle_due", "burn_complete", "round_started"}
# Between rounds the state is small and written out whole: at every new shoe, and after every
# CHECKPOINT_ROUNDS-th round (a checkpoint is some 15 KB to write; recovery replays at most that
# many rounds, a few milliseconds).
CHECKPOINT_ROUNDS = 10
PANEL_INPUTS = {"shoe_loaded": {"type": "shoe_loaded"},
                "pit_boss": {"type": "pause", "reason": "pit boss called from the dealer panel"},
                "resume": {"type": "resume"},
                "void": {"type": "void_round", "reason": "voided with the pit boss key"}}
PANEL_COMMANDS = {"shoe_loaded": "shoe_loaded", "pit_boss": "pause", "resume": "resume",
                  "void": "void_round"}
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
REFUSED_KEEP = 256     # bytes of a refused payload kept: enough to know it, not a way to fill a card


def iso(wall):
    return datetime.datetime.fromtimestamp(wall, datetime.timezone.utc).isoformat(
        timespec="milliseconds")


class Settings:
    """What the station's rules read from the configuration."""

    def __init__(self, table_id, profile, version="0", decision_s=0.0, insurance_s=0.0,
                 void_after_outage_s=0.0, inflight=100, wheel_auto_start=False, shoe_acks=False,
                 panel=False, archive=False, archive_rounds=1000,
                 replies_topic="dealer-station/v1/t1/replies", signer=None, staff=None,
                 broker="127.0.0.1:1883", connack_timeout_s=5.0):
        self.table_id = table_id
        self.broker = broker                  # host:port, named in what is said about the link
        self.connack_timeout_s = connack_timeout_s
        self.signer = signer                  # signing.Signer, or None: events unsigned
        self.staff = staff                    # rights.Staff, or None: rights not enforced
        self.profile = profile
        self.version = version
        self.decision_s = decision_s
        self.insurance_s = insurance_s
        self.void_after_outage_s = void_after_outage_s
        self.inflight = inflight
        self.wheel_auto_start = wheel_auto_start
        self.shoe_acks = shoe_acks        # a protocol-v1 shoe keeps each frame until we ACK it
        self.panel = panel
        self.archive = archive                # archive at each new shoe (roulette: every
        self.archive_rounds = archive_rounds  # archive_rounds rounds)
        self.replies_topic = replies_topic    # a response topic must be this or under it

    @classmethod
    def from_config(cls, cfg, version, signer=None):
        from controller.rights import Staff
        t, b = cfg["timers"], cfg["broker"]
        return cls(cfg["table"]["id"], cfg["profile"], version, t["decision_s"], t["insurance_s"],
                   t["void_after_outage_s"], b["inflight"],
                   cfg["wheel"]["enabled"] and cfg["wheel"]["auto_start"],
                   cfg["shoe"]["protocol"] == "v1", cfg["panel"]["enabled"],
                   cfg["archive"]["enabled"], cfg["archive"]["keep_rounds"],
                   f"{b['topic_prefix']}/{cfg['table']['id']}/replies", signer,
                   Staff.from_config(cfg.get("staff")), f"{b['host']}:{b['port']}",
                   b["connack_timeout_s"])


# the timers the station arms: a decision's, insurance's, and the void of a round that waited
# too long for the broker
CONFIG = Section("timers", {
    "decision_s": Key(float, 20.0, lo=0, hi=600),
    "insurance_s": Key(float, 10.0, lo=0, hi=600),
    "void_after_outage_s": Key(float, 600.0, lo=0, hi=86400),
})


RESEND_IDS = 1000       # resend ids remembered (in memory, since the daemon's start)


class Station:
    def __init__(self, settings):
        self._s = None
        self.broker = BrokerWatch()
        self.s = settings
        self.table = new_table(settings.profile)
        self.next_n = 1            # the journal's next input number
        self.next_seq = 1          # the table's next event sequence number
        self.prev = signing.GENESIS  # chain hash of the message seq next_seq - 1
        self.audit_head = signing.GENESIS  # hash of the audit log's newest entry
        self.pending = deque()     # (seq, message) journaled, not yet handed to the broker
        self.inflight = set()      # seqs handed to the broker, not yet acknowledged
        self.timer = None          # (monotonic deadline, expectation, input)
        self.devices = {"broker": {"state": "connecting"}}
        # device -> {cause: reason} of what holds a device down now ({} = up; absent = not heard
        # from yet). Causes: "link" (disconnected), "fault" (the driver's fault state: a stalled
        # line, a scanner node refused), "report" (the shoe's own status: jam, door, sensor,
        # light), "component" (the wheel's sensor/motor/encoder fault).
        self.health = {}
        self.shoe_base = None      # (boot, seq, input n) from the first HELLO of a shoe's boot
        self.last_shoe = (0, None)  # (input n, shoe seq) of the last journaled shoe frame
        self.stopping = False
        self.recovery = None
        # the ids of the last RESEND_IDS resends and their replies: a betting system sends an
        # unanswered command again with the same id, and across a broker outage every copy of a
        # `resend` arrives at once; each one republishing the tail multiplied it (a 60 s outage
        # of a studio's central tier: a roulette table's 44 events delivered 650-860 times)
        self.resends = OrderedDict()

    @property
    def s(self):
        return self._s

    @s.setter
    def s(self, settings):
        """The settings (a reload replaces them): the broker watch takes its share."""
        self._s = settings
        self.broker.configure(settings.broker, settings.connack_timeout_s)

    # -- recovery -------------------------------------------------------------------------------

    def restore(self, checkpoints, next_n, next_seq, shoe_base=None, last_shoe=(0, None),
                last_message=None, audit_head=None):
        """Pick the newest checkpoint this version reads. Returns (input n to replay after,
        [effects]) (a Log for each checkpoint passed over). `last_message`: the journal's newest
        outbox text (the event chain goes on from its hash); `audit_head`: the newest audit hash."""
        self.next_n, self.next_seq = next_n, next_seq
        self.prev = signing.digest(last_message) if last_message else signing.GENESIS
        if audit_head:
            self.audit_head = audit_head
        self.last_shoe = tuple(last_shoe)
        if shoe_base:
            boot, seq, at_n = (int(x) for x in shoe_base.split(":"))
            self.shoe_base = (boot, seq, at_n)
        effects = []
        for n, doc in checkpoints:
            try:
                self.table = checkpoint.decode(self.s.profile, doc)
                return n, effects
            except checkpoint.CheckpointError as e:
                why = e if doc is not None else "not a checkpoint document"
                effects.append(Log("warning", f"checkpoint after input {n} not used ({why}): "
                                              f"replaying from further back"))
        self.table = new_table(self.s.profile)
        return 0, effects

    def replay(self, rows, unsent, clock, from_checkpoint=0):
        """Re-lay the journaled inputs after the checkpoint: rows of (n, at, origin, body,
        shoe_seq, outputs journaled). Queues `unsent`, re-arms the timer, voids a round left
        too long. Returns [effects]."""
        t = self.table
        announced_at = last_at = None
        count = mismatches = 0
        for n, at, origin, body, shoe_seq, n_out in rows:
            t, out = guarded_step(t, body)
            if len(out) != n_out:
                mismatches += 1
            if any(o["type"] in ANNOUNCE for o in out):
                announced_at = at
            last_at = at
            count += 1
        self.table = t
        self.pending = deque(unsent)
        effects = []
        if mismatches:
            effects.append(Log("error", f"replay of the journal gave other outputs for {mismatches} "
                                        f"inputs: the engine changed under this journal"))
        self.recovery = {"inputs_replayed": count, "from_checkpoint": from_checkpoint,
                         "unsent": len(self.pending), "mismatches": mismatches}
        if announced_at is not None:
            effects += self._arm(clock.mono - (clock.wall - announced_at))
        outage = clock.wall - last_at if last_at else 0.0
        limit = self.s.void_after_outage_s
        if t.round is not None and limit and outage > limit:
            # House rules: a problem not resolved quickly cancels the round, bets refunded.
            effects += self.process({"type": "void_round", "reason": f"the table was down for "
                                     f"{outage:.0f} s (limit {limit:g} s)"}, "recovery", clock)[0]
        return effects

    def shoe_resume(self):
        """Where the shoe's sequence stood at our last journaled shoe frame, or at the baseline
        taken from its HELLO when we first met this boot of it, whichever is later."""
        if self.shoe_base is None:
            return None
        boot, seq, at_n = self.shoe_base
        n, last = self.last_shoe
        return (boot, last if last is not None and n > at_n else seq)

    # -- one event ------------------------------------------------------------------------------

    def reads(self, event):
        """What the shell must look up in the journal before stepping `event`:
        {"command_reply": id} or {"outbox_from": seq}, or {}."""
        if isinstance(event, Command):
            try:
                cmd = commands.parse(event.payload)
            except commands.CommandError:
                return {}
            if cmd["type"] == "resend":
                if cmd["id"] in self.resends:
                    return {}               # answered already: nothing is read or resent
                start = cmd.get("from")
                if isinstance(start, int) and not isinstance(start, bool) and start >= 1:
                    return {"outbox_from": start}
                return {}
            seq = cmd.get("seq")
            if cmd["type"] == "correct_result" and isinstance(seq, int) and not isinstance(seq, bool) \
                    and seq >= 1:
                return {"command_reply": cmd["id"], "outbox_at": seq}   # the result it corrects
            return {"command_reply": cmd["id"]}
        return {}

    def step(self, event, clock, reads=None):
        """[effects] of one event; what it queued for the broker goes out last (after a
        command's reply: a client sees the answer to its command before the events it caused)."""
        return self._step(event, clock, reads or {}) + self.pump()

    def _step(self, event, clock, reads):
        if isinstance(event, Command):
            return self._command(event, clock, reads)
        if isinstance(event, Published):
            return self._published(event)
        if isinstance(event, TimerDue):
            return self._timer_due(clock)
        if isinstance(event, LocalInput):
            return self.process(event.body, event.origin, clock)[0]
        if isinstance(event, (BrokerConnecting, BrokerUp, BrokerDown)):
            return self._broker(event, clock)
        if isinstance(event, Stop):
            self.stopping = True
            return []
        return self._device(event, clock)

    # -- inputs to the engine -------------------------------------------------------------------

    def process(self, body, origin, clock, shoe_seq=None, command_id=None, decision=None,
                action=None):
        """Step the engine on `body`. Returns ([effects], messages, reply). `decision`: the
        staff rights' decision (controller/rights.py) that let it in, for the audit log."""
        body = dict(body)
        body["ts"] = iso(clock.wall)
        errors = []
        t, outputs = guarded_step(self.table, body, errors.append)
        n = self.next_n
        messages = []
        seq, prev = self.next_seq, self.prev
        for o in outputs:
            # sealed here, once: the outbox keeps these bytes, and every publish, republish
            # after a crash and resend sends them unchanged (signing.py)
            text = _dumps({"seq": seq, "table": self.s.table_id, "v": 1, **o, "prev": prev})
            if self.s.signer is not None:
                text = self.s.signer.seal(text)
            messages.append((seq, text))
            prev = signing.digest(text)
            seq += 1
        reply = None
        if command_id is not None:
            reply = self._reply_of(command_id, outputs, messages)
        kinds = {o["type"] for o in outputs}
        cp = None
        if checkpoint.quiescent(t) and ("shoe_started" in kinds or (
                kinds & {"round_result", "round_voided"} and t.rounds % CHECKPOINT_ROUNDS == 0)):
            cp = checkpoint.encode(t)
        audit = ()
        if decision is not None and (decision.override or decision.who is not None
                                     or decision.confirmed_by is not None):
            rej = outputs[0] if len(outputs) == 1 and outputs[0]["type"] == "rejected" else None
            audit = (self._audit_entry(clock, origin, action or body["type"], command_id, decision,
                                       "accepted" if rej is None else f"rejected:{rej['code']}", n),)
        effects = [Record(n, clock.wall, origin, body, shoe_seq, tuple(messages), command_id,
                          reply, cp, audit)]
        # only now, with the record first in line, does the station adopt the new state
        was_paused = self.table.paused
        self.table = t
        self.next_n = n + 1
        self.next_seq = seq
        self.prev = prev
        self.pending.extend(messages)
        if shoe_seq is not None:
            self.last_shoe = (n, shoe_seq)
        for e in errors:
            effects.append(Log("error", f"defect: the engine raised {type(e).__name__}; the table "
                                        f"is paused (internal_error)\n"
                                        + "".join(traceback.format_tb(e.__traceback__))))
            effects.append(Count("engine_errors_total", (("error", type(e).__name__),)))
        effects += self._counts(body, origin, outputs)
        for o in outputs:      # the code and round only: an irregularity's detail may name a card
            if o["type"] == "irregularity":
                # the pause it caused, or the earlier one it came in (not its cause)
                why = (f", while the table is paused (since an earlier {was_paused})" if was_paused
                       else f": the table pauses ({t.paused})" if t.paused else "")
                where = (f"in round {o['round']}" if o.get("round") is not None
                         else "between rounds")
                effects.append(Log("warning", f"irregularity {o['code']} {where}{why}"))
        if self.s.panel:
            effects.append(Lights(panel_view(expect(t), t)))
        if kinds & set(ANNOUNCE):
            effects += self._arm(clock.mono)
        elif self.timer is not None and expect(t) != self.timer[1]:
            self.timer = None
            effects.append(self._wake())
        if body["type"] != "card":   # a card input is never logged: it may be the hole card
            effects.append(Log("info", f"input {body['type']} from {origin} -> {len(messages)} outputs"))
        if kinds & STATUS_CHANGES:
            effects += self.status_effects()
        if self.s.archive and ("shoe_started" in kinds or (
                not t.game.uses_cards and "round_result" in kinds
                and t.rounds % self.s.archive_rounds == 0)):
            effects.append(Archive())     # the dealer is shuffling: a quiet moment
        return effects, messages, reply

    def _reply_of(self, command_id, outputs, messages):
        if len(outputs) == 1 and outputs[0]["type"] == "rejected":
            r = outputs[0]
            return {"type": "reply", "id": command_id, "status": "rejected", "code": r["code"],
                    "reason": r["reason"]}
        return {"type": "reply", "id": command_id, "status": "accepted",
                "seq": [messages[0][0], messages[-1][0]] if messages else None}

    @staticmethod
    def _counts(body, origin, outputs):
        out = [Count("inputs_total", (("origin", origin),))]
        if body["type"] == "card":
            out.append(Count("cards_read_total", (("source", body.get("source", "shoe")),)))
        elif body["type"] == "card_unreadable":
            out.append(Count("cards_unreadable_total", (("source", body.get("source", "shoe")),)))
        for o in outputs:
            if o["type"] == "rejected":
                out.append(Count("rejected_total", (("code", o["code"]),)))
            elif o["type"] == "irregularity":
                out.append(Count("irregularities_total", (("code", o["code"]),)))
            elif o["type"] == "round_result":
                out.append(Count("rounds_total", (("end", "result"),)))
            elif o["type"] == "round_voided":
                out.append(Count("rounds_total", (("end", "voided"),)))
        return out

    # -- the outbox -----------------------------------------------------------------------------

    def pump(self):
        out = []
        while self.pending and len(self.inflight) < self.s.inflight:
            seq, message = self.pending.popleft()
            self.inflight.add(seq)
            out.append(Publish(seq, message))
        return out

    def _published(self, event):
        if event.seq not in self.inflight:
            return []
        self.inflight.discard(event.seq)
        return [MarkSent(event.seq)]

    # -- timers ---------------------------------------------------------------------------------

    def _arm(self, since):
        e = expect(self.table)
        s = self.s
        if e is not None and e.what == "decision" and s.decision_s > 0:
            self.timer = (since + s.decision_s, e,
                          {"type": "decision_timeout", "seat": e.seat, "hand": e.hand})
        elif e is not None and e.what == "insurance" and s.insurance_s > 0:
            self.timer = (since + s.insurance_s, e, {"type": "insurance_closed"})
        else:
            self.timer = None
        return [self._wake()]

    def _wake(self):
        """The one deadline the loop keeps: the earliest of the decision or insurance timer and
        the broker's CONNACK watch."""
        due = [d for d in (self.timer[0] if self.timer else None, self.broker.wake_at())
               if d is not None]
        return Timer(min(due) if due else None)

    def _timer_due(self, clock):
        """Time has come for one of the deadlines (or none: a wake-up the loop kept from a
        deadline since cancelled); the next one goes back to the loop last."""
        effects = []
        silence = self.broker.due(clock.mono)
        if silence is not None and self.broker.refusal(silence):
            effects += self._broker_said(silence, refused=True)
        if self.timer is not None and clock.mono >= self.timer[0]:
            _, e, body = self.timer
            self.timer = None
            if expect(self.table) == e:
                effects += self.process(body, "timer", clock)[0]
        return effects + [self._wake()]

    # -- the broker link (station_broker.py) ----------------------------------------------------

    def _broker(self, event, clock):
        if isinstance(event, BrokerConnecting):
            self.broker.connecting(clock.mono)
            return [self._wake()]
        if isinstance(event, BrokerUp):
            self.broker.accepted()
            self.devices["broker"] = {"state": "connected", "session_present": event.session_present}
            # the birth: the state now, whatever changed while the broker was away
            return [Log("info", f"broker connected (session present: {event.session_present})"),
                    *self.status_effects(), self._wake()]
        if not self.broker.down(event.reason, event.refused, event.unanswered):
            return [self._wake()]
        return self._broker_said(event.reason, event.refused) + [self._wake()]

    def _broker_said(self, reason, refused):
        self.devices["broker"] = {"state": "disconnected", "reason": reason}
        what = "refused" if refused else "disconnected"
        return [Log("error" if refused else "warning", f"broker {what}: {reason}"),
                *self.status_effects()]

    # -- commands -------------------------------------------------------------------------------

    def _response_topic(self, rt):
        """A v5 response topic must lie in this table's replies tree: elsewhere a client could
        have the table publish into its own events or status topics (a forged event), or where
        the broker's ACL drops it unseen."""
        base = self.s.replies_topic
        if rt is None or ((rt == base or rt.startswith(base + "/")) and len(rt) <= 256
                          and not any(c in rt for c in "+#\0")):
            return None
        return (f"response topic must be {base} or under {base}/ (a table publishes its replies "
                f"nowhere else)")

    def _command(self, ev, clock, reads):
        try:
            bad_topic = self._response_topic(ev.response_topic)
            if bad_topic:
                ev = ev._replace(response_topic=None)
                try:         # the reply names the command it refuses, when the command has an id
                    cid = commands.parse(ev.payload)["id"]
                except commands.CommandError as e:
                    cid = e.id
                raise commands.CommandError("malformed", bad_topic, cid)
            cmd = commands.parse(ev.payload)
            if cmd["type"] == "resend" and cmd["id"] in self.resends:
                prior = self.resends[cmd["id"]]
                effects, reply = [], {**prior, "status": "duplicate", "original": prior["status"]}
            elif cmd["type"] == "resend":
                effects, reply = self._resend(cmd, reads.get("outbox_rows", ()))
                self.resends[cmd["id"]] = reply
                while len(self.resends) > RESEND_IDS:
                    self.resends.popitem(last=False)
            else:
                prior = reads.get("command_reply")
                if prior is not None:
                    effects = []
                    reply = {**prior, "status": "duplicate", "original": prior["status"]}
                else:
                    confirmer = cmd.get("confirmed_by")
                    d = rights.decide(self.s.staff, cmd["type"], cmd.get("by"), ev.user,
                                      cmd.get("reason"), bool(self.table.pending),
                                      confirmed_by=confirmer if isinstance(confirmer, str) else None)
                    if d.code is None and cmd["type"] == "correct_result":
                        self._corrects(cmd, reads.get("outbox_row"))
                    if d.code is not None:
                        effects = self._refuse_right(clock, "command", cmd["type"], cmd["id"], d)
                        reply = {"type": "reply", "id": cmd["id"], "status": "rejected",
                                 "code": d.code, "reason": d.reason}
                    else:
                        body = commands.to_input(cmd)
                        need = SCHEMAS.get(body["type"], {}).get("by")
                        if d.who is not None and "by" not in body and need and need[1]:
                            body["by"] = d.who     # required: the login the broker vouched for
                        effects, _, reply = self.process(body, "command", clock,
                                                         command_id=cmd["id"], decision=d,
                                                         action=cmd["type"])
        except commands.CommandError as e:
            # kept before the PUBACK: a poison command is on record once, never delivered again
            effects = [Refuse("command", e.code, e.reason, bytes(ev.payload[:REFUSED_KEEP])),
                       Count("commands_refused_total", (("code", e.code),))]
            reply = {"type": "reply", "id": e.id, "status": "rejected", "code": e.code,
                     "reason": e.reason}
        return effects + [Reply(reply, ev.response_topic, ev.correlation),
                          AckCommand(ev.mid, ev.qos)]

    @staticmethod
    def _corrects(cmd, row):
        """A correction names the published result it corrects by its sequence number: that
        message must be the round's `round_result` (or an earlier correction of it). The engine
        cannot see sequence numbers; without this a voided round could be given a result."""
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

    def _resend(self, cmd, rows):
        start = cmd.get("from")
        if not isinstance(start, int) or isinstance(start, bool) or start < 1:
            raise commands.CommandError("malformed", "resend.from: the first sequence number wanted",
                                        cmd["id"])
        # as every other command: a field it does not take is an error, never silently dropped
        extra = sorted(set(cmd) - {"type", "id", "from", "by", "reason"})
        if extra:
            raise commands.CommandError("malformed", f"resend.{extra[0]}: unknown field", cmd["id"])
        queued = {s for s, _ in self.pending}
        self.pending.extendleft(reversed([r for r in rows if r[0] not in queued]))
        reply = {"type": "reply", "id": cmd["id"], "status": "accepted",
                 "seq": [rows[0][0], rows[-1][0]] if rows else None}
        return [], reply

    # -- devices --------------------------------------------------------------------------------

    def _device(self, e, clock):
        if isinstance(e, (CardRead, CardUnreadable, CutCard)):
            seq = getattr(e, "seq", None)
            effects = self.process(e.as_input(), "shoe", clock, shoe_seq=seq)[0]
            if seq is not None and self.s.shoe_acks:
                effects.append(AckShoe(seq))      # only now may the shoe forget it
            return effects
        if isinstance(e, ShoeHello):
            effects = []
            resume = self.shoe_resume()
            if resume is None or resume[0] != e.boot:
                # A shoe (or a boot of it) we have not met: its current position is the
                # baseline, so a card drawn while we are away later is asked for again.
                self.shoe_base = (e.boot, e.last_seq, self.next_n - 1)
                effects.append(SetMeta("shoe_base", ":".join(map(str, self.shoe_base))))
            self.devices["shoe"] = {**self.devices.get("shoe", {}), "model": e.model,
                                    "firmware": e.firmware, "serial": e.serial}
            return effects
        if isinstance(e, ShoeStatus):
            self.devices.setdefault("shoe", {})["report"] = {
                "door": e.door, "jam": e.jam, "sensor": e.sensor, "light": e.light, "gate": e.gate}
            bad = [why for why, on in (("door open", e.door == "open"), ("jam", e.jam),
                                       ("sensor fault", e.sensor != "ok"),
                                       ("low light", e.light != "ok")) if on]
            self._health("shoe", report=", ".join(bad) or None)
            return self._sync_faults(clock)
        if isinstance(e, PanelPress):
            return self._panel(e, clock)
        if isinstance(e, (WheelState, WinningNumber, WheelException)):
            return self._wheel(e, clock)
        if isinstance(e, CardSeen):
            return self.process(e.as_input(), "camera", clock)[0]
        if isinstance(e, CardGone):
            return [Count("cards_picked_up_total", (("zone", e.zone),))]
        if isinstance(e, DeviceState):
            effects = []
            if e.device == "wheel" and e.state == "connected" and self.s.wheel_auto_start:
                effects += [WheelCommand("run"), WheelCommand("start_game")]
            d = self.devices.setdefault(e.device, {})
            d["state"] = e.state
            d["reason"] = e.detail.get("reason")
            level = "info" if e.state in ("connected", "ok") else "warning"
            why = e.detail.get("reason") or e.state
            if e.state == "connected":      # the line is back (a stall ends the same way)
                self._health(e.device, link=None, fault=None)
            elif e.state == "disconnected":
                self._health(e.device, link=f"disconnected: {why}")
            elif e.state == "fault":
                self._health(e.device, fault=why)
            elif e.state == "ok":
                self._health(e.device, fault=None)
            effects += [Log(level, f"{e.device} {e.state} {e.detail.get('reason') or ''}".rstrip())]
            effects += self._sync_faults(clock)
            return effects + self.status_effects()
        return [Log("warning", f"event of unknown kind {type(e).__name__} dropped"),
                Count("events_dropped_total", (("kind", type(e).__name__),))]

    def _health(self, device, **causes):
        h = self.health.setdefault(device, {})
        for cause, why in causes.items():
            if why is None:
                h.pop(cause, None)
            else:
                h[cause] = why

    def required(self):
        """The devices a round cannot be played without (the camera only cross-checks)."""
        return ("shoe", "scanner") if self.table.game.uses_cards else ("wheel",)

    def _sync_faults(self, clock):
        """RULES.md: a required device down pauses the round and holds the next betting; its
        return lets the round go on. The engine keeps which devices are down (journaled, so
        replay and recovery agree); the station reports each change of a device's health to it
        as a `device_fault` / `device_restored` input."""
        effects = []
        down = {d for d, _ in self.table.faults}
        for dev in self.required():
            h = self.health.get(dev)
            if h is None:
                continue                       # not heard from since the start: nothing known
            if h and dev not in down:
                reason = "; ".join(h[k] for k in sorted(h))[:500]
                effects += self.process({"type": "device_fault", "device": dev, "reason": reason},
                                        "device", clock)[0]
            elif not h and dev in down:
                effects += self.process({"type": "device_restored", "device": dev}, "device",
                                        clock)[0]
        return effects

    def _panel(self, e, clock):
        if e.button == "key":
            self.devices.setdefault("panel", {})["key"] = e.armed
            return self.status_effects()
        if e.button == "void" and not e.armed:
            return [Log("warning", "void pressed without the pit boss key: ignored")]
        who = "panel-key" if self.devices.get("panel", {}).get("key") else "panel"
        kind = PANEL_COMMANDS[e.button]
        body = PANEL_INPUTS[e.button]
        d = rights.decide(self.s.staff, kind, who, None, body.get("reason", "pit boss key"),
                          bool(self.table.pending), panel=True)
        if d.code is not None:
            return self._refuse_right(clock, "panel", kind, None, d)
        return self.process(body, "panel", clock, decision=d, action=kind)[0]

    # -- staff rights and the audit log ---------------------------------------------------------

    def _chain(self, doc):
        text, h = signing.chain_entry(self.audit_head, doc)
        self.audit_head = h
        return text, h

    def _audit_entry(self, clock, origin, action, command_id, d, result, input_n=None):
        """One audit log entry, chained to the one before (signing.chain_entry)."""
        return self._chain({"at": iso(clock.wall), "origin": origin, "action": action,
                            "id": command_id, "who": d.who, "role": d.role,
                            "override": d.override, "reason": d.reason, "result": result,
                            "input": input_n,
                            **({"confirmed_by": d.confirmed_by} if d.confirmed_by else {})})

    def boot(self, clock, info):
        """The audit log's entry for a start of the software: version, configuration hash, key
        id, and the input number it starts after (the round export finds it there)."""
        return Audit(self._chain({"at": iso(clock.wall), "action": "start", "origin": "system",
                                  "after_input": self.next_n - 1, **info}))

    def _refuse_right(self, clock, origin, kind, command_id, d):
        """A command its sender may not give: never reaches the engine (nor the journal's
        inputs, so replay is untouched); the refusal is in the audit log."""
        return [Audit(self._audit_entry(clock, origin, kind, command_id, d, f"rejected:{d.code}")),
                Count("rejected_total", (("code", d.code),)),
                Log("warning", f"{kind} from {d.who or origin} ({d.role or 'no role'}) rejected: "
                               f"{d.code}")]

    def _wheel(self, e, clock):
        """The wheel runs the roulette round: no more bets closes betting, the winning number
        ends the round, the guide's exceptions void it (section 4.1)."""
        t = self.table
        if isinstance(e, WheelState):
            self.devices.setdefault("wheel", {})["wheel_state"] = e.name
            effects = []
            if not e.flags & 4 and self.health.get("wheel", {}).get("component"):
                self._health("wheel", component=None)       # the sensor/motor fault cleared
                effects += self._sync_faults(clock)
            t = self.table
            if e.state == 4 and t.round is None and not t.paused and not t.faults:
                effects += self.process({"type": "betting_closed"}, "wheel", clock)[0]
            return effects
        if isinstance(e, WinningNumber):
            effects = self.process({"type": "winning_number", "number": e.number, "spin": e.spin},
                                   "wheel", clock)[0]
            if self.s.wheel_auto_start:
                effects.append(WheelCommand("start_game"))
            return effects
        effects = [Log("warning", f"wheel: {e.kind} on spin {e.spin} {e.detail}")]
        if e.kind == "component_fault":
            # RULES.md: the wheel's sensor fault pauses the round (device_fault); it goes on if
            # the fault clears in time, else the supervisor voids it
            self._health("wheel", component=f"component fault {e.detail.get('code') or e.detail.get('reason') or ''}".strip())
            d = self.devices.setdefault("wheel", {})
            d["state"], d["reason"] = "fault", e.kind
            return effects + self._sync_faults(clock) + self.status_effects()
        if e.kind == "number_mismatch":
            # two numbers for one spin: a malfunction (RULES.md); the engine pauses the table for
            # the supervisor, who confirms one number or voids the round
            d = e.detail
            return effects + self.process({"type": "number_mismatch", "first": d["first"],
                                           "then": d["then"], "spin": e.spin}, "wheel",
                                          clock)[0]
        if e.kind == "miss_spin":
            if t.round is not None:
                effects += self.process({"type": "miss_spin", "spin": e.spin}, "wheel", clock)[0]
            effects.append(WheelCommand("ack_void"))      # the wheel spins again from place bets
        elif e.kind in ("failed_launch", "no_ball"):
            if t.round is not None:
                effects += self.process({"type": "void_round",
                                         "reason": f"wheel: {e.kind.replace('_', ' ')}"}, "wheel",
                                        clock)[0]
            d = self.devices.setdefault("wheel", {})
            d["state"], d["reason"] = "fault", e.kind
            effects += self.status_effects()
        return effects

    # -- what the station shows -----------------------------------------------------------------

    def expectation(self):
        return expect(self.table)

    def status(self):
        return {"state": "online", "version": self.s.version, "table": self.s.table_id,
                "profile": self.s.profile.name, "devices": self.devices,
                "last_seq": self.next_seq - 1, "snapshot": public_snapshot(self.table)}

    def status_effects(self):
        """The status changed: the console reads it again, and the broker gets it retained, but
        only while connected. A status travels through the broker, so it can only say connected;
        one made while away (the shoe's HELLO before the first connect) would be queued by paho
        and delivered ahead of the birth that says the broker is connecting. The birth on
        connect (BrokerUp) carries the state then."""
        if self.devices.get("broker", {}).get("state") != "connected":
            return [Refresh()]
        return [Refresh(), Status(json.loads(json.dumps(self.status())))]  # a copy: devices change

    def gauges(self):
        g = {("outbox_depth", ()): len(self.pending) + len(self.inflight),
             ("round_phase", (("phase", self.table.phase),)): 1,
             ("paused", ()): int(bool(self.table.paused))}
        for name, d in self.devices.items():
            g[("device_up", (("device", name),))] = int(d.get("state") in ("connected", "ok"))
        return g


def step(station, event, clock, reads=None):
    """The functional form: (station, effects)."""
    return station, station.step(event, clock, reads)
