"""The betting system's ledger in a simulated studio: one consumer of every table's events on the
central tier (`dealer-station/v1/+/events`, QoS 1, a persistent session), following
docs/protocol.md's rules for consumers across tables: deduplicate by (table, seq), apply each
table's events strictly in sequence order, hold what comes after a gap and ask that table for the
missing ones with `resend`. It measures what the studio benchmark reports: messages per second and
the latency from the card read (the event's `ts`, stamped when the daemon received the card) to
this consumer."""
import datetime
import json
import threading
import time
import uuid
from collections import Counter

from dealer_station import signing

from .central_client import central_client, renew

GAP_S = 0.5          # a gap open this long: `resend` from it; again after twice as long each time
GAP_MAX_S = 8.0      # while it stays open (each resend republishes everything from the gap on:
                     # asking faster than a slow uplink carries them queues copies of copies)
UNANSWERED_S = 15.0  # a resend unanswered this long while connected (or answered "published
                     # again" and not one of its events comes): renew the session
QUIET_S = 10.0       # a table silent this long: `resend` from last + 1 (again every QUIET_S):
                     # a lost tail is no gap, and a central tier that lost its state loses tails


def _ts(s):
    try:
        return datetime.datetime.fromisoformat(s).timestamp()
    except (TypeError, ValueError):
        return None


