"""The journal: every input, before the engine steps on it, and every output with its table
sequence number in an outbox, in one SQLite transaction (WAL, synchronous=FULL: a committed input
survives a power cut). The daemon rebuilds its state by replaying the journal through the pure
engine, from the last checkpoint.

The journal holds the hole card (it is the audit record), so the file is created readable by the
daemon's user only.
"""
import errno
import json
import os
import pickle
import sqlite3
import time

from .lock import InstanceLock, LockedError

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inputs (
    n INTEGER PRIMARY KEY, at REAL NOT NULL, origin TEXT NOT NULL, body TEXT NOT NULL,
    shoe_seq INTEGER);
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY, input_n INTEGER NOT NULL, body TEXT NOT NULL,
    sent INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox (sent, seq);
CREATE TABLE IF NOT EXISTS commands (id TEXT PRIMARY KEY, input_n INTEGER, reply TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints (input_n INTEGER PRIMARY KEY, state BLOB NOT NULL);
"""

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


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
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self._check_meta("table", table_id)
        self._check_meta("profile", profile_name)
        self.next_seq = (self.db.execute("SELECT MAX(seq) FROM outbox").fetchone()[0] or 0) + 1

    def _check_meta(self, key, value):
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        if row is None:
            self.db.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
        elif row[0] != value:
            raise JournalError(f"{self.path} is the journal of {key} {row[0]!r}, not {value!r}: "
                               f"a journal belongs to one table and one profile")

    def record(self, origin, body, apply, envelope, shoe_seq=None, command_id=None,
               reply_of=None):
        """Journal `body`, then `apply(body)` -> outputs, then put each output in the outbox with
        the next sequence number, all in one transaction. Returns (input n, [(seq, message)]).
        `envelope(seq, output)` makes the published message. `reply_of(outputs)` (commands)
        gives the reply stored with the command id."""
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            cur = db.execute("INSERT INTO inputs (at, origin, body, shoe_seq) VALUES (?, ?, ?, ?)",
                             (time.time(), origin, _dumps(body), shoe_seq))
            n = cur.lastrowid
            outputs = apply(body)
            messages = []
            seq = self.next_seq
            for o in outputs:
                msg = _dumps(envelope(seq, o))
                messages.append((seq, msg))
                seq += 1
            db.executemany("INSERT INTO outbox (seq, input_n, body) VALUES (?, ?, ?)",
                           [(s, n, m) for s, m in messages])
            reply = None
            if command_id is not None:
                reply = reply_of(outputs, messages)
                db.execute("INSERT INTO commands VALUES (?, ?, ?)", (command_id, n, _dumps(reply)))
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
        self.next_seq = seq
        return n, messages, reply

    def command_reply(self, command_id):
        row = self.db.execute("SELECT reply FROM commands WHERE id=?", (command_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def mark_sent(self, seqs):
        if seqs:
            self.db.executemany("UPDATE outbox SET sent=1 WHERE seq=?", [(s,) for s in seqs])

    def unsent(self):
        return self.db.execute("SELECT seq, body FROM outbox WHERE sent=0 ORDER BY seq").fetchall()

    def outbox_from(self, seq, limit=10000):
        return self.db.execute("SELECT seq, body FROM outbox WHERE seq>=? ORDER BY seq LIMIT ?",
                               (seq, limit)).fetchall()

    def outbox_depth(self):
        return self.db.execute("SELECT COUNT(*) FROM outbox WHERE sent=0").fetchone()[0]

    def checkpoint(self, n, state):
        self.db.execute("INSERT OR REPLACE INTO checkpoints VALUES (?, ?)", (n, pickle.dumps(state)))

    def latest_checkpoint(self):
        row = self.db.execute("SELECT input_n, state FROM checkpoints ORDER BY input_n DESC LIMIT 1").fetchone()
        return (row[0], pickle.loads(row[1])) if row else (0, None)

    def inputs_after(self, n):
        """(n, at, origin, body, shoe_seq, number of outputs) after input n, in order."""
        for row in self.db.execute(
                "SELECT i.n, i.at, i.origin, i.body, i.shoe_seq, "
                "(SELECT COUNT(*) FROM outbox o WHERE o.input_n = i.n) "
                "FROM inputs i WHERE i.n > ? ORDER BY i.n", (n,)):
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

    def close(self):
        self.db.close()
        self.lock.release()

