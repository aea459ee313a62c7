"""`dealer-station status --config FILE [--json]`: what the running daemon says of its table (its
/status on the metrics endpoint: devices, round, outbox depth, health) and what its journal holds
(the last input, the last round's result, unsent outputs), which answers even when it is down.
Exit status: 0 running and healthy, 1 running but unhealthy (or its health unknown: no metrics),
3 not running."""
import datetime
import json
import os
import sqlite3
import sys
import urllib.error
import urllib.request


def _journal_facts(path):
    if not os.path.exists(path):
        return {"journal": path, "error": "no journal yet (the table has never run here)"}
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as e:
        return {"journal": path, "error": str(e)}
    try:
        last = db.execute("SELECT n, at, body FROM inputs ORDER BY n DESC LIMIT 1").fetchone()
        result = db.execute("SELECT body FROM outbox WHERE json_extract(body, '$.type') IN "
                            "('round_result', 'round_voided') ORDER BY seq DESC LIMIT 1").fetchone()
        top = db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0] or 0
        mark = db.execute("SELECT value FROM meta WHERE key='acked_through'").fetchone()
        out = {"journal": path, "last_input": None, "last_round": None,
               "outbox_unsent_at_most": top - int(mark[0]) if mark else top}
        if last:
            out["last_input"] = {"n": last[0], "type": json.loads(last[2]).get("type"),
                                 "at": _iso(last[1])}
        if result:
            r = json.loads(result[0])
            out["last_round"] = {"round": r.get("round"), "end": r["type"]}
        return out
    except sqlite3.Error as e:
        return {"journal": path, "error": str(e)}
    finally:
        db.close()


def _iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(timespec="seconds")


def gather(cfg):
    """Running is decided by the journal's lock (the daemon holds it as long as it lives), not by
    the metrics endpoint: `[metrics] port = 0` (any free port, as table-sim writes) or metrics
    disabled still show a running daemon. Its /status, at the port it noted in the lock file,
    adds devices, round and health."""
    from .lock import held
    doc = {"running": False, "table": cfg["table"]["id"], "profile": cfg["profile"].name}
    m = cfg["metrics"]
    holder = held(cfg["paths"]["journal"])
    if holder is None:
        doc["why_not"] = f"no dealer-station process holds the journal {cfg['paths']['journal']}"
    else:
        doc.update(running=True, pid=holder[0])
        url = holder[1].get("metrics") or (m["port"] and f"http://{m['bind']}:{m['port']}")
        if not m["enabled"]:
            doc["health_unknown"] = "metrics disabled in the configuration: only the journal is read"
        elif not url:
            doc["health_unknown"] = "its metrics endpoint is not up (yet)"
        else:
            try:
                with urllib.request.urlopen(url + "/status", timeout=3) as r:
                    doc.update(json.loads(r.read()), running=True)
            except (urllib.error.URLError, OSError, ValueError) as e:
                doc["health_unknown"] = f"nothing answers on {url}/status ({getattr(e, 'reason', e)})"
    doc["journal_facts"] = _journal_facts(cfg["paths"]["journal"])
    return doc


def human(doc):
    lines = []
    if doc["running"] and "health_unknown" in doc:
        lines.append(f"table {doc['table']} ({doc['profile']}): running (pid {doc['pid']}), health "
                     f"unknown: {doc['health_unknown']}")
    elif doc["running"]:
        lines.append(f"table {doc['table']} ({doc['profile']}), dealer-station {doc.get('version')}: "
                     f"running {doc.get('uptime_s', 0):.0f} s, {doc.get('health')}")
        for name, d in sorted((doc.get("devices") or {}).items()):
            extra = ", ".join(f"{k} {d[k]}" for k in ("model", "firmware", "serial") if d.get(k))
            reason = f": {d['reason']}" if d.get("reason") else ""
            lines.append(f"  {name}: {d.get('state')}{reason}" + (f" ({extra})" if extra else ""))
        s = doc.get("snapshot") or {}
        rnd = (s.get("round") or {}).get("round")
        lines.append(f"  phase {s.get('phase')}" + (f", round {rnd}" if rnd else "")
                     + f", {s.get('rounds')} rounds played"
                     + (f", PAUSED ({s['paused']})" if s.get("paused") else ""))
        lines.append(f"  outbox: {doc.get('outbox_depth')} not yet acknowledged by the broker; "
                     f"last seq {doc.get('last_seq')}")
    else:
        lines.append(f"table {doc['table']} ({doc['profile']}): not running: {doc.get('why_not')}")
    j = doc["journal_facts"]
    if "error" in j:
        lines.append(f"  journal: {j.get('journal')}: {j['error']}")
    else:
        li, lr = j["last_input"], j["last_round"]
        lines.append(f"  journal {j['journal']}: last input "
                     + (f"{li['n']} ({li['type']}) at {li['at']}" if li else "none")
                     + (f"; last round {lr['round']} ({lr['end'].replace('round_', '')})" if lr else ""))
    return "\n".join(lines)


def cmd(args):
    from .config import ConfigError, read_config
    try:
        cfg = read_config(args.config)
    except ConfigError as e:
        for line in e.errors:
            print(f"dealer-station: {line}", file=sys.stderr)
        return 2
    doc = gather(cfg)
    print(json.dumps(doc, indent=1) if args.json else human(doc))
    if not doc["running"]:
        return 3
    return 0 if doc.get("healthy") else 1      # running, health unknown: 1 (not shown healthy)


def add_parser(sub):
    s = sub.add_parser("status", help="the running table: devices, round, outbox, health")
    s.add_argument("--config", default="/etc/dealer-station/table.toml")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd)