class Ledger:
    def __init__(self, central, prefix="dealer-station/v1", client_id="ledger", verify=False):
        """verify: every table signs its stream; its events wait for its key (add_key)."""
        self.verify = verify
        self.keys = {}                 # table -> its public key
        self.chain = {}                # table -> hash of the message applied last
        self.signature_errors = {}     # table -> [(seq, why)]
        self.prefix = prefix
        self.lock = threading.Lock()
        self.last = Counter()          # table -> last seq applied
        self.held = {}                 # table -> {seq: (message, its payload text)}
        self.gap_since = {}
        self.heard = {}                # table -> when its last event came (monotonic)
        self.gap_wait = {}             # table -> (last seq when asked, seconds to wait)
        self.applied = {}              # table -> [message, ...] in the order applied
        self.counts = Counter()
        self.latencies = []            # (received at, seconds) of card_dealt, first copies only
        self.first_at = self.last_at = None
        self.subscribed = threading.Event()
        self.asked = {}                # resend id -> when, until the table's reply comes
        self.promised = {}             # table -> (a resend's reply's last seq, last then, when)
        self.c = central_client(
            client_id, central, on_message=self._message,
            on_connect=lambda cl, u, f, rc, p: cl.subscribe(
                [(f"{prefix}/+/events", 1), (f"{prefix}/+/replies", 1)]),
            on_subscribe=lambda cl, u, mid, codes, p: self.subscribed.set())
        self.stop = threading.Event()
        threading.Thread(target=self._gaps, name="ledger-gaps", daemon=True).start()

    def _message(self, client, userdata, msg):
        now = time.time()
        if msg.topic.endswith("/replies"):
            try:
                reply = json.loads(msg.payload)
                cid, seq = reply["id"], reply.get("seq")
            except (ValueError, KeyError, TypeError, AttributeError):
                return
            table = msg.topic[len(self.prefix) + 1:].split("/")[0]
            with self.lock:
                if (self.asked.pop(cid, None) is not None and isinstance(seq, list)
                        and len(seq) == 2 and isinstance(seq[1], int)
                        and seq[1] > self.last[table]):
                    # answered "published again": until an event of it comes the resend is not
                    # answered (a session restored with `replies` alive and `events` dead)
                    old = self.promised.get(table)
                    self.promised[table] = (seq[1], self.last[table], old[2] if old and
                                            old[1] == self.last[table] else time.monotonic())
            return
        try:
            m = json.loads(msg.payload)
            table, seq = m["table"], m["seq"]
        except (ValueError, KeyError, TypeError):
            self.counts["malformed"] += 1
            return
        with self.lock:
            self.counts["received"] += 1
            self.first_at = self.first_at or now
            self.last_at = now
            self.heard[table] = time.monotonic()
            held = self.held.setdefault(table, {})
            if seq <= self.last[table] or seq in held:
                self.counts["duplicates"] += 1
                return
            if seq != self.last[table] + 1:
                self.counts["arrived_past_a_gap"] += 1
            if m.get("type") == "card_dealt" and _ts(m.get("ts")) is not None:
                self.latencies.append((now, now - _ts(m["ts"])))
            held[seq] = (m, msg.payload.decode("utf-8", "replace"))
            self._apply(table)

    def add_key(self, table, public_key):
        """The table's Ed25519 public key (or its .pub file): from now on its events are
        applied only verified. Until a table's key is given its events wait (verify=True)."""
        key = signing.load_public(public_key) if isinstance(public_key, str) else public_key
        with self.lock:
            self.keys[table] = key
            self._apply(table)

    def _apply(self, table):
        """Apply the table's held events in seq order, after deduplication, each verified
        (docs/protocol.md, "Game integrity"): its signature, and its `prev` the hash of the one
        applied before it. One that fails is not applied: an alarm in `signature_errors`, and
        dropped, so the gap it leaves is asked for again (a copy that was altered on the way)."""
        held, out = self.held.get(table, {}), self.applied.setdefault(table, [])
        key = self.keys.get(table)
        if self.verify and key is None:
            return
        while self.last[table] + 1 in held:
            m, text = held[self.last[table] + 1]
            if key is not None:
                why = (None if signing.signature_ok(text, key) else "the signature does not verify")
                if why is None and m.get("prev") != self.chain.get(table, signing.GENESIS):
                    why = "prev is not the hash of the message before it"
                if why:
                    self.signature_errors.setdefault(table, []).append((m["seq"], why))
                    del held[m["seq"]]
                    return
                self.chain[table] = signing.digest(text)
            self.last[table] += 1
            out.append(held.pop(self.last[table])[0])

    def _gaps(self):
        while not self.stop.wait(0.1):
            now, ask = time.monotonic(), []
            with self.lock:
                for table, held in self.held.items():
                    if not held:
                        self.gap_since.pop(table, None)
                        continue
                    since = self.gap_since.setdefault(table, now)
                    at, wait = self.gap_wait.get(table, (None, GAP_S))
                    if at != self.last[table]:      # progress since the last ask: soon again
                        wait = GAP_S
                    if now - since > wait:
                        self.gap_since[table] = now
                        self.gap_wait[table] = (self.last[table], min(2 * wait, GAP_MAX_S))
                        ask.append((table, self.last[table] + 1))
                        self.counts["resend_requests"] += 1
                if self.c.is_connected():
                    for table, heard in self.heard.items():
                        if now - heard > QUIET_S and not self.held.get(table):
                            self.heard[table] = now
                            ask.append((table, self.last[table] + 1))
                            self.counts["quiet_probes"] += 1
                # a resend unanswered this long while connected: this session may be one the
                # central tier restored broken (central_client.renew); a table cut off answers
                # nothing either, hence at most one renewal a minute. Disconnected, no answer
                # can come: the wait starts again at the reconnection
                if not self.c.is_connected():
                    self.asked = dict.fromkeys(self.asked, now)
                late = [cid for cid, at in self.asked.items() if now - at > UNANSWERED_S]
                for cid in late:
                    del self.asked[cid]
                for table, (until, was, at) in list(self.promised.items()):
                    if self.last[table] >= until or self.last[table] > was:
                        del self.promised[table]          # its events come
                    elif not self.c.is_connected():
                        self.promised[table] = (until, was, now)
                    elif now - at > UNANSWERED_S:
                        del self.promised[table]
                        late.append(table)
            if late and renew(self.c):
                self.counts["session_renewals"] += 1
            for table, start in ask:
                cid = f"ledger-{uuid.uuid4().hex[:8]}"
                with self.lock:
                    self.asked[cid] = now
                self.c.publish(f"{self.prefix}/{table}/commands", json.dumps(
                    {"type": "resend", "from": start, "id": cid}), qos=1)

    def wait_for(self, wanted, timeout):
        """Until every table's last applied seq reaches wanted[table] (or the timeout)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if all(self.last[t] >= n for t, n in wanted.items()):
                    return True
            time.sleep(0.05)
        return False

    def close(self):
        self.stop.set()
        self.c.disconnect()
        self.c.loop_stop()


def percentile(values, q):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]
