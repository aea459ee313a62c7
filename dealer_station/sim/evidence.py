"""A studio's evidence for a run that fails (`table-sim --tables N --debug-dir DIR`): snapshots of
the central tier's monitoring and of every table's consumers, at labelled moments (the tier back,
a table stalled, the ledger's wait timed out) and every PERIOD_S, written under DIR/evidence/.

Each snapshot holds, per central node, `/jsz?consumers=true&config=true`, `/connz?subs=detail`
and `/subsz?subs=1` as the node answered them, and a summary: each table's last seq in its
journal, at its betting system and at the ledger, the commands its betting system waits on, and
the tier's JetStream consumers with who (if anyone) subscribes their delivery subject. A consumer
whose delivery subject nobody subscribes, or that holds messages, is named in `suspect`, and so
is a subscribed delivery subject that no consumer has (an orphan subscription)."""
import json
import os
import sqlite3
import threading
import time
import urllib.request

PERIOD_S = 15.0
ENDPOINTS = {"jsz": "/jsz?consumers=true&config=true", "connz": "/connz?subs=detail",
             "subsz": "/subsz?subs=1"}


def _get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=3) as r:
            return json.loads(r.read())
    except (OSError, ValueError) as e:
        return {"error": str(e)}


class Evidence:
    def __init__(self, studio, directory):
        self.studio = studio
        self.dir = os.path.join(directory, "evidence")
        os.makedirs(self.dir, exist_ok=True)
        self.lock = threading.Lock()
        self.n = 0
        self.stop = threading.Event()

    def start_periodic(self):
        def run():
            while not self.stop.wait(PERIOD_S):
                self.snapshot("periodic")
        threading.Thread(target=run, name="evidence", daemon=True).start()

    def close(self):
        self.stop.set()

    def snapshot(self, label):
        """Writes DIR/evidence/NNN-<label>.json; returns its path (never raises: evidence only)."""
        try:
            return self._snapshot(label)
        except Exception as e:           # noqa: BLE001 - a failing dump must not fail the run
            return f"evidence {label}: {e!r}"

    def _snapshot(self, label):
        s = self.studio
        at = round(time.monotonic() - s.born, 1)      # the base of the studio's log lines
        nodes = {}
        for i, ports in enumerate(s.central.ports):
            nodes[f"n{i + 1}"] = {k: _get(ports["http"], p) for k, p in ENDPOINTS.items()}
        snap = {"label": label, "studio_s": at, "tables": self._tables(), "nodes": nodes}
        snap["consumers"], snap["suspect"] = consumers(nodes)
        with self.lock:
            self.n += 1
            path = os.path.join(self.dir, f"{self.n:03d}-{label}.json")
        with open(path, "w") as f:
            json.dump(snap, f, indent=1, default=str)
        s.say(f"evidence: {os.path.basename(path)} ({len(snap['suspect'])} suspect consumers)")
        return path

    def _tables(self):
        s, out = self.studio, {}
        led = s.ledger
        for h in s.tables:
            t = h.table
            try:
                db = sqlite3.connect(os.path.join(h.dir, "journal.sqlite"), timeout=1)
                row = db.execute("SELECT seq, body FROM outbox ORDER BY seq DESC LIMIT 1").fetchone()
                db.close()
            except sqlite3.Error as e:
                row = (None, json.dumps({"error": str(e)}))
            bs = h.bs
            with bs.lock:
                pending = [{"cmd": p[0], "sends": p[2]} for p in bs.pending.values()]
                bs_last, bs_held = bs.last, sorted(bs.held)[:5]
            with led.lock:
                led_last, led_held = led.last[t], sorted(led.held.get(t, {}))[:5]
            out[t] = {"profile": h.profile.name, "state": h.state, "waiting": h.waiting,
                      "resulted": h.resulted, "journal_last": row[0] if row else 0,
                      "journal_last_type": json.loads(row[1]).get("type") if row else None,
                      "bettor_last": bs_last, "bettor_held": bs_held, "bettor_pending": pending,
                      "bettor_connected": bs.c.is_connected(), "bettor_counts": dict(bs.counts),
                      "ledger_last": led_last, "ledger_held": led_held,
                      "edge_stored": (s.queue_depth.get(t) or [(0, None)])[-1][1]}
        return out


def consumers(nodes):
    """Every node's view of the MQTT consumers, and the suspect ones: no subscriber for its
    delivery subject anywhere, or messages pending / unacknowledged at its leader."""
    subscribed = {}
    for name, n in nodes.items():
        for c in n["connz"].get("connections", []) or []:
            who = c.get("mqtt_client") or c.get("name") or c.get("cid")
            for sub in c.get("subscriptions_list_detail", []) or []:
                subscribed.setdefault(sub.get("subject"), []).append(f"{name}:{who}")
            for sub in c.get("subscriptions_list", []) or []:
                subscribed.setdefault(sub, []).append(f"{name}:{who}")
    rows, suspect = [], []
    for name, n in nodes.items():
        for acc in n["jsz"].get("account_details", []) or []:
            for st in acc.get("stream_detail", []) or []:
                for c in st.get("consumer_detail", []) or []:
                    cfg = c.get("config", {})
                    ds = cfg.get("deliver_subject")
                    row = {"node": name, "stream": st.get("name"), "consumer": c.get("name"),
                           "filter": cfg.get("filter_subject"), "deliver_subject": ds,
                           "leader": (c.get("cluster") or {}).get("leader"),
                           "delivered": (c.get("delivered") or {}).get("stream_seq"),
                           "ack_floor": (c.get("ack_floor") or {}).get("stream_seq"),
                           "num_ack_pending": c.get("num_ack_pending"),
                           "num_pending": c.get("num_pending"),
                           "num_redelivered": c.get("num_redelivered"),
                           "push_bound": c.get("push_bound"),
                           "subscribers": subscribed.get(ds, [])}
                    rows.append(row)
                    leader = row["leader"] == name
                    # $MQTT_rmsgs: the server's own retained-message consumers, read by an
                    # internal client /connz does not list (never a session's)
                    if ds and leader and st.get("name") != "$MQTT_rmsgs" and (
                            not row["subscribers"] or row["num_pending"] or row["num_ack_pending"]):
                        suspect.append(row)
    # the other way round: a session's delivery subject that no consumer delivers to (its
    # consumer did not come back: a persistent session re-binds the subject without checking)
    delivered_to = {r["deliver_subject"] for r in rows}
    if rows:
        for subj, who in subscribed.items():
            if subj and subj.startswith("$MQTT.sub.") and subj not in delivered_to:
                suspect.append({"orphan_subscription": subj, "subscribers": who})
    return rows, suspect
