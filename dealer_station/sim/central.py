"""The central tier of a simulated studio: a cluster of nats-server nodes on loopback ports, each
with JetStream (MQTT needs it: sessions and QoS 1 messages live in replicated streams) and an MQTT
listener over TLS. Per-user permissions: a table may publish only under its own topic tree and
read only its own commands; the betting system reads every table and sends commands.

A QoS 1 subscription is a JetStream consumer delivering on an internal subject `$MQTT.sub.<id>`:
every MQTT user that subscribes needs permission to subscribe there too (NATS 2.9).

MQTT topics map to NATS subjects with '/' -> '.', so `dealer-station/v1/t1/events` is the subject
`dealer-station.v1.t1.events`."""
import os
import random
import shutil
import signal
import socket
import subprocess

from .broker import die_with_parent, free_port, wait_port

NATS = shutil.which("nats-server") or "/usr/sbin/nats-server"


def node_port(taken=(), lowest=10000):
    """A free loopback port below the kernel's ephemeral range. A node killed for a fault leaves
    its ports unbound for seconds, and a port of that range can be taken meanwhile as the local
    port of any connection on the machine, or by any bind to port 0 (seen: 2 studio runs in
    about 45 failed "bind: address already in use" at the whole tier's restart, two studios at
    once); below it only a program that binds that very port can take it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    for _ in range(200 if low > lowest + 1000 else 0):
        port = random.randrange(lowest, low)
        if port in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    return free_port()


def subject(topic):
    return topic.replace("/", ".").replace("+", "*").replace("#", ">")


class CentralCluster:
    def __init__(self, workdir, tls, tables, consumer=("betting-system", "bs-secret"), nodes=3,
                 prefix="dealer-station/v1", admin=None):
        """tls: {"ca", "cert", "key"} paths; tables: {table id: password}. admin: (user,
        password) of a plain NATS user allowed everything, on the nodes' client ports (a test's
        way to JetStream's API); none by default."""
        if not os.path.exists(NATS):
            raise RuntimeError("nats-server is not installed (./scripts/setup installs it)")
        self.dir = os.path.join(workdir, "central")
        self.n = nodes
        self.tls = tls
        self.consumer = consumer
        self.procs = [None] * nodes
        self.prefix = prefix
        self.tables = tables
        self.admin = admin
        self._configure()

    def _configure(self):
        """Each node's ports and nats.conf (again with new ports when one was taken meanwhile)."""
        nodes, tables, consumer, tls, prefix = self.n, self.tables, self.consumer, self.tls, self.prefix
        chosen, kinds = [], ("client", "route", "mqtt", "http")
        for _ in range(nodes * len(kinds)):
            chosen.append(node_port(chosen))
        self.ports = [dict(zip(kinds, chosen[i * len(kinds):(i + 1) * len(kinds)]))
                      for i in range(nodes)]
        p = subject(prefix)
        users = []
        for t, pw in tables.items():
            users.append('{user: "%s", password: "%s", allowed_connection_types: ["MQTT"], '
                         'permissions: {publish: ["%s.%s.>"], subscribe: ["%s.%s.commands", "$MQTT.sub.>"]}}'
                         % (t, pw, p, t, p, t))
        if self.admin:
            users.append('{user: "%s", password: "%s"}' % self.admin)
        user, pw = consumer
        users.append('{user: "%s", password: "%s", allowed_connection_types: ["MQTT"], '
                     'permissions: {publish: ["%s.*.commands"], subscribe: ["%s.>", "$MQTT.sub.>"]}}'
                     % (user, pw, p, p))
        self.confs = []
        for i, ports in enumerate(self.ports):
            node_dir = os.path.join(self.dir, f"n{i + 1}")
            os.makedirs(node_dir, exist_ok=True)
            routes = ", ".join(f"nats-route://127.0.0.1:{q['route']}"
                               for j, q in enumerate(self.ports) if j != i)
            conf = os.path.join(node_dir, "nats.conf")
            with open(conf, "w") as f:
                f.write(f"""server_name: n{i + 1}
listen: 127.0.0.1:{ports['client']}
# monitoring (/jsz, /connz): what a stalled studio's sessions and consumers look like
http: 127.0.0.1:{ports['http']}
jetstream {{ store_dir: "{node_dir}/js", max_memory_store: 64MB, max_file_store: 2GB }}
cluster {{ name: studio, listen: 127.0.0.1:{ports['route']}, routes: [{routes}] }}
mqtt {{
  listen: 127.0.0.1:{ports['mqtt']}
  tls {{ cert_file: "{tls['cert']}", key_file: "{tls['key']}", ca_file: "{tls['ca']}", timeout: 5 }}
  # a QoS 1 message not acknowledged by a subscriber in this time is delivered again
  ack_wait: "10s"
  max_ack_pending: 1000
  # no packet limit here: max_payload does not bound MQTT publishes in nats-server 2.9.10 (2 MB
  # passed a max_payload of 64 KB); an oversized command is refused by the table's edge, which
  # drops its bridge once for it (docs/scale.md, "Packet limits")
  # sessions, retained and QoS 1 messages on every node: one node lost loses nothing
  stream_replicas: {min(3, nodes)}
}}
authorization {{
  users: [
    {(chr(10) + '    ').join(users)}
  ]
}}
""")
            self.confs.append(conf)

    @property
    def mqtt_ports(self):
        return [p["mqtt"] for p in self.ports]

    def start(self, attempts=3):
        """Every node, ready. A free port found at configuration can be taken by another program
        before a node binds it (parallel tests start brokers too): a node that exits at its start
        because of that is started again, every node on new ports."""
        for attempt in range(attempts):
            for i in range(self.n):
                self.start_node(i, wait=False)
            try:
                for i in range(self.n):     # every node bound first: one missing holds the others
                    self.wait_listening(i)  # (their streams want three replicas)
                for i in range(self.n):
                    self.wait_ready(i)
                return
            except TimeoutError:
                taken = [i for i in range(self.n) if "address already in use" in self.log_tail(i)]
                if not taken or attempt == attempts - 1:
                    raise
                self.stop()
                # a fresh cluster: the first attempt's JetStream state names the old routes,
                # and the nodes would wait for those peers
                for i in range(self.n):
                    node = os.path.join(self.dir, f"n{i + 1}")
                    shutil.rmtree(os.path.join(node, "js"), ignore_errors=True)
                    # kept, apart: the next attempt's log must not show this one's bind error
                    os.replace(os.path.join(node, "nats.log"), os.path.join(node, "nats.log.failed"))
                self._configure()

    def log_tail(self, i, lines=20):
        try:
            with open(os.path.join(os.path.dirname(self.confs[i]), "nats.log")) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def wait_listening(self, i, timeout=60.0):
        """Until node i listens for MQTT; at once a TimeoutError naming its log's last line when
        it exited or could not bind its port."""
        import time
        end = time.monotonic() + timeout
        while True:
            try:
                wait_port(self.ports[i]["mqtt"], timeout=0.5)
                break
            except TimeoutError:
                p = self.procs[i]
                if ((p is not None and p.poll() is not None) or time.monotonic() > end
                        or "address already in use" in self.log_tail(i)):
                    tail = self.log_tail(i).strip().splitlines()
                    raise TimeoutError(f"central node n{i + 1} is not listening on "
                                       f"{self.ports[i]['mqtt']}"
                                       + (f": {tail[-1]}" if tail else "")) from None

    def wait_ready(self, i, timeout=60.0):
        """Until node i accepts an MQTT session (a listening port is not enough: the session
        stream must have a leader, which takes a few seconds after a start)."""
        import ssl
        import time
        import paho.mqtt.client as mqtt
        self.wait_listening(i, timeout)
        end = time.monotonic() + timeout
        while True:
            c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"probe-{i}",
                            protocol=mqtt.MQTTv311)
            c.username_pw_set(*self.consumer)
            c.tls_set(ca_certs=self.tls["ca"], cert_reqs=ssl.CERT_REQUIRED)
            try:
                c.connect("127.0.0.1", self.ports[i]["mqtt"], keepalive=10)
                give_up = time.monotonic() + 8
                while not c.is_connected() and time.monotonic() < give_up and c.loop(0.5) == 0:
                    pass
                ok = c.is_connected()
                c.disconnect()
            except OSError:
                ok = False
            if ok:
                return
            if time.monotonic() > end:
                raise TimeoutError(f"central node n{i + 1} did not take an MQTT session in {timeout:g} s")
            time.sleep(0.5)

    def start_node(self, i, wait=True):
        log = open(os.path.join(os.path.dirname(self.confs[i]), "nats.log"), "a")
        self.procs[i] = subprocess.Popen([NATS, "-c", self.confs[i]], stdout=log, stderr=log,
                                         preexec_fn=die_with_parent)
        log.close()
        if wait:
            self.wait_ready(i)

    def kill_node(self, i):
        p = self.procs[i]
        if p and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()

    def stop(self):
        for p in self.procs:
            if p and p.poll() is None:
                p.terminate()
        for p in self.procs:
            if p:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
