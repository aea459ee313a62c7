"""A station over a real journal, carried out as the daemon does, for the game-integrity tests
(signed events, staff rights, the audit log, the round export)."""
import json
import random

from controller import get_profile
from dealer_station.journal import Journal
from dealer_station.station import Settings, Station
from dealer_station.station_types import (Audit, Clock, Command, LocalInput, MarkSent, Publish,
                                          Record, Refuse, Reply, SetMeta)
from helpers import drive, shoe


class Rig:
    def __init__(self, path, profile="luxury21", signer=None, staff=None):
        self.path = str(path)
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.settings = Settings("t1", self.profile, "test", inflight=10_000, signer=signer,
                                 staff=staff)
        self.wall = 1_800_000_000.0
        self.published = []          # message texts, in the order handed to the broker
        self.replies = []
        self.open()

    def clock(self):
        self.wall += 0.25
        return Clock(self.wall, self.wall)

    def open(self):
        self.j = Journal(self.path, "t1", self.profile.name)
        self.j.db.execute("PRAGMA synchronous=OFF")
        self.st = Station(self.settings)
        j = self.j
        self.n0, _ = self.st.restore(j.checkpoints(), j.last_input()[0] + 1, j.next_seq,
                                     j.get_meta("shoe_base"), j.last_shoe_seq(), j.last_message(),
                                     j.audit_head(), j.get_meta("shoe_pos"))
        self.carry([self.st.boot(self.clock(), {"version": "test", "config_hash": "c0ffee"})])
        self.carry(self.st.replay(j.inputs_after(self.n0), j.unsent(), self.clock(), self.n0))
        self.carry(self.st.pump())

    def crash(self):
        self.j.db.close()
        self.j.lock.release()
        self.open()

    def step(self, ev):
        wanted = self.st.reads(ev)
        reads = {}
        if "command_reply" in wanted:
            reads["command_reply"] = self.j.command_reply(*wanted["command_reply"])
        if "outbox_from" in wanted:
            reads["outbox_rows"] = self.j.outbox_from(wanted["outbox_from"])
        return self.carry(self.st.step(ev, self.clock(), reads))

    def carry(self, effects):
        for e in effects:
            if isinstance(e, Record):
                self.j.write(e)
            elif isinstance(e, Audit):
                self.j.audit(e.entry, e.remember)
            elif isinstance(e, Refuse):
                self.j.refuse(e)
            elif isinstance(e, SetMeta):
                self.j.set_meta(e.key, e.value)
            elif isinstance(e, Publish):
                self.published.append(e.message)
            elif isinstance(e, MarkSent):
                self.j.mark_sent([e.seq])
            elif isinstance(e, Reply):
                self.replies.append(e.payload)
        return effects

    def input(self, body, origin="test"):
        return self.step(LocalInput(body, origin))

    def command(self, cmd, user=None, cid=None):
        cid = cid or f"c{len(self.replies) + 1}"
        self.step(Command(json.dumps({"id": cid, **cmd}).encode(), None, None, 1, 1, user))
        return self.replies[-1]

    def play(self, seed=1, rounds=4, mischief=0.0):
        """Rounds through the station, as `tests.helpers.drive` plays them on the engine."""
        _, log = drive(self.profile, shoe(self.profile, seed), random.Random(seed), rounds, mischief)
        for ev, _ in log:
            self.input(ev)

