"""`table-sim --profile NAME`: the real daemon (a subprocess) on a simulated table: a private
Mosquitto (unless --broker), the virtual shoe on a pty, a simulated dealer and a simulated betting
system, with scripted faults, a live view and a report."""
import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter

from controller import get_profile, new_table, step
from controller.settlement import settle
from drivers.virtual_shoe import VirtualShoe

from .bettor import BettingSystem
from .broker import Broker

ANNOUNCEMENTS = ("awaiting_card", "awaiting_decision", "insurance_offered")
FAULTS = ("corrupt_frame", "drop_frame", "unreadable_card", "foreign_card", "double_fire",
          "unplug_shoe", "card_out_of_turn", "broker_restart", "daemon_kill",
          "miss_spin", "failed_launch", "no_ball", "garbled_packet")
WHEEL_FAULTS = ("miss_spin", "failed_launch", "no_ball", "garbled_packet")


class Harness:
    def __init__(self, profile, rounds, seed=1, faults=(), speed=1.0, broker=None, plain=True,
                 out=sys.stdout, workdir=None, level="hard"):
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.roulette = self.profile.game == "roulette"
        self.rounds = rounds
        self.seed = seed
        self.faults = {}
        for f in faults:
            if f["fault"] not in FAULTS:
                raise SystemExit(f"table-sim: unknown fault {f['fault']!r}; known: {', '.join(FAULTS)}")
            if (f["fault"] in WHEEL_FAULTS) != self.roulette and f["fault"] not in (
                    "broker_restart", "daemon_kill"):
                raise SystemExit(f"table-sim: fault {f['fault']!r} is not for a {self.profile.game} table")
            self.faults.setdefault(int(f["round"]), []).append(f["fault"])
        self.delay = 0.0 if speed <= 0 else 0.25 / speed      # a dealer's time per action
        self.period = 0.02 if speed <= 0 else 0.5 / speed     # the wheel's status period
        self.broker_url = broker
        self.plain = plain
        self.out = out
        self.own_dir = workdir is None          # a temporary directory: removed at close
        self.dir = workdir or tempfile.mkdtemp(prefix="table-sim-")
        self.level = level
        self.shoes = 0
        self.started = self.resulted = self.voided = 0
        self.pending_fault = []
        self.view_lines = []

    # -- set-up ---------------------------------------------------------------------------------

    def _config(self, host, port):
        p = self.profile
        path = os.path.join(self.dir, "table.toml")
        if self.roulette:   # the guide's grace times, at the wheel's pace
            k = self.period / 0.5
            device = (f'[shoe]\nprotocol = "none"\n\n[wheel]\nenabled = true\nurl = "{self.wheel.path}"\n'
                      f'failed_launch_s = {max(0.05, 3 * k)}\nno_ball_s = {max(0.05, 5 * k)}\n\n')
        else:
            device = f'[shoe]\nprotocol = "v1"\nurl = "{self.shoe.path}"\nresend_timeout_ms = 150\n\n'
        with open(path, "w") as f:
            f.write(f'[table]\nid = "sim"\nprofile = "{p.name}"\n\n' + device +
                    f'[broker]\nhost = "{host}"\nport = {port}\nreconnect_min_s = 1\nreconnect_max_s = 1\n\n'
                    f'[timers]\ndecision_s = 0\ninsurance_s = 0\nvoid_after_outage_s = 0\n\n'
                    f'[paths]\njournal = "{os.path.join(self.dir, "journal.sqlite")}"\n\n'
                    f'[metrics]\nport = 0\n')
        return path

    def _start_daemon(self):
        log = open(os.path.join(self.dir, "daemon.log"), "a")
        self.daemon = subprocess.Popen([sys.executable, "-m", "dealer_station.cli", "run",
                                        "--config", self.config], stdout=log, stderr=log)

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
        p = self.profile
        self.shoe = self.wheel = None
        if self.roulette:
            from drivers.virtual_wheel import VirtualWheel
            self.wheel = VirtualWheel(seed=self.seed, period=self.period)
            self.wheel.start()
        else:
            self.shoe = VirtualShoe(decks=p.decks, seed=self.seed, cut_from_back=p.cut_card_from_back,
                                    heartbeat=0.3)
            self.shoe.start()
        self.config = self._config(host, port)
        self._start_daemon()
        self.bs = BettingSystem(host, port, "sim", p, seed=self.seed, level=self.level)
        time.sleep(0.8)
        if not self.roulette:
            self._load_shoe()

    def _load_shoe(self):
        self.shoes += 1
        if self.shoes > 1:
            self.shoe.reload(self.seed * 1000 + self.shoes, self.profile.cut_card_from_back)
        self.bs.command({"type": "shoe_loaded"})

    def close(self):
        self.bs.close()
        if self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
        for device in (self.shoe, self.wheel):
            if device is not None:
                device.close()
        if self.broker:
            self.broker.stop()
        if self.own_dir:
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- play -----------------------------------------------------------------------------------

    def _fault(self, name):
        w = self.wheel
        if name in WHEEL_FAULTS:
            {"miss_spin": w.miss_spin_next, "failed_launch": lambda: w.failed_launch_next(400),
             "no_ball": lambda: w.no_ball_next(400), "garbled_packet": w.garble_next}[name]()
            self.say(f"fault injected: {name}")
            return
        s = self.shoe
        simple = {} if s is None else {
            "corrupt_frame": s.corrupt_next, "drop_frame": s.drop_next,
            "unreadable_card": s.unreadable_next, "double_fire": s.double_fire_next}
        if name in simple:
            simple[name]()
        elif name == "foreign_card":
            s.foreign_next(s.cards[max(0, s.next - 1)])      # one more copy than the shoe holds
        elif name == "unplug_shoe":
            s.unplug()
            time.sleep(0.5)
            s.replug()
        elif name == "card_out_of_turn":
            self.pending_fault.append("card_out_of_turn")
        elif name == "broker_restart" and self.broker:
            self.broker.kill()
            time.sleep(0.8)
            self.broker.start()
        elif name == "daemon_kill":
            self.daemon.send_signal(signal.SIGKILL)
            self.daemon.wait()
            self._start_daemon()
        self.say(f"fault injected: {name}")

    def say(self, text):
        if self.plain:
            print(text, file=self.out, flush=True)
        else:
            self.view_lines = (self.view_lines + [text])[-6:]

    def note(self, m):
        t = m["type"]
        self.bs.check(m)
        self.bs.note(m)
        if t == "round_started":
            self.started += 1
            if self.roulette:
                self.bs.place_roulette_bets(m["round"])
        elif t == "round_result":
            self.resulted += 1
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
            self.say(f"round {m['round']} voided: {m['reason']}")
        elif t == "round_paused":
            self.say(f"paused: {m['reason']} (the pit boss resumes)")
            self.bs.command({"type": "resume"})
        elif t == "shuffle_due":
            self.state = "shuffle"
        if t in ("burn_complete", "round_result", "round_voided") or (
                t == "shoe_started" and not m["burn"]):
            self.state = "ready"
        elif t == "round_started":
            self.state = "round"

    def act(self, m):
        t = m["type"]
        time.sleep(self.delay)
        if t == "awaiting_card":
            self.shoe.deal()
        elif t == "awaiting_decision":
            if self.pending_fault:
                self.pending_fault.pop()
                self.shoe.deal()                # a card dealt out of turn
            self.bs.decide(m)
        elif t == "insurance_offered":
            self.bs.command({"type": "insurance_closed"})

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

    def play(self, timeout=None):
        self.state = "burn"
        self.t0 = time.monotonic()
        self.rss_start = None
        acted = 0
        deadline = time.monotonic() + (timeout or 10 ** 9)
        while self.rounds == 0 or self.resulted + self.voided < self.rounds:
            if time.monotonic() > deadline:
                raise TimeoutError(f"table-sim: stuck after {self.resulted} rounds")
            burst = self._burst()
            for m in burst:
                self.note(m)
            if self.rss_start is None and self.resulted >= 10:
                self.rss_start = self.daemon_rss_mb()    # warmed up: imports done, caches full
            live = [m for m in burst if m["type"] != "rejected"]
            if live and live[-1]["type"] in ANNOUNCEMENTS and live[-1]["seq"] > acted:
                acted = live[-1]["seq"]
                self.act(live[-1])
            elif self.roulette and not burst:
                n = self.resulted + self.voided + 1     # the wheel runs the rounds by itself
                for f in self.faults.pop(n, []):
                    self._fault(f)
            elif not live or live[-1]["type"] not in ANNOUNCEMENTS:
                if self.state == "ready" and (self.rounds == 0 or self.started < self.rounds):
                    n = self.started + 1
                    for f in self.faults.pop(n, []):
                        self._fault(f)
                    self.state = "closing"
                    self.bs.close_betting(n)
                elif self.state == "shuffle":
                    self.state = "loading"
                    self._load_shoe()
            if not self.plain:
                self.draw()

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

    def draw(self):
        lines = ["\x1b[2J\x1b[H" + f"dealer-station simulated table: {self.profile.name}   "
                 f"rounds {self.resulted} resulted, {self.voided} voided   seq {self.bs.last}"]
        if self.profile.game == "blackjack":
            lines.append(f"  dealer: {self.bs.up or '-'} [hole hidden]")
            for seat, hands in sorted(self.bs.hands.items()):
                lines.append(f"  seat {seat}: " + "  |  ".join(" ".join(h) for h in hands))
        lines += ["", *self.view_lines]
        print("\n".join(lines), file=self.out, flush=True)

    # -- the report -----------------------------------------------------------------------------

    def report(self):
        time.sleep(0.5)
        db = sqlite3.connect(os.path.join(self.dir, "journal.sqlite"))
        inputs = [json.loads(r[0]) for r in db.execute("SELECT body FROM inputs ORDER BY n")]
        last_seq = db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0] or 0
        db.close()
        # the reference: replay the table's own journal, settle every result with the same bets
        t = new_table(self.profile)
        reference = Counter()
        for i in inputs:
            t, out = step(t, i)
            for o in out:
                if o["type"] == "round_result":
                    for r in settle(self.profile, o, self.bs.bets.get(o["round"], [])):
                        reference[r["id"]] += r["net"]
        codes = {k.split(":", 1)[1]: v for k, v in self.bs.counts.items() if k.startswith("irregularity:")}
        minutes = (time.monotonic() - getattr(self, "t0", time.monotonic())) / 60
        return {"profile": self.profile.name, "rounds_played": self.started,
                "rounds_per_minute": round(self.resulted / minutes, 1) if minutes else None,
                "daemon_rss_mb": {"after_10_rounds": getattr(self, "rss_start", None),
                                  "at_end": self.daemon_rss_mb()},
                "rounds_resulted": self.resulted, "rounds_voided": self.voided,
                "messages_received": self.bs.counts["received"],
                "messages_lost": max(0, last_seq - self.bs.last),
                "messages_repeated": self.bs.counts["repeated"], "irregularities": codes,
                "balances": {k: str(v) for k, v in sorted(self.bs.balances.items())},
                "balances_match": dict(reference) == dict(self.bs.balances) and bool(reference),
                "protocol_errors": len(self.bs.protocol_errors)}
