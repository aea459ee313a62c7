"""The simulated betting system: an MQTT client that closes betting with random seats and bets,
decides each hand with a computer player, checks every message against the protocol, detects
gaps and repeats by sequence number, settles with the settlement reference and keeps balances.

Given the table's public key, it verifies every event as docs/protocol.md ("Game integrity") tells
a betting system to: the Ed25519 signature of each message received (a repeat too: a forged copy
of an old seq is an alarm as well), then, once repeats are dropped by seq and gaps filled, the
hash chain in seq order (each `prev` the SHA-256 of the message applied before it). A message that
fails is never applied; it counts in `signature_errors`, and the gap it leaves is asked for again.

It follows docs/protocol.md's rules for clients: a command unanswered after REPLY_TIMEOUT_S is sent
again with the same id (the daemon applies it once and answers `duplicate` with the original
result), and a gap in the events not filled within GAP_S is asked for with `resend`.

bettor.py is the client (its connection, the events in order and verified, the commands sent until
answered, resend); the game (bets, decisions, settlement) is bettor_game.py's, and the fields
each event must carry are outputs.py's."""
import hashlib
import json
import queue
import random
import threading
import time
import uuid
from collections import Counter

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.players import ChartPlayer, chart_for
from controller.strategy_charts import STANDARD
from dealer_station import signing
from dealer_station.mqtt_link import no_delay

from .bettor_game import BettorGame
from .outputs import REQUIRED

REPLY_TIMEOUT_S = 2.0     # a command unanswered this long is sent again, with the same id
MAX_SENDS = 30            # then the table is not answering: a protocol error, given up
GAP_S = 0.5               # a gap in the events not filled this long: `resend` from it
GAP_MAX_S = 8.0           # asked again after twice as long each time while it stays open, one
                          # resend at a time: each republishes everything from the gap on, and
                          # re-asking faster than a slow uplink carries them queues copies of copies
RENEW_SENDS = 5           # on the central tier: a command unanswered this many sends' time
                          # (10 s) while connected renews the session (central_client.renew: a
                          # session the tier restored broken delivers nothing, for good); the wait
                          # starts again at each reconnection, and renew() allows one a minute
QUIET_S = 5.0             # on the central tier: a table silent this long is asked `resend` from
                          # last + 1 (a lost tail is no gap: nothing after it shows it missing)
CATCH_UP_S = 2 * QUIET_S + RENEW_SENDS * REPLY_TIMEOUT_S + 10
                          # the longest a lost tail takes to come on the central tier: a quiet
                          # probe, its events not coming that long, a renewal, the new session's
                          # own probe, 10 s to connect, subscribe and be sent them (a report's wait)


