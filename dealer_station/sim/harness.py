"""`table-sim --profile NAME`: the real daemon (a subprocess) on a simulated table: a private
Mosquitto (unless --broker), the virtual shoe on a pty (or the virtual wheel), the virtual camera
(an MJPEG stream), the dealer panel on mock pins, a simulated dealer and a simulated betting
system, with scripted faults, a live view and a report."""
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

from controller import get_profile
from controller.cards import CARDS
from drivers.scratch import prune_kept, scratch_dir
from drivers.virtual_shoe import VirtualShoe

from . import scenario
from .bettor import BettingSystem
from .broker import Broker, die_with_parent, wait_online
from .dealer_panel import SimPanel
from .progress import Progress
from .report import build_report
from .view import draw

ANNOUNCEMENTS = ("awaiting_card", "awaiting_decision", "insurance_offered", "awaiting_result")
QUIET = ("rejected", "card_confirmed")     # change nothing the dealer waits on
STALL_S = 60.0            # play() gives up when the table says nothing for this long
IDENTIFY_WAIT_S = 1.5     # how long the pit boss waits for the camera to identify a misread card


class Harness:
    def __init__(self, profile, rounds, seed=1, faults=(), speed=1.0, broker=None, plain=True,
                 out=sys.stdout, workdir=None, level="hard", players=None, camera=True, shoe="v1",
                 log_path=None, table="sim", central=None, max_sends=None, extra_toml="",
                 console=None, pit_boss=True, progress_every=0.0, wheel_times=None):
        """console: {"port": N (0: a free one), "accounts": [(name, role, password)]} serves the
        table console; pit_boss=False leaves a paused table to the console's pit boss.
        wheel_times: the virtual wheel's periods per state (a test holds a spin in no more bets)."""
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.roulette = self.profile.game == "roulette"
        self.rounds = rounds
        self.seed = seed
        faults = scenario.parse(list(faults))["faults"]
        if shoe not in scenario.SHOES:
            raise scenario.ScenarioError(f"shoe: one of {', '.join(scenario.SHOES)}, got {shoe!r}")
        self.shoe_kind = "none" if self.roulette else shoe
        scenario.check_for_table(faults, self.profile.game, self.shoe_kind)
        self.faults = {}
        for f in faults:
            self.faults.setdefault(f["round"], []).append(f["fault"])
        self.injected = Counter()
        self.delay = 0.0 if speed <= 0 else 0.25 / speed      # a dealer's time per action
        self.period = 0.02 if speed <= 0 else 0.5 / speed     # the wheel's status period
        self.broker_url = broker
        self.plain = plain
        self.out = out
        self.own_dir = workdir is None          # a temporary directory: removed at close
        self.dir = workdir or scratch_dir("table-sim")
        # the daemon's log outlives the work directory: kept beside it, named by the time
        if not (log_path or workdir):      # the older runs' kept logs and keys: the newest 20 stay
            prune_kept("table-sim")
        self.log_path = log_path or (os.path.join(self.dir, "daemon.log") if workdir else
                                     os.path.join(tempfile.gettempdir(), time.strftime(
                                         "table-sim-%Y%m%d-%H%M%S-") + f"{os.getpid()}-daemon.log"))
        self.broker = self.bs = self.daemon = self.shoe = self.wheel = None
        self.level = level
        self.players = players or {}
        self.use_camera = camera and not self.roulette
        self.shoes = 0
        self.started = self.resulted = self.voided = 0
        self.pending_fault = []
        self.view_lines = []
        self.unresolved = []      # irregularity codes raised since the last resume or void
        self.resolutions = {}     # code -> Counter(resumed=, voided=)
        self.pause = None         # (reason, since) while the table is paused
        self.pressed_at = None    # when the pit boss last pressed a button for this pause
        self.identified = False
        self.foreign_armed = False
        self.down = set()         # required devices the table reported down (device_fault)
        self.dealer_error = None  # the dealer error awaiting the pit boss's decision
        self.mismatch = None      # (round, then) of two numbers for one spin
        self.result_seq = {}      # round -> the seq of its round_result (a correction names it)
        self.jam_until = None     # the shoe's jam clears at this time
        # (types, deadline, then): the dealer waits for the table's answer to a fault just
        # injected (its irregularity), at most until the deadline, then does `then`
        self.hold = None
        self.waiting = "the shoe"
        self.last_zone = None
        self.tcam = None
        self.table = table          # the table id (a studio runs several)
        self.central = central      # the betting system on the studio's central tier
        self.max_sends = max_sends
        self.extra_toml = extra_toml    # more sections of the table's TOML ([bridge], say)
        self.console = console
        self.console_url = None
        self.pit_boss = pit_boss
        self.progress_every = progress_every    # --plain: a progress line every N s (0: none)
        self.progress = None
        self.wheel_times = wheel_times
        self.halt = threading.Event()   # set: play() returns at once (the run is being stopped)

    # -- set-up ---------------------------------------------------------------------------------

    def _config(self, host, port):
        p = self.profile
        path = os.path.join(self.dir, "table.toml")
        if self.roulette:   # the guide's grace times, at the wheel's pace
            k = self.period / 0.5
            device = (f'[shoe]\nprotocol = "none"\n\n[wheel]\nenabled = true\nurl = "{self.wheel.path}"\n'
                      f'failed_launch_s = {max(0.05, 3 * k)}\nno_ball_s = {max(0.05, 5 * k)}\n\n')
        elif self.shoe_kind == "hid":
            device = (f'[shoe]\nprotocol = "hid"\nurl = "{self.shoe.path}"\nlayout = "{self.shoe.layout}"\n'
                      f'cut_payload = "{self.shoe.cut_payload}"\ncode_timeout_ms = 100\n\n')
        else:
            device = f'[shoe]\nprotocol = "v1"\nurl = "{self.shoe.path}"\nresend_timeout_ms = 150\n\n'
        calibration = f'calibration = "{self._calibration()}"\n' if self.tcam or self.shoe_kind == "hid" else ""
        with open(path, "w") as f:
            f.write(f'[table]\nid = "{self.table}"\nprofile = "{p.name}"\n{calibration}\n' + device +
                    f'[broker]\nhost = "{host}"\nport = {port}\nreconnect_min_s = 1\nreconnect_max_s = 1\n\n'
                    f'[timers]\ndecision_s = 0\ninsurance_s = 0\nvoid_after_outage_s = 0\n\n'
                    f'[paths]\njournal = "{os.path.join(self.dir, "journal.sqlite")}"\n\n'
                    f'[metrics]\nport = 0\n\n[integrity]\nsigning_key = "{self.key}"\n\n'
                    + self._console_config() + self.panel.config()
                    + (self.tcam.config() if self.tcam else "") + self.extra_toml)
        return path

    def _console_config(self):
        if not self.console:
            return ""
        from dealer_station.console.auth import hash_password
        from .broker import free_port
        port = self.console.get("port") or free_port()     # kept across daemon restarts
        self.console_url = f"http://127.0.0.1:{port}/"
        accounts = ", ".join(f'{{name = "{n}", role = "{r}", password_hash = "{hash_password(p)}"}}'
                             for n, r, p in self.console.get("accounts", ()))
        return f'[console]\nenabled = true\nport = {port}\naccounts = [{accounts}]\n\n'

    def _calibration(self):
        """The camera's calibration file, with the keyboard scanner's codes added to its
        codebook (the shoe's D01-As, the camera's VC-As: no payload is both)."""
        path = self.tcam.path if self.tcam else os.path.join(self.dir, "calibration.toml")
        if self.shoe_kind == "hid":
            with open(path, "a") as f:
                f.write("" if self.tcam else "[codebook]\n")     # the camera's file ends with it
                for p, c in self.shoe.codebook().items():
                    f.write(f'"{p}" = "{c}"\n')
        return path

    def _signing_key(self):
        """The table's events signing key (what `dealer-station keygen` makes), in the work
        directory: the daemon signs every event and the betting system verifies each one. A work
        directory used before keeps its key (keygen never overwrites one)."""
        import shutil
        from dealer_station.signing import generate
        path = os.path.join(self.dir, "events.key")
        if not os.path.exists(path):
            generate(path)
        # the public key outlives the work directory, beside the daemon's log: to verify a
        # capture of the run (docs/protocol.md, "Game integrity")
        stem = self.log_path[:-len("daemon.log")] if self.log_path.endswith("daemon.log") else \
            self.log_path + "."
        self.public_key_path = stem + "events.key.pub"
        if self.public_key_path != path + ".pub":
            shutil.copyfile(path + ".pub", self.public_key_path)
        return path

    def _start_daemon(self):
        with open(self.log_path, "a") as log:
            self.daemon = subprocess.Popen([sys.executable, "-m", "dealer_station.cli", "run",
                                            "--config", self.config], stdout=log, stderr=log,
                                           preexec_fn=die_with_parent)

    def start(self):
        self.broker = None
        if self.broker_url:
            hostport = self.broker_url.split("://", 1)[-1]
            host, port = hostport.rsplit(":", 1)
            port = int(port)
        else:
            self.broker = Broker(self.dir)
            self.broker.start()
            host, port = "127.0.0.1", self.broker.port
        self.broker_at = f"mqtt://{host}:{port}"
        p = self.profile
        self.shoe = self.wheel = None
        if self.roulette:
            from drivers.virtual_wheel import VirtualWheel
            self.wheel = VirtualWheel(seed=self.seed, period=self.period,
                                      **({"times": self.wheel_times} if self.wheel_times else {}))
            self.wheel.start()
        elif self.shoe_kind == "hid":
            from drivers.virtual_hid_scanner import VirtualHidScanner
            self.shoe = VirtualHidScanner(decks=p.decks, seed=self.seed,
                                          cut_from_back=p.cut_card_from_back)
            self.shoe.start()
        else:
            self.shoe = VirtualShoe(decks=p.decks, seed=self.seed, cut_from_back=p.cut_card_from_back,
                                    heartbeat=0.3)
            self.shoe.start()
        if self.use_camera:
            from .table_camera import TableCamera
            self.tcam = TableCamera(p.game, self.dir)
            self.tcam.start()
        self.panel = SimPanel(os.path.join(self.dir, "panel.sock"))
        self.key = self._signing_key()
        self.config = self._config(host, port)
        # the betting system first: subscribed before the table's first event
        more = {"max_sends": self.max_sends} if self.max_sends else {}
        self.bs = BettingSystem(host, port, self.table, p, seed=self.seed, level=self.level,
                                players=self.players, central=self.central,
                                public_key=self.key + ".pub", **more)
        self.bs.wait_subscribed(30.0 if self.central else 10.0)
        self._start_daemon()
        wait_online(host, port, self.table, self.dir, daemon=self.daemon,   # recovered and
                    log=self.log_path)                                  # subscribed
        if not self.roulette:
            self._load_shoe()                 # the press waits for the daemon's panel

    def _load_shoe(self):
        self.shoes += 1
        if self.shoes > 1:
            self.shoe.reload(self.seed * 1000 + self.shoes, self.profile.cut_card_from_back)
            if self.foreign_armed:
                self._plant_foreign()
        self.panel.hold("shoe_loaded")        # the dealer's long press after shuffle and cut

    def close(self):
        """Stops whatever start() got to (it may have failed half-way)."""
        if self.bs is not None:
            self.bs.close()
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
        for device in (self.shoe, self.wheel, self.tcam):
            if device is not None:
                device.close()
        if self.broker:
            self.broker.stop()
        if self.own_dir:
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- faults ---------------------------------------------------------------------------------

    def _fault(self, name):
        if name == "broker_restart" and not self.broker:
            self.say("fault skipped: broker_restart (the broker given with --broker is not ours)")
            return
        self.injected[name] += 1
        w, s = self.wheel, self.shoe
        if name in scenario.CLIENT_FAULTS:
            self.bs.lose[name.removeprefix("lost_")] += 1     # the next one is lost
        elif name in scenario.WHEEL_FAULTS:
            {"miss_spin": w.miss_spin_next, "failed_launch": lambda: w.failed_launch_next(400),
             "no_ball": lambda: w.no_ball_next(400), "garbled_packet": w.garble_next}[name]()
        elif name in ("corrupt_frame", "drop_frame", "unreadable_card", "double_fire"):
            {"corrupt_frame": s.corrupt_next, "drop_frame": s.drop_next,
             "unreadable_card": s.unreadable_next, "double_fire": s.double_fire_next}[name]()
        elif name in scenario.HID_FAULTS:
            {"partial_code": s.partial_next, "wrong_layout": s.wrong_layout_next}[name]()
        elif name == "foreign_card":
            if self.profile.shuffle_every_round:
                # a fresh 8-deck shoe every round: one card of another deck cannot be read more
                # often than the shoe holds, so by the rule book it passes as a genuine card
                genuine = s.cards[s.next]
                s.foreign_next(CARDS[(CARDS.index(genuine) + 1) % 52])   # in its place
                self.say("fault: a foreign card slipped in (undetectable by count: one round per shuffle)")
            else:
                self.foreign_armed = True
                self._plant_foreign()
        elif name == "unplug_shoe":
            s.unplug()
            time.sleep(0.5)
            s.replug()
        elif name in ("card_out_of_turn", "camera_disagrees") or name in scenario.PROCEDURES:
            # at the next decision / card laid / spin / result
            if name == "double_number":
                w.double_number_next()
            else:
                if name == "no_spin":
                    # the ball leaves the wheel before the pit boss's command: no number can
                    # beat the command to the table, however slow the machine
                    w.ball_out_next()
                self.pending_fault.append(name)
        elif name == "broker_restart":
            self.broker.kill()
            time.sleep(0.8)
            self.broker.start()
        elif name == "daemon_kill":
            self.daemon.send_signal(signal.SIGKILL)
            self.daemon.wait()
            self._start_daemon()
        self.say(f"fault injected: {name}")

    def _plant_foreign(self):
        planted = self.shoe.plant_foreign()
        if planted:
            self.say(f"fault: a foreign {planted[0]} hidden at card {planted[1] + 1} of the shoe")

    # -- the table ------------------------------------------------------------------------------

    def say(self, text):
        if self.plain:
            try:
                print(text, file=self.out, flush=True)
            except (OSError, ValueError):
                pass        # whoever read our output is gone (a closed pipe): play on quietly
        else:
            self.view_lines = (self.view_lines + [text])[-6:]

    def note(self, m):
        t = m["type"]
        self.bs.check(m)
        self.bs.note(m)
        if self.tcam:
            self.tcam.note(m)
        if t == "round_started":
            self.started += 1
            if self.roulette:
                self.bs.place_roulette_bets(m["round"])
        elif t == "round_result":
            self.resulted += 1
            self.result_seq[m["round"]] = m["seq"]
            if "correction" in self.pending_fault:
                # the pit boss corrects the result (a card game's by a void: its result follows
                # from its cards; roulette's to the neighbouring number)
                self.pending_fault.remove("correction")
                fix = ({"number": (m["number"] + 1) % 37} if m["game"] == "roulette"
                       else {"void": True})
                self.bs.command({"type": "correct_result", "round": m["round"], "seq": m["seq"],
                                 "reason": "announced wrongly (simulated)", "by": "pitboss",
                                 **fix})
            if m["game"] == "roulette":
                summary = f"{m['number']} {m['colour']}"
            elif m["game"] == "baccarat":
                summary = m["winner"]
            else:
                summary = " ".join(f"{s['seat']}:{'/'.join(h['outcome'] for h in s['hands'])}"
                                   for s in m["seats"])
            self.say(f"round {m['round']}: {summary}")
        elif t == "round_voided":
            self.voided += 1
            self._resolved("voided")
            self.say(f"round {m['round']} voided: {m['reason']}")
        elif t == "result_corrected":
            how = "voided" if m["voided"] else "corrected"
            self.resolutions.setdefault("correction", Counter())[how] += 1
            self.say(f"round {m['round']} {how} by {m['by']}: {m['reason']}")
        elif t == "spin_void":
            self.resolutions.setdefault("no_spin", Counter())["re-spun"] += 1
            if self.wheel:
                self.wheel.respin()      # the dealer launches again (after a ball out)
            self.say(f"round {m['round']}: spin void ({m['reason']}), spun again")
        elif t == "device_fault":
            self.down.add(m["device"])
        elif t == "device_restored":
            self.down.discard(m["device"])
        elif t == "rejected" and m.get("input") == "betting_closed" and self.state == "closing":
            self.state = "ready"          # the shoe was down: betting closes once it is back
        elif t == "irregularity":
            if m["code"] == "dealer_error":
                self.dealer_error = m["detail"]["error"]
            elif m["code"] == "number_mismatch":
                self.mismatch = (m["round"], m["detail"]["then"])
            if m["detail"].get("after_result"):
                self.resolutions.setdefault(m["code"], Counter())["reported after the result"] += 1
            else:
                self.unresolved.append(m["code"])
            if m["code"] == "foreign_card":
                self.foreign_armed = False
        elif t == "round_resumed":
            self._resolved("resumed")
            self.pause = self.pressed_at = None
        elif t == "round_paused":
            self.pause, self.identified = (m["reason"], time.monotonic()), False
            self.pressed_at = None
        elif t == "card_identified":
            self.identified = True
        elif t == "shuffle_due":
            self.state = "shuffle"
        if t in ANNOUNCEMENTS:
            self.waiting = {"awaiting_card": lambda: f"a card to {m['to']} {m['seat'] or ''}".strip(),
                            "awaiting_decision": lambda: f"seat {m['seat']}'s decision",
                            "insurance_offered": lambda: "insurance",
                            "awaiting_result": lambda: "the wheel's number"}[t]()
        elif t in ("round_result", "round_voided"):
            self.waiting = "the next round"
        if t in ("burn_complete", "round_result", "round_voided") or (
                t == "shoe_started" and not m["burn"]):
            self.state = "ready"
            if t == "round_voided":
                self.pause = self.pressed_at = None
        elif t == "round_started":
            self.state = "round"

    def _resolved(self, how):
        for code in self.unresolved:
            self.resolutions.setdefault(code, Counter())[how] += 1
        self.unresolved = []

    def _pit_boss(self):
        """The pit boss at a paused table: a foreign card voids the round (key and void);
        a misread waits for the camera to identify the card (or goes to the discard rack);
        anything else is cleared and the round goes on."""
        reason, since = self.pause
        if self.down:
            return          # a device fault: the round goes on when the device is back
        if self.dealer_error is not None:
            # the supervisor's decision: a misdeal voids the round, an exposed card is burned
            # and play continues
            decision = "void" if self.dealer_error == "misdeal" else "continue"
            self.say(f"paused: dealer error {self.dealer_error} (the pit boss decides {decision})")
            self.bs.command({"type": "supervisor_decision", "decision": decision,
                             "reason": "simulated pit boss", "by": "pitboss"})
            self.dealer_error = None
        elif self.mismatch is not None and self.mismatch[0] in self.result_seq:
            rnd, then = self.mismatch
            self.say(f"paused: two numbers for round {rnd} (the pit boss confirms {then})")
            self.bs.command({"type": "correct_result", "round": rnd, "seq": self.result_seq[rnd],
                             "number": then, "reason": "the wheel read two numbers",
                             "by": "pitboss"})
            self.mismatch = None
        elif "foreign_card" in self.unresolved:
            self.say(f"paused: {reason} (the pit boss voids the round with the key)")
            self.panel.void_with_key()
        else:
            if reason == "misread" and self.tcam and not self.identified:
                if time.monotonic() - since < IDENTIFY_WAIT_S:
                    return
                self.tcam.discard_last(self.last_zone)
            self.say(f"paused: {reason} (the pit boss resumes)")
            self.panel.press("resume")
        self.pressed_at = time.monotonic()      # pressed: wait for the table to answer

    def act(self, m):
        t = m["type"]
        time.sleep(self.delay)
        if self._procedure(m):
            return
        if t == "awaiting_card":
            card = self.shoe.deal()
            if self.tcam:
                self.last_zone = self.tcam.zone(m)
                disagree = "camera_disagrees" in self.pending_fault and m["face"] == "up" and self.last_zone
                if disagree:
                    self.pending_fault.remove("camera_disagrees")
                    self.tcam.cam.disagree_next()
                self.tcam.lay(m, card)
                if disagree:     # the camera's report lands before the next card is drawn
                    self.hold = ({"irregularity"}, time.monotonic() + 0.5, None)
        elif t == "awaiting_decision":
            if "card_out_of_turn" in self.pending_fault:
                self.pending_fault.remove("card_out_of_turn")
                self.shoe.deal()                # a card dealt out of turn (to the discard rack)
                # read before the player's decision comes back
                self.hold = ({"irregularity"}, time.monotonic() + 0.3,
                             lambda: self.bs.decide(m))
                return
            self.bs.decide(m)
        elif t == "insurance_offered":
            self.bs.command({"type": "insurance_closed"})

    def _procedure(self, m):
        """A scripted procedure at the dealer's moment; True when it took the dealer's turn."""
        t, pf = m["type"], self.pending_fault
        if t == "awaiting_card" and "shoe_jam" in pf:
            pf.remove("shoe_jam")
            self.shoe.status(jam=True)          # the card sticks: the table pauses
            self.jam_until = time.monotonic() + 0.5
            return True
        # a dealer error is reported at a decision (baccarat has none: at a card of the round)
        if t == "awaiting_decision" or (t == "awaiting_card" and m.get("round") is not None
                                        and self.profile.game == "baccarat"):
            for name, error in (("exposed_card", "exposed_card"), ("misdeal", "misdeal")):
                if name in pf:
                    pf.remove(name)
                    self.bs.command({"type": "dealer_error", "error": error, "by": "dealer",
                                     "detail": "simulated"})
                    return True
        if t == "awaiting_result" and "no_spin" in pf:
            pf.remove("no_spin")
            self.bs.command({"type": "no_spin", "reason": "the ball left the wheel (simulated)",
                             "by": "dealer"})
            return True
        if t == "awaiting_result" and "wheel_fault" in pf:
            pf.remove("wheel_fault")
            self.wheel.component_fault("12", periods=3)
            return True
        return False

    def daemon_written_bytes(self):
        """What the daemon (this run of it) has written to storage: /proc/PID/io write_bytes."""
        try:
            with open(f"/proc/{self.daemon.pid}/io") as f:
                for line in f:
                    if line.startswith("write_bytes:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def daemon_rss_mb(self):
        """The daemon's resident memory (for the soak run)."""
        try:
            with open(f"/proc/{self.daemon.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            return None
        return None

    def stuck(self, why):
        return TimeoutError(f"table-sim: {why}, waiting for {self.waiting} (state {self.state}, "
                            f"{self.resulted} rounds resulted, {self.voided} voided, "
                            f"{self.bs.unanswered()} commands unanswered); {self.whose_silence()}")

    def whose_silence(self):
        """Which side is silent: the table's journal against what its betting system applied.
        A journal ahead: the table published, its events did not reach the betting system (a
        broker or bridge path); not ahead: the table itself published nothing more (its shoe,
        its panel or its daemon)."""
        import sqlite3
        try:
            db = sqlite3.connect(f"file:{os.path.join(self.dir, 'journal.sqlite')}?mode=ro",
                                 uri=True)
            row = db.execute("SELECT seq, body FROM outbox ORDER BY seq DESC LIMIT 1").fetchone()
            db.close()
        except sqlite3.Error as e:
            return f"the table's journal not read ({e})"
        last, kind = (row[0], json.loads(row[1]).get("type")) if row else (0, None)
        bs = self.bs
        counts = (f"{bs.counts['quiet_probes']} quiet probes, "
                  f"{bs.counts['session_renewals']} session renewals, "
                  f"{bs.counts['subscriptions_refused']} subscriptions refused")
        if last > bs.last:
            return (f"the table journaled up to seq {last} ({kind}), its betting system applied "
                    f"up to {bs.last}: the events did not reach it ({counts})")
        shoe = ""
        if self.shoe is not None and hasattr(self.shoe, "sent"):
            shoe = (f"; the shoe: {self.shoe.next} cards drawn, frame seq {self.shoe.seq}, "
                    f"{len(self.shoe.sent)} frames unacknowledged by the daemon")
        return (f"the table journaled nothing past seq {last} ({kind}), all applied by its "
                f"betting system: the table itself is silent ({counts}){shoe}")

    def play(self, timeout=None, stall_s=STALL_S):
        """Play the rounds. TimeoutError if the table says nothing for `stall_s` (a stuck table,
        never a slow one: a paused table still answers the pit boss) or after `timeout`."""
        self.state = "burn"
        self.t0 = time.monotonic()
        self.progress = Progress(self.rounds, self.progress_every if self.plain else 0.0)
        self.rss_start = None
        acted = 0
        deadline = time.monotonic() + (timeout or 10 ** 9)
        heard = time.monotonic()
        while self.rounds == 0 or self.resulted + self.voided < self.rounds:
            if self.halt.is_set():
                return
            now = time.monotonic()
            if now > deadline:
                raise self.stuck(f"not done after {timeout:g} s")
            if now - heard > stall_s:
                raise self.stuck(f"nothing from the table for {stall_s:g} s")
            burst = self._burst()
            if burst:
                heard = time.monotonic()
            for m in burst:
                if (m["type"] == "round_started" and self.rounds
                        and self.resulted + self.voided >= self.rounds):
                    break       # done: a round after the last (a roulette wheel's) gets no bets
                self.note(m)
            if self.rss_start is None and self.resulted >= 10:
                self.rss_start = self.daemon_rss_mb()    # warmed up: imports done, caches full
            live = [m for m in burst if m["type"] not in QUIET]
            if self.hold is not None:
                types, until, then = self.hold
                if not any(m["type"] in types for m in burst) and time.monotonic() < until:
                    continue
                self.hold = None
                if then is not None:
                    then()
            if self.jam_until is not None and time.monotonic() > self.jam_until:
                self.jam_until = None
                self.shoe.status(jam=False)     # the dealer frees the card
            if self.roulette and self.pause is None and self.state != "round":
                # the wheel runs the rounds by itself: a round's faults go in between rounds (at
                # speed 0 the wheel leaves no quiet moment to wait for)
                for f in self.faults.pop(self.resulted + self.voided + 1, []):
                    self._fault(f)
            if self.pause is not None and not self.pit_boss:
                pass             # the console's pit boss resolves it, from the page
            elif self.pause is not None:
                # pressed again if the table did not answer (it was restarting, say)
                if self.pressed_at is None or time.monotonic() - self.pressed_at > 3:
                    self._pit_boss()
            elif live and live[-1]["type"] in ANNOUNCEMENTS and live[-1]["seq"] > acted:
                acted = live[-1]["seq"]
                self.act(live[-1])
            elif not self.roulette and (not live or live[-1]["type"] not in ANNOUNCEMENTS):
                self._between_rounds()
            if not self.plain:
                draw(self)
            elif (line := self.progress.due(self.resulted + self.voided)) is not None:
                self.say(line)
        if self.plain and self.progress.every:
            self.say(self.progress.line(self.resulted + self.voided))      # the last word: done

    def _between_rounds(self):
        if self.state in ("ready", "shuffle") and self.tcam and self.tcam.ended_at is not None:
            if not self.tcam.ready_to_pick_up():
                return
            self.tcam.pick_up()             # the camera has seen every card: clear the table
        if self.tcam and not self.tcam.table_clear():
            return
        if self.down:
            return                              # betting does not close with the shoe down
        if self.state == "ready" and (self.rounds == 0 or self.started < self.rounds):
            n = self.started + 1
            for f in self.faults.pop(n, []):
                self._fault(f)
            if "card_out_of_turn" in self.pending_fault and self.profile.game == "baccarat":
                # no decisions at baccarat: the card comes out before "no more bets"
                self.pending_fault.remove("card_out_of_turn")
                self.shoe.deal()
                return                          # betting closes once the pit boss has cleared it
            self.state = "closing"
            self.bs.close_betting(n)
        elif self.state == "shuffle":
            self.state = "loading"
            self._load_shoe()

    def _burst(self):
        """The messages that arrived together: waits up to 0.15 s for the first, then takes what
        follows within 5 ms (one engine step's outputs arrive back to back)."""
        burst = []
        try:
            burst.append(self.bs.events.get(timeout=0.15))
            while True:
                burst.append(self.bs.events.get(timeout=0.005))
        except queue.Empty:
            pass
        return burst

    def report(self, in_flight_s=None):
        """in_flight_s: how long to wait for the last messages in flight (0: a run stopped)."""
        if in_flight_s is not None:
            return build_report(self, in_flight_s=in_flight_s)
        if self.central:
            # on the central tier a lost last event shows only to the betting system's quiet
            # probe, and a session restored broken only to a probe whose events do not come:
            # the report waits for the whole catch-up (a wait for the events, this its ceiling)
            from .bettor import CATCH_UP_S
            return build_report(self, in_flight_s=CATCH_UP_S)
        return build_report(self)
