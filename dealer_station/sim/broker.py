"""A private Mosquitto on a free loopback port with its own data directory (persistence saved on
every change, so even a SIGKILL of the broker loses nothing it acknowledged)."""
import os
import shutil
import signal
import socket
import subprocess
import time

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
# the broker's packet limit as docs/mosquitto/mosquitto.conf ships it (why there; a test holds the
# two equal): a command larger than this is refused by the broker, never read by the daemon
MAX_PACKET_SIZE = 24576


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {port}")


def die_with_parent():
    """preexec_fn for a child of table-sim: the kernel sends it SIGTERM when table-sim dies, by
    whatever means (SIGKILL included), so no broker or daemon is left behind as an orphan. Its own
    session: a Ctrl-C at the terminal reaches table-sim alone, which reports what the daemon had
    journaled and then stops its children; a broker killed by the same Ctrl-C would make the
    report count the events still in flight as lost."""
    import ctypes
    os.setsid()
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Broker:
    def __init__(self, workdir, extra="", users=None, acl=None, port=None,
                 max_packet_size=MAX_PACKET_SIZE):
        if not os.path.exists(MOSQUITTO):
            raise RuntimeError("mosquitto is not installed (./scripts/setup installs it)")
        self.dir = os.path.join(workdir, "mosquitto")
        os.makedirs(self.dir, exist_ok=True)
        self.port = port or free_port()
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        auth = "allow_anonymous true\n"
        if users:
            pw = os.path.join(self.dir, "passwd")
            open(pw, "w").close()
            for user, password in users.items():
                subprocess.run([shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd",
                                "-b", pw, user, password], check=True, capture_output=True)
            auth = f"allow_anonymous false\npassword_file {pw}\n"
            if acl:
                auth += f"acl_file {acl}\n"
        with open(self.conf, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\n{auth}"
                    f"persistence true\npersistence_location {self.dir}/\n"
                    f"autosave_interval 1\nautosave_on_changes true\n"
                    f"max_queued_messages 100000\nset_tcp_nodelay true\n"
                    + (f"max_packet_size {max_packet_size}\n" if max_packet_size else "") + extra)
            if os.geteuid() == 0:  # as root Mosquitto drops to its own user, who cannot write here
                f.write("user root\n")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([MOSQUITTO, "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
        wait_port(self.port)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def wait_online(host, port, table, workdir, timeout=60.0, daemon=None, log=None):
    """Until the daemon's retained status says it is online with its panel started (a scanner
    shoe has no HELLO: the daemon gives it a few seconds before the panel), so the dealer's first
    press is not lost. The timeout is a ceiling: the daemon is online in about 1 s with a core,
    but its Python start-up alone took 17 s of wall (online after 18-28 s) with a few percent
    of one, as on a machine at load 37. `daemon` (its Popen): one that exits is said at once,
    not after the ceiling; `log`: where its log is (default: workdir/daemon.log)."""
    import json
    import threading
    import paho.mqtt.client as mqtt
    up = threading.Event()

    def message(c, u, msg):
        try:
            m = json.loads(msg.payload)
        except ValueError:
            return
        if m.get("state") == "online" and "panel" in m.get("devices", {}):
            up.set()
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    c.on_connect = lambda cl, u, f, rc, p: cl.subscribe(f"dealer-station/v1/{table}/status", qos=1)
    c.on_message = message
    c.connect(host, port)
    c.loop_start()
    log = log or f"{workdir}/daemon.log"
    end = time.monotonic() + timeout
    try:
        while not up.wait(0.2):
            if daemon is not None and daemon.poll() is not None:
                raise RuntimeError(f"table-sim: the daemon exited (code {daemon.returncode}) "
                                   f"before it was online (see {log})")
            if time.monotonic() > end:
                raise TimeoutError(f"table-sim: the daemon was not online within {timeout:g} s "
                                   f"(see {log})")
    finally:
        c.loop_stop()
        c.disconnect()
