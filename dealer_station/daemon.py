"""The dealer-station daemon: one process per table, the shell around the station core.

One thread owns the state. Drivers and MQTT callbacks only put items on `self.q`; the loop takes
an item, turns it into a station event, looks up what the station asks for in the journal, steps
the station core (dealer_station/station.py: the daemon's rules, pure) and carries out the effects
it returns, in order: the journal transaction first, then publishing, acknowledgements, replies,
lights, timers, metrics and logs.

Its parts, each a mixin of `Daemon`: daemon_effects.py (the effects carried out), daemon_devices.py
(the devices and services built and watched, health) and daemon_lifecycle.py (start, integrity
check, reload, close); the loop, its queue's items and the recovery stay here.
"""
import logging
import os
import queue
import signal
import sqlite3
import time
import traceback

from . import __version__
from .clock_facts import ClockFacts
from .daemon_devices import Devices
from .daemon_effects import Effects
from .daemon_lifecycle import IntegrityFailed, Lifecycle
from .journal import Journal, JournalError
from .loop_queue import Busy, StampedQueue
from .metrics import Metrics
from .mqtt_link import MqttLink
from .notify import Notifier
from .station import Settings, Station
from .station_busy import busy
from .station_types import (BrokerConnecting, BrokerDown, BrokerUp, Clock, Command, ProbeRefused,
                            Published, Refuse, Stop, TimerDue, Why)

__all__ = ["Daemon", "IntegrityFailed", "clock", "RELOAD", "PASS_ITEMS", "PASS_S",
           "STORAGE_ERRORS"]     # IntegrityFailed re-exported: cli.py takes it from here

log = logging.getLogger("dealer-station")
STORAGE_ERRORS = (JournalError, sqlite3.Error, MemoryError)


RELOAD = object()     # queued by SIGHUP: the loop re-reads the configuration
# One pass of the loop takes at most this many queued items, for at most this long, then serves
# its timers, the watchdog and /healthz before the rest. A flood on `commands` (every command
# journaled and acknowledged, and the broker sends the next at once) kept the queue full: one
# pass ran 45 s on 20,000 commands, no watchdog ping for 59 s (systemd's WatchdogSec=10 kills the
# table) and /healthz said "the main loop has not reported" (cold trial).
PASS_ITEMS = 200
PASS_S = 0.5
BACKLOG = 200       # messages held by the MQTT link before commands wait (Daemon._open; at most
#                     half of broker.inflight, paho's in-flight window)
DROPPED_SAY_S = 60.0    # QoS 0 commands dropped (loop_queue.BUSY_MAX): said at most this often


FACTS = ClockFacts()      # the wall clock's synchronisation and this boot (clock_facts.py)


def clock():
    mono = time.monotonic()
    return Clock(time.time(), mono, synced=FACTS.synced(mono), boot=FACTS.boot)


