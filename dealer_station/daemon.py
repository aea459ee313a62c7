"""The dealer-station daemon: one process per table, the shell around the station core.

One thread owns the state. Drivers and MQTT callbacks only put items on `self.q`; the loop takes
an item, turns it into a station event, looks up what the station asks for in the journal, steps
the station core (dealer_station/station.py: the daemon's rules, pure) and carries out the effects
it returns, in order: the journal transaction first, then publishing, acknowledgements, replies,
lights, timers, metrics and logs.
"""
import functools
import logging
import os
import queue
import signal
import sqlite3
import time
import traceback

from drivers.panel import panel_view

from . import __version__
from .config import read_calibration
from .journal import Journal, JournalError
from .metrics import Metrics
from .mqtt_link import MqttLink
from .notify import Notifier
from .station import Settings, Station
from .station_types import (AckCommand, AckShoe, Archive, Audit, BrokerConnecting, BrokerDown,
                            BrokerUp, Clock, Command, Count, Log, Probe, ProbeRefused, Published,
                            Record, Refresh, Refuse, Reply, ResendPage, ResendRows, SetMeta, Status,
                            Stop, Timer, TimerDue, WheelCommand, Lights, MarkSent, Publish, Why)

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


class IntegrityFailed(RuntimeError):
    """An installed file is not the one recorded at install: the table is not opened."""


def clock():
    return Clock(time.time(), time.monotonic())