class BettingSystem(BettorGame):
    def __init__(self, host, port, table, profile, seed=1, level="hard", prefix="dealer-station/v1",
                 players=None, central=None, max_sends=MAX_SENDS, public_key=None):
        """central: the studio's central tier ({"nodes", "ca", "username", "password"},
        central_client.py) instead of the table's broker at host:port. public_key: the table's
        Ed25519 public key (or the path of its .pub file): every event is then verified."""
        self.base = f"{prefix}/{table}"
        self.profile = profile
        self.rng = random.Random(seed)
        self.level = level
        self.levels = dict(players or {})     # seat -> easy | normal | hard (else `level`)
        self.charts = {"normal": ChartPlayer(STANDARD), "hard": ChartPlayer(chart_for(profile))}
        self.events = queue.Queue()
        self.last = 0
        self.last_hash = signing.GENESIS    # the chain: the hash of the message applied last
        self.held = {}            # seq -> (event, its hash), waiting for the ones before
        self.public_key = (signing.load_public(public_key) if isinstance(public_key, str)
                           else public_key)
        self.signature_errors = []  # (seq, why) of each message that failed verification
        self.counts = Counter()
        self.protocol_errors = []
        self.balances = Counter()
        self.bets = {}            # round -> bets placed
        self.results = {}         # round -> result message
        self.voided = {}
        self.corrected = {}       # round -> result_corrected
        self.hands = {}           # seat -> [[cards]] of the round under way
        self.up = None
        self.table_cards = {}     # baccarat: player / banker -> cards of the round under way
        self.lock = threading.Lock()
        self.pending = {}         # command id -> [command, deadline, sends, first sent at]
        self.connected_since = None     # the central tier: since when connected (None: not)
        self.gap_since = None
        self.lose = Counter()     # faults: "command", "reply", "event" -> how many to lose
        self.subscribed = threading.Event()
        self.connack = None       # the broker's CONNACK reason code, once it answered
        self.broker_at = "the central tier"
        self.max_sends = max_sends
        self.stop = threading.Event()
        self.heard = time.monotonic()     # the last event (central tier: the quiet probe)
        self.quiet_probe = central is not None
        self.resend_id = None             # the resend under way (gap or quiet probe)
        self.gap_wait, self.gap_last = GAP_S, 0
        self.promised = None              # a resend's reply's last seq, self.last then, when
        if central is not None:
            from .central_client import central_client
            self.c = central_client(
                f"bs-{table}", central, on_message=self._message,
                on_connect=self._connected, on_subscribe=self._subscribed)
            threading.Thread(target=self._deadlines, name="bettor-deadlines", daemon=True).start()
            return
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bs-{table}-{uuid.uuid4().hex[:6]}",
                        protocol=mqtt.MQTTv5)
        self.broker_at = f"{host}:{port}"
        c.on_connect = self._connected
        c.on_subscribe = lambda cl, u, mid, codes, p: self.subscribed.set()
        c.on_message = self._message
        no_delay(c)
        props = Properties(PacketTypes.CONNECT)
        props.SessionExpiryInterval = 3600
        c.connect(host, port, clean_start=False, properties=props)
        c.loop_start()
        self.c = c
        threading.Thread(target=self._deadlines, name="bettor-deadlines", daemon=True).start()

    def _connected(self, cl, u, f, rc, p):
        self.connack = rc
        if not rc.is_failure:
            cl.subscribe([(f"{self.base}/events", 1), (f"{self.base}/replies", 1)])

    def _subscribed(self, cl, u, mid, codes, p):
        # a central node that could not make a subscription's consumer in time answers it
        # 0x80 and keeps the connection (nats-server 2.9: "Unable to add JetStream consumer");
        # counted, so a stalled table's error can say its betting system was subscribed to nothing
        # (central_client asks a refused one again)
        self.counts["subscriptions_refused"] += sum(1 for rc in codes if rc.is_failure)
        self.subscribed.set()

    def wait_subscribed(self, timeout=10.0):
        if not self.subscribed.wait(timeout):
            if self.connack is None:       # never connected: a SUBACK was never asked for
                raise TimeoutError(f"betting system: no MQTT connection to {self.broker_at} in "
                                   f"{timeout:g} s (nothing answers there as a broker)")
            if self.connack.is_failure:
                raise TimeoutError(f"betting system: the broker at {self.broker_at} refused the "
                                   f"connection: {self.connack}")
            raise TimeoutError(f"betting system: no SUBACK from the broker in {timeout:g} s")

    def _message(self, client, userdata, msg):
        if msg.topic.endswith("/replies"):
            return self._reply(msg.payload)
        try:
            m = json.loads(msg.payload)
            seq = m["seq"]
        except (ValueError, KeyError, TypeError):
            self.protocol_errors.append(msg.payload[:100])
            return
        key = self.public_key
        signed = key is None or signing.signature_ok(msg.payload.decode("utf-8", "replace"), key)
        with self.lock:
            self.counts["received"] += 1
            self.heard = time.monotonic()
            if not signed:
                self.signature_errors.append((seq, "the signature does not verify"))
                return                                  # never applied: a gap, asked for again
            if seq <= self.last or seq in self.held:
                self.counts["repeated"] += 1
                return
            if self.lose["event"]:
                self.lose["event"] -= 1
                self.counts["events_lost"] += 1
                return
            self.held[seq] = (m, hashlib.sha256(msg.payload).hexdigest())
            while self.last + 1 in self.held:          # in sequence order, never past a gap
                m, h = self.held.pop(self.last + 1)
                if key is not None and m.get("prev") != self.last_hash:
                    self.signature_errors.append((m["seq"], "prev is not the hash of the "
                                                            "message before it"))
                    break                               # dropped: asked for again as a gap
                self.last, self.last_hash = m["seq"], h
                self.events.put(m)

    def _reply(self, payload):
        try:
            m = json.loads(payload)
            cid, status = m["id"], m["status"]
        except (ValueError, KeyError, TypeError):
            self.protocol_errors.append(payload[:100])
            return
        with self.lock:
            if cid not in self.pending:
                return                                  # a reply to a send we had given up
            if self.lose["reply"]:
                self.lose["reply"] -= 1
                self.counts["replies_lost"] += 1
                return
            del self.pending[cid]
            self.counts[f"reply:{status}"] += 1
            seq = m.get("seq")
            if (self.quiet_probe and m.get("id") == self.resend_id and isinstance(seq, list)
                    and len(seq) == 2 and isinstance(seq[1], int) and seq[1] > self.last):
                # the table publishes [a, b] again: until an event comes, the resend is not
                # answered (a session the tier restored with its `replies` alive and its
                # `events` dead answers every probe and delivers nothing; seen: a roulette
                # betting system stuck 38 events behind through 5 answered probes)
                old = self.promised
                # the next tick dates it; a probe answered again without progress keeps the date
                self.promised = (seq[1], self.last,
                                 old[2] if old is not None and old[1] == self.last else None)

    def _deadlines(self):
        while not self.stop.wait(0.1):
            self.tick(time.monotonic())

    def tick(self, now):
        """Send again each command past its deadline (same id); ask for a gap that stays open."""
        again, stuck = [], False
        if self.quiet_probe and not self.c.is_connected():
            self.connected_since = None     # no answer can come: the wait starts again later
        elif self.connected_since is None:
            self.connected_since = now
        with self.lock:
            for cid, p in list(self.pending.items()):
                # unanswered this long while connected (not merely sent 5 times: a command
                # pending across a long outage had its 5th send while disconnected, and the
                # session the tier restored for it was then never renewed)
                if (self.connected_since is not None
                        and now - max(p[3], self.connected_since) >= RENEW_SENDS * REPLY_TIMEOUT_S):
                    stuck = True
                if now < p[1]:
                    continue
                if p[2] >= self.max_sends:
                    del self.pending[cid]
                    self.protocol_errors.append(f"no reply to {p[0]} after {self.max_sends} sends")
                    continue
                p[1], p[2] = now + REPLY_TIMEOUT_S, p[2] + 1
                again.append(p[0])
                self.counts["commands_sent_again"] += 1
            if self.promised is not None:
                until, was, at = self.promised
                if at is None:
                    self.promised = (until, was, now)
                    at = now
                if self.last >= until or self.last > was:
                    self.promised = None        # they come: the session delivers
                elif (self.connected_since is not None
                        and now - max(at, self.connected_since) >= RENEW_SENDS * REPLY_TIMEOUT_S):
                    stuck = True                # answered, and not one event since: as unanswered
            gap = bool(self.held) and min(self.held) > self.last + 1
            if not gap:
                self.gap_since = None
            elif self.gap_since is None:
                self.gap_since = now
            if self.last != self.gap_last:          # progress: the next gap is asked for soon
                self.gap_last, self.gap_wait = self.last, GAP_S
            if gap and now - self.gap_since > self.gap_wait and self.resend_id not in self.pending:
                self.gap_since = now
                self.gap_wait = min(2 * self.gap_wait, GAP_MAX_S)
                again.append("resend")
                self.counts["resend_requests"] += 1
            if (self.quiet_probe and now - self.heard > QUIET_S and not gap
                    and self.resend_id not in self.pending):
                # a broker tier that lost its state (all central nodes down at once) may have
                # acknowledged the table's last events and lost them: ask for anything after
                # the last one (nothing, if the table is only idle: the reply's seq is null)
                self.heard = now
                again.append("resend")
                self.counts["quiet_probes"] += 1
        if stuck and self.quiet_probe:
            from .central_client import renew
            if renew(self.c):
                self.counts["session_renewals"] += 1
                with self.lock:
                    self.promised = None        # the new session's own probe asks again
        for cmd in again:
            if cmd == "resend":
                self.resend_id = self.command({"type": "resend", "from": self.last + 1})
            else:
                self._publish(cmd)

    def lost(self):
        with self.lock:
            return len(self.held)

    def check(self, m):
        need = REQUIRED.get(m.get("type"))
        if need is None or any(k not in m for k in need):
            self.protocol_errors.append(m)
            return False
        return True

    def command(self, cmd):
        """Send a command; it is sent again (same id) until a reply comes. Returns its id."""
        cmd = dict(cmd)
        cmd.setdefault("id", uuid.uuid4().hex[:12])
        with self.lock:
            now = time.monotonic()
            self.pending[cmd["id"]] = [cmd, now + REPLY_TIMEOUT_S, 1, now]
            if self.lose["command"]:
                self.lose["command"] -= 1
                self.counts["commands_lost"] += 1
                return cmd["id"]
        self._publish(cmd)
        return cmd["id"]

    def _publish(self, cmd):
        self.c.publish(f"{self.base}/commands", json.dumps(cmd), qos=1)

    def unanswered(self):
        with self.lock:
            return len(self.pending)

    def close(self):
        self.stop.set()
        self.c.disconnect()
        self.c.loop_stop()
