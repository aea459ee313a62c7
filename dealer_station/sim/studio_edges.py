"""Each studio table's edge (a part of `Studio`, studio.py): its `[bridge]` TOML, its own
Mosquitto with the bridge `dealer-station bridge-conf` writes from that TOML, its bridge-check
every CHECK_EVERY_S (bridge_check.py, as its timer would at a table) with the edge restarted when
the check asks, and the edge's stored message count watched (its queue for the bridge)."""
import os
import time
import tomllib

from .broker import Broker

CHECK_EVERY_S = 5.0       # a table's bridge-check (a minute at a table: its systemd timer); the
                          # test's table waits 70 s, its report 30 s: a restart into a tier still
                          # too slow to make the subscription needs another soon


class Edges:
    """A mixin of `Studio`: the edges, uplinks and configurations are the studio's (studio.py)."""

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