class Daemon:
    def __init__(self, cfg):
        self.cfg = cfg
        self.profile = cfg["profile"]
        self.table_id = cfg["table"]["id"]
        # SimpleQueue: its put() may be called from a signal handler (request_stop) that runs
        # while the loop's own get() holds the lock of a queue.Queue: that put deadlocked the
        # daemon for good (a SIGTERM at the wrong moment; found by a killed table-sim's orphan)
        self.q = queue.SimpleQueue()
        self.journal = Journal(cfg["paths"]["journal"], self.table_id, self.profile.name)
        self.signer = None
        if cfg["integrity"]["signing_key"]:
            from .signing import Signer, load_private
            self.signer = Signer(load_private(cfg["integrity"]["signing_key"]))
        # the probes' nonces start from a random seed: no other client can make one in advance
        self.station = Station(Settings.from_config(cfg, __version__, self.signer),
                               probe_seed=os.urandom(8).hex())
        j = self.journal
        self.from_n, restore_logs = self.station.restore(
            j.checkpoints(), j.last_input()[0] + 1, j.next_seq, j.get_meta("shoe_base"),
            j.last_shoe_seq(), j.last_message(), j.audit_head(), j.get_meta("shoe_pos"),
            j.get_meta("broker_answered"))
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

    def _build_shoe(self):
        from drivers import shoe_section
        from .config import read_codebook
        resume = self.station.shoe_resume() if self.cfg["shoe"]["protocol"] == "v1" else None
        return shoe_section.build(self.cfg["shoe"],
                                  lambda: read_codebook(self.cfg["table"]["calibration"]), resume)

    def _build_wheel(self):
        from drivers import wheel
        return wheel.build(self.cfg["wheel"])

    def _build_camera(self):
        from drivers.camera import section
        c = self.cfg["camera"]
        return section.build(c, read_calibration(self.cfg["table"]["calibration"])
                             if c["enabled"] else None)

    def _build_panel(self):
        from drivers import panel
        p, self.pin_factory = panel.build(self.cfg["panel"])
        return p

    def _build_console(self):
        from .console.hub import Hub
        from .console.server import Console
        from .export import export_round      # read-only on the journal, on the page's thread
        t = self.cfg["timers"]
        self.hub = Hub(self.table_id, self.profile.name, t["decision_s"], t["insurance_s"])
        # a command from a page goes on the loop's queue as an MQTT one would
        self.console = Console(self.cfg["console"], self.hub,
                               lambda payload, corr, account: self.q.put(("console", payload, corr, account)),
                               self.metrics, self.camera, log,
                               export=functools.partial(export_round, self.cfg["paths"]["journal"],
                                                        profile=self.profile))

    def _console_push(self, at=None):
        """The console's view after an input: from the public snapshot and published events."""
        self.console_dirty = False
        timer = None
        if self.station.timer is not None:
            deadline, _, body = self.station.timer
            timer = {"what": "decision" if body["type"] == "decision_timeout" else "insurance",
                     "seat": body.get("seat"), "hand": body.get("hand"),
                     "deadline": time.time() + (deadline - time.monotonic())}
        self.hub.update(self.station.status(), timer, at)

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

    def start(self, shoe_wait=3.0):
        self.recover()
        devices = self.station.devices
        if self.shoe is not None:
            # The shoe first: its HELLO sets the sequence baseline before any command can start
            # a shoe or a round, so no card drawn after that can go unnoticed.
            devices["shoe"] = {"state": "connecting"}
            self.shoe.start(self.q.put)
            # only a protocol-v1 shoe says HELLO: a barcode scanner has nothing to wait for
            end = time.monotonic() + (shoe_wait if self.cfg["shoe"]["protocol"] == "v1" else 0)
            while time.monotonic() < end and "model" not in devices["shoe"]:
                try:
                    self.handle(self.q.get(timeout=0.05))
                except queue.Empty:
                    pass
                self._flush_position()
        if self.wheel is not None:
            devices["wheel"] = {"state": "connecting"}
            self.wheel.start(self.q.put)
        if self.camera is not None:
            devices["camera"] = {"state": "connecting"}
            self.camera.start(self.q.put)
        if self.panel is not None:
            devices["panel"] = {"state": "connected", "key": False}
            self.panel.start(self.q.put)
            self.panel.show(panel_view(self.station.expectation(), self.table))
        m = self.cfg["metrics"]
        if m["enabled"]:
            try:
                port = self.metrics.serve(m["bind"], m["port"])
                log.info("metrics on http://%s:%d/metrics", m["bind"], port)
                self.metrics_port = port
                self.journal.lock.note(f"metrics http://{m['bind']}:{port}")
            except OSError as e:   # metrics are for operators: the table plays on without them
                log.error("metrics endpoint %s:%d: %s", m["bind"], m["port"], e.strerror)
        if self.console is not None:
            c = self.cfg["console"]
            # after a restart the pages find the rounds, result and open irregularities again
            self.hub.messages(self.journal.outbox_from(max(1, self.station.next_seq - 500)))
            self._console_push()
            try:
                port = self.console.serve()
                scheme = "https" if c["tls_cert"] else "http"
                log.info("console on %s://%s:%d/", scheme, c["bind"], port)
                self.console_port = port
            except (OSError, ValueError) as e:   # the table plays on without its console
                log.error("console %s:%d: %s", c["bind"], c["port"], getattr(e, "strerror", e))
                # ...but says so in /healthz and the status until it is fixed (a restart)
                self.console_down = f"console {c['bind']}:{c['port']}: {getattr(e, 'strerror', e)}"
        self.link.start()
        self.notifier.ready(f"table {self.table_id}: recovered {self.recovery['inputs_replayed']} inputs")

    def check_integrity(self):
        """integrity.manifest: every installed file as recorded at install (integrity.py), or
        the table stays closed: the retained status says `integrity_failed` and the first file
        that differs, and the process ends (IntegrityFailed: exit 3, not restarted)."""
        path = self.cfg["integrity"]["manifest"]
        if not path:
            return
        from .integrity import IntegrityError, check
        try:
            n = check(path)
        except (IntegrityError, OSError) as e:
            file = getattr(e, "file", path)
            why = getattr(e, "why", None) or getattr(e, "strerror", None) or str(e)
            log.error("software integrity failed, the table is not opened: %s: %s", file, why)
            self.link.start()
            self.link.close({"state": "integrity_failed", "table": self.table_id,
                             "version": __version__, "file": file, "reason": why},
                            just_started=True)
            self.journal.close()
            raise IntegrityFailed(f"{file}: {why}") from None
        self.manifest_checked = f"{path}: {n} files"
        log.info("software integrity: %d installed files as recorded in %s", n, path)

    def healthy(self):
        """The loop is running (we are in it); the threads the loop depends on must be alive."""
        threads = [getattr(self.link.client, "_thread", None)]
        if self.shoe is not None and self.shoe.link is not None:
            threads.append(self.shoe.link._thread)
        if self.wheel is not None:
            threads.append(self.wheel.link._thread)
        if self.camera is not None and not self.camera.capture.ended:
            threads.append(self.camera._thread)
        return all(t is not None and t.is_alive() for t in threads)

    def unhealthy(self):
        """Why the table cannot play now (for /healthz), or None."""
        if not self.healthy():
            return "a device or broker thread has died"
        for name, d in self.station.devices.items():
            if name != "panel" and d.get("state") not in ("connected", "ok"):
                return f"{name} {d.get('state')}" + (f": {d['reason']}" if d.get("reason") else "")
        return self.console_down

    def request_stop(self, *_):
        self.q.put(Stop())

    def request_reload(self, *_):
        self.q.put(RELOAD)

    def reload(self):
        """SIGHUP: re-read the configuration; apply what may change live, name what may not."""
        from .config import ConfigError, read_config
        from .reload import plan
        try:
            new = read_config(self.config_path)
        except ConfigError as e:
            log.error("reload refused, %s not valid (the running configuration stays): %s",
                      self.config_path, "; ".join(e.errors))
            return
        merged, applied, refused = plan(self.cfg, new)
        if applied:
            self.cfg = merged
            self.station.s = Settings.from_config(merged, __version__, self.signer)
            log.info("configuration reloaded: %s",
                     ", ".join(f"{k} {a!r} -> {b!r}" for k, a, b in applied))
        if refused:
            log.warning("configuration changes not applied, they need a restart "
                        "(systemctl restart dealer-station): %s", ", ".join(refused))
        if not applied and not refused:
            log.info("configuration reloaded: no change")

    def close(self):
        self.notifier.stopping()
        self._flush_position()
        if self.shoe is not None:
            self.shoe.close()
        if self.panel is not None:
            self.panel.close()
            self.pin_factory.close()
        if self.camera is not None:
            self.camera.close()
        if self.wheel is not None:
            self.wheel.close()
        self.metrics.close()
        if self.console is not None:
            self.console.close()
        self.link.close({"state": "offline", "table": self.table_id, "reason": "stopped"})
        self.journal.close()

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
        wait = max_wait
        if self.timer_at is not None:
            wait = max(0.0, min(wait, self.timer_at - time.monotonic()))
        try:
            item = self.q.get(timeout=wait)
        except queue.Empty:
            item = None
        taken, until = 0, time.monotonic() + PASS_S
        while item is not None:
            self.handle(item)
            taken += 1
            if taken >= PASS_ITEMS or time.monotonic() >= until:
                break          # the rest at the next pass, which takes it without waiting
            try:
                item = self.q.get_nowait()
            except queue.Empty:
                item = None
        if self.timer_at is not None and time.monotonic() >= self.timer_at:
            self.timer_at = None
            self.handle(TimerDue())
        self._flush_position()
        # one write for a burst of PUBACKs; and, the table gone quiet, the mark the last burst
        # moved is written once MARK_EVERY_S have passed (it waited for the next PUBACK: a kill
        # a minute after a burst republished it, cold trial)
        self.journal.mark_sent(self.sent)
        self.sent = []
        now = time.monotonic()
        self.notifier.watchdog(now, self.healthy())
        if now - self.metrics_at > 0.5:
            self.metrics_at = now
            self.metrics.publish(self._gauges(), self.unhealthy(), {
                **self.station.status(), "config": getattr(self, "config_path", None),
                "outbox_depth": self.station.outbox_depth()})

    def handle(self, item):
        """One queued item. Nothing an item carries may end the loop: an error here is a
        defect, logged (with its traceback, without its message: it may hold a card) and counted,
        and the table goes on. Storage errors are the exception: without the journal nothing can
        be kept, so they end the process with the journal's own message."""
        if item is RELOAD:
            self.reload()
            return
        ev = self._event(item)
        if ev is None:
            return
        try:
            reads = self._reads(self.station.reads(ev))
            now = clock()
            for e in self.station.step(ev, now, reads):
                self.do(e)
            if self.console_dirty:
                self._console_push(now.wall)
        except STORAGE_ERRORS:
            raise        # a command stays unacknowledged: the broker delivers it again
        except Exception as e:
            if isinstance(ev, Command):
                self.link.ack(ev.mid, ev.qos)   # or it would come back at every reconnect
            self.metrics.inc("loop_errors_total", (("error", type(e).__name__),))
            log.error("defect: %s handling %s; the table goes on\n%s", type(e).__name__,
                      type(ev).__name__, "".join(traceback.format_tb(e.__traceback__)))

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
            got["command_reply"] = self.journal.command_reply(wanted["command_reply"])
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

    # -- effects ------------------------------------------------------------------------------

    def _flush_position(self):
        """Write the burst's last shoe position (one fsync), then send the ACKs held for it: a
        shoe frame is acknowledged only once kept (docs/shoe-protocol.md rule 10). A crash before
        it loses no frame: the shoe still holds every one not acknowledged and sends it again."""
        if self.pos_write is not None:
            self.journal.set_meta("shoe_pos", self.pos_write)
            self.pos_write = None
        acks, self.held_acks = self.held_acks, []
        for seq in acks:            # each, in order, as before: only the write is batched
            self.shoe.command("ack", seq)

    def do(self, e):
        t = type(e)
        if t is SetMeta and e.key == "shoe_pos":
            self.pos_write = e.value          # the newest wins: written at the burst's end
            return
        if t is AckShoe and (self.pos_write is not None or self.held_acks):
            self.held_acks.append(e.seq)      # behind a position not yet written: held, in order
            return
        if t is Record and (self.pos_write is not None or self.held_acks):
            # an input (a settled door fault, a card) keeps its order with the frames before it,
            # as when each was written at once: only runs of STAT frames share a write
            self._flush_position()
        if t is Record:
            self.journal.write(e)
            if self.hub is not None:
                self.hub.messages(e.messages)
                self.console_dirty = True
        elif t is Publish:
            self.mids[self.link.publish_event(e.message)] = e.seq
        elif t is MarkSent:
            self.sent.append(e.seq)
        elif t is AckShoe:
            self.shoe.command("ack", e.seq)
        elif t is AckCommand:
            self.link.ack(e.mid, e.qos)
        elif t is Reply:
            if self.console is not None and self.console.owns(e.correlation):
                self.console.reply(e.correlation, e.payload)
            else:
                self.link.reply(e.payload, e.response_topic, e.correlation)
        elif t is Count:
            self.metrics.inc(e.name, e.labels)
        elif t is Log:
            getattr(log, e.level)(e.text)
        elif t is Timer:
            self.timer_at = e.deadline
        elif t is Probe:
            self.probe_mids.add(self.link.publish_probe(e.payload))
        elif t is Status:
            self.link.publish_status(e.doc)     # made only while connected (the station's rule)
        elif t is Refresh:
            self.console_dirty = self.hub is not None
        elif t is Lights:
            if self.panel is not None:
                self.panel.show(e.view)
        elif t is WheelCommand:
            if self.wheel is not None:
                self.wheel.command(e.name)
        elif t is Refuse:
            self.journal.refuse(e)
        elif t is Audit:
            self.journal.audit(e.entry)
        elif t is SetMeta:
            self.journal.set_meta(e.key, e.value)
        elif t is Archive:
            self._archive()
        elif t is ResendPage:   # back on the queue: a card queued meanwhile goes first
            self.q.put(ResendRows(e.lo, e.hi, self.journal.outbox_from(e.lo, e.hi - e.lo + 1)))
        else:
            raise TypeError(f"unknown effect {t.__name__}")

    def _archive(self):
        """Old shoes to an archive file, then out of the journal. A failure is logged and the
        table plays on: nothing was pruned (archive.py prunes only what it read back)."""
        from .archive import ArchiveError, archive
        a = self.cfg["archive"]
        t0 = time.perf_counter()
        try:
            self.journal.mark_sent((), force=True)   # what the broker has is archivable
            r = archive(self.journal.path, a["dir"], a["keep_shoes"], a["keep_rounds"],
                        self.profile)
        except (ArchiveError, sqlite3.Error, OSError) as e:
            self.metrics.inc("archive_failures_total")
            log.error("journal archive failed, nothing pruned: %s", e)
            return
        if r:
            log.info("journal archived to %s: %d inputs, %d outputs (%.2f s)", r["archive"],
                     r["inputs"], r["outputs"], time.perf_counter() - t0)

    def _gauges(self):
        g = self.station.gauges()
        if self.camera is not None:
            st = self.camera.stats
            g[("camera_frames_total", ())] = st["frames"]
            g[("camera_decode_seconds_total", ())] = round(st["decode_s"], 3)
            g[("camera_dropped_frames_total", ())] = self.camera.capture.dropped
        if self.shoe is not None and self.shoe.session is not None:
            for k, v in self.shoe.session.counts.items():
                g[(f"shoe_{k}_total", ())] = v          # counts since start: counters
            g[("shoe_reconnects_total", ())] = self.shoe.link.reconnects
        return g

    def status(self):
        return self.station.status()
