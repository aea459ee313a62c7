"""The shipped broker configuration (docs/mosquitto/) run as it is, on a real Mosquitto, with a
certificate authority and certificates made here by the `openssl` command. Only the paths and
ports of the shipped file are replaced (each replacement must find its line: a changed shipped
file fails loudly rather than testing something else)."""
import os
import shutil
import subprocess

from dealer_station.sim.broker import MOSQUITTO, free_port, wait_port
from mqtt_rig import ROOT

SHIPPED = os.path.join(ROOT, "docs", "mosquitto")
EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d):
    """ca.pem (the studio's CA), broker.pem/key (for localhost and 127.0.0.1, signed by it),
    client.pem/key (signed by it), other-ca.pem (a CA that signed nothing here)."""
    os.makedirs(d, exist_ok=True)
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", *EC, "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2",
                 "-subj", f"/CN=dealer-station test {ca}", cwd=d)
    with open(os.path.join(d, "san.cnf"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name, ext in (("broker", ["-extfile", "san.cnf"]), ("client", [])):
        _openssl("req", *EC, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", *ext, cwd=d)
    return {k: os.path.join(d, f) for k, f in (
        ("ca", "ca.pem"), ("other_ca", "other-ca.pem"), ("cert", "client.pem"),
        ("key", "client.key"), ("broker_cert", "broker.pem"), ("broker_key", "broker.key"))}


class ShippedBroker:
    """docs/mosquitto/mosquitto.conf and docs/mosquitto/acl (plus `acl_extra`, for a test's
    observer; less the lines `acl_without`) with the test's users, certificates, ports and data
    directory."""

    def __init__(self, workdir, users, pki, require_certificate=False, acl_extra="",
                 acl_without=()):
        self.dir = os.path.join(workdir, "mosquitto")
        os.makedirs(self.dir, exist_ok=True)
        self.tls_port, self.port = free_port(), free_port()
        pw = os.path.join(self.dir, "passwd")
        open(pw, "w").close()
        for user, password in users.items():
            subprocess.run([shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd",
                            "-b", pw, user, password], check=True, capture_output=True)
        acl = os.path.join(self.dir, "acl")
        shipped = open(os.path.join(SHIPPED, "acl")).read()
        for line in acl_without:         # a test's broken ACL: each line must be there to drop
            assert line + "\n" in shipped, f"the shipped acl has no {line!r}"
            shipped = shipped.replace(line + "\n", "")
        with open(acl, "w") as f:
            f.write(shipped + "\n" + acl_extra)
        text = open(os.path.join(SHIPPED, "mosquitto.conf")).read()
        self.log = os.path.join(self.dir, "mosquitto.log")
        for old, new in (
                ("password_file /etc/mosquitto/dealer-station.passwd", f"password_file {pw}"),
                ("acl_file /etc/mosquitto/dealer-station.acl", f"acl_file {acl}"),
                ("listener 8883\n", f"listener {self.tls_port} 127.0.0.1\n"),
                ("cafile /etc/mosquitto/ca.pem", f"cafile {pki['ca']}"),
                ("certfile /etc/mosquitto/broker.pem", f"certfile {pki['broker_cert']}"),
                ("keyfile /etc/mosquitto/broker.key", f"keyfile {pki['broker_key']}"),
                ("require_certificate false",
                 f"require_certificate {'true' if require_certificate else 'false'}"),
                ("listener 1883 127.0.0.1", f"listener {self.port} 127.0.0.1")):
            assert old in text, f"the shipped mosquitto.conf has no {old.strip()!r}"
            text = text.replace(old, new)
        # what Debian's main mosquitto.conf adds around conf.d/, and a log to read
        text = (f"persistence true\npersistence_location {self.dir}/\nautosave_on_changes true\n"
                f"log_dest file {self.log}\nlog_type all\n"
                + ("user root\n" if os.geteuid() == 0 else "") + text)
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(text)
        self.proc = None

    def start(self):
        """Start it; if it exits at once (a port free when chosen was taken since: another
        test's process), move both listeners to new ports and try again."""
        for attempt in range(3):
            self.proc = subprocess.Popen([MOSQUITTO, "-c", self.conf], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
            try:
                wait_port(self.port, timeout=20)
                wait_port(self.tls_port, timeout=20)
                return
            except TimeoutError:
                if self.proc.poll() is None or attempt == 2:
                    tail = self.logtext()[-1500:] if os.path.exists(self.log) else ""
                    self.stop()
                    raise TimeoutError(f"mosquitto did not listen on {self.port}/{self.tls_port}:"
                                       f"\n{tail}") from None
            old = (self.port, self.tls_port)
            self.port, self.tls_port = free_port(), free_port()
            with open(self.conf) as f:
                text = f.read()
            text = (text.replace(f"listener {old[0]} 127.0.0.1", f"listener {self.port} 127.0.0.1")
                    .replace(f"listener {old[1]} 127.0.0.1", f"listener {self.tls_port} 127.0.0.1"))
            with open(self.conf, "w") as f:
                f.write(text)

    def logtext(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
