"""The dealer-station daemon: one process per table.

One thread owns the state. Drivers and MQTT callbacks only put items on `self.q`; the loop takes
an item, journals the input it carries, steps the pure engine, puts the outputs in the outbox (one
SQLite transaction), and hands the outbox to MQTT in sequence order.
"""
import collections
import datetime
import logging
import queue
import signal
import sqlite3
import time
import traceback

from controller import checkpoint, expect, guarded_step, new_table
from controller.snapshot import public_snapshot
from drivers.events import (CardRead, CardUnreadable, CutCard, DeviceState, ShoeHello,
                            ShoeStatus)
from drivers.camera.driver import CardGone, CardSeen
from drivers.panel import PanelPress, panel_view
from drivers.wheel import WheelException, WheelState, WinningNumber

from . import __version__, commands
from .config import read_calibration
from .journal import Journal, JournalError
from .metrics import Metrics
from .mqtt_link import MqttLink
from .notify import Notifier

log = logging.getLogger("dealer-station")
ANNOUNCE = ("awaiting_decision", "insurance_offered")
# Between rounds the state is small and written out whole: recovery replays one round at most.
CHECKPOINT_AFTER = {"shoe_started", "round_result", "round_voided", "shuffle_due"}
STATUS_CHANGES = ("shoe_started", "round_result", "round_voided", "round_paused", "round_resumed",
                  "shuffle_due", "burn_complete", "round_started")


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class Daemon:
    def __init__(self, cfg):
        self.cfg = cfg
        self.profile = cfg["profile"]
        self.table_id = cfg["table"]["id"]
        self.q = queue.Queue()
        self.journal = Journal(cfg["paths"]["journal"], self.table_id, self.profile.name)
        self.table = new_table(self.profile)
        self.timer = None                  # (monotonic deadline, expectation, input)
        self.inflight = {}                 # paho mid -> outbox seq
        self.pending = collections.deque() # (seq, message) not yet handed to paho
        self.acked = []
        self.devices = {"broker": {"state": "connecting"}}
        self.link = MqttLink(cfg["broker"], self.table_id, self.q.put,
                             {"state": "offline", "table": self.table_id, "reason": "connection lost"})
        self.shoe = self._build_shoe()
        self.panel = self._build_panel()
        self.camera = self._build_camera()
        self.wheel = self._build_wheel()
        self.metrics = Metrics()
        self.notifier = Notifier()
        self.metrics_at = 0.0
        self.stopping = False
        self.recovery = None

    def _build_shoe(self):
        c = self.cfg["shoe"]
        settings = {"baudrate": c["baudrate"]}
        if c["protocol"] == "v1":
            from drivers.shoe import ShoeDriver
            resume = self._shoe_resume()
            return ShoeDriver(c["url"], settings, min_confidence=c["min_confidence"],
                              resend_timeout=c["resend_timeout_ms"] / 1000,
                              stall_timeout=c["stall_timeout_s"], auto_ack=False, resume=resume)
        if c["protocol"] == "line":
            from drivers.scanner import ScannerDriver
            from .config import read_codebook
            return ScannerDriver(c["url"], read_codebook(self.cfg["table"]["calibration"]),
                                 settings, c["double_fire_ms"] / 1000, c["cut_payload"])
        return None

    def _build_wheel(self):
        c = self.cfg["wheel"]
        if not c["enabled"]:
            return None
        from drivers.wheel import WheelDriver
        return WheelDriver(c["url"], {"baudrate": c["baudrate"]}, poll_s=c["poll_s"] or None,
                           failed_launch_s=c["failed_launch_s"], no_ball_s=c["no_ball_s"])

    def _build_camera(self):
        c = self.cfg["camera"]
        if not c["enabled"]:
            return None
        from drivers.camera.driver import CameraDriver, Zones
        from drivers.camera.recognize import DECODERS, Templates, VisualRecognizer
        from drivers.camera.video import open_source
        from drivers.codebook import codebook_from_mapping
        cal = read_calibration(self.cfg["table"]["calibration"])
        zones = Zones(cal.get("zones") or {})
        source = int(c["source"]) if c["source"].isdigit() else c["source"]
        src = open_source(source, cal.get("camera"))
        if c["mode"] == "barcode":
            return CameraDriver(src, zones, "barcode", DECODERS[c["decoder"]](c["symbology"]),
                                codebook_from_mapping(cal.get("codebook")),
                                stable=c["stable_frames"], gone=c["gone_frames"])
        return CameraDriver(src, zones, "visual",
                            recognizer=VisualRecognizer(Templates.load(c["templates"])),
                            stable=c["stable_frames"], gone=c["gone_frames"])

    def _build_panel(self):
        c = self.cfg["panel"]
        if not c["enabled"]:
            return None
        from drivers.panel import Panel, make_pin_factory
        self.pin_factory = make_pin_factory(c["pin_factory"], c["mock_socket"])
        return Panel(c["pins"], self.pin_factory, c["hold_s"], c["bounce_ms"] / 1000)

    def _shoe_resume(self):
        """Where the shoe's sequence stood at our last journaled shoe event, or at the baseline
        taken from its HELLO when we first met this boot of it, whichever is later."""
        base = self.journal.get_meta("shoe_base")
        if base is None:
            return None
        boot, seq, at_n = (int(x) for x in base.split(":"))
        n, last = self.journal.last_shoe_seq()
        return (boot, last if last is not None and n > at_n else seq)

    # -- start and stop -----------------------------------------------------------------------

    def recover(self):
        """Rebuild the state from the journal (pure replay), re-arm timers, queue unsent output."""
        t0 = time.perf_counter()
        n0, t = self._latest_checkpoint()
        announced_at = last_at = None
        count = mismatches = 0
        for n, at, origin, body, shoe_seq, n_out in self.journal.inputs_after(n0):
            t, out = guarded_step(t, body)
            if len(out) != n_out:
                mismatches += 1
            if any(o["type"] in ANNOUNCE for o in out):
                announced_at = at
            last_at = at
            count += 1
        self.table = t
        if mismatches:
            log.error("replay of the journal gave other outputs for %d inputs: the engine changed "
                      "under this journal", mismatches)
        self.pending = collections.deque(self.journal.unsent())
        self.recovery = {"inputs_replayed": count, "from_checkpoint": n0,
                         "seconds": round(time.perf_counter() - t0, 4),
                         "unsent": len(self.pending), "mismatches": mismatches}
        if announced_at is not None:
            self._arm(expect(t), time.monotonic() - (time.time() - announced_at))
        outage = time.time() - last_at if last_at else 0.0
        limit = self.cfg["timers"]["void_after_outage_s"]
        if t.round is not None and limit and outage > limit:
            # House rules: a problem not resolved quickly cancels the round, bets refunded.
            self.process({"type": "void_round",
                          "reason": f"the table was down for {outage:.0f} s (limit {limit:g} s)"},
                         "recovery")
        log.info("recovered: %s", self.recovery)
        return self.recovery

    def _latest_checkpoint(self):
        """(input n, table) of the newest checkpoint this version reads, or (0, a new table)."""
        for n, doc in self.journal.checkpoints():
            try:
                return n, checkpoint.decode(self.profile, doc)
            except checkpoint.CheckpointError as e:
                log.warning("checkpoint after input %d not used (%s): replaying from further back",
                            n, e if doc is not None else "not a checkpoint document")
        return 0, new_table(self.profile)

    def start(self, shoe_wait=3.0):
        self.recover()
        if self.shoe is not None:
            # The shoe first: its HELLO sets the sequence baseline before any command can start
            # a shoe or a round, so no card drawn after that can go unnoticed.
            self.devices["shoe"] = {"state": "connecting"}
            self.shoe.start(lambda e: self.q.put(("device", e)))
            end = time.monotonic() + shoe_wait
            while time.monotonic() < end and "model" not in self.devices["shoe"]:
                try:
                    self.handle(self.q.get(timeout=0.05))
                except queue.Empty:
                    pass
        if self.wheel is not None:
            self.devices["wheel"] = {"state": "connecting"}
            self.wheel.start(lambda e: self.q.put(("device", e)))
        if self.camera is not None:
            self.devices["camera"] = {"state": "connecting"}
            self.camera.start(lambda e: self.q.put(("device", e)))
        if self.panel is not None:
            self.devices["panel"] = {"state": "connected", "key": False}
            self.panel.start(lambda e: self.q.put(("device", e)))
            self.panel.show(panel_view(expect(self.table), self.table))
        m = self.cfg["metrics"]
        if m["enabled"]:
            try:
                port = self.metrics.serve(m["bind"], m["port"])
                log.info("metrics on http://%s:%d/metrics", m["bind"], port)
                self.metrics_port = port
            except OSError as e:   # metrics are for operators: the table plays on without them
                log.error("metrics endpoint %s:%d: %s", m["bind"], m["port"], e.strerror)
        self.link.start()
        self.notifier.ready(f"table {self.table_id}: recovered {self.recovery['inputs_replayed']} inputs")

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

    def request_stop(self, *_):
        self.q.put(("stop",))

    def close(self):
        self.notifier.stopping()
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
        self.link.close({"state": "offline", "table": self.table_id, "reason": "stopped"})
        self.journal.close()

    def run(self):
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        self.start()
        try:
            while not self.stopping:
                self.run_once(0.5)
        finally:
            self.close()

    # -- the loop -----------------------------------------------------------------------------

    def run_once(self, max_wait):
        wait = max_wait
        if self.timer is not None:
            wait = max(0.0, min(wait, self.timer[0] - time.monotonic()))
        try:
            item = self.q.get(timeout=wait)
        except queue.Empty:
            item = None
        while item is not None:
            self.handle(item)
            try:
                item = self.q.get_nowait()
            except queue.Empty:
                item = None
        self._fire_timer()
        if self.acked:
            self.journal.mark_sent(self.acked)
            self.acked = []
        self.pump()
        now = time.monotonic()
        self.notifier.watchdog(now, self.healthy())
        if now - self.metrics_at > 0.5:
            self.metrics_at = now
            self.metrics.publish(self._gauges())

    def handle(self, item):
        """One queued item. Nothing an item carries may end the loop: an error here is a
        defect, logged (with its traceback, without its message: it may hold a card) and counted,
        and the table goes on. Storage errors are the exception: without the journal nothing can
        be kept, so they end the process with the journal's own message."""
        try:
            self._handle(item)
        except (JournalError, sqlite3.Error, MemoryError):
            raise
        except Exception as e:
            self.metrics.inc("loop_errors_total", (("error", type(e).__name__),))
            log.error("defect: %s handling a %s item; table goes on\n%s", type(e).__name__,
                      item[0], "".join(traceback.format_tb(e.__traceback__)))

    def _engine_error(self, e):
        self.metrics.inc("engine_errors_total", (("error", type(e).__name__),))
        log.error("defect: the engine raised %s; the table is paused (internal_error)\n%s",
                  type(e).__name__, "".join(traceback.format_tb(e.__traceback__)))

    def _handle(self, item):
        kind = item[0]
        if kind == "stop":
            self.stopping = True
        elif kind == "device":
            self._device(item[1])
        elif kind == "mqtt":
            self._mqtt(item[1], *item[2:])
        elif kind == "input":  # tests and tools: an engine input from elsewhere
            self.process(item[1], item[2] if len(item) > 2 else "local")

    def process(self, body, origin, shoe_seq=None, command_id=None):
        """Journal `body`, step the engine, queue the outputs. Returns (messages, reply)."""
        body = dict(body)
        body["ts"] = now_iso()
        result = {}

        def apply(b):
            result["table"], result["outputs"] = guarded_step(self.table, b, self._engine_error)
            return result["outputs"]

        def reply_of(outputs, messages):
            if len(outputs) == 1 and outputs[0]["type"] == "rejected":
                r = outputs[0]
                return {"type": "reply", "id": command_id, "status": "rejected", "code": r["code"],
                        "reason": r["reason"]}
            return {"type": "reply", "id": command_id, "status": "accepted",
                    "seq": [messages[0][0], messages[-1][0]] if messages else None}

        n, messages, reply = self.journal.record(origin, body, apply, self._envelope, shoe_seq,
                                                 command_id, reply_of)
        self.table = result["table"]   # only once the journal has it
        self.pending.extend(messages)
        kinds = {o["type"] for o in result["outputs"]}
        self._count(body, origin, result["outputs"])
        if self.panel is not None:
            self.panel.show(panel_view(expect(self.table), self.table))
        if kinds & CHECKPOINT_AFTER and checkpoint.quiescent(self.table):
            self.journal.checkpoint(n, checkpoint.encode(self.table))
        if kinds & set(ANNOUNCE):
            self._arm(expect(self.table), time.monotonic())
        elif self.timer is not None and expect(self.table) != self.timer[1]:
            self.timer = None
        if body["type"] != "card":  # a card input is never logged: it may be the hole card
            log.info("input %s from %s -> %d outputs", body["type"], origin, len(messages))
        if kinds & set(STATUS_CHANGES):
            self.publish_status()
        return messages, reply

    def _count(self, body, origin, outputs):
        m = self.metrics
        m.inc("inputs_total", (("origin", origin),))
        if body["type"] == "card":
            m.inc("cards_read_total", (("source", body.get("source", "shoe")),))
        elif body["type"] == "card_unreadable":
            m.inc("cards_unreadable_total", (("source", body.get("source", "shoe")),))
        for o in outputs:
            if o["type"] == "rejected":
                m.inc("rejected_total", (("code", o["code"]),))
            elif o["type"] == "irregularity":
                m.inc("irregularities_total", (("code", o["code"]),))
            elif o["type"] == "round_result":
                m.inc("rounds_total", (("end", "result"),))
            elif o["type"] == "round_voided":
                m.inc("rounds_total", (("end", "voided"),))

    def _gauges(self):
        g = {("outbox_depth", ()): len(self.pending) + len(self.inflight),
             ("round_phase", (("phase", self.table.phase),)): 1,
             ("paused", ()): int(bool(self.table.paused))}
        for name, d in self.devices.items():
            g[("device_up", (("device", name),))] = int(d.get("state") in ("connected", "ok"))
        if self.camera is not None:
            st = self.camera.stats
            g[("camera_frames", ())] = st["frames"]
            g[("camera_decode_seconds", ())] = round(st["decode_s"], 3)
            g[("camera_dropped_frames", ())] = self.camera.capture.dropped
        if self.shoe is not None and self.shoe.session is not None:
            for k, v in self.shoe.session.counts.items():
                g[(f"shoe_{k}", ())] = v
            g[("shoe_reconnects", ())] = self.shoe.link.reconnects
        return g

    def _envelope(self, seq, output):
        return {"seq": seq, "table": self.table_id, "v": 1, **output}

    def pump(self):
        window = self.cfg["broker"]["inflight"]
        while self.pending and len(self.inflight) < window:
            seq, message = self.pending.popleft()
            mid = self.link.publish_event(message)
            self.inflight[mid] = seq

    # -- timers -------------------------------------------------------------------------------

    def _arm(self, e, since):
        t = self.cfg["timers"]
        if e is not None and e.what == "decision" and t["decision_s"] > 0:
            self.timer = (since + t["decision_s"], e,
                          {"type": "decision_timeout", "seat": e.seat, "hand": e.hand})
        elif e is not None and e.what == "insurance" and t["insurance_s"] > 0:
            self.timer = (since + t["insurance_s"], e, {"type": "insurance_closed"})
        else:
            self.timer = None

    def _fire_timer(self):
        if self.timer is None or time.monotonic() < self.timer[0]:
            return
        _, e, body = self.timer
        self.timer = None
        if expect(self.table) == e:
            self.process(body, "timer")

    # -- devices ------------------------------------------------------------------------------

    def _device(self, e):
        if isinstance(e, (CardRead, CardUnreadable, CutCard)):
            seq = getattr(e, "seq", None)
            self.process(e.as_input(), "shoe", shoe_seq=seq)
            if seq is not None and self.shoe is not None:
                self.shoe.command("ack", seq)   # only now may the shoe forget it
        elif isinstance(e, ShoeHello):
            resume = self._shoe_resume()
            if resume is None or resume[0] != e.boot:
                # A shoe (or a boot of it) we have not met: its current position is the
                # baseline, so a card drawn while we are away later is asked for again.
                self.journal.set_meta("shoe_base", f"{e.boot}:{e.last_seq}:{self.journal.last_input()[0]}")
            self.devices["shoe"] = {**self.devices.get("shoe", {}), "model": e.model,
                                    "firmware": e.firmware, "serial": e.serial}
        elif isinstance(e, ShoeStatus):
            self.devices.setdefault("shoe", {})["report"] = {
                "door": e.door, "jam": e.jam, "sensor": e.sensor, "light": e.light, "gate": e.gate}
        elif isinstance(e, PanelPress):
            self._panel(e)
        elif isinstance(e, (WheelState, WinningNumber, WheelException)):
            self._wheel(e)
        elif isinstance(e, CardSeen):
            self.process(e.as_input(), "camera")
        elif isinstance(e, CardGone):
            self.metrics.inc("cards_picked_up_total", (("zone", e.zone),))
        elif isinstance(e, DeviceState):
            if e.device == "wheel" and e.state == "connected" and self.cfg["wheel"]["auto_start"]:
                self.wheel.command("run")
                self.wheel.command("start_game")
            d = self.devices.setdefault(e.device, {})
            d["state"] = e.state
            d["reason"] = e.detail.get("reason")
            log.warning("%s %s %s", e.device, e.state, e.detail.get("reason") or "")
            self.publish_status()

    def _wheel(self, e):
        """The wheel runs the roulette round: no more bets closes betting, the winning number
        ends the round, the guide's exceptions void it (section 4.1)."""
        t = self.table
        if isinstance(e, WheelState):
            self.devices.setdefault("wheel", {})["wheel_state"] = e.name
            if e.state == 4 and t.round is None and not t.paused:
                self.process({"type": "betting_closed"}, "wheel")
            return
        if isinstance(e, WinningNumber):
            self.process({"type": "winning_number", "number": e.number, "spin": e.spin}, "wheel")
            if self.cfg["wheel"]["auto_start"]:
                self.wheel.command("start_game")
            return
        log.warning("wheel: %s on spin %s %s", e.kind, e.spin, e.detail)
        if e.kind == "miss_spin":
            if t.round is not None:
                self.process({"type": "miss_spin", "spin": e.spin}, "wheel")
            self.wheel.command("ack_void")      # the wheel spins again from place bets
        elif e.kind in ("failed_launch", "no_ball", "component_fault"):
            if t.round is not None:
                self.process({"type": "void_round", "reason": f"wheel: {e.kind.replace('_', ' ')}"},
                             "wheel")
            d = self.devices.setdefault("wheel", {})
            d["state"], d["reason"] = "fault", e.kind
            self.publish_status()

    def _panel(self, e):
        if e.button == "key":
            self.devices["panel"]["key"] = e.armed
            self.publish_status()
            return
        if e.button == "void" and not e.armed:
            log.warning("void pressed without the pit boss key: ignored")
            return
        body = {"shoe_loaded": {"type": "shoe_loaded"},
                "pit_boss": {"type": "pause", "reason": "pit boss called from the dealer panel"},
                "resume": {"type": "resume"},
                "void": {"type": "void_round", "reason": "voided with the pit boss key"}}[e.button]
        self.process(body, "panel")

    # -- MQTT ---------------------------------------------------------------------------------

    def _mqtt(self, what, *args):
        if what == "puback":
            seq = self.inflight.pop(args[0], None)
            if seq is not None:
                self.acked.append(seq)
        elif what == "connected":
            self.devices["broker"] = {"state": "connected", "session_present": args[0]}
            log.info("broker connected (session present: %s)", args[0])
            self.publish_status()
        elif what in ("disconnected", "refused"):
            self.devices["broker"] = {"state": "disconnected", "reason": args[0]}
            log.warning("broker %s: %s", what, args[0])
        elif what == "command":
            self._command(*args)

    def _command(self, payload, response_topic, correlation, mid, qos):
        try:
            try:
                cmd = commands.parse(payload)
                if cmd["type"] == "resend":
                    reply = self._resend(cmd)
                else:
                    reply = self.journal.command_reply(cmd["id"])
                    if reply is not None:
                        reply = {**reply, "status": "duplicate", "original": reply["status"]}
                    else:
                        _, reply = self.process(commands.to_input(cmd), "command",
                                                command_id=cmd["id"])
            except commands.CommandError as e:
                # Journaled as refused before the PUBACK, so a poison command is on record
                # once and never delivered again.
                self.journal.refuse("command", e.code, e.reason, payload)
                self.metrics.inc("commands_refused_total", (("code", e.code),))
                reply = {"type": "reply", "id": e.id, "status": "rejected", "code": e.code,
                         "reason": e.reason}
            self.link.reply(reply, response_topic, correlation)
        except (JournalError, sqlite3.Error, MemoryError):
            raise   # not acknowledged: the broker delivers it again once the journal works
        except Exception:
            self.link.ack(mid, qos)   # a defect: acknowledged all the same, or it comes back forever
            raise
        self.link.ack(mid, qos)   # after the journal: a crash before this gets it redelivered

    def _resend(self, cmd):
        start = cmd.get("from")
        if not isinstance(start, int) or isinstance(start, bool) or start < 1:
            raise commands.CommandError("malformed", "resend.from: the first sequence number wanted",
                                        cmd["id"])
        rows = self.journal.outbox_from(start)
        queued = {s for s, _ in self.pending}
        self.pending.extendleft(reversed([r for r in rows if r[0] not in queued]))
        return {"type": "reply", "id": cmd["id"], "status": "accepted",
                "seq": [rows[0][0], rows[-1][0]] if rows else None}

    def status(self):
        return {"state": "online", "version": __version__, "table": self.table_id,
                "profile": self.profile.name, "devices": self.devices,
                "last_seq": self.journal.next_seq - 1, "snapshot": public_snapshot(self.table)}

    def publish_status(self):
        self.link.publish_status(self.status())
