"""Test rig for the daemon: a real Mosquitto, the real daemon as a subprocess, a virtual shoe on a
pty, a TCP proxy to cut the network, and a betting-system client that checks sequence numbers."""
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


from dealer_station.sim.broker import Broker, free_port, wait_port  # noqa: E402,F401


# A deadline for a daemon's start (a ceiling on a condition: a passing run never waits it out).
# The daemon needs 0.2 s of CPU to come online, 0.9 s wall here at load 38 at full priority; with
# a few percent of a core (the suite beside a load of 37) its Python start-up alone took 17 s of
# wall before its first log line, online after 18-28 s: past the 10 s this was.
ONLINE_S = 60.0


def wait_for(cond, timeout=10.0, what="the condition"):
    """Poll `cond` until it is true; TimeoutError naming `what` after `timeout` seconds."""
    end = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > end:
            raise TimeoutError(f"waited {timeout:g} s for {what}")
        time.sleep(0.02)


class Proxy:
    """A TCP proxy we can cut: the network between the daemon and the broker."""

    def __init__(self, target_port):
        self.target = target_port
        self.port = free_port()
        self.conns = []
        self.server = None
        self.up = False

    def start(self):
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", self.port))
        self.server.listen(8)
        self.up = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        srv = self.server
        while self.up:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.close()
            except OSError:
                pass

    def cut(self):
        self.up = False
        self.server.close()
        for s in self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        self.conns = []

    def restore(self):
        self.start()


class Client:
    """The betting system's side: a persistent MQTT v5 session on the table's topics. Keeps every
    event by sequence number (repeats dropped and counted, gaps noticed), sends commands and
    collects replies."""

    def __init__(self, port, table="t1", prefix="dealer-station/v1", topics=None, name=None,
                 user=None):
        self.base = f"{prefix}/{table}"
        self.events = {}          # seq -> message
        self.order = []           # seqs in arrival order (repeats included)
        self.repeats = 0
        self.all = []             # (topic, payload) for every message, on every topic
        self.replies = {}
        self.sent = []            # ids of the commands sent
        self.q = queue.Queue()
        self.lock = threading.Lock()
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=name or f"bs-{uuid.uuid4().hex[:8]}",
                             protocol=mqtt.MQTTv5)
        if user:
            self.c.username_pw_set(*user)
        self.granted = []
        self.subscribed = threading.Event()      # every topic's SUBACK in

        def on_subscribe(c, u, mid, codes, p):
            self.granted.extend(codes)
            if len(self.granted) >= self.subs:
                self.subscribed.set()
        self.c.on_subscribe = on_subscribe
        self.c.on_message = self._msg
        subs = [(t, 1) for t in (topics or [f"{self.base}/events", f"{self.base}/replies",
                                             f"{self.base}/status"])]
        self.subs = len(subs)
        self.c.on_connect = lambda c, u, f, rc, p: c.subscribe(subs)
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 3600
        self.c.connect("127.0.0.1", port, clean_start=False, properties=props)
        self.c.loop_start()

    def _msg(self, c, u, msg):
        payload = msg.payload.decode()
        with self.lock:
            self.all.append((msg.topic, payload))
        try:
            m = json.loads(payload)
        except ValueError:
            return
        if msg.topic.endswith("/events"):
            with self.lock:
                self.order.append(m["seq"])
                if m["seq"] in self.events:
                    self.repeats += 1
                    return
                self.events[m["seq"]] = m
            self.q.put(m)
        elif msg.topic.endswith("/replies") and isinstance(m, dict):
            self.replies[m.get("id")] = m

    def command(self, cmd, wait=True, timeout=10):
        cmd = dict(cmd)
        cmd.setdefault("id", uuid.uuid4().hex[:12])
        self.sent.append(cmd["id"])
        end = time.monotonic() + timeout
        # the replies' subscription granted first: paho sends a publish right behind CONNECT, and a
        # table answering before the SUBSCRIBE (a loaded machine) sent its reply to no one
        if wait:
            self.subscribed.wait(timeout)
        self.c.publish(f"{self.base}/commands", json.dumps(cmd), qos=1)
        if not wait:
            return cmd["id"]
        while cmd["id"] not in self.replies:
            if time.monotonic() > end:
                raise TimeoutError(f"no reply to {cmd}")
            time.sleep(0.005)
        return self.replies[cmd["id"]]

    def raw(self, payload):
        self.c.publish(f"{self.base}/commands", payload, qos=1)

    def wait_replies(self, timeout=10):
        """Wait until every command sent has its reply."""
        wait_for(lambda: all(i in self.replies for i in list(self.sent)), timeout,
                 f"replies to every command sent to {self.base}")

    def statuses(self):
        """Every status message received, parsed (retained first, then live)."""
        with self.lock:
            return [json.loads(p) for t, p in self.all if t.endswith("/status") and p]

    def wait_online(self, timeout=ONLINE_S, count=1):
        """Wait for the table's `count`-th online status (the retained one counts): the daemon
        is connected and has published its state."""
        wait_for(lambda: sum(s.get("state") == "online" for s in self.statuses()) >= count,
                 timeout, f"online status #{count} of {self.base}")

    def caught_up(self, journal, timeout=10):
        """Wait until this client holds every event the daemon has journaled (read afresh on
        each look: the table may still be writing)."""
        import sqlite3

        def done():
            db = sqlite3.connect(journal, timeout=5)
            try:
                last = db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0] or 0
            finally:
                db.close()
            with self.lock:
                return all(s in self.events for s in range(1, last + 1))
        wait_for(done, timeout, f"every journaled event at {self.base}")

    def next_event(self, timeout=10):
        return self.q.get(timeout=timeout)

    def in_order(self):
        seqs = sorted(self.events)
        return [self.events[s] for s in seqs]

    def gaps(self):
        seqs = sorted(self.events)
        return [s for s in range(1, seqs[-1] + 1) if s not in self.events] if seqs else []

    def close(self):
        self.c.disconnect()
        self.c.loop_stop()


class DaemonProc:
    def __init__(self, workdir, broker_port, shoe_path, profile="luxury21", table="t1",
                 timers=None, extra_profile=None, extra_config=""):
        self.dir = workdir
        self.journal = os.path.join(workdir, "journal.sqlite")
        self.config = os.path.join(workdir, "table.toml")
        prof = profile
        if extra_profile:
            prof = os.path.join(workdir, "profile.toml")
            with open(prof, "w") as f:
                f.write(extra_profile)
        t = {"decision_s": 0, "insurance_s": 0, "void_after_outage_s": 0, **(timers or {})}
        with open(self.config, "w") as f:
            f.write(f'[table]\nid = "{table}"\nprofile = "{prof}"\n\n'
                    f'[shoe]\nprotocol = "v1"\nurl = "{shoe_path}"\nresend_timeout_ms = 150\n\n'
                    f'[broker]\nport = {broker_port}\nreconnect_min_s = 1\nreconnect_max_s = 1\n\n'
                    f'[timers]\n' + "".join(f"{k} = {v}\n" for k, v in t.items()) +
                    f'\n[paths]\njournal = "{self.journal}"\n\n[metrics]\nport = 0\n' + extra_config)
        self.proc = None
        self.log = open(os.path.join(workdir, "daemon.log"), "a")

    def start(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "dealer_station.cli", "run", "--config",
                                      self.config], cwd=ROOT, stdout=self.log, stderr=self.log)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def logtext(self):
        self.log.flush()
        with open(os.path.join(self.dir, "daemon.log")) as f:
            return f.read()


def workdir():
    return tempfile.mkdtemp(prefix="ds-test-")
