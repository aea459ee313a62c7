"""The station core's loopback probe of its commands path (pure: no paho, no clock, no randomness).

A table whose broker ACL does not let it read its `commands` topic is deaf: Mosquitto 2.0 grants
the SUBSCRIBE all the same and silently drops every command, and the table looked healthy. So
the station publishes a probe on `commands` (the topic the betting system writes) on every
connect and every `broker.probe_interval_s`, and expects it back within
`broker.probe_timeout_s`:

- the probe is `{"type":"probe","nonce":"<seed>-<n>"}`: the seed is random per process (the
  shell's, given at construction), `n` counts the probes; it is recognised by its exact bytes,
  so only the station's own current probe counts: anything else on the topic (a betting system's
  own probe, a hostile copy with another nonce) is an ordinary command to the station, refused
  or taken as before, and an old probe of ours (a late echo) is swallowed and changes nothing;
- alarm iff the probe got no echo by its deadline (an echo received at or before it clears the
  alarm, however late the loop handles it: the shell's receive time, Clock.received_mono, as the
  timers judge; one received later does not); the verdict holds until the next probe ends (a reconnect does not clear
  it: only an echo does);
- while the broker is down no probe is outstanding and none is sent; the next connect probes.

The verdict is shown as the `commands` device of the status: `connecting` until the first
probe ends, `ok`, or `fault` with the reason (so /healthz and `dealer-station status` say it).
"""

KEEP_OLD = 8        # our own earlier probes recognised (and ignored) when they come back late


class ProbeWatch:
    def __init__(self, seed="0", timeout_s=5.0, interval_s=60.0, topic="commands"):
        self.seed = seed
        self.timeout, self.interval, self.topic = timeout_s, interval_s, topic
        self.n = 0                # probes sent
        self.out = None           # (payload bytes, deadline) of the probe awaiting its echo
        self.old = []             # payloads of earlier probes (late echoes are ours, ignored)
        self.next_at = None       # monotonic time of the next probe (while connected)
        self.connected = False
        self.verdict = None       # None (not known yet), "ok", "deaf"
        self.refusal = None       # the broker's PUBACK refusing the probe that ended deaf, or None
        self.out_refusal = None   # the broker's PUBACK refusing the probe awaited, or None
        self.out_others = 0       # other messages the commands topic delivered while it was awaited
        self.others = 0           # ... while the probe that ended deaf was

    def configure(self, timeout_s, interval_s, topic):
        """A reload's settings: the probe under way keeps its deadline."""
        self.timeout, self.interval, self.topic = timeout_s, interval_s, topic

    def _send(self, mono):
        self.n += 1
        payload = f'{{"type":"probe","nonce":"{self.seed}-{self.n}"}}'.encode()
        if self.out is not None:
            self._forget(self.out[0])
        self.out, self.next_at = (payload, mono + self.timeout), None
        self.out_refusal, self.out_others = None, 0
        return payload

    def _forget(self, payload):
        self.old = (self.old + [payload])[-KEEP_OLD:]

    def up(self, mono):
        """The broker accepted the connection: probe now. Returns the payload to publish."""
        self.connected = True
        return self._send(mono)

    def down(self):
        """The link is down: the probe in flight is abandoned (not a failure of the commands
        path: the broker device says why), no probe until the next connect."""
        self.connected = False
        if self.out is not None:
            self._forget(self.out[0])
        self.out = self.next_at = None

    def echo(self, payload, mono):
        """A message on the commands tree: True if it is one of our probes (consumed: it is no
        command). Changes the verdict only for the probe awaited, at or before its deadline."""
        if self.out is not None and payload == self.out[0]:
            if mono > self.out[1]:       # came after its deadline: the timer was late, not us
                self._expire(mono)
                return True
            self._forget(self.out[0])
            self.out, self.verdict, self.refusal = None, "ok", None
            self.next_at = mono + self.interval
            return True
        if payload in self.old:
            return True
        self.other(mono)
        return False

    def ours(self, payload):
        """Whether `payload` is a probe this station sent (awaited, or one of the last KEEP_OLD):
        by its exact bytes, not its prefix, which anyone reading `commands` learns (cold41)."""
        return (self.out is not None and payload == self.out[0]) or payload in self.old

    def other(self, mono):
        """A message on the commands tree that is no probe of ours (on `commands`, or on a
        login's `commands/<login>`, where no probe goes)."""
        if self.out is not None and mono <= self.out[1]:
            # the tree delivers to this table (its read ACL works): a probe that then misses its
            # deadline is behind them (a flood of commands), not dropped by the broker's ACL
            self.out_others += 1

    def _expire(self, mono):
        self._forget(self.out[0])
        # why this probe failed, not an earlier one: with the ACL's write line added but its
        # read line missing, the fault went on saying "refused ... Not authorized" (cold trial)
        self.out, self.verdict, self.refusal = None, "deaf", self.out_refusal
        self.others = self.out_others
        self.next_at = mono + self.interval

    def refused(self, reason):
        """The broker refused to take our probe (a v5 PUBACK "Not authorized": the ACL lets the
        table read `commands` perhaps, but not write it). No verdict: the deadline gives it; this
        only says why, for the probe awaited (or, come after its deadline, the one that ended)."""
        if self.out is not None:
            self.out_refusal = reason
        elif self.verdict == "deaf":
            self.refusal = reason

    def due(self, mono):
        """Time has come. Returns the payload of a probe to publish now, or None."""
        if self.out is not None and mono > self.out[1]:
            self._expire(mono)
        if self.connected and self.out is None and self.next_at is not None \
                and mono >= self.next_at:
            return self._send(mono)
        return None

    def wake_at(self):
        if self.out is not None:
            # woken just after the deadline: an echo at the deadline itself still counts
            return self.out[1] + 1e-3
        return self.next_at if self.connected else None

    def device(self):
        """The `commands` entry of the status' devices."""
        if self.verdict == "ok":
            return {"state": "ok"}
        if self.verdict == "deaf" and self.refusal is not None:
            return {"state": "fault", "reason": (
                f"commands not delivered: broker ACL? (the broker refused the table's probe on "
                f"{self.topic}: {self.refusal}: the table's login must read and write "
                f"{self.topic}, docs/install.md)")}
        if self.verdict == "deaf" and self.others:
            return {"state": "fault", "reason": (
                f"commands delayed: the table's probe on {self.topic} did not come back within "
                f"{self.timeout:g} s, behind {self.others} other message(s) the commands topics "
                f"delivered meanwhile (the ACL lets the table read them): the table or its broker "
                f"is behind, "
                f"a flood of commands?")}
        if self.verdict == "deaf":
            return {"state": "fault", "reason": (
                f"commands not delivered: broker ACL? (the table's probe on {self.topic} did not "
                f"come back within {self.timeout:g} s: the table's login must read and write "
                f"{self.topic}, docs/install.md)")}
        return {"state": "connecting"}
