"""The studio's report (a part of `Studio`, studio.py): each table's journal against what the
ledger applied, its betting system's figures and its edge's queue; the outages with the edges'
queues during them; the ledger's counts and its card latency, outside the faults too."""
import json
import os
import sqlite3
import time

from .ledger import percentile


class StudioReport:
    """A mixin of `Studio`: reads its tables, ledger, fault windows and queue samples."""

    def _journal(self, h):
        db = sqlite3.connect(os.path.join(h.dir, "journal.sqlite"))
        rows = db.execute("SELECT seq, body FROM outbox ORDER BY seq").fetchall()
        db.close()
        return [(seq, json.loads(body)) for seq, body in rows]

    def report(self, in_flight_s=30.0):
        if self.halted:
            in_flight_s = 0.0
        self.say("report: the last events in flight")
        per_table = {h.table: h.report(0.0 if self.halted else None) for h in self.tables}
        journals = {h.table: self._journal(h) for h in self.tables}
        if (not self.ledger.wait_for({t: (j[-1][0] if j else 0) for t, j in journals.items()},
                                     in_flight_s) and self.evidence):
            self.evidence.snapshot("ledger-timeout")
        led = self.ledger
        tables = {}
        for h in self.tables:
            t, journal = h.table, journals[h.table]
            with led.lock:
                applied = list(led.applied.get(t, []))
            seqs = [m["seq"] for m in applied]
            same = all(m["type"] == body["type"] and m.get("round") == body.get("round")
                       for m, (_, body) in zip(applied, journal))
            r = per_table[t]
            tables[t] = {"profile": r["profile"], "rounds_resulted": r["rounds_resulted"],
                         "rounds_voided": r["rounds_voided"], "journaled": len(journal),
                         "ledger_applied": len(applied),
                         "ledger_in_order": seqs == list(range(1, len(seqs) + 1)),
                         "ledger_missing": max(0, len(journal) - len(applied)),
                         "ledger_matches_journal": same and len(applied) >= len(journal),
                         "bettor_messages_lost": r["messages_lost"],
                         "bettor_repeated": r["messages_repeated"],
                         "bettor_quiet_probes": h.bs.counts["quiet_probes"],
                         "bettor_session_renewals": h.bs.counts["session_renewals"],
                         # SUBACK 0x80 from the tier, each asked again (central_client)
                         "bettor_subscriptions_refused": h.bs.counts["subscriptions_refused"],
                         "balances_match": r["balances_match"],
                         "protocol_errors": r["protocol_errors"],
                         # signed at the table, verified after the bridge and the central tier
                         "signature_errors": r["signature_errors"],
                         # and by the studio's ledger, for every table
                         "ledger_signature_errors": len(led.signature_errors.get(t, [])),
                         "edge_queue_peak": self._depth(t, 0, float("inf")),
                         "bridge_restarts": self.bridge_restarts[t],
                         "edge_restarts": self.edge_restarts[t]}
        span = (led.last_at - led.first_at) if led.first_at and led.last_at else 0
        lat = [s for _, s in led.latencies]
        quiet = [s for at, s in led.latencies if not self._near_fault(at)]
        outages = []
        for f, start, end in self.windows:
            during = {t: self._depth(t, start, end + 2) for t in self.ids}
            before = {t: self._depth(t, start - 5, start - 0.001) for t in self.ids}
            outages.append({**{k: f[k] for k in ("fault", "seconds")},
                            **({"node": f["node"]} if f["fault"] == "central_node_kill" else {}),
                            **({"table": self.ids[f["table"] - 1]} if f["fault"] == "uplink_cut" else {}),
                            "edge_queue_peak": during, "edge_queue_before": before})
        ok = all(v["ledger_matches_journal"] and v["ledger_in_order"] and v["balances_match"]
                 and not v["protocol_errors"] and not v["bettor_messages_lost"]
                 and not v["signature_errors"] and not v["ledger_signature_errors"]
                 for v in tables.values()) and not self.errors
        return {"tables": self.n, "rounds_per_table": self.rounds, "speed": self.speed,
                "run_s": round(getattr(self, "t1", time.monotonic()) - getattr(self, "t0", 0), 1),
                "faults": self.injected, "outages": outages,
                "ledger": {"received": led.counts["received"], "duplicates": led.counts["duplicates"],
                           "arrived_past_a_gap": led.counts["arrived_past_a_gap"],
                           "resend_requests": led.counts["resend_requests"],
                           "quiet_probes": led.counts["quiet_probes"],
                           "session_renewals": led.counts["session_renewals"],
                           "subscriptions_refused": led.c.refused,
                           "msgs_per_s": round(led.counts["received"] / span, 1) if span else None,
                           "card_latency_ms": {
                               "n": len(lat),
                               "p50": _ms(percentile(lat, 50)), "p99": _ms(percentile(lat, 99)),
                               "p50_outside_faults": _ms(percentile(quiet, 50)),
                               "p99_outside_faults": _ms(percentile(quiet, 99))}},
                "per_table": tables,
                # what stopped or broke the run itself (a stalled table, a node that did not
                # take sessions again, an interruption): any of them and the run is not ok
                "errors": list(self.errors), "ok": ok}

    def _depth(self, table, start, end):
        """The most messages the edge held for its bridge between start and end: its stored
        count above the least it ever held (retained $SYS and status messages, never sent)."""
        samples = self.queue_depth.get(table, [])
        if not samples:
            return None
        floor = min(n for _, n in samples)
        return max((n - floor for at, n in samples if start <= at <= end), default=None)

    def _near_fault(self, at_wall):
        """A message received during a fault or within 10 s after it (wall clock)."""
        mono = at_wall - time.time() + time.monotonic()
        return any(start <= mono <= end + 10 for _, start, end in self.windows)


def _ms(s):
    return None if s is None else round(s * 1000, 1)