class Daemon(Lifecycle, Devices, Effects):
    def __init__(self, cfg):
        self.cfg = cfg
        self.profile = cfg["profile"]
        self.table_id = cfg["table"]["id"]
        self.q = StampedQueue()            # items with the time they were put, in per-source
        #                                    lanes taken in turn (loop_queue.py)
        self.journal = Journal(cfg["paths"]["journal"], self.table_id, self.profile.name)
        self.signer = None
        if cfg["integrity"]["signing_key"]:
            from .signing import Signer, load_private
            self.signer = Signer(load_private(cfg["integrity"]["signing_key"]))
        # the probes' nonces start from a random seed: no other client can make one in advance
        seed = os.urandom(8).hex()
        self.station = Station(Settings.from_config(cfg, __version__, self.signer),
                               probe_seed=seed)
        # our probes' echoes get a lane of their own, which the timers wait for (loop_queue.py)
        self.q.probe_prefix = f'{{"type":"probe","nonce":"{seed}-'.encode()
        j = self.journal
        self.from_n, restore_logs = self.station.restore(
            j.checkpoints(), j.last_input()[0] + 1, j.next_seq, j.get_meta("shoe_base"),
            j.last_shoe_seq(), j.last_message(), j.audit_head(), j.get_meta("shoe_pos"),
            j.get_meta("broker_answered"), j.get_meta("alive_at"), j.get_meta("clock_base"))
        self.timer_at = None               # monotonic deadline of the station's timer (its
        #                                    decision or insurance timer, the CONNACK watch)
        self.mids = {}                     # paho mid -> outbox seq
        self.probe_mids = set()            # paho mids of the commands probes (station_probe.py)
        self.sent = []                     # seqs acknowledged by the broker, marked in a batch
        # the shoe's position from STAT frames, written once per burst of queued items (each
        # write is an fsync, ~2-8 ms: a door chattering at 100 frames a second held the loop a
        # third of the time), and the shoe ACKs held until it is written (_flush_position)
        self.pos_write = None
        self.held_acks = []
        # a flood's counted refusals (station_refusals.py), summed and written once per burst as
        # the position is, each command's PUBACK held until then: a crash before it has the
        # broker deliver them again, to be counted again (station_refusals.tally)
        self.counts_write = {}
        self.ids_write = []               # their counted refusals with an id (Refuse): the ids
        self.held_cmd_acks = []           # replies and PUBACKs behind counts not yet written
        self.held_replies = 0             # the replies among them (_open)
        # below paho's in-flight window: an event handed to the link is sent at once, never
        # queued in paho behind replies waiting for that window (_open)
        self.backlog_max = max(1, min(BACKLOG, cfg["broker"]["inflight"] // 2))   # inflight 1: 1
        self.dropped = {}                 # QoS 0 commands dropped by login, not yet logged
        self.dropped_said = float("-inf")
        self.put_at = None                # the item handled: when it was put (monotonic)
        self.link = MqttLink(cfg["broker"], self.table_id, self.q.put,
                             {"state": "offline", "table": self.table_id, "reason": "connection lost"})
        self.shoe = self._build_shoe()
        self.panel = self._build_panel()
        self.camera = self._build_camera()
        self.wheel = self._build_wheel()
        self.metrics = Metrics({"version": __version__, "table": self.table_id,
                                "profile": self.profile.name})
        self.notifier = Notifier()
        self.metrics_at = 0.0
        self.console = self.hub = None
        self.console_dirty = False
        self.console_down = None        # why the console could not start
        if cfg["console"]["enabled"]:
            self._build_console()
        for e in restore_logs:
            self.do(e)

    @property
    def table(self):
        return self.station.table

    @property
    def recovery(self):
        return self.station.recovery

    @property
    def devices(self):
        return self.station.devices

    @property
    def stopping(self):
        return self.station.stopping

    # -- start and stop -----------------------------------------------------------------------

    def recover(self):
        """Rebuild the state from the journal (pure replay), re-arm timers, queue unsent output."""
        t0 = time.perf_counter()
        from .integrity import config_hash
        self.do(self.station.boot(clock(), {
            "version": __version__, "config_hash": config_hash(self.cfg),
            "signing_key": self.signer.kid if self.signer else None,
            "manifest": getattr(self, "manifest_checked", None)}))
        log.info("events %s", f"signed (Ed25519, key {self.signer.kid})" if self.signer
                 else "unsigned (no integrity.signing_key)")
        for e in self.station.replay(self.journal.inputs_after(self.from_n), self.journal.unsent(),
                                     clock(), self.from_n):
            self.do(e)
        self.station.recovery["seconds"] = round(time.perf_counter() - t0, 4)
        log.info("recovered: %s", self.station.recovery)
        return self.station.recovery

    def request_stop(self, *_):
        self.q.put(Stop())

    def request_reload(self, *_):
        self.q.put(RELOAD)

    def run(self, config_path="?"):
        self.config_path = config_path
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        signal.signal(signal.SIGHUP, self.request_reload)
        log.info("starting dealer-station %s: config %s, table %s, profile %s, journal %s",
                 __version__, config_path, self.table_id, self.profile.name,
                 self.cfg["paths"]["journal"])
        t0 = time.monotonic()
        why = "stopped"
        self.check_integrity()
        self.start()
        try:
            while not self.stopping:
                self.run_once(0.5)
        except BaseException as e:
            why = f"ended by {type(e).__name__}"
            raise
        finally:
            self.close()
            log.info("dealer-station %s %s after %.0f s: %d rounds, outbox %d unsent",
                     __version__, why, time.monotonic() - t0, self.table.rounds if self.table
                     else 0, self.station.outbox_depth())

    # -- the loop -----------------------------------------------------------------------------

    def run_once(self, max_wait):
        q = self.q
        wait = max_wait
        oldest = q.oldest()
        if self.timer_at is not None and (oldest is None or oldest >= self.timer_at):
            # (a timer waiting on an item queued before its deadline waits for that item: a
            # sender's lane held for the link's backlog opens at a PUBACK, which wakes the drain)
            wait = max(0.0, min(wait, self.timer_at - time.monotonic()))
        q.drain(wait, *self._open())
        taken, until, gathered = 0, time.monotonic() + PASS_S, False
        while True:
            # past the timer's deadline, only items put before it: the timer goes next
            due = self.timer_at is not None and self.timer_at <= time.monotonic()
            try:
                item = q.take(self.timer_at if due else None, *self._open())  # lanes in turn
            except queue.Empty:
                # counted refusals waiting for their write: the rest of their window first,
                # once (a take that still finds nothing ends the pass)
                if gathered or not self._gather():
                    break
                gathered = True
                continue
            gathered = False
            self.put_at = q.stamp          # when it was put: its `ts` (handle)
            self.handle(item)
            taken += 1
            if taken >= PASS_ITEMS or time.monotonic() >= until:
                break          # the rest at the next pass
            q.drain()          # a card put meanwhile takes its lane's turn in this pass
        # the timer once every item put before its deadline is handled (loop_queue.py): a
        # decision sent in time is not overtaken by its timeout behind a flood
        if self.timer_at is not None and time.monotonic() >= self.timer_at:
            q.drain()
            oldest = q.oldest()
            if oldest is None or oldest >= self.timer_at:
                self.timer_at = None
                self.handle(TimerDue())
        self._flush_position()
        self._dropped(time.monotonic())
        # one write for a burst of PUBACKs; and, the table gone quiet, the mark the last burst
        # moved is written once MARK_EVERY_S have passed (it waited for the next PUBACK: a kill
        # a minute after a burst republished it, cold trial)
        self.journal.mark_sent(self.sent)
        self.sent = []
        now = time.monotonic()
        self.notifier.watchdog(now, self.healthy())
        why = self.unhealthy()
        # at once when the health changed: refreshed only every 0.5 s, /healthz said "broker
        # connecting" ~0.6 s after the table was online (cold39)
        if now - self.metrics_at > 0.5 or why != self.metrics.health[0]:
            self.metrics_at = now
            self.metrics.publish(self._gauges(), why, {
                **self.station.status(), "config": getattr(self, "config_path", None),
                "outbox_depth": self.station.outbox_depth()})

    def _open(self):
        """(busy, senders): how many commands the BUSY lane's next turn may refuse (0: it waits),
        and whether the senders' lanes may be taken now. The commands wait while the link holds
        `backlog_max` messages for the broker (BACKLOG, at most half paho's in-flight window),
        the replies held for the burst's counts (do) included, and a busy turn refuses at most
        the room left: the broker's pace sets the commands'. Answered as fast as the loop can,
        20,000 busy replies queued in paho ahead of the table's events (a card published 4 s
        after it was journaled) and in memory (peak RSS 50 -> 177 MB); with a flooding sender's
        own lane not held, the held replies not counted and the limit above paho's window, a
        card's event still queued in paho behind replies waiting for the window (a 20,000 QoS 0
        flood: 1.4-2.3 s; hold39). The devices', the link's own items, the console, resend pages
        and control never wait. While the link is not connected its backlog cannot drain: the
        senders' lanes are not held then (a command is answered, its reply kept by paho for the
        next connection; its PUBACK lost, the broker delivers it again: answered `duplicate`),
        or a decision held in its lane would hold the decision timer (loop_queue.oldest) for
        the outage; the BUSY lane waits (a refusal changes nothing and holds no timer)."""
        room = self.backlog_max - self.link.backlog() - self.held_replies
        if room > 0:
            return room, True
        return 0, not self.link.connected()

    def _dropped(self, now):
        """QoS 0 commands dropped, the busy lane full (loop_queue.BUSY_MAX): counted at once
        (commands_dropped_total), logged by sender once they stop, or once a minute meanwhile."""
        new, self.q.dropped = self.q.dropped, {}
        for who, n in new.items():
            self.metrics.inc("commands_dropped_total", (("qos", "0"),), n)
            self.dropped[who] = self.dropped.get(who, 0) + n
        if self.dropped and (not new or now - self.dropped_said >= DROPPED_SAY_S):
            top = sorted(self.dropped.items(), key=lambda kv: -kv[1])
            log.warning("dropped %d QoS 0 commands, not answered: the busy lane was full (%d "
                        "commands waiting to be refused busy; QoS 0 is at most once, the senders "
                        "may send them again): %s", sum(self.dropped.values()), self.q.busy_max,
                        ", ".join(
                            f"{'login ' + who if who else 'the shared commands topic'} {n}"
                            for who, n in top[:10]) + (", ..." if len(top) > 10 else ""))
            self.dropped, self.dropped_said = {}, now

    def _answer_busy(self, excess):
        """Commands beyond their sender's lane (loop_queue.py), refused `busy` (station_busy.py):
        the kept refusals' rows in one transaction, the counted ones with the burst's counts
        (do: their PUBACKs held until written), then each answered and acknowledged. Nothing
        dropped; one sync for the batch keeps up with a flood. A defect refusing one command
        costs that one only, as `handle` does one item: the rest of the batch is still
        journaled and answered (it was taken off the queue: nothing else would)."""
        now, kept, after = clock(), [], []
        for stamp, item in excess:
            ev = self._event(item)
            # a probe the station sent, by its exact bytes (the queue's prefix test is public:
            # a forged nonce with the table's seed is refused busy as any command, cold41)
            if ev.user is None and self.station.probe.ours(bytes(ev.payload)):
                self.put_at = stamp   # judged by when it was received (station_probe.py)
                self.handle(item)     # the station's own probe echo: consumed, never refused
                continue
            try:
                # the answer its sender's id already has, if any: a copy of it is a duplicate
                key = self.station.reads(ev).get("command_reply")      # (sender, id)
                reads = {} if key is None else {"command_reply": self.journal.command_reply(*key)}
                effects = busy(self.station, ev, now, self.q.lane_max, reads)
            except STORAGE_ERRORS:
                raise
            except Exception as e:
                self._defect(e, ev, "refusing a command busy")
                continue
            # a kept refusal's row in the batch's transaction; a counted one summed with the
            # burst's counts (do), its PUBACK held until they are written
            rows = [type(e) is Refuse and e.counted is None for e in effects]
            kept += [e for e, r in zip(effects, rows) if r]
            after.append((ev, [e for e, r in zip(effects, rows) if not r]))
        try:
            self.journal.refuse_many(kept)
        except STORAGE_ERRORS:
            raise        # unacknowledged: the broker delivers them again
        except Exception as e:      # each acknowledged (or it comes back at every reconnect)
            for ev, _ in after:
                self.link.ack(ev.mid, ev.qos)
            self._defect(e, None, "journaling commands refused busy")
            return
        for ev, effects in after:
            try:
                for e in effects:
                    self.do(e)
            except STORAGE_ERRORS:
                raise
            except Exception as e:
                self._defect(e, ev, "answering a command refused busy")

    def _defect(self, e, ev, doing):
        """An error that is no storage error: a defect, logged (its traceback, not its message:
        it may hold a card) and counted; a command is acknowledged, or it would come back at
        every reconnect. The table goes on."""
        if isinstance(ev, Command):
            self.link.ack(ev.mid, ev.qos)
        self.metrics.inc("loop_errors_total", (("error", type(e).__name__),))
        log.error("defect: %s %s; the table goes on\n%s", type(e).__name__, doing,
                  "".join(traceback.format_tb(e.__traceback__)))

    def handle(self, item):
        """One queued item; `put_at`, set by the loop: when it was put on the queue (monotonic),
        its input's `ts` (received, not handled: loop_queue.py). Nothing an item carries may end
        the loop: an error here is a defect, logged (with its traceback, without its message: it
        may hold a card) and counted, and the table goes on. Storage errors are the exception:
        without the journal nothing can be kept, so they end the process with the journal's own
        message."""
        stamp, self.put_at = self.put_at, None       # this item's only
        if item is RELOAD:
            self.reload()
            return
        if type(item) is Busy:
            self._answer_busy(item)
            return
        ev = self._event(item)
        if ev is None:
            return
        try:
            reads = self._reads(self.station.reads(ev))
            now = clock()
            if stamp is not None:       # received: as long before now as it was put
                now = now._replace(received=now.wall - max(0.0, now.mono - stamp))
            for e in self.station.step(ev, now, reads):
                self.do(e)
            if self.console_dirty:
                self._console_push(now.wall)
        except STORAGE_ERRORS:
            raise        # a command stays unacknowledged: the broker delivers it again
        except Exception as e:
            self._defect(e, ev, f"handling {type(ev).__name__}")

    def _event(self, item):
        """A queued item as a station event: the MQTT link's tuples are translated here."""
        if isinstance(item, tuple) and item and item[0] == "console":
            # answered to the page; the console vouches for its logged-in account as the broker's
            # ACL does for commands/<login>: the staff rights apply to that account's [staff] role
            return Command(item[1], None, item[2], None, 0, item[3])
        if not isinstance(item, tuple) or not item or item[0] != "mqtt":
            return item
        what, args = item[1], item[2:]
        if what == "command":
            payload, rt, cd, mid, qos, user = args
            return Command(payload, rt, cd, mid, qos, user)
        if what == "puback":
            self.probe_mids.discard(args[0])
            seq = self.mids.pop(args[0], None)
            return Published(seq) if seq is not None else None
        if what == "publish_refused":
            # the mid was recorded when the loop published it, before this item was taken
            if args[0] in self.probe_mids:
                self.probe_mids.discard(args[0])
                return ProbeRefused(args[1])
            self.mids.pop(args[0], None)
            return BrokerDown(args[2], refused=True, kind=Why.PUBLISH)
        if what == "connect_sent":
            return BrokerConnecting()
        if what == "connected":
            return BrokerUp(args[0])
        return (BrokerDown(args[0], True, args[1], args[2]) if what == "refused"   # reason,
                else BrokerDown(args[0], kind=Why.LOST))                        # unanswered, kind

    def _reads(self, wanted):
        got = {}
        if "command_reply" in wanted:
            got["command_reply"] = self.journal.command_reply(*wanted["command_reply"])
        if "outbox_at" in wanted:
            rows = self.journal.outbox_from(wanted["outbox_at"], limit=1)
            got["outbox_row"] = rows[0] if rows else None
        return got

    def process(self, body, origin):
        """An engine input from a tool or a test. Returns (messages, reply)."""
        effects, messages, reply = self.station.process(body, origin, clock())
        for e in effects + self.station.pump():
            self.do(e)
        self._flush_position()
        if self.console_dirty:
            self._console_push()
        return messages, reply

    def status(self):
        return self.station.status()
