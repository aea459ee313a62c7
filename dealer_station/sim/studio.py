"""`table-sim --tables N`: a studio. N simulated tables, each with its own edge Mosquitto (the
daemon on localhost, Mosquitto's bridge written by `dealer-station bridge-conf` from the table's
own TOML), each bridge over its own cuttable uplink (uplink.py) and TLS to a 3-node central
cluster (central.py, nats-server), where each table's betting system and the studio's ledger
(ledger.py) consume. Studio faults, each at a number of rounds resulted across the studio:
`central_node_kill` (one node SIGKILLed; back after `seconds` if given), `uplink_cut` (one table's
uplink cut for `seconds`), `central_down` (every central node killed for `seconds`). Every
CHECK_EVERY_S each table's `bridge-check` runs, as its timer would at a table (bridge_check.py).

`Studio` is the run: its tables started, played and closed; its parts are mixins, one
responsibility each: studio_edges.py (each table's edge broker, bridge and bridge-check),
studio_faults.py (the studio's faults), studio_report.py (the report)."""
import os
import sys
import threading
import time

from drivers.scratch import scratch_dir

from .central import CentralCluster
from .harness import Harness
from .ledger import Ledger
# FAULTS, parse_faults and CHECK_EVERY_S are the studio's names: still importable from here
from .studio_edges import CHECK_EVERY_S, Edges  # noqa: F401
from .studio_faults import FAULTS, StudioFaults, parse_faults  # noqa: F401
from .studio_report import StudioReport
from .tls import make_ca
from .uplink import Uplink

PROFILES = ("punto_banco", "roulette", "luxury21")


