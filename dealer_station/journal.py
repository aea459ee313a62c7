"""The journal: every input, before the engine steps on it, and every output with its table
sequence number in an outbox, in one SQLite transaction (WAL, synchronous=FULL: a committed input
survives a power cut). The daemon rebuilds its state by replaying the journal through the pure
engine, from the last checkpoint.

Written for an SD card (docs/install.md, "Storage"): each input is one commit that touches as few
pages as it can (small pages; the number of outputs kept on the input's row instead of an index;
the command table without a second b-tree), and what may be lost without losing a card or a
message is written without a sync and at most once a second: the mark of the events the broker
acknowledged (`acked_through`; losing it only means publishing some events again, which consumers
drop by sequence number).

The journal holds the hole card (it is the audit record), so the file is created readable by the
daemon's user only.
"""
import contextlib
import errno
import json
import os
import sqlite3
import time

from .lock import InstanceLock, LockedError
from .station_refusals import tally

# refused commands whose ids are kept (table counted_ids, the newest): about 0.6 KB each
# (a 64-character id, a long reason), 3.1 MB measured for 5,000, whatever a flood sends (the point
# of counting was a bounded journal)
COUNTED_IDS = 5000
PAGE_SIZE = 512      # bytes a commit rewrites per page touched (measured: bench/bench_storage.py)
COUNTS = """CREATE TABLE IF NOT EXISTS refused_counts (
    window_at REAL NOT NULL, sender TEXT NOT NULL, kind TEXT NOT NULL, code TEXT NOT NULL,
    origin TEXT NOT NULL, first_at REAL NOT NULL, last_at REAL NOT NULL, count INTEGER NOT NULL,
    reason TEXT NOT NULL, payload BLOB NOT NULL, PRIMARY KEY (window_at, sender, kind, code))
    WITHOUT ROWID;"""
# a command's reply under its sender and id: each sender has its own ids (ids41). sender: the
# login of commands/<login>, "" for the shared `commands` topic, ANY_SENDER in a row from before
COMMANDS = """CREATE TABLE IF NOT EXISTS commands (
    id TEXT NOT NULL, sender TEXT NOT NULL, input_n INTEGER, reply TEXT NOT NULL,
    PRIMARY KEY (id, sender)) WITHOUT ROWID;"""
# the ids of the newest COUNTED_IDS refused commands that are no input (no `commands` row):
# engine rejections counted beyond a flood's budget, written with their counts (ids39: only
# remembered in memory, one was judged again after a restart and applied), and refusals by the
# staff rights (kind `rights`, ids41), so a copy answers `duplicate` as a journaled one does;
# one per sender and id (ids41)
COUNTED = """CREATE TABLE IF NOT EXISTS counted_ids (
    n INTEGER PRIMARY KEY, id TEXT NOT NULL, sender TEXT NOT NULL, kind TEXT NOT NULL,
    code TEXT NOT NULL, at REAL NOT NULL, reply TEXT NOT NULL, UNIQUE (id, sender));"""
# A journal from before ids41 kept no command's sender: its rows are given this one, which
# answers every sender, so each of its ids stays as it was (one namespace: a copy from anyone is
# a `duplicate`, never applied again). No login can be named so: no topic level holds "#".
ANY_SENDER = "#"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- n_out: how many outputs the input gave, checked by replay (kept here: an index on
-- outbox(input_n) cost a page write per output)
CREATE TABLE IF NOT EXISTS inputs (
    n INTEGER PRIMARY KEY, at REAL NOT NULL, origin TEXT NOT NULL, body TEXT NOT NULL,
    shoe_seq INTEGER, n_out INTEGER);
-- sent: unused since format 2 (meta acked_through); kept so that older journals open
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY, input_n INTEGER NOT NULL, body TEXT NOT NULL,
    sent INTEGER NOT NULL DEFAULT 0);
COMMANDS_TABLE
CREATE TABLE IF NOT EXISTS checkpoints (input_n INTEGER PRIMARY KEY, state BLOB NOT NULL);
-- input that never reached the engine (a malformed command): kept, so a poison message is on
-- record once and acknowledged, never delivered again
CREATE TABLE IF NOT EXISTS refused (
    n INTEGER PRIMARY KEY, at REAL NOT NULL, origin TEXT NOT NULL, code TEXT NOT NULL,
    reason TEXT NOT NULL, payload BLOB NOT NULL);
