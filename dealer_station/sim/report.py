"""table-sim's report: what was played, what went wrong and how it was resolved, what the betting
system received, and its balances against the settlement reference (a replay of the daemon's own
journal settled with the same bets)."""
import json
import os
import sqlite3
import time
from collections import Counter

from controller import guarded_step, new_table
from controller.settlement import correction, settle


def reference_balances(profile, journal, bets):
    """Replay the journal through the engine and settle every result with the bets placed."""
    db = sqlite3.connect(journal)
    inputs = [json.loads(r[0]) for r in db.execute("SELECT body FROM inputs ORDER BY n")]
    last_seq = db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0] or 0
    db.close()
    t = new_table(profile)
    reference = Counter()
    results = {}
    for i in inputs:
        t, out = guarded_step(t, i)
        for o in out:
            if o["type"] == "round_result":
                results[o["round"]] = o
                for r in settle(profile, o, bets.get(o["round"], [])):
                    reference[r["id"]] += r["net"]
            elif o["type"] == "result_corrected" and o["round"] in results:
                for c in correction(profile, results[o["round"]], o, bets.get(o["round"], [])):
                    reference[c["id"]] += c["difference"]
    return reference, last_seq


def build_report(h, in_flight_s=5.0):
    bs = h.bs
    journal = os.path.join(h.dir, "journal.sqlite")
    db = sqlite3.connect(journal)
    wanted = db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0] or 0
    db.close()
    # the last messages in flight, and replies to the last commands (sent again if lost); what
    # the table journals after this moment (it may still be running) is not owed to the report
    end = time.monotonic() + in_flight_s
    while (bs.last < wanted or bs.unanswered()) and time.monotonic() < end:
        time.sleep(0.02)
    reference, _ = reference_balances(h.profile, journal, bs.bets)
    codes = {k.split(":", 1)[1]: v for k, v in bs.counts.items() if k.startswith("irregularity:")}
    minutes = (time.monotonic() - getattr(h, "t0", time.monotonic())) / 60
    unresolved = Counter(h.unresolved)
    resolutions = {k: dict(v) for k, v in sorted(h.resolutions.items())}
    for code, n in unresolved.items():
        resolutions.setdefault(code, {})["open at the end"] = n
    return {"profile": h.profile.name, "shoe": getattr(h, "shoe_kind", "v1"), "seed": h.seed,
            "rounds_played": h.started,
            "broker": h.broker_url or "private",
            "rounds_per_minute": round(h.resulted / minutes, 1) if minutes else None,
            "daemon_rss_mb": {"after_10_rounds": getattr(h, "rss_start", None),
                              "at_end": h.daemon_rss_mb()},
            # storage wear (issue #23); counts the running daemon only (a daemon_kill resets it)
            "daemon_written_bytes_per_round": (
                round(h.daemon_written_bytes() / h.resulted) if h.resulted and
                h.daemon_written_bytes() is not None and not h.injected.get("daemon_kill") else None),
            "rounds_resulted": h.resulted, "rounds_voided": h.voided,
            "void_reasons": dict(Counter(m["reason"] for m in bs.voided.values())),
            "messages_received": bs.counts["received"],
            "messages_lost": max(0, wanted - bs.last),
            "messages_repeated": bs.counts["repeated"],
            "commands_sent_again": bs.counts["commands_sent_again"],
            "resend_requests": bs.counts["resend_requests"],
            "commands_unanswered": bs.unanswered(),
            "faults_injected": dict(sorted(h.injected.items())),
            "irregularities": codes, "resolutions": resolutions,
            "camera": h.tcam.stats if h.tcam else None,
            "balances": {k: str(v) for k, v in sorted(bs.balances.items())},
            "reference_balances": {k: str(v) for k, v in sorted(reference.items())},
            "balances_match": dict(reference) == dict(bs.balances) and bool(reference),
            "protocol_errors": len(bs.protocol_errors),
            # messages whose signature or hash chain did not verify (never applied)
            "signature_errors": len(bs.signature_errors),
            "events_signed": bs.public_key is not None}
