"""The daemon's devices and services, built from the configuration and watched: the shoe, wheel,
camera, panel and console, the console's view, the daemon's health (/healthz, the watchdog) and
the gauges it adds to the station's. A mixin of `Daemon` (dealer_station/daemon.py)."""
import functools
import logging
import time

from .config import read_calibration

log = logging.getLogger("dealer-station")


class Devices:
    def _build_shoe(self):
        from drivers import shoe_section
        from .config import read_codebook
        resume = self.station.shoe_resume() if self.cfg["shoe"]["protocol"] == "v1" else None
        return shoe_section.build(self.cfg["shoe"],
                                  lambda: read_codebook(self.cfg["table"]["calibration"]), resume)

    def _build_wheel(self):
        from drivers import wheel
        return wheel.build(self.cfg["wheel"])

    def _build_camera(self):
        from drivers.camera import section
        c = self.cfg["camera"]
        return section.build(c, read_calibration(self.cfg["table"]["calibration"])
                             if c["enabled"] else None)

    def _build_panel(self):
        from drivers import panel
        p, self.pin_factory = panel.build(self.cfg["panel"])
        return p

    def _build_console(self):
        from .console.hub import Hub
        from .console.server import Console
        from .export import export_round      # read-only on the journal, on the page's thread
        t = self.cfg["timers"]
        self.hub = Hub(self.table_id, self.profile.name, t["decision_s"], t["insurance_s"])
        # a command from a page goes on the loop's queue as an MQTT one would
        self.console = Console(self.cfg["console"], self.hub,
                               lambda payload, corr, account: self.q.put(("console", payload, corr, account),
                                                                        "console"),
                               self.metrics, self.camera, log,
                               export=functools.partial(export_round, self.cfg["paths"]["journal"],
                                                        profile=self.profile))

    def _console_push(self, at=None):
        """The console's view after an input: from the public snapshot and published events."""
        self.console_dirty = False
        timer = None
        if self.station.timer is not None:
            deadline, _, body = self.station.timer
            timer = {"what": "decision" if body["type"] == "decision_timeout" else "insurance",
                     "seat": body.get("seat"), "hand": body.get("hand"),
                     "deadline": time.time() + (deadline - time.monotonic())}
        self.hub.update(self.station.status(), timer, at)

    def healthy(self):
        """The loop is running (we are in it); the threads the loop depends on must be alive."""
        threads = [getattr(self.link.client, "_thread", None)]
        if self.shoe is not None and self.shoe.link is not None:
            threads.append(self.shoe.link._thread)
        if self.wheel is not None:
            threads.append(self.wheel.link._thread)
        if self.camera is not None and not self.camera.capture.ended:
            threads.append(self.camera._thread)
        return all(t is not None and t.is_alive() for t in threads)

    def unhealthy(self):
        """Why the table cannot play now (for /healthz), or None."""
        if not self.healthy():
            return "a device or broker thread has died"
        for name, d in self.station.devices.items():
            if name != "panel" and d.get("state") not in ("connected", "ok"):
                return f"{name} {d.get('state')}" + (f": {d['reason']}" if d.get("reason") else "")
        return self.console_down

    def _gauges(self):
        g = self.station.gauges()
        if self.camera is not None:
            st = self.camera.stats
            g[("camera_frames_total", ())] = st["frames"]
            g[("camera_decode_seconds_total", ())] = round(st["decode_s"], 3)
            g[("camera_dropped_frames_total", ())] = self.camera.capture.dropped
        if self.shoe is not None and self.shoe.session is not None:
            for k, v in self.shoe.session.counts.items():
                g[(f"shoe_{k}_total", ())] = v          # counts since start: counters
            g[("shoe_reconnects_total", ())] = self.shoe.link.reconnects
        return g
