"""The daemon's start and stop: the integrity check before the table opens, starting the devices
(the shoe's HELLO first), metrics and console, a SIGHUP's reload, and closing it all. A mixin of
`Daemon` (dealer_station/daemon.py), whose loop (`handle`, `recover`) it calls."""
import logging
import queue
import sqlite3
import time

from drivers.panel import panel_view

from . import __version__
from .journal import JournalError
from .station import Settings

log = logging.getLogger("dealer-station")


class IntegrityFailed(RuntimeError):
    """An installed file is not the one recorded at install: the table is not opened."""


class Lifecycle:
    def start(self, shoe_wait=3.0):
        self.recover()
        devices = self.station.devices
        if self.shoe is not None:
            # The shoe first: its HELLO sets the sequence baseline before any command can start
            # a shoe or a round, so no card drawn after that can go unnoticed.
            devices["shoe"] = {"state": "connecting"}
            self.shoe.start(self.q.putter("shoe"))
            # only a protocol-v1 shoe says HELLO: a barcode scanner has nothing to wait for
            end = time.monotonic() + (shoe_wait if self.cfg["shoe"]["protocol"] == "v1" else 0)
            while time.monotonic() < end and "model" not in devices["shoe"]:
                try:
                    self.handle(self.q.get(timeout=0.05))
                except queue.Empty:
                    pass
                self._flush_position()
        if self.wheel is not None:
            devices["wheel"] = {"state": "connecting"}
            self.wheel.start(self.q.putter("wheel"))
        if self.camera is not None:
            devices["camera"] = {"state": "connecting"}
            self.camera.start(self.q.putter("camera"))
        if self.panel is not None:
            devices["panel"] = {"state": "connected", "key": False}
            self.panel.start(self.q.putter("panel"))
            self.panel.show(panel_view(self.station.expectation(), self.table))
        m = self.cfg["metrics"]
        if m["enabled"]:
            try:
                port = self.metrics.serve(m["bind"], m["port"])
                log.info("metrics on http://%s:%d/metrics", m["bind"], port)
                self.metrics_port = port
                self.journal.lock.note(f"metrics http://{m['bind']}:{port}")
            except OSError as e:   # metrics are for operators: the table plays on without them
                log.error("metrics endpoint %s:%d: %s", m["bind"], m["port"], e.strerror)
        if self.console is not None:
            c = self.cfg["console"]
            # after a restart the pages find the rounds, result and open irregularities again
            self.hub.messages(self.journal.outbox_from(max(1, self.station.next_seq - 500)))
            self._console_push()
            try:
                port = self.console.serve()
                scheme = "https" if c["tls_cert"] else "http"
                log.info("console on %s://%s:%d/", scheme, c["bind"], port)
                self.console_port = port
            except (OSError, ValueError) as e:   # the table plays on without its console
                log.error("console %s:%d: %s", c["bind"], c["port"], getattr(e, "strerror", e))
                # ...but says so in /healthz and the status until it is fixed (a restart)
                self.console_down = f"console {c['bind']}:{c['port']}: {getattr(e, 'strerror', e)}"
        self.link.start()
        self.notifier.ready(f"table {self.table_id}: recovered {self.recovery['inputs_replayed']} inputs")

    def check_integrity(self):
        """integrity.manifest: every installed file as recorded at install (integrity.py), or
        the table stays closed: the retained status says `integrity_failed` and the first file
        that differs, and the process ends (IntegrityFailed: exit 3, not restarted)."""
        path = self.cfg["integrity"]["manifest"]
        if not path:
            return
        from .integrity import IntegrityError, check
        try:
            n = check(path)
        except (IntegrityError, OSError) as e:
            file = getattr(e, "file", path)
            why = getattr(e, "why", None) or getattr(e, "strerror", None) or str(e)
            log.error("software integrity failed, the table is not opened: %s: %s", file, why)
            self.link.start()
            self.link.close({"state": "integrity_failed", "table": self.table_id,
                             "version": __version__, "file": file, "reason": why},
                            just_started=True)
            self.journal.close()
            raise IntegrityFailed(f"{file}: {why}") from None
        self.manifest_checked = f"{path}: {n} files"
        log.info("software integrity: %d installed files as recorded in %s", n, path)

    def reload(self):
        """SIGHUP: re-read the configuration; apply what may change live, name what may not."""
        from .config import ConfigError, read_config
        from .reload import plan
        try:
            new = read_config(self.config_path)
        except ConfigError as e:
            log.error("reload refused, %s not valid (the running configuration stays): %s",
                      self.config_path, "; ".join(e.errors))
            return
        merged, applied, refused = plan(self.cfg, new)
        if applied:
            self.cfg = merged
            self.station.s = Settings.from_config(merged, __version__, self.signer)
            log.info("configuration reloaded: %s",
                     ", ".join(f"{k} {a!r} -> {b!r}" for k, a, b in applied))
        if refused:
            log.warning("configuration changes not applied, they need a restart "
                        "(systemctl restart dealer-station): %s", ", ".join(refused))
        if not applied and not refused:
            log.info("configuration reloaded: no change")

    def close(self):
        self.notifier.stopping()
        failed = None
        try:
            self._flush_position()
        except (JournalError, sqlite3.Error) as e:
            # the burst's position or counts not written, their ACKs and PUBACKs not sent (the
            # shoe and the broker send them again): the rest still closed, the error raised last
            failed = e
        if self.shoe is not None:
            self.shoe.close()
        if self.panel is not None:
            self.panel.close()
            self.pin_factory.close()
        if self.camera is not None:
            self.camera.close()
        if self.wheel is not None:
            self.wheel.close()
        self.metrics.close()
        if self.console is not None:
            self.console.close()
        self.link.close({"state": "offline", "table": self.table_id, "reason": "stopped"})
        self.journal.close()
        if failed is not None:
            raise failed
