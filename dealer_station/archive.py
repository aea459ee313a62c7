"""`dealer-station journal archive`: keep the journal's size bounded without losing the record.

The journal is the audit record, so nothing leaves it before it is written to an archive file
and read back: the inputs (with their time, origin and shoe sequence number), the outputs with
their table sequence numbers, the command replies and the refused commands of every shoe older
than the last `--keep-shoes`. Then, in one transaction, those rows are deleted. Recovery never
needs them: it starts from a checkpoint inside the shoes kept. Only rows already published are
archived (an unsent output stays, with everything after it).

The archive is gzip-compressed JSON Lines (docs/architecture.md, "Journal archives"):
    {"archive": "dealer-station-journal", "format": 1, "table": ..., "profile": ...,
     "start": null | CHECKPOINT, ...}
    {"kind": "input", "n": 1, "at": 1764500000.1, "origin": "command", "body": {...}, "shoe_seq": null}
    {"kind": "output", "seq": 1, "input_n": 1, "body": {...}}
    {"kind": "command", "id": "...", "sender": "", "input_n": 1, "reply": {...}}
    {"kind": "refused", "n": 1, "at": ..., "origin": "command", "sender": "alice", "code": ...,
     "reason": ..., "payload_hex": "..."}
    {"kind": "refused", "counted": 480, "window_at": ..., "sender": "alice", "refused": "malformed"
     (or "rights", "engine"), "first_at": ..., "at": ...,
     "origin": "command", "code": ..., "reason": ..., "payload_hex": "..."}   (the first one's)
    {"end": {"inputs": N, "outputs": M, "commands": C, "refused": R, "sha256": HEX of the lines above}}
`start` is the table before the archive's first input, as a checkpoint document
(controller/checkpoint.py; null for a table's first archive): `dealer-station replay` starts from
it and re-lays the archive's inputs to the very outputs it holds (shoe and round numbers included).

Safe while the daemon runs: SQLite lets one writer at a time, and the daemon only reads what this
deletes when asked to resend very old events (it then resends what the journal still has).
"""
import gzip
import hashlib
import json
import os
import sqlite3
import time

from controller import checkpoint, get_profile, guarded_step, new_table
from controller.profiles import ProfileError
from drivers.section import Key, Section

# at each new shoe (roulette: every keep_rounds rounds); docs/install.md
CONFIG = Section("archive", {
    "enabled": Key(bool, False),
    "dir": Key(str, "/var/lib/dealer-station/archive"),
    "keep_shoes": Key(int, 2, lo=1, hi=100),
    "keep_rounds": Key(int, 1000, lo=10, hi=1_000_000),
})

FORMAT = 1
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode


class ArchiveError(RuntimeError):
    pass


def _starts(db, what):
    """Input numbers that started a shoe (or a round), newest first."""
    return [r[0] for r in db.execute(
        "SELECT DISTINCT input_n FROM outbox WHERE json_extract(body, '$.type') = ? "
        "ORDER BY input_n DESC", (what,))]


def _cutoff(db, keep_shoes, keep_rounds):
    """The input n before which everything may go: the start of the oldest shoe kept (a roulette
    table has no shoe: the oldest round kept), no later than the oldest unsent output's input
    and the newest checkpoint (recovery starts there)."""
    started, keep = _starts(db, "shoe_started"), keep_shoes
    if not started:
        started, keep = _starts(db, "round_started"), keep_rounds
    if len(started) <= keep:
        return None
    cut = started[keep - 1]
    mark = db.execute("SELECT value FROM meta WHERE key = 'acked_through'").fetchone()
    unsent = db.execute("SELECT MIN(input_n) FROM outbox WHERE seq > ?",
                        (int(mark[0]) if mark else 0,)).fetchone()[0]
    newest_cp = db.execute("SELECT MAX(input_n) FROM checkpoints").fetchone()[0]
    for limit in (unsent, newest_cp):
        if limit is not None:
            cut = min(cut, limit)
    return cut


def _state_at(db, profile, start, first, cut):
    """The table before input `cut`, replayed from `start` (a checkpoint, or a new table)."""
    t = new_table(profile) if start is None else checkpoint.decode(profile, start)
    for (body,) in db.execute("SELECT body FROM inputs WHERE n >= ? AND n < ? ORDER BY n",
                              (first, cut)):
        t, _ = guarded_step(t, json.loads(body))
    doc = checkpoint.encode(t)
    if doc is None:
        raise ArchiveError(f"the table before input {cut} is not between rounds; nothing archived")
    return doc


