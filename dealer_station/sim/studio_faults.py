"""The studio's faults (a part of `Studio`, studio.py): their validation (`parse_faults`), and
each started and its end scheduled on the studio's main loop: `central_node_kill`, `uplink_cut`,
`central_down`."""
import math
import threading
import time

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
        # not NaN nor Infinity (JSON as json.loads reads it): a time the run never reaches
        if at_s is not None and (not isinstance(at_s, (int, float)) or not 0 <= at_s < math.inf):
            raise ValueError(f"{where}: at_s: seconds into the run, >= 0, got {at_s!r}")
        out.append({"fault": f["fault"], "at": at, "seconds": seconds, "node": node, "table": table,
                    **({"at_s": at_s} if at_s is not None else {})})
    return sorted(out, key=lambda f: (f.get("at_s", 0), f["at"]))


class StudioFaults:
    """A mixin of `Studio`: acts on its central tier and uplinks, on its main loop."""

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
