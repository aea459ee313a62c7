"""`table-sim --tables N`: a studio. N simulated tables, each with its own edge Mosquitto (the
daemon on localhost, Mosquitto's bridge written by `dealer-station bridge-conf` from the table's
own TOML), each bridge over its own cuttable uplink (uplink.py) and TLS to a 3-node central
cluster (central.py, nats-server), where each table's betting system and the studio's ledger
(ledger.py) consume. Studio faults, each at a number of rounds resulted across the studio:
`central_node_kill` (one node SIGKILLed; back after `seconds` if given), `uplink_cut` (one table's
uplink cut for `seconds`), `central_down` (every central node killed for `seconds`). Every
CHECK_EVERY_S each table's `bridge-check` runs, as its timer would at a table (bridge_check.py)."""
import json
import os
import sqlite3
import sys
import threading
import time
import tomllib

from drivers.scratch import scratch_dir

from .broker import Broker
from .central import CentralCluster
from .harness import Harness
from .ledger import Ledger, percentile
from .tls import make_ca
from .uplink import Uplink

PROFILES = ("punto_banco", "roulette", "luxury21")
CHECK_EVERY_S = 5.0       # a table's bridge-check (a minute at a table: its systemd timer); the
                          # test's table waits 70 s, its report 30 s: a restart into a tier still
                          # too slow to make the subscription needs another soon
FAULTS = ("central_node_kill", "uplink_cut", "central_down")


def parse_faults(faults, tables, nodes=3):
    """[{"fault", "at", "seconds", "node" | "table"}]; a clear error for anything else."""
    out = []
    for i, f in enumerate(faults):
        where = f"studio fault {i + 1}"
        if not isinstance(f, dict) or f.get("fault") not in FAULTS:
            raise ValueError(f"{where}: fault: one of {', '.join(FAULTS)}, got {f!r}")
        extra = set(f) - {"fault", "at", "at_s", "seconds", "node", "table"}
        if extra:
            raise ValueError(f"{where}: unknown keys {sorted(extra)}")
        if ("at" in f) == ("at_s" in f):
            raise ValueError(f"{where}: when: give at (rounds resulted) or at_s (seconds), one of them")
        bad = [k for k, v in f.items() if isinstance(v, bool)]
        if bad:
            raise ValueError(f"{where}: {bad[0]}: a number, got {f[bad[0]]!r}")
        at, seconds = f.get("at", 0), f.get("seconds", 0)
        if not isinstance(at, int) or at < 0:
            raise ValueError(f"{where}: at: rounds resulted across the studio, >= 0, got {at!r}")
        if not isinstance(seconds, (int, float)) or not 0 <= seconds <= 3600:
            raise ValueError(f"{where}: seconds: 0-3600, got {seconds!r}")
        node, table = f.get("node", nodes), f.get("table", tables)
        if not isinstance(node, int) or not 1 <= node <= nodes:
            raise ValueError(f"{where}: node: 1-{nodes}, got {node!r}")
        if not isinstance(table, int) or not 1 <= table <= tables:
            raise ValueError(f"{where}: table: 1-{tables}, got {table!r}")
        if f["fault"] != "central_node_kill" and not seconds:
            raise ValueError(f"{where}: seconds: how long the {f['fault']} lasts is needed")
        at_s = f.get("at_s")
        if at_s is not None and (not isinstance(at_s, (int, float)) or at_s < 0):
            raise ValueError(f"{where}: at_s: seconds into the run, >= 0, got {at_s!r}")
        out.append({"fault": f["fault"], "at": at, "seconds": seconds, "node": node, "table": table,
                    **({"at_s": at_s} if at_s is not None else {})})
    return sorted(out, key=lambda f: (f.get("at_s", 0), f["at"]))