class Studio(Edges, StudioFaults, StudioReport):
    def __init__(self, tables, rounds, faults=(), profiles=PROFILES, seed=1, speed=1.0,
                 camera=False, workdir=None, out=sys.stdout, queue_messages=500_000,
                 queue_bytes=256 * 2 ** 20, debug_dir=None):
        """debug_dir: the studio's directory, kept, with its evidence (evidence.py) and the
        edges' full logs: what a failing run leaves to look into."""
        if not 1 <= tables <= 200:
            raise ValueError(f"tables: 1-200, got {tables}")
        self.n, self.rounds, self.seed, self.speed, self.camera = tables, rounds, seed, speed, camera
        self.faults = parse_faults(list(faults), tables)
        for f in self.faults:      # a fault that would never fire: the report's ok would not say
            if rounds and "at_s" not in f and f["at"] >= tables * rounds:   # 0: played for a time
                raise ValueError(f"studio fault {f['fault']}: at: {f['at']}: the studio results at most "
                                 f"{tables * rounds - 1} rounds before its last ({tables} tables x "
                                 f"{rounds} rounds), so this fault would never fire")
        self.profiles = list(profiles)
        self.out = out
        self.debug_dir = debug_dir
        self.own_dir = workdir is None and debug_dir is None
        self.dir = workdir or debug_dir or scratch_dir("studio")
        self.evidence = None
        self.queue = (queue_messages, queue_bytes)
        self.ids = [f"t{i + 1}" for i in range(tables)]
        self.passwords = {t: f"pw-{t}-{os.urandom(6).hex()}" for t in self.ids}
        self.consumer = ("betting-system", f"bs-{os.urandom(6).hex()}")
        self.central = self.ledger = None
        self.edges, self.uplinks, self.tables = [], [], []
        self.injected, self.windows = [], []      # faults done; (start, end) of each outage
        self.queue_depth = {}                     # table -> [(time, messages stored)]
        self.errors = []
        self.cfgs = {}                            # table -> its validated configuration
        self.bridge_restarts = {t: 0 for t in self.ids}
        self.edge_restarts = {t: 0 for t in self.ids}
        self.checking = threading.Event()         # set: the bridge checks stop
        self.halted = False
        self.threads = []
        self.born = time.monotonic()

    def say(self, text):
        try:
            print(f"studio: {time.monotonic() - self.born:6.1f} s  {text}", file=self.out, flush=True)
        except (OSError, ValueError):
            pass            # our reader is gone (a closed pipe): the run goes on, or stops, quietly

    def halt(self):
        """Stop at once (SIGTERM): every table's play() returns at its next step, the report
        waits for nothing in flight."""
        self.halted = True
        for h in self.tables:
            h.halt.set()

    def _central(self, first=0):
        user, pw = self.consumer
        return {"nodes": [("127.0.0.1", p) for p in self.central.mqtt_ports], "ca": self.tls["ca"],
                "username": user, "password": pw, "first": first}

    def start(self):
        self.tls = make_ca(os.path.join(self.dir, "tls"))
        self.central = CentralCluster(self.dir, self.tls, self.passwords, consumer=self.consumer)
        self.central.start()
        self.say(f"central tier: 3 nats-server nodes, MQTT over TLS on {self.central.mqtt_ports}")
        if self.debug_dir:
            from .evidence import Evidence
            self.evidence = Evidence(self, self.debug_dir)
        self.ledger = Ledger(self._central(), verify=True)   # every studio table signs
        if not self.ledger.subscribed.wait(60):
            raise TimeoutError("the ledger was not subscribed to the central tier in 60 s")
        longest = max([f["seconds"] for f in self.faults] + [0])
        for i, t in enumerate(self.ids):
            os.makedirs(os.path.join(self.dir, t), exist_ok=True)
            uplink = Uplink(self.central.mqtt_ports)
            self.uplinks.append(uplink)
            edge, profile = self._edge(i, self._table_toml(i, uplink))
            self.edges.append(edge)
            h = Harness(profile, self.rounds, self.seed + i, speed=self.speed,
                        broker=f"mqtt://127.0.0.1:{edge.port}", plain=True, out=self.out,
                        workdir=os.path.join(self.dir, t), camera=self.camera, table=t,
                        central=self._central(first=i), extra_toml=self._table_toml(i, uplink),
                        max_sends=int(longest / 2) + 60)
            self.tables.append(h)
            # in this thread: a child dies with the thread that started it (PR_SET_PDEATHSIG)
            h.start()
            self.ledger.add_key(t, h.key + ".pub")
        for i, edge in enumerate(self.edges):
            self._watch_queue(self.ids[i], edge.port)
        self.say(f"{self.n} tables up: {', '.join(f'{h.table} {h.profile.name}' for h in self.tables)}")
        if self.evidence:
            self.evidence.start_periodic()
        threading.Thread(target=self._check_bridges, name="bridge-check", daemon=True).start()

    def resulted(self):
        return sum(h.resulted + h.voided for h in self.tables)

    def _due(self, f):
        if "at_s" in f:
            return time.monotonic() - self.t0 >= f["at_s"]
        return self.resulted() >= f["at"]

    def play(self, timeout=None, duration=None):
        """Every table plays its rounds in its own thread; the faults fire as the studio's
        rounds add up (or at `at_s` seconds). Returns when every table is done (TimeoutError
        after `timeout`); with `duration`, no table starts a round after that many seconds."""
        longest = max([f["seconds"] for f in self.faults] + [0])
        self.t0 = time.monotonic()
        done = {}

        def run(h):
            try:
                h.play(timeout=timeout, stall_s=60 + 2 * longest)
                done[h.table] = None
            except Exception as e:
                done[h.table] = e
                if self.evidence:
                    self.evidence.snapshot(f"stalled-{h.table}")
        self.threads = []         # only started ones: a SIGTERM (KeyboardInterrupt) may land here,
        for h in self.tables:     # and close() cannot join a thread never started
            th = threading.Thread(target=run, args=(h,), name=f"play-{h.table}")
            th.start()
            self.threads.append(th)
        pending = list(self.faults)
        self.later = []           # (when, step): the second half of a fault, in this thread
        self.waiting = []         # threads waiting for the central tier to take sessions again
        while len(done) < len(self.tables) and not self.halted:
            while pending and self._due(pending[0]):
                self._fault(pending.pop(0))
            now = time.monotonic()
            if duration and now - self.t0 > duration:
                for h in self.tables:      # the round under way ends, no other starts
                    h.rounds = max(1, h.started, h.resulted + h.voided)
            for item in [x for x in self.later if x[0] <= now]:
                self.later.remove(item)
                item[1]()
            time.sleep(0.05)
        for th in self.threads:
            th.join()
        self.say("every table done")
        for _, step in sorted(self.later, key=lambda x: x[0]):
            step()                # a fault outlasting the run still ends
        for th in self.waiting:
            th.join()             # the outage's window is known before the report
        self.t1 = time.monotonic()
        stuck = {t: e for t, e in done.items() if e is not None}
        if stuck:
            raise TimeoutError("; ".join(f"{t}: {e}" for t, e in stuck.items()))

    def close(self):
        self.checking.set()
        if self.evidence:
            self.evidence.close()
        for h in self.tables:       # their play threads first: nothing left waiting on a table
            h.halt.set()
        for th in self.threads:
            th.join(timeout=10)
        for h in self.tables:
            h.close()
        for e in self.edges:
            if getattr(e, "watch", None):
                e.watch.loop_stop()
                e.watch.disconnect()
            e.stop()
        for u in self.uplinks:
            u.close()
        if self.ledger:
            self.ledger.close()
        if self.central:
            self.central.stop()
        if self.own_dir:
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)
