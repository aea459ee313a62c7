"""What a run says of its daemon and of a stall (a part of `Harness`, harness.py): the daemon's
storage writes and memory from /proc, and a stuck table's error naming whose silence it is."""
import json
import os


class Diagnostics:
    """A mixin of `Harness`: reads its daemon, journal, betting system and shoe."""

    def daemon_written_bytes(self):
        """What the daemon (this run of it) has written to storage: /proc/PID/io write_bytes."""
        try:
            with open(f"/proc/{self.daemon.pid}/io") as f:
                for line in f:
                    if line.startswith("write_bytes:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def daemon_rss_mb(self):
        """The daemon's resident memory (for the soak run)."""
        try:
            with open(f"/proc/{self.daemon.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            return None
        return None

    def stuck(self, why):
        return TimeoutError(f"table-sim: {why}, waiting for {self.waiting} (state {self.state}, "
                            f"{self.resulted} rounds resulted, {self.voided} voided, "
                            f"{self.bs.unanswered()} commands unanswered); {self.whose_silence()}")

    def whose_silence(self):
        """Which side is silent: the table's journal against what its betting system applied.
        A journal ahead: the table published, its events did not reach the betting system (a
        broker or bridge path); not ahead: the table itself published nothing more (its shoe,
        its panel or its daemon)."""
        import sqlite3
        try:
            db = sqlite3.connect(f"file:{os.path.join(self.dir, 'journal.sqlite')}?mode=ro",
                                 uri=True)
            row = db.execute("SELECT seq, body FROM outbox ORDER BY seq DESC LIMIT 1").fetchone()
            db.close()
        except sqlite3.Error as e:
            return f"the table's journal not read ({e})"
        last, kind = (row[0], json.loads(row[1]).get("type")) if row else (0, None)
        bs = self.bs
        counts = (f"{bs.counts['quiet_probes']} quiet probes, "
                  f"{bs.counts['session_renewals']} session renewals, "
                  f"{bs.counts['subscriptions_refused']} subscriptions refused")
        if last > bs.last:
            return (f"the table journaled up to seq {last} ({kind}), its betting system applied "
                    f"up to {bs.last}: the events did not reach it ({counts})")
        shoe = ""
        if self.shoe is not None and hasattr(self.shoe, "sent"):
            shoe = (f"; the shoe: {self.shoe.next} cards drawn, frame seq {self.shoe.seq}, "
                    f"{len(self.shoe.sent)} frames unacknowledged by the daemon")
        return (f"the table journaled nothing past seq {last} ({kind}), all applied by its "
                f"betting system: the table itself is silent ({counts}){shoe}")