-- refused commands beyond a sender's budget in a window (station_refusals.py): counted, one row
-- per sender, window, kind (malformed, rights, engine) and code, one added to its count for each;
-- reason and payload: the first one's
COUNTS_TABLE
COUNTED_TABLE
-- the audit log: every staff decision (who, role, what, why, the outcome) and every start of the
-- software (its version and configuration hash); each entry names the hash of the one before
-- (signing.chain_entry) and SQLite refuses to change or delete one: append-only
CREATE TABLE IF NOT EXISTS audit (n INTEGER PRIMARY KEY, entry TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
""".replace("COUNTS_TABLE", COUNTS).replace("COMMANDS_TABLE", COMMANDS).replace(
    "COUNTED_TABLE", COUNTED)

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
REASON_KEPT = 400    # bytes of a counted rejection's reason kept with its id (it may quote input)


def _kept(reply):
    """A counted rejection's reply as kept in counted_ids: its reason cut to REASON_KEPT bytes
    (marked with "..."), so a row stays small whatever the command quoted."""
    reason = reply.get("reason")
    if not isinstance(reason, str) or len(reason.encode()) <= REASON_KEPT:
        return reply
    return {**reply, "reason": reason.encode()[:REASON_KEPT].decode(errors="ignore") + "..."}



class JournalError(RuntimeError):
    pass


# SQLite's primary result codes and errnos -> (cause, what the operator does about it).
_FULL = ("disk full", "free space on its file system (df -h), then restart: every committed "
         "input is kept")
_READONLY = ("read-only", "make the file and its directory writable by the daemon's user, or "
             "remount the file system read-write (dmesg may say why it went read-only)")
_CORRUPT = ("corrupt", "stop the daemon, keep the file, and follow 'A corrupt journal' in "
            "docs/install.md")
_PERM = ("permission denied", "the file and its directory must belong to the daemon's user")
_CAUSES = {13: _FULL, 8: _READONLY, 11: _CORRUPT, 26: _CORRUPT, 3: _PERM, 23: _PERM,
           14: ("cannot open", "check the directory exists and the daemon's user may write in it"),
           10: ("I/O error", "check the storage (dmesg, df -h); replace a failing SD card"),
           5: ("busy", "another process holds the database: stop it")}
_ERRNOS = {errno.ENOSPC: _FULL, errno.EROFS: _READONLY, errno.EACCES: _PERM, errno.EPERM: _PERM}


def storage_error(path, e):
    """A one-line JournalError naming the file, the cause and the recovery step."""
    if isinstance(e, sqlite3.Error):
        code = getattr(e, "sqlite_errorcode", None)
        cause = _CAUSES.get(code & 0xFF if code is not None else None)
    else:
        cause = _ERRNOS.get(getattr(e, "errno", None))
    detail = getattr(e, "strerror", None) or str(e)
    if cause is None:
        return JournalError(f"journal {path}: {detail}")
    return JournalError(f"journal {path}: {cause[0]} ({detail}): {cause[1]}")


class Journal:
    def __init__(self, path, table_id, profile_name):
        self.path = path
        self.db = None
        # First of all, before any file or the broker is touched: one process per journal.
        self.lock = InstanceLock(path)
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self.lock.acquire()
            self._open(table_id, profile_name)
        except BaseException as e:
            if self.db is not None:
                self.db.close()
            self.lock.release()
            if isinstance(e, LockedError):
                raise JournalError(str(e)) from None
            if isinstance(e, (sqlite3.Error, OSError)):
                raise storage_error(path, e) from None
            raise

    def _open(self, table_id, profile_name):
        path = self.path
        old = os.umask(0o077)   # the journal keeps the hole card: owner only
        try:
            # A locked or hung journal blocks the loop (and so stops the watchdog) rather than
            # losing an input: 30 s, then the error ends the process and systemd restarts it.
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=True, timeout=30)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self.db.execute(f"PRAGMA page_size={PAGE_SIZE}")   # takes effect on a new file only
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self._upgrade()
        self._check_meta("table", table_id)
        self._check_meta("profile", profile_name)
        self.next_seq = (self.db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0] or 0) + 1

    def _upgrade(self):
        """Journals written before format 2: the output counts onto the input rows (one pass),
        the acknowledged mark from the `sent` column, and no more index upkeep."""
        db = self.db
        cols = {r[1] for r in db.execute("PRAGMA table_info(inputs)")}
        if "n_out" not in cols:
            db.execute("ALTER TABLE inputs ADD COLUMN n_out INTEGER")
        if "sender" not in {r[1] for r in db.execute("PRAGMA table_info(refused)")}:
            db.execute("ALTER TABLE refused ADD COLUMN sender TEXT")   # who refused: a login
        if "kind" not in {r[1] for r in db.execute("PRAGMA table_info(refused_counts)")}:
            # counted per kind and code since flood38 (its key is new): a malformed count each
            db.execute("BEGIN IMMEDIATE")
            db.execute("ALTER TABLE refused_counts RENAME TO refused_counts_v1")
            db.execute(COUNTS)
            db.execute("INSERT INTO refused_counts SELECT window_at, sender, 'malformed', code, "
                       "origin, first_at, last_at, count, reason, payload FROM refused_counts_v1")
            db.execute("DROP TABLE refused_counts_v1")
            db.execute("COMMIT")
        self._upgrade_ids()
        if db.execute("SELECT 1 FROM inputs WHERE n_out IS NULL LIMIT 1").fetchone():
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE inputs SET n_out = g.c FROM (SELECT input_n, COUNT(*) AS c FROM "
                       "outbox GROUP BY input_n) AS g WHERE g.input_n = inputs.n AND n_out IS NULL")
            db.execute("UPDATE inputs SET n_out = 0 WHERE n_out IS NULL")
            db.execute("COMMIT")
        if self.get_meta("acked_through") is None:
            first_unsent = db.execute("SELECT MIN(seq) FROM outbox WHERE sent = 0").fetchone()[0]
            top = db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0] or 0
            self.set_meta("acked_through", first_unsent - 1 if first_unsent else top)
        db.execute("DROP INDEX IF EXISTS outbox_unsent")
        db.execute("DROP INDEX IF EXISTS outbox_input")
        self.acked_through = int(self.get_meta("acked_through"))
        self.acked_above = set()       # acknowledged out of order, above the mark
        self.acked_written = self.acked_through
        self.acked_at = 0.0

    def _upgrade_ids(self):
        """Journals from before ids41: one id space for every sender. Each id journaled then
        keeps answering `duplicate` to everyone (ANY_SENDER: its sender was not kept); a counted
        rejection's id, whose sender was kept, is that sender's own from now on."""
        db = self.db
        if "sender" not in {r[1] for r in db.execute("PRAGMA table_info(commands)")}:
            db.execute("BEGIN IMMEDIATE")
            db.execute("ALTER TABLE commands RENAME TO commands_v1")
            db.execute(COMMANDS)
            db.execute("INSERT INTO commands (id, sender, input_n, reply) SELECT id, ?, input_n, "
                       "reply FROM commands_v1", (ANY_SENDER,))
            db.execute("DROP TABLE commands_v1")
            db.execute("COMMIT")
        unique = [[c[2] for c in db.execute(f"PRAGMA index_info({ix[1]})")]
                  for ix in db.execute("PRAGMA index_list(counted_ids)") if ix[2]]
        if ["id"] in unique:
            db.execute("BEGIN IMMEDIATE")
            db.execute("ALTER TABLE counted_ids RENAME TO counted_ids_v1")
            db.execute(COUNTED)
            db.execute("INSERT INTO counted_ids SELECT n, id, sender, kind, code, at, reply FROM "
                       "counted_ids_v1")
            db.execute("DROP TABLE counted_ids_v1")
            db.execute("COMMIT")

    def _check_meta(self, key, value):
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
        elif row[0] != value:
            raise JournalError(f"{self.path} is the journal of {key} {row[0]!r}, not {value!r}: "
                               f"a journal belongs to one table and one profile")

    @contextlib.contextmanager
    def _transaction(self):
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error; a SQLite error raised as the
        journal's own (storage_error: names the file, says disk full or read only)."""
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            yield db
            db.execute("COMMIT")
        except BaseException as e:
            if db.in_transaction:
                try:
                    db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass    # SQLite may have rolled back itself (disk full): e is the real error
            if isinstance(e, sqlite3.Error):
                raise storage_error(self.path, e) from e
            raise

    def write(self, r):
        """One station `Record` (dealer_station/station_types.py) in one transaction: the input
        as number r.n, its outputs, the command's reply, the checkpoint after it."""
        with self._transaction() as db:
            db.execute("INSERT INTO inputs (n, at, origin, body, shoe_seq, n_out) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (r.n, r.at, r.origin, _dumps(r.body), r.shoe_seq, len(r.messages)))
            db.executemany("INSERT INTO outbox (seq, input_n, body) VALUES (?, ?, ?)",
                           [(s, r.n, m) for s, m in r.messages])
            if r.command_id is not None:
                db.execute("INSERT INTO commands (id, sender, input_n, reply) VALUES (?, ?, ?, ?)",
                           (r.command_id, r.sender, r.n, _dumps(r.reply)))
            if r.checkpoint is not None:
                self._checkpoint(r.n, r.checkpoint)
            db.executemany("INSERT INTO audit (entry, hash) VALUES (?, ?)", r.audit)
        if r.messages:
            self.next_seq = r.messages[-1][0] + 1

    def audit(self, entry, remember=None):
        """One audit log entry (text, hash) on its own, synced: a staff decision is evidence.
        `remember`: a command refused by the staff rights, (its sender, its reply): its id kept
        in counted_ids in the same transaction (kind `rights`), so a copy is a `duplicate`."""
        if remember is None:
            try:
                self.db.execute("INSERT INTO audit (entry, hash) VALUES (?, ?)", tuple(entry))
            except sqlite3.Error as e:
                raise storage_error(self.path, e) from e
            return
        sender, reply = remember
        with self._transaction() as db:
            db.execute("INSERT INTO audit (entry, hash) VALUES (?, ?)", tuple(entry))
            self._keep_ids(db, [(reply["id"], sender, "rights", reply["code"], time.time(),
                                 _dumps(_kept(reply)))])

    def audit_head(self):
        row = self.db.execute("SELECT hash FROM audit ORDER BY n DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def last_message(self):
        """The newest event's text (the event chain goes on from its hash), or None."""
        row = self.db.execute("SELECT body FROM outbox ORDER BY seq DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def command_reply(self, sender, command_id):
        """The first reply to this sender's id ("" for the shared `commands` topic): a journaled
        command's (or one from before ids41, whatever its sender), or a counted rejection's (one
        of the newest COUNTED_IDS), or None."""
        row = (self.db.execute("SELECT reply FROM commands WHERE id=? AND sender IN (?, ?)",
                               (command_id, sender, ANY_SENDER)).fetchone()
               or self.db.execute("SELECT reply FROM counted_ids WHERE id=? AND sender=?",
                                  (command_id, sender)).fetchone())
        return json.loads(row[0]) if row else None

    MARK_EVERY_S = 5.0
    MARK_EVERY_EVENTS = 50     # or sooner, so a restart republishes at most about this many

    def mark_sent(self, seqs, now=None, force=False):
        """The broker acknowledged these events. Moves the mark below which all are; writes it
        without a sync, once MARK_EVERY_S have passed (`now`: time.monotonic()) or it moved
        MARK_EVERY_EVENTS on: each restart republishes what is above the written mark."""
        self.acked_above.update(seqs)
        while self.acked_through + 1 in self.acked_above:
            self.acked_through += 1
            self.acked_above.discard(self.acked_through)
        now = time.monotonic() if now is None else now
        if self.acked_through != self.acked_written and (
                force or now - self.acked_at >= self.MARK_EVERY_S
                or self.acked_through - self.acked_written >= self.MARK_EVERY_EVENTS):
            self.acked_at = now
            self.acked_written = self.acked_through
            self.db.execute("PRAGMA synchronous=NORMAL")   # losing it costs only repeats
            try:
                self.set_meta("acked_through", self.acked_through)
            finally:
                self.db.execute("PRAGMA synchronous=FULL")

    def unsent(self):
        """Events not known to be acknowledged, in order (some may be: a repeat is harmless)."""
        return [r for r in self.db.execute("SELECT seq, body FROM outbox WHERE seq > ? ORDER BY seq",
                                           (self.acked_through,)) if r[0] not in self.acked_above]

    def outbox_from(self, seq, limit=10000):
        return self.db.execute("SELECT seq, body FROM outbox WHERE seq>=? ORDER BY seq LIMIT ?",
                               (seq, limit)).fetchall()

    def outbox_depth(self):
        return len(self.unsent())

    KEEP_CHECKPOINTS = 3

    def _checkpoint(self, n, doc):
        """The table after input `n`, as a checkpoint document (controller/checkpoint.py).
        Only the newest few are kept: they are derived data, the inputs are the record."""
        self.db.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?)", (n, _dumps(doc)))
        self.db.execute("DELETE FROM checkpoints WHERE input_n NOT IN (SELECT input_n FROM "
                        "checkpoints ORDER BY input_n DESC LIMIT ?)", (self.KEEP_CHECKPOINTS,))

    def checkpoints(self):
        """(input n, document or None where it is not JSON, e.g. an old pickle), newest first."""
        for n, raw in self.db.execute("SELECT input_n, state FROM checkpoints ORDER BY input_n DESC"):
            try:
                yield n, json.loads(raw)
            except (ValueError, TypeError):
                yield n, None

    def refuse(self, r):
        """A station `Refuse`: a `refused` row, or one more counted (`count_refused`)."""
        if r.counted is None:
            self.db.execute("INSERT INTO refused (at, origin, code, reason, payload, sender) "
                            "VALUES (?, ?, ?, ?, ?, ?)",
                            (time.time(), r.origin, r.code, r.reason, bytes(r.payload), r.sender))
            return
        self.count_refused(tally([r]), [r])      # station_refusals.tally

    def count_refused(self, counts, remembered=()):
        """Counted refusals (`tally`), in one transaction: each added to its sender's
        `refused_counts` row of the window, kind and code (a new row the first time, or after it
        was archived), and the ids of the counted engine and rights refusals among `remembered`
        (their `Refuse` effects) to `counted_ids`, pruned to the newest COUNTED_IDS. The daemon
        writes a burst's at once: one fsync, not one per command."""
        rows = [(*key, origin, first, last, n, reason, payload)
                for key, (origin, first, last, n, reason, payload) in counts.items()]
        ids = [(reply["id"], login, r.kind, r.code, r.counted[1], _dumps(_kept(reply)))
               for r in remembered if r.remember is not None
               for login, reply in [r.remember] if reply.get("id") is not None]
        if not rows and not ids:
            return
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO refused_counts (window_at, sender, kind, code, origin, first_at, "
                "last_at, count, reason, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (window_at, sender, kind, code) DO UPDATE SET last_at = "
                "MAX(last_at, excluded.last_at), count = count + excluded.count", rows)
            if ids:
                self._keep_ids(db, ids)

    @staticmethod
    def _keep_ids(db, ids):
        """Refused commands' ids (id, sender, kind, code, at, reply) into counted_ids, pruned to
        the newest COUNTED_IDS; an id its sender already has keeps its first answer (one id, one
        command, per sender)."""
        db.executemany("INSERT OR IGNORE INTO counted_ids (id, sender, kind, code, at, reply) "
                       "VALUES (?, ?, ?, ?, ?, ?)", ids)
        db.execute("DELETE FROM counted_ids WHERE n <= (SELECT MAX(n) FROM counted_ids) - ?",
                   (COUNTED_IDS,))

    def refuse_many(self, rs):
        """Several `Refuse` in one transaction: one sync for a burst of commands refused busy
        (loop_queue.py), where one each held the loop ~2-8 ms a command (cold trial's flood)."""
        if any(r.counted is not None for r in rs):
            raise ValueError("refuse_many: kept refusals only (counted ones: count_refused)")
        with self._transaction():
            for r in rs:
                self.refuse(r)

    def inputs_after(self, n):
        """(n, at, origin, body, shoe_seq, number of outputs) after input n, in order."""
        for row in self.db.execute(
                "SELECT n, at, origin, body, shoe_seq, n_out FROM inputs WHERE n > ? ORDER BY n",
                (n,)):
            yield row[0], row[1], row[2], json.loads(row[3]), row[4], row[5]

    def last_input(self):
        row = self.db.execute("SELECT n, at FROM inputs ORDER BY n DESC LIMIT 1").fetchone()
        return row if row else (0, None)

    def last_shoe_seq(self):
        """(input n, shoe sequence number) of the last journaled shoe event, or (0, None)."""
        row = self.db.execute(
            "SELECT n, shoe_seq FROM inputs WHERE shoe_seq IS NOT NULL ORDER BY n DESC LIMIT 1").fetchone()
        return tuple(row) if row else (0, None)

    def get_meta(self, key):
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key, value):
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))

    def set_meta_unsynced(self, key, value):
        """One meta value in its own commit without an fsync (WAL, synchronous NORMAL: a killed
        process keeps it, a power cut may lose it), for what may be lost (SetMeta.sync False)."""
        self.db.execute("PRAGMA synchronous=NORMAL")
        try:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))
        finally:
            self.db.execute("PRAGMA synchronous=FULL")

    def close(self):
        try:
            self.mark_sent((), force=True)
        except sqlite3.Error:
            pass   # a full or read-only disk: the mark only saves repeats
        self.db.close()
        self.lock.release()