def archive(journal, out_dir, keep_shoes=2, keep_rounds=1000, profile=None):
    """Archive and prune; returns a summary dict (or None when there is nothing to archive).
    `profile`: the table's Profile (default: the built-in one the journal names)."""
    if keep_shoes < 1 or keep_rounds < 1:
        raise ArchiveError("--keep-shoes and --keep-rounds: at least 1 (the shoe under way stays)")
    if not os.path.exists(journal):
        raise ArchiveError(f"{journal}: no such journal")
    db = sqlite3.connect(journal, isolation_level=None, timeout=30)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta"))
        cut = _cutoff(db, keep_shoes, keep_rounds)
        first = db.execute("SELECT MIN(n) FROM inputs").fetchone()[0]
        if cut is None or first is None or cut <= first:
            return None
        if profile is None:
            try:
                profile = get_profile(meta.get("profile"))
            except ProfileError:
                raise ArchiveError(f"the journal's profile {meta.get('profile')!r} is not built in: "
                                   f"give --config (its profile file)") from None
        start = json.loads(meta["archive_start"]) if "archive_start" in meta else None
        try:
            state = _state_at(db, profile, start, first, cut)
        except checkpoint.CheckpointError as e:
            raise ArchiveError(f"the archive's starting state: {e}") from None
        meta["start"] = start
        os.makedirs(out_dir, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = os.path.join(out_dir, f"{meta.get('table', 'table')}-inputs-{first}-{cut - 1}-{stamp}.jsonl.gz")
        cut_at = db.execute("SELECT at FROM inputs WHERE n = ?", (cut,)).fetchone()[0]
        counts = _write(db, path, meta, first, cut, cut_at)
        if verify(path) != counts:
            raise ArchiveError(f"{path}: read back differs from what was written; nothing pruned")
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM outbox WHERE input_n < ?", (cut,))
            db.execute("DELETE FROM commands WHERE input_n < ?", (cut,))
            db.execute("DELETE FROM refused WHERE at < ?", (cut_at,))
            if _has(db, "refused_counts"):
                db.execute("DELETE FROM refused_counts WHERE last_at < ?", (cut_at,))
            db.execute("DELETE FROM inputs WHERE n < ?", (cut,))
            db.execute("DELETE FROM checkpoints WHERE input_n < ?", (cut,))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('archived_before_input', ?)", (str(cut),))
            db.execute("INSERT OR REPLACE INTO meta VALUES ('archive_start', ?)", (_dumps(state),))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return {"archive": path, "before_input": cut, **counts}
    finally:
        db.close()


def _columns(db, table):
    """A table's column names; empty when the journal has no such table."""
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _has(db, table):
    """A journal last opened by a version before the table was made has none."""
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is not None


def _write(db, path, meta, first, cut, cut_at):
    h = hashlib.sha256()
    counts = {"inputs": 0, "outputs": 0, "commands": 0, "refused": 0}
    tmp = path + ".part"
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as f:
        def line(obj):
            b = _dumps(obj).encode() + b"\n"
            h.update(b)
            f.write(b)
        line({"archive": "dealer-station-journal", "format": FORMAT, "table": meta.get("table"),
              "profile": meta.get("profile"), "from_input": first, "to_input": cut - 1,
              "created": time.time(), "start": meta.get("start")})
        for n, at, origin, body, shoe_seq in db.execute(
                "SELECT n, at, origin, body, shoe_seq FROM inputs WHERE n < ? ORDER BY n", (cut,)):
            line({"kind": "input", "n": n, "at": at, "origin": origin, "body": json.loads(body),
                  "shoe_seq": shoe_seq})
            counts["inputs"] += 1
        for seq, input_n, body in db.execute(
                "SELECT seq, input_n, body FROM outbox WHERE input_n < ? ORDER BY seq", (cut,)):
            line({"kind": "output", "seq": seq, "input_n": input_n, "body": json.loads(body)})
            counts["outputs"] += 1
        # each command's sender (ids41: its id is its sender's own; "#" for a row from before,
        # which did not keep it; null in a journal no version since has opened)
        sender = "sender" if "sender" in _columns(db, "commands") else "NULL"
        for cid, input_n, reply, who in db.execute(
                f"SELECT id, input_n, reply, {sender} FROM commands WHERE input_n < ?", (cut,)):
            line({"kind": "command", "id": cid, "sender": who, "input_n": input_n,
                  "reply": json.loads(reply)})
            counts["commands"] += 1
        # each kept refusal names its sender (the login of commands/<login>, "" for the shared
        # topic; null in a journal from before flood37, which did not keep it)
        sender = "sender" if "sender" in _columns(db, "refused") else "NULL"
        for n, at, origin, code, reason, payload, who in db.execute(
                f"SELECT n, at, origin, code, reason, payload, {sender} FROM refused WHERE at < ?",
                (cut_at,)):
            line({"kind": "refused", "n": n, "at": at, "origin": origin, "sender": who,
                  "code": code, "reason": reason, "payload_hex": bytes(payload).hex()})
            counts["refused"] += 1
        # a flood's refusals beyond the budget (station_refusals.py): one line per counted row
        have = _columns(db, "refused_counts")
        kind = "kind" if "kind" in have else "'malformed'"      # before flood38: malformed only
        counted = db.execute(
            f"SELECT window_at, sender, {kind}, origin, first_at, last_at, count, code, reason, "
            "payload FROM refused_counts WHERE last_at < ?", (cut_at,)) if have else ()
        for w, who, k, origin, first_at, last_at, count, code, reason, payload in counted:
            line({"kind": "refused", "counted": count, "window_at": w, "sender": who,
                  "refused": k, "first_at": first_at, "at": last_at, "origin": origin,
                  "code": code, "reason": reason, "payload_hex": bytes(payload).hex()})
            counts["refused"] += 1
        f.write(_dumps({"end": {**counts, "sha256": h.hexdigest()}}).encode() + b"\n")
        f.flush()
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(tmp, path)
    return counts


def verify(path):
    """Read an archive back: its counts, or ArchiveError naming what is wrong."""
    h = hashlib.sha256()
    counts = {"inputs": 0, "outputs": 0, "commands": 0, "refused": 0}
    end = None
    try:
        with gzip.open(path, "rb") as f:
            for i, b in enumerate(f, 1):
                obj = json.loads(b)
                if "end" in obj:
                    end = obj["end"]
                    continue
                if end is not None:
                    raise ArchiveError(f"{path}: line {i} after the end line")
                h.update(b)
                kind = obj.get("kind")
                if kind is not None:
                    counts[{"input": "inputs", "output": "outputs", "command": "commands",
                            "refused": "refused"}[kind]] += 1
                elif obj.get("archive") != "dealer-station-journal" or obj.get("format") != FORMAT:
                    raise ArchiveError(f"{path}: line {i}: not a format-{FORMAT} journal archive")
    except (OSError, EOFError, ValueError, KeyError) as e:
        raise ArchiveError(f"{path}: unreadable archive ({e})") from None
    if end is None:
        raise ArchiveError(f"{path}: no end line: the archive is cut short")
    if end.get("sha256") != h.hexdigest() or {k: end.get(k) for k in counts} != counts:
        raise ArchiveError(f"{path}: the end line does not match the content (altered or cut)")
    return counts


def _export(args, journal, profile):
    import sys
    from .export import export, parse_time
    if not os.path.exists(journal):
        raise ArchiveError(f"{journal}: no such journal")
    t_from, t_to = parse_time(args.t_from), parse_time(args.t_to)
    if t_from > t_to:
        raise ArchiveError(f"--from {args.t_from} is later than --to {args.t_to}: swap them")
    if args.out == "-":
        r = export(journal, t_from, t_to, sys.stdout, profile)
    else:
        old = os.umask(0o077)   # a round under way names its hole card: as private as the journal
        try:
            with open(args.out, "w") as f:
                r = export(journal, t_from, t_to, f, profile)
        finally:
            os.umask(old)
    print(f"exported inputs {r['from_input']}..{r['to_input']} ({r['inputs']} inputs, "
          f"{r['outputs']} outputs)", file=sys.stderr)
    return 0


def archive_inputs(lines):
    """Archive lines -> the input bodies, for replay."""
    for b in lines:
        obj = json.loads(b)
        if obj.get("kind") == "input":
            yield obj["body"]


def _cmd(args):
    import sys
    from .config import ConfigError, read_config
    journal, profile = args.journal, None
    if journal is None:
        try:
            cfg = read_config(args.config)
            journal, profile = cfg["paths"]["journal"], cfg["profile"]
        except ConfigError as e:
            for line in e.errors:
                print(f"dealer-station: {line}", file=sys.stderr)
            return 2
    try:
        if args.action == "verify":
            print(json.dumps(verify(args.file)))
            return 0
        if args.action == "export":
            return _export(args, journal, profile)
        r = archive(journal, args.out, args.keep_shoes, args.keep_rounds, profile)
    except (ArchiveError, sqlite3.Error, OSError) as e:
        # standard error: `export --out -` writes the export itself on standard output
        print(f"dealer-station journal: {e}", file=sys.stderr)
        return 1
    print(json.dumps(r) if r else f"{journal}: nothing to archive (no more than "
                                  f"{args.keep_shoes} shoes, or {args.keep_rounds} roulette rounds)")
    return 0


def add_parser(sub):
    j = sub.add_parser("journal", help="journal maintenance: archive old shoes, verify an archive")
    jsub = j.add_subparsers(dest="action", required=True)
    a = jsub.add_parser("archive", help="write shoes older than the last --keep-shoes to an archive "
                                        "file, read it back, then remove them from the journal")
    src = a.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", help="the table's configuration (its paths.journal)")
    src.add_argument("--journal", help="the journal file")
    a.add_argument("--out", required=True, help="the folder for archive files")
    a.add_argument("--keep-shoes", type=int, default=2, help="shoes kept in the journal (default 2)")
    a.add_argument("--keep-rounds", type=int, default=1000,
                   help="at a roulette table (no shoes): rounds kept (default 1000)")
    a.set_defaults(func=_cmd)
    v = jsub.add_parser("verify", help="check an archive file (hash and counts)")
    v.add_argument("file")
    v.set_defaults(func=_cmd, journal="-", config=None)
    from .export import add_parser as add_export
    add_export(jsub, _cmd)
