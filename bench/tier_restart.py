"""The whole central tier restarted, again and again, with nothing but the brokers (issue #21; a
command, not in CI): N edge Mosquittos, each with the bridge `dealer-station bridge-conf` writes
(through a cuttable uplink, as in the studio), into a 3-node nats-server cluster. On each edge a
"table" client publishes an event every 0.3 s and counts the commands it receives; on the tier a
"betting system" client sends each table a command every 0.5 s and counts its events. Each cycle
kills every node (SIGKILL), waits --down seconds, starts them again and waits until every table's
both directions work again: a table whose commands (tier -> edge) or events (edge -> tier) have
not resumed --deadline seconds after the tier took sessions again is STUCK, and the cycle leaves
the tier's monitoring (/jsz, /connz) and the edges' logs in --dir.

    .venv/bin/python bench/tier_restart.py --tables 10 --cycles 5 [--cleansession]
"""
import argparse
import json
import os
import ssl
import sys
import threading
import time
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import paho.mqtt.client as mqtt  # noqa: E402

from dealer_station.bridge import bridge_conf  # noqa: E402
from dealer_station.config import check_config  # noqa: E402
from dealer_station.sim.broker import Broker  # noqa: E402
from dealer_station.sim.central import CentralCluster  # noqa: E402
from dealer_station.sim.evidence import ENDPOINTS, _get, consumers  # noqa: E402
from dealer_station.sim.tls import make_ca  # noqa: E402
from dealer_station.sim.uplink import Uplink  # noqa: E402

P = "dealer-station/v1"


def edge(d, i, table, uplink, tls, cleansession):
    pw = f"pw-{table}"
    os.makedirs(d, exist_ok=True)
    k = i % 3
    central = ", ".join(f'"127.0.0.1:{p}"' for p in uplink.ports[k:] + uplink.ports[:k])
    with open(f"{d}/secret", "w") as f:
        f.write(pw)
    cfg, errors = check_config(tomllib.loads(
        f'[table]\nid = "{table}"\nprofile = "punto_banco"\n[shoe]\nprotocol = "none"\n'
        f'[broker]\nport = 1883\n[bridge]\nenabled = true\ncentral = [{central}]\n'
        f'password_file = "{d}/secret"\nca_file = "{tls["ca"]}"\nrestart_min_s = 1\n'
        f'restart_max_s = 2\n'))
    assert not errors, errors
    text = bridge_conf(cfg)
    if cleansession:
        text = text.replace("cleansession false\nlocal", "cleansession true\nlocal")
    b = Broker(d, extra=f"log_dest file {d}/mosquitto.log\nlog_type all\n")
    with open(b.conf, "a") as f:
        f.write(text)
    b.start()
    return b, pw


