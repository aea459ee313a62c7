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
  PUBACK; `resend` queues the journal's events again, read a page per loop turn
  (station_resend.py);
- decision and insurance timers are armed from the announcement and fire only if the table still
  waits for the same thing; after a restart they are re-armed from the journaled announcement;
- a round interrupted longer than `void_after_outage_s` is voided at recovery: the outage counted
  from the last moment the table was known alive, its last input or the `alive_at` stamp it
  journals while a round waits (station_alive.py), by the monotonic clock within one boot, by a
  synchronised wall clock across a reboot, and never guessed: uncounted, the round pauses
  (`outage_unmeasured`, station_outage.py);
- where the shoe resumes after a restart; the wheel's automatic start; device health in the status;
- the broker link (station_broker.py): a status only while the broker is connected, a CONNECT
  left unanswered said after `broker.connack_timeout_s`, a refusal said once per cause;
- the commands path (station_probe.py): a loopback probe on `commands` at every connect and
  every `broker.probe_interval_s`; no echo by its deadline says the table is deaf.
"""
import datetime
import json
import traceback
from collections import OrderedDict, deque

from controller import checkpoint, expect, guarded_step, new_table
from controller.snapshot import public_snapshot
from drivers.panel import panel_view

from . import signing
from .station_alive import AliveWatch, input_point, measure, parse_bases, stamp_point
from .station_broker import BrokerWatch, said_as
from .station_outage import StationOutage
from .station_probe import ProbeWatch
from .station_refusals import RefusalBudget
from .station_resend import ResendQueue
from .station_commands import StationCommands
from .station_devices import StationDevices
from .station_settings import CONFIG, Settings  # noqa: F401 - the station's [timers] and settings
from .station_types import (AckCommand, Archive, Audit, BrokerConnecting, BrokerDown, BrokerUp,
                            Command, Count, LocalInput, Log, Probe, ProbeRefused, Publish,
                            Published, Record, Refresh, ResendRows, SetMeta, Status, Stop, Timer,
                            TimerDue, Lights, MarkSent, Why)

ANNOUNCE = ("awaiting_decision", "insurance_offered")
STATUS_CHANGES = {"shoe_started", "round_result", "round_voided", "round_paused", "round_resumed",
                  "shuffle_due", "burn_complete", "round_started"}
# Between rounds the state is small and written out whole: at every new shoe, and after every
# CHECKPOINT_ROUNDS-th round (a checkpoint is some 15 KB to write; recovery replays at most that
# many rounds, a few milliseconds).
CHECKPOINT_ROUNDS = 10
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def iso(wall):
    return datetime.datetime.fromtimestamp(wall, datetime.timezone.utc).isoformat(
        timespec="milliseconds")


class Station(StationCommands, StationDevices, StationOutage):
    """The commands' rules are in station_commands.py, the devices' in station_devices.py, the
    broker link's in station_broker.py; the journal, the outbox, timers, recovery, the audit
    chain and the status here."""

    def __init__(self, settings, probe_seed="0"):
        self._s = None
        self.broker = BrokerWatch()
        # the seed of the probes' nonces: random per process, the shell's (the core has none)
        self.probe = ProbeWatch(probe_seed)
        self.refusals = RefusalBudget()    # refused commands kept, then counted
        self.alive = AliveWatch()          # the proof of life for the outage rule
        self.alive_at = None               # the journal's stamp at restore (a Point), or None
        # an outage this run could not count at recovery, to count once the clock is
        # synchronised: (wall last known alive, mono at recovery), or None
        self.outage_wait = None
        self.outage_check = None           # when it is looked at next (mono)
        self.s = settings
        self.table = new_table(settings.profile)
        self.next_n = 1            # the journal's next input number
        self.next_seq = 1          # the table's next event sequence number
        self.prev = signing.GENESIS  # chain hash of the message seq next_seq - 1
        self.audit_head = signing.GENESIS  # hash of the audit log's newest entry
        self.pending = deque()     # (seq, message) journaled, not yet handed to the broker
        self.inflight = set()      # seqs handed to the broker, not yet acknowledged
        self.timer = None          # (monotonic deadline, expectation, input)
        self.devices = {"broker": {"state": "connecting"}, "commands": self.probe.device()}
        # device -> {cause: reason} of what holds a device down now ({} = up; absent = not heard
        # from yet). Causes: "link" (disconnected), "fault" (the driver's fault state: a stalled
        # line, a scanner node refused), "report" (the shoe's own status: jam, door, sensor,
        # light), "component" (the wheel's sensor/motor/encoder fault).
        self.health = {}
        self.shoe_base = None      # (boot, seq, input n) from the first HELLO of a shoe's boot
        self.last_shoe = (0, None)  # (input n, shoe seq) of the last journaled shoe frame
        # (boot, shoe seq, input n) of the last STAT frame acknowledged: a status is no input,
        # so its position is kept apart (meta shoe_pos), written before the ACK
        self.shoe_pos = None
        self.stopping = False
        self.recovery = None
        # the ids of the last RESEND_IDS (station_commands.py) resends and their replies: a
        # betting system sends an unanswered command again with the same id, and across a broker
        # outage every copy of a `resend` arrives at once; each one republishing the tail
        # multiplied it (a 60 s outage of a studio's central tier: a roulette table's 44 events
        # delivered 650-860 times)
        self.resends = OrderedDict()
        # what resends asked for, read from the journal a page per loop turn, and published
        # ahead of the new events (station_resend.py)
        self.resend = ResendQueue()

    @property
    def s(self):
        return self._s

    @s.setter
    def s(self, settings):
        """The settings (a reload replaces them): the broker watch takes its share."""
        self._s = settings
        self.broker.configure(settings.broker, settings.connack_timeout_s)
        self.probe.configure(settings.probe_timeout_s, settings.probe_interval_s,
                             settings.commands_topic)
        self.refusals.configure(settings.refused_keep, settings.refused_window_s)

    # -- recovery -------------------------------------------------------------------------------

    def restore(self, checkpoints, next_n, next_seq, shoe_base=None, last_shoe=(0, None),
                last_message=None, audit_head=None, shoe_pos=None, broker_answered=None,
                alive_at=None, clock_base=None):
        """Pick the newest checkpoint this version reads. Returns (input n to replay after,
        [effects]) (a Log for each checkpoint passed over). `last_message`: the journal's newest
        outbox text (the event chain goes on from its hash); `audit_head`: the newest audit hash;
        `shoe_pos`: the meta "boot:seq:n" of the last STAT frame acknowledged; `broker_answered`:
        the meta "host:port" of the broker that last accepted this station (BrokerWatch);
        `alive_at`: the meta stamp of when it was last known alive, `clock_base`: the clock
        facts of the inputs (station_alive.py)."""
        self.next_n, self.next_seq = next_n, next_seq
        self.prev = signing.digest(last_message) if last_message else signing.GENESIS
        if audit_head:
            self.audit_head = audit_head
        self.last_shoe = tuple(last_shoe)
        if shoe_base:
            boot, seq, at_n = (int(x) for x in shoe_base.split(":"))
            self.shoe_base = (boot, seq, at_n)
        if shoe_pos:
            self.shoe_pos = tuple(int(x) for x in shoe_pos.split(":"))
        if broker_answered:
            self.broker.remember(broker_answered)
        self.alive_at = stamp_point(alive_at, next_n - 1)
        self.alive.bases = parse_bases(clock_base)
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
        # down since the table was last known alive: its stamp if it came after the last input,
        # else that input; counted on a clock that can be trusted, or not at all
        # (station_alive.measure)
        point = None
        if last_at is not None:
            point = self.alive_at or input_point(last_at, self.next_n - 1, self.alive.bases)
        limit = self.s.void_after_outage_s
        self.alive.start(clock.mono, limit)
        if t.round is not None and limit and point is not None:
            outage, why = measure(point, clock)
            if outage is None:
                effects += self._unmeasured(point, why, clock)
            elif outage > limit:
                # House rules: a problem not resolved quickly cancels the round, bets refunded.
                effects += self.process({"type": "void_round", "reason": f"the table was down for "
                                         f"{outage:.0f} s (limit {limit:g} s)"}, "recovery",
                                        clock)[0]
        return effects + [self._wake()]

    def shoe_resume(self):
        """Where the shoe's sequence stood at the last frame we acknowledged (a journaled card
        frame or a STAT frame), or at the baseline taken from its HELLO when we first met this
        boot of it, whichever is later."""
        if self.shoe_base is None:
            return None
        boot, seq, at_n = self.shoe_base
        # ordered by input number; at one number, the card row was journaled before the HELLO
        # took it as its baseline, and a STAT of this boot came after both
        at = [((at_n, 1), seq)]
        n, last = self.last_shoe
        if last is not None and n > at_n:
            at.append(((n, 0), last))
        if self.shoe_pos is not None and self.shoe_pos[0] == boot:
            _, pos, pos_n = self.shoe_pos
            at.append(((pos_n, 2), pos))
        return (boot, max(at)[1])

    # -- one event ------------------------------------------------------------------------------

    def step(self, event, clock, reads=None):
        """[effects] of one event; what it queued for the broker goes out last (after a
        command's reply: a client sees the answer to its command before the events it caused)."""
        return self._step(event, clock, reads or {}) + self.pump()

    def _step(self, event, clock, reads):
        if isinstance(event, Command):
            # judged by when it was received, not handled: a loop starved past the deadline with
            # the echo queued in time said "broker ACL?" (cold39: 5 of 6 kill -9 restarts)
            if event.user is None and self.probe.echo(event.payload, clock.received_mono):
                return self._probe_said() + [AckCommand(event.mid, event.qos), self._wake()]
            if event.user is not None:
                # a flood on commands/<login> delays the probe as one on `commands` does: without
                # this it expired as "broker ACL?" (cold trial: 50,000 on 20 logins' topics)
                self.probe.other(clock.received_mono)
            return self._command(event, clock, reads)
        if isinstance(event, Published):
            return self._published(event)
        if isinstance(event, ResendRows):
            return self.resend.rows(event.lo, event.hi, event.rows)
        if isinstance(event, ProbeRefused):
            self.probe.refused(event.reason)
            return self._probe_said()
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
                action=None, counted=None):
        """Step the engine on `body`. Returns ([effects], messages, reply). `decision`: the
        staff rights' decision (controller/rights.py) that let it in, for the audit log.
        `counted(reply)`: for a rejection that left the table as it was, the effects that count
        it instead of journaling it (a flood's, station_refusals.py), or None to journal it."""
        body = dict(body)
        # when the table received it (docs/protocol.md): the decision timer honours that
        # moment (a decision received in time is applied, however late the loop handles it),
        # so the record shows it, not the handling after a flood's queue
        body["ts"] = iso(clock.wall if clock.received is None else clock.received)
        errors = []
        t, outputs = guarded_step(self.table, body, errors.append)
        if counted is not None and t is self.table and not errors and len(outputs) == 1 \
                and outputs[0]["type"] == "rejected":
            reply = self._reply_of(command_id, outputs, ())
            effects = counted(reply)
            if effects is not None:
                return effects, [], reply
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
        # the clock facts of this input, on record before it (station_alive.py)
        effects = self.alive.observe(clock, n, self.s.void_after_outage_s)
        effects.append(Record(n, clock.wall, origin, body, shoe_seq, tuple(messages), command_id,
                              reply, cp, audit))
        # only now, with the record first in line, does the station adopt the new state
        was_paused = self.table.paused
        self.alive.input(clock.mono)
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
        """Hand the broker what it has room for: what a resend read first (as a resend's whole
        range was queued ahead of the new events before it was paged), then the new events."""
        out = []
        ahead = self.resend.ahead
        while (ahead or self.pending) and len(self.inflight) < self.s.inflight:
            seq, message = ahead.popleft() if ahead else self.pending.popleft()
            self.inflight.add(seq)
            out.append(Publish(seq, message))
        return out

    def outbox_depth(self):
        """Events journaled and not yet acknowledged by the broker: queued, in flight, resent."""
        return len(self.pending) + len(self.inflight) + len(self.resend)

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
        """The one deadline the loop keeps: the earliest of the decision or insurance timer,
        the broker's CONNACK watch, the commands probe, the next proof of life and the next look
        at the clock while an outage waits for it."""
        due = [d for d in (self.timer[0] if self.timer else None, self.broker.wake_at(),
                           self.probe.wake_at(), self.alive.wake_at(), self._outage_wake())
               if d is not None]
        return Timer(min(due) if due else None)

    def _timer_due(self, clock):
        """Time has come for one of the deadlines (or none: a wake-up the loop kept from a
        deadline since cancelled); the next one goes back to the loop last."""
        effects = []
        silence = self.broker.due(clock.mono)
        if silence is not None and self.broker.refusal(silence, Why.NO_ANSWER):
            effects += self._broker_said(silence, True, Why.NO_ANSWER)
        probe = self.probe.due(clock.mono)
        effects += self._probe_said()
        if probe is not None:
            effects.append(Probe(probe))
        if self.timer is not None and clock.mono >= self.timer[0]:
            _, e, body = self.timer
            self.timer = None
            if expect(self.table) == e:
                effects += self.process(body, "timer", clock)[0]
        effects += self.alive.due_now(clock, self.s.void_after_outage_s,
                                      self.table.round is not None, self.next_n - 1)
        effects += self._outage_due(clock)
        return effects + [self._wake()]

    # -- the broker link (station_broker.py) ----------------------------------------------------

    def _broker(self, event, clock):
        if isinstance(event, BrokerConnecting):
            self.broker.connecting(clock.mono)
            return [self._wake()]
        if isinstance(event, BrokerUp):
            keep = self.broker.accepted()
            self.devices["broker"] = {"state": "connected", "session_present": event.session_present}
            probe = self.probe.up(clock.mono)
            # the birth: the state now, whatever changed while the broker was away
            return [*([SetMeta("broker_answered", self.broker.where)] if keep else []),
                    Log("info", f"broker connected (session present: {event.session_present})"),
                    *self.status_effects(), Probe(probe), self._wake()]
        self.probe.down()
        if not self.broker.down(event.reason, event.refused, event.unanswered, event.kind):
            return [self._wake()]
        return self._broker_said(event.reason, event.refused, event.kind) + [self._wake()]

    def _probe_said(self):
        """The probe's verdict, said when it changes (the status and a log line)."""
        now = self.probe.device()
        if now == self.devices.get("commands"):
            return []
        self.devices["commands"] = now
        line = (Log("info", "commands path checked: the broker delivers this table's commands")
                if now["state"] == "ok" else Log("error", now.get("reason", "commands unknown")))
        return [line, *self.status_effects()]

    def _broker_said(self, reason, refused, kind=None):
        self.devices["broker"] = {"state": "disconnected", "reason": reason}
        level, words = said_as(kind, refused)
        return [Log(level, f"{words}: {reason}"), *self.status_effects()]

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
        g = {("outbox_depth", ()): self.outbox_depth(),
             ("round_phase", (("phase", self.table.phase),)): 1,
             ("paused", ()): int(bool(self.table.paused))}
        for name, d in self.devices.items():
            g[("device_up", (("device", name),))] = int(d.get("state") in ("connected", "ok"))
        return g


def step(station, event, clock, reads=None):
    """The functional form: (station, effects)."""
    return station, station.step(event, clock, reads)
