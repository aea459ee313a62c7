"""`table-sim --profile NAME`: the real daemon (a subprocess) on a simulated table: a private
Mosquitto (unless --broker), the virtual shoe on a pty (or the virtual wheel), the virtual camera
(an MJPEG stream), the dealer panel on mock pins, a simulated dealer and a simulated betting
system, with scripted faults, a live view and a report.

`Harness` is the run: its settings, the play loop and the report; its parts are mixins, one
responsibility each: bringup.py (the table brought up and taken down), faults.py (the scenario's
faults carried out), tracking.py (the table's state from its events), staff.py (the simulated
dealer and pit boss), diagnostics.py (the daemon's figures, a stall explained)."""
import os
import queue
import sys
import tempfile
import threading
import time
from collections import Counter

from controller import get_profile
from drivers.scratch import prune_kept, scratch_dir

from . import scenario
from .bringup import Bringup
from .diagnostics import Diagnostics
from .faults import FaultInjection
from .progress import Progress
from .report import build_report
from .staff import IDENTIFY_WAIT_S, Staff  # noqa: F401  (IDENTIFY_WAIT_S: still importable here)
from .tracking import ANNOUNCEMENTS, Tracking
from .view import draw

QUIET = ("rejected", "card_confirmed")     # change nothing the dealer waits on
STALL_S = 60.0            # play() gives up when the table says nothing for this long


class Harness(Bringup, FaultInjection, Tracking, Staff, Diagnostics):
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

    def say(self, text):
        if self.plain:
            try:
                print(text, file=self.out, flush=True)
            except (OSError, ValueError):
                pass        # whoever read our output is gone (a closed pipe): play on quietly
        else:
            self.view_lines = (self.view_lines + [text])[-6:]

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
