"""The daemon's effects carried out (docs/architecture.md, "The daemon"): the station core's
effects, in the order it returns them, onto the journal (writes, the batched shoe position),
the MQTT link (publish, acknowledge, reply), the shoe, the wheel and the lights, the timer
deadline, metrics and the log. A mixin of `Daemon` (dealer_station/daemon.py): it reads the
loop's state (`journal`, `link`, `pos_write`, `held_acks`, `mids`, `sent`, ...) set there."""
import logging
import sqlite3
import time

from .station_refusals import tally
from .station_types import (AckCommand, AckShoe, Archive, Audit, Count, Lights, Log, MarkSent,
                            Probe, Publish, Record, Refresh, Refuse, Reply, ResendPage, ResendRows,
                            SetMeta, Status, Timer, WheelCommand)

log = logging.getLogger("dealer-station")
# While counted refusals wait for their write, the loop waits up to this long for the next item
# before writing: their PUBACKs are held until then, and the broker sends no more than the
# table's Receive Maximum ([broker] receive_maximum) until they go
GATHER_S = 0.02


class Effects:
    def _flush_position(self):
        """Write the burst's last shoe position (one fsync), then send the ACKs held for it: a
        shoe frame is acknowledged only once kept (docs/shoe-protocol.md rule 10). A crash before
        it loses no frame: the shoe still holds every one not acknowledged and sends it again."""
        if self.pos_write is not None:
            self.journal.set_meta("shoe_pos", self.pos_write)
            self.pos_write = None
        acks, self.held_acks = self.held_acks, []
        for seq in acks:            # each, in order, as before: only the write is batched
            self.shoe.command("ack", seq)
        # the burst's counted refusals too: one transaction, then the PUBACKs held for it
        if self.counts_write:       # with the counted refusals' ids (counted_ids)
            self.journal.count_refused(self.counts_write, self.ids_write)
            self.counts_write, self.ids_write = {}, []
        held, self.held_cmd_acks, self.held_replies = self.held_cmd_acks, [], 0
        # in their order, each command's PUBACK just before its reply (the station gives them
        # as a pair, reply first). A counted refusal's id was remembered in memory only (now
        # journaled with its count, counted_ids, ids39; a crash before the write loses both): its
        # reply on the wire before its PUBACK (paho writes its packets in order), a kill -9
        # between the two left it answered and the broker delivering it again after the
        # restart, judged afresh (cold39: answered `no_round`, then `not_awaiting_decision`).
        # A kill may still leave commands acknowledged and not answered (this one, and replies
        # paho queues behind its full in-flight window, whose PUBACKs went at once): the client
        # sends those again with their ids (protocol.md, "Rules for clients").
        i = 0
        while i < len(held):
            e = held[i]
            if type(e) is Reply and i + 1 < len(held) and type(held[i + 1]) is AckCommand:
                self.do(held[i + 1])
                self.do(e)
                i += 2
                continue
            self.do(e)
            i += 1

    def _gather(self):
        """While counted refusals wait for their write, what is put within GATHER_S is filed
        into the lanes (one write for the broker's window, not one per command or two). True
        when anything is held to take."""
        if not self.counts_write:
            return False
        self.q.drain(GATHER_S, *self._open())
        return not self.q.empty()

    def do(self, e):
        t = type(e)
        if t is SetMeta and e.key == "shoe_pos":
            self.pos_write = e.value          # the newest wins: written at the burst's end
            return
        if t is AckShoe and (self.pos_write is not None or self.held_acks):
            self.held_acks.append(e.seq)      # behind a position not yet written: held, in order
            return
        if t is Refuse and e.counted is not None:
            tally([e], self.counts_write)     # written at the burst's end (_flush_position)
            if e.remember is not None:
                self.ids_write.append(e)      # its id too, in the same transaction
            return
        if t in (AckCommand, Reply) and (self.counts_write or self.held_cmd_acks):
            # behind counts not yet written: held, in order. The reply too: a counted rejection
            # answered and then lost in a crash before its count was written was delivered again
            # by the broker and applied, a round later (review: "rejected", then accepted)
            self.held_cmd_acks.append(e)
            self.held_replies += t is Reply     # the link's soon: counted in its backlog (_open)
            return
        if t is Record and (self.pos_write is not None or self.held_acks):
            # an input (a settled door fault, a card) keeps its order with the frames before it,
            # as when each was written at once: only runs of STAT frames share a write
            self._flush_position()
        if t is Record:
            self.journal.write(e)
            if self.hub is not None:
                self.hub.messages(e.messages)
                self.console_dirty = True
        elif t is Publish:
            self.mids[self.link.publish_event(e.message)] = e.seq
        elif t is MarkSent:
            self.sent.append(e.seq)
        elif t is AckShoe:
            self.shoe.command("ack", e.seq)
        elif t is AckCommand:
            self.link.ack(e.mid, e.qos)
        elif t is Reply:
            if self.console is not None and self.console.owns(e.correlation):
                self.console.reply(e.correlation, e.payload)
            else:
                self.link.reply(e.payload, e.response_topic, e.correlation)
        elif t is Count:
            self.metrics.inc(e.name, e.labels)
        elif t is Log:
            getattr(log, e.level)(e.text)
        elif t is Timer:
            self.timer_at = e.deadline
        elif t is Probe:
            self.probe_mids.add(self.link.publish_probe(e.payload))
        elif t is Status:
            self.link.publish_status(e.doc)     # made only while connected (the station's rule)
        elif t is Refresh:
            self.console_dirty = self.hub is not None
        elif t is Lights:
            if self.panel is not None:
                self.panel.show(e.view)
        elif t is WheelCommand:
            if self.wheel is not None:
                self.wheel.command(e.name)
        elif t is Refuse:
            self.journal.refuse(e)
        elif t is Audit:
            self.journal.audit(e.entry, e.remember)
        elif t is SetMeta:
            if e.sync:
                self.journal.set_meta(e.key, e.value)
            else:
                self.journal.set_meta_unsynced(e.key, e.value)
        elif t is Archive:
            self._archive()
        elif t is ResendPage:   # back on the queue, its own lane: a card takes its turn
            self.q.put(ResendRows(e.lo, e.hi, self.journal.outbox_from(e.lo, e.hi - e.lo + 1)),
                       "resend")
        else:
            raise TypeError(f"unknown effect {t.__name__}")

    def _archive(self):
        """Old shoes to an archive file, then out of the journal. A failure is logged and the
        table plays on: nothing was pruned (archive.py prunes only what it read back)."""
        from .archive import ArchiveError, archive
        a = self.cfg["archive"]
        t0 = time.perf_counter()
        try:
            self.journal.mark_sent((), force=True)   # what the broker has is archivable
            r = archive(self.journal.path, a["dir"], a["keep_shoes"], a["keep_rounds"],
                        self.profile)
        except (ArchiveError, sqlite3.Error, OSError) as e:
            self.metrics.inc("archive_failures_total")
            log.error("journal archive failed, nothing pruned: %s", e)
            return
        if r:
            log.info("journal archived to %s: %d inputs, %d outputs (%.2f s)", r["archive"],
                     r["inputs"], r["outputs"], time.perf_counter() - t0)