def client(cid, port, on_message, subs, tls=None, user=None):
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=cid, protocol=mqtt.MQTTv311,
                    clean_session=False)
    if user:
        c.username_pw_set(*user)
    if tls:
        c.tls_set(ca_certs=tls, cert_reqs=ssl.CERT_REQUIRED)
    c.reconnect_delay_set(0.2, 1)
    c.on_connect = lambda cl, u, f, rc, p: cl.subscribe([(s, 1) for s in subs])
    c.on_message = on_message
    c.connect_async("127.0.0.1", port, keepalive=30)
    c.loop_start()
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=10)
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--down", type=float, default=10, help="seconds the tier stays down")
    ap.add_argument("--deadline", type=float, default=60)
    ap.add_argument("--node-first", type=float, default=0, metavar="S",
                    help="node n1 killed alone S seconds before the whole tier (the docs' example "
                         "kills one node and brings it back only with the tier)")
    ap.add_argument("--cleansession", action="store_true",
                    help="the bridges' remote session clean (local_cleansession false)")
    ap.add_argument("--dir", default="/tmp/tier-restart")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    tables = [f"t{i + 1}" for i in range(a.tables)]
    tls = make_ca(os.path.join(a.dir, "tls"))
    tier = CentralCluster(a.dir, tls, {t: f"pw-{t}" for t in tables}, consumer=("bs", "bs-pw"))
    tier.start()
    seen = {t: {"cmd": 0, "evt": 0, "cmd_at": 0.0, "evt_at": 0.0} for t in tables}
    lock = threading.Lock()

    def got(kind):
        def on_message(cl, u, m):
            t = m.topic.split("/")[2]
            with lock:
                seen[t][kind] += 1
                seen[t][kind + "_at"] = time.monotonic()
        return on_message
    bs = client("bs", tier.mqtt_ports[0], got("evt"), [f"{P}/+/events"], tls["ca"], ("bs", "bs-pw"))
    edges, uplinks, locals_ = [], [], []
    for i, t in enumerate(tables):
        u = Uplink(tier.mqtt_ports)
        b, _ = edge(os.path.join(a.dir, t), i, t, u, tls, a.cleansession)
        uplinks.append(u)
        edges.append(b)
        locals_.append(client(f"table-{t}", b.port, got("cmd"), [f"{P}/{t}/commands"]))
    stop = threading.Event()

    def traffic():
        n = 0
        while not stop.wait(0.1):
            n += 1
            for t, c in zip(tables, locals_):
                if n % 3 == 0:
                    c.publish(f"{P}/{t}/events", json.dumps({"n": n}), qos=1)
                if n % 5 == 0 and bs.is_connected():
                    bs.publish(f"{P}/{t}/commands", json.dumps({"n": n}), qos=1)
    threading.Thread(target=traffic, daemon=True).start()
    results = []
    try:
        time.sleep(10)      # warm up: every bridge connected and subscribed
        for cycle in range(1, a.cycles + 1):
            if a.node_first:
                tier.kill_node(0)
                for u in uplinks:
                    u.node(0, False)
                time.sleep(a.node_first)
            for i in range(3):
                tier.kill_node(i)
                for u in uplinks:
                    u.node(i, False)
            time.sleep(a.down)
            for i in range(3):
                tier.start_node(i, wait=False)
                for u in uplinks:
                    u.node(i, True)
            t_start = time.monotonic()
            for i in range(3):
                tier.wait_ready(i)
            ready = time.monotonic()
            end = ready + a.deadline
            while time.monotonic() < end:
                with lock:
                    late = [t for t in tables if seen[t]["cmd_at"] < ready or seen[t]["evt_at"] < ready]
                if not late:
                    break
                time.sleep(0.5)
            with lock:
                back = {t: (round(max(seen[t]["cmd_at"], seen[t]["evt_at"]) - ready, 1)
                            if t not in late else None) for t in tables}
                dirs = {t: {"commands_in": seen[t]["cmd_at"] >= ready,
                            "events_out": seen[t]["evt_at"] >= ready} for t in late}
            r = {"cycle": cycle, "tier_ready_s": round(ready - t_start, 1), "stuck": dirs,
                 "back_s_after_ready": back}
            if late:
                nodes = {f"n{i + 1}": {k: _get(p["http"], path) for k, path in ENDPOINTS.items()}
                         for i, p in enumerate(tier.ports)}
                rows, suspect = consumers(nodes)
                with open(os.path.join(a.dir, f"stuck-cycle{cycle}.json"), "w") as f:
                    json.dump({"result": r, "consumers": rows, "suspect": suspect, "nodes": nodes},
                              f, indent=1, default=str)
            results.append(r)
            print(json.dumps(r), flush=True)
            time.sleep(5)
    finally:
        stop.set()
        for c in locals_ + [bs]:
            c.loop_stop()
        for b in edges:
            b.stop()
        for u in uplinks:
            u.close()
        tier.stop()
    print(json.dumps({"cycles": len(results), "stuck_cycles": sum(1 for r in results if r["stuck"]),
                      "stuck_tables": sum(len(r["stuck"]) for r in results),
                      "cleansession": a.cleansession}))


if __name__ == "__main__":
    main()