class Studio:
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

    def _table_toml(self, i, uplink):
        t = self.ids[i]
        pw_file = os.path.join(self.dir, t, "bridge.secret")
        with open(pw_file, "w") as f:
            f.write(self.passwords[t] + "\n")
        k = i % len(uplink.ports)        # the tables' bridges spread over the nodes
        central = ", ".join(f'"127.0.0.1:{p}"' for p in uplink.ports[k:] + uplink.ports[:k])
        # keepalive 20 s (the default), not less: Mosquitto gives a CONNECT 1.5 keepalives for
        # its CONNACK, and a central tier taking its sessions back after a restart answered in
        # 4-8 s here; with 5 s the bridges gave up and came again 25-30 times each, sending
        # their in-flight messages again each time (a node gone resets the connection: no
        # keepalive needed to see it)
        return (f'\n[bridge]\nenabled = true\ncentral = [{central}]\npassword_file = "{pw_file}"\n'
                f'ca_file = "{self.tls["ca"]}"\nprotocol = "mqttv311"\nkeepalive_s = 20\n'
                f'restart_min_s = 1\nrestart_max_s = 2\nmax_queued_messages = {self.queue[0]}\n'
                f'max_queued_bytes = {self.queue[1]}\n')

    def _edge(self, i, bridge_toml):
        """The table's edge Mosquitto, its bridge written from the table's configuration."""
        from dealer_station.bridge import bridge_conf
        from dealer_station.config import ConfigError, check_config
        d = os.path.join(self.dir, self.ids[i])
        # with a debug directory every line (the bridge's SUBSCRIBE/SUBACK, each PUBLISH)
        levels = ("all",) if self.debug_dir else ("error", "warning", "notice")
        edge = Broker(d, extra=f"sys_interval 1\nlog_dest file {d}/mosquitto.log\n"
                      + "".join(f"log_type {x}\n" for x in levels))
        profile = self.profiles[i % len(self.profiles)]
        shoe = 'protocol = "none"'
        data = tomllib.loads(f'[table]\nid = "{self.ids[i]}"\nprofile = "{profile}"\n[shoe]\n{shoe}\n'
                             f'[broker]\nport = {edge.port}\n' + bridge_toml)
        cfg, errors = check_config(data)
        if errors:
            raise ConfigError(errors)
        self.cfgs[self.ids[i]] = cfg
        with open(edge.conf, "a") as f:
            f.write(bridge_conf(cfg))
        edge.start()
        return edge, profile

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

    def _check_bridges(self):
        """Each table's bridge-check in turn, every CHECK_EVERY_S (it starts no process)."""
        from dealer_station.bridge_check import CheckError, check
        while not self.checking.wait(CHECK_EVERY_S):
            for t, cfg in self.cfgs.items():
                if self.checking.is_set():
                    return
                try:
                    # as the table's timer does (bridge_check.restart_mosquitto): a bridge no
                    # takeover through the tier ended is ended by restarting its edge broker
                    result = check(cfg, restart_edge=lambda t=t: self._restart_edge(t))
                except (OSError, CheckError) as e:
                    result = f"not run: {e}"
                except Exception as e:      # noqa: BLE001  (paho's own errors: a traceback on the
                    if self.checking.is_set():  # studio's stderr helps no one; close() tears down
                        return              # the brokers under a check without joining it)
                    result = f"not run: {type(e).__name__}: {e}"
                if result != "ok" and result != "unreachable":
                    self.say(f"bridge-check {t}: {result}")
                if result in ("restarted", "edge restarted"):
                    self.bridge_restarts[t] += 1
                if result == "edge restarted":
                    self.edge_restarts[t] += 1

    def _restart_edge(self, table):
        """The table's edge Mosquitto restarted (SIGTERM, then started again on its port, its
        persistence file kept: its queue for the bridge survives): `systemctl restart mosquitto`
        at a table. The daemon reconnects and publishes again what it had not had acknowledged."""
        edge = self.edges[self.ids.index(table)]
        edge.stop()
        edge.start()

    def _watch_queue(self, table, port):
        """The edge's stored message count ($SYS, every second): its queue for the bridge."""
        import paho.mqtt.client as mqtt
        samples = self.queue_depth.setdefault(table, [])
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"queue-{table}")
        c.on_connect = lambda cl, u, f, rc, p: cl.subscribe("$SYS/broker/store/messages/count")
        c.on_message = lambda cl, u, m: samples.append((time.monotonic(), int(m.payload)))
        c.connect("127.0.0.1", port)
        c.loop_start()
        self.edges[self.ids.index(table)].watch = c

    # -- the run ---------------------------------------------------------------------------------

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

    def _fault(self, f):
        """Starts a fault and schedules its end (in the main thread: a process started by a
        thread that ends would be killed with it)."""
        name, s = f["fault"], f["seconds"]
        start = time.monotonic()
        # seconds since the studio started, the base of its log lines ("studio:  12.3 s ...")
        record = {**f, "started_s": round(start - self.born, 1)}
        self.injected.append(record)

        def ended(text):
            self.say(text)
            self.windows.append((f, start, time.monotonic()))
        if name == "central_node_kill":
            self.say(f"fault: central node n{f['node']} killed" + (f" for {s:g} s" if s else ""))
            self._node(f["node"] - 1, up=False)
            if s:
                self.later.append((start + s, lambda: (self._node(f["node"] - 1, up=True),
                                                       ended(f"central node n{f['node']} back"))))
            else:
                self.windows.append((f, start, start + 5))
        elif name == "uplink_cut":
            t = self.ids[f["table"] - 1]
            self.say(f"fault: {t}'s uplink cut for {s:g} s")
            self.uplinks[f["table"] - 1].cut()
            self.later.append((start + s, lambda: (self.uplinks[f["table"] - 1].restore(),
                                                   ended(f"{t}'s uplink back"))))
        elif name == "central_down":
            self.say(f"fault: the whole central tier down for {s:g} s")
            for i in range(self.central.n):
                self._node(i, up=False)

            def back():
                # every node started at once and reachable at once, as a studio's power coming
                # back would do (the bridges retry until JetStream takes sessions again); the
                # outage's window ends when every node takes an MQTT session (in a thread: the
                # probes start no process)
                for i in range(self.central.n):
                    self.central.start_node(i, wait=False)
                    for u in self.uplinks:
                        u.node(i, up=True)
                self.say("central tier started again")

                def ready():
                    try:
                        for i in range(self.central.n):
                            self.central.wait_ready(i)
                    except TimeoutError as e:      # the report says it: not ok
                        self.errors.append(str(e))
                        self.say(f"central tier not back: {e}")
                    ended("central tier back (every node takes sessions)")
                    if self.evidence:
                        self.evidence.snapshot("tier-back")
                th = threading.Thread(target=ready, name="central-ready", daemon=True)
                th.start()
                self.waiting.append(th)
            self.later.append((start + s, back))

    def _node(self, i, up):
        """A central node killed (SIGKILL) or started again; the uplinks' ports for it follow."""
        if up:
            self.central.start_node(i)
        else:
            self.central.kill_node(i)
        for u in self.uplinks:
            u.node(i, up)

    # -- the report ------------------------------------------------------------------------------

    def _journal(self, h):
        db = sqlite3.connect(os.path.join(h.dir, "journal.sqlite"))
        rows = db.execute("SELECT seq, body FROM outbox ORDER BY seq").fetchall()
        db.close()
        return [(seq, json.loads(body)) for seq, body in rows]

    def report(self, in_flight_s=30.0):
        if self.halted:
            in_flight_s = 0.0
        self.say("report: the last events in flight")
        per_table = {h.table: h.report(0.0 if self.halted else None) for h in self.tables}
        journals = {h.table: self._journal(h) for h in self.tables}
        if (not self.ledger.wait_for({t: (j[-1][0] if j else 0) for t, j in journals.items()},
                                     in_flight_s) and self.evidence):
            self.evidence.snapshot("ledger-timeout")
        led = self.ledger
        tables = {}
        for h in self.tables:
            t, journal = h.table, journals[h.table]
            with led.lock:
                applied = list(led.applied.get(t, []))
            seqs = [m["seq"] for m in applied]
            same = all(m["type"] == body["type"] and m.get("round") == body.get("round")
                       for m, (_, body) in zip(applied, journal))
            r = per_table[t]
            tables[t] = {"profile": r["profile"], "rounds_resulted": r["rounds_resulted"],
                         "rounds_voided": r["rounds_voided"], "journaled": len(journal),
                         "ledger_applied": len(applied),
                         "ledger_in_order": seqs == list(range(1, len(seqs) + 1)),
                         "ledger_missing": max(0, len(journal) - len(applied)),
                         "ledger_matches_journal": same and len(applied) >= len(journal),
                         "bettor_messages_lost": r["messages_lost"],
                         "bettor_repeated": r["messages_repeated"],
                         "bettor_quiet_probes": h.bs.counts["quiet_probes"],
                         "bettor_session_renewals": h.bs.counts["session_renewals"],
                         # SUBACK 0x80 from the tier, each asked again (central_client)
                         "bettor_subscriptions_refused": h.bs.counts["subscriptions_refused"],
                         "balances_match": r["balances_match"],
                         "protocol_errors": r["protocol_errors"],
                         # signed at the table, verified after the bridge and the central tier
                         "signature_errors": r["signature_errors"],
                         # and by the studio's ledger, for every table
                         "ledger_signature_errors": len(led.signature_errors.get(t, [])),
                         "edge_queue_peak": self._depth(t, 0, float("inf")),
                         "bridge_restarts": self.bridge_restarts[t],
                         "edge_restarts": self.edge_restarts[t]}
        span = (led.last_at - led.first_at) if led.first_at and led.last_at else 0
        lat = [s for _, s in led.latencies]
        quiet = [s for at, s in led.latencies if not self._near_fault(at)]
        outages = []
        for f, start, end in self.windows:
            during = {t: self._depth(t, start, end + 2) for t in self.ids}
            before = {t: self._depth(t, start - 5, start - 0.001) for t in self.ids}
            outages.append({**{k: f[k] for k in ("fault", "seconds")},
                            **({"node": f["node"]} if f["fault"] == "central_node_kill" else {}),
                            **({"table": self.ids[f["table"] - 1]} if f["fault"] == "uplink_cut" else {}),
                            "edge_queue_peak": during, "edge_queue_before": before})
        ok = all(v["ledger_matches_journal"] and v["ledger_in_order"] and v["balances_match"]
                 and not v["protocol_errors"] and not v["bettor_messages_lost"]
                 and not v["signature_errors"] and not v["ledger_signature_errors"]
                 for v in tables.values()) and not self.errors
        return {"tables": self.n, "rounds_per_table": self.rounds, "speed": self.speed,
                "run_s": round(getattr(self, "t1", time.monotonic()) - getattr(self, "t0", 0), 1),
                "faults": self.injected, "outages": outages,
                "ledger": {"received": led.counts["received"], "duplicates": led.counts["duplicates"],
                           "arrived_past_a_gap": led.counts["arrived_past_a_gap"],
                           "resend_requests": led.counts["resend_requests"],
                           "quiet_probes": led.counts["quiet_probes"],
                           "session_renewals": led.counts["session_renewals"],
                           "subscriptions_refused": led.c.refused,
                           "msgs_per_s": round(led.counts["received"] / span, 1) if span else None,
                           "card_latency_ms": {
                               "n": len(lat),
                               "p50": _ms(percentile(lat, 50)), "p99": _ms(percentile(lat, 99)),
                               "p50_outside_faults": _ms(percentile(quiet, 50)),
                               "p99_outside_faults": _ms(percentile(quiet, 99))}},
                "per_table": tables,
                # what stopped or broke the run itself (a stalled table, a node that did not
                # take sessions again, an interruption): any of them and the run is not ok
                "errors": list(self.errors), "ok": ok}

    def _depth(self, table, start, end):
        """The most messages the edge held for its bridge between start and end: its stored
        count above the least it ever held (retained $SYS and status messages, never sent)."""
        samples = self.queue_depth.get(table, [])
        if not samples:
            return None
        floor = min(n for _, n in samples)
        return max((n - floor for at, n in samples if start <= at <= end), default=None)

    def _near_fault(self, at_wall):
        """A message received during a fault or within 10 s after it (wall clock)."""
        mono = at_wall - time.time() + time.monotonic()
        return any(start <= mono <= end + 10 for _, start, end in self.windows)

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


def _ms(s):
    return None if s is None else round(s * 1000, 1)
