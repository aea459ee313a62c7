"""The simulated table brought up and taken down (a part of `Harness`, harness.py): its TOML
(shoe or wheel, broker, timers, journal, signing key, console, panel, camera), the private broker,
the virtual devices, the betting system, the daemon as a subprocess, and the shoe loaded."""
import os
import subprocess
import sys

from drivers.virtual_shoe import VirtualShoe

from .bettor import BettingSystem
from .broker import Broker, die_with_parent, wait_online
from .dealer_panel import SimPanel


class Bringup:
    """A mixin of `Harness`: its settings and state are the harness's own (harness.py)."""

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
