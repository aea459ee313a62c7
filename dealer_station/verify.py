"""`dealer-station verify`: check a captured event stream or a journal, and name the first bad
message: altered (a byte changed: the signature fails, or the next message's `prev` does not
match it), replayed (a sequence number seen before), reordered (a message before one that should
precede it), missing (a sequence number that never came).

A capture is JSON Lines, one message a line, in the order received: either the payload itself
(what `mosquitto_sub -t dealer-station/v1/<table>/events` prints) or an object
`{"topic": ..., "payload": "<the payload text>"}` (any other fields are ignored). A journal
(SQLite) is checked in sequence order, and its audit log's chain with it.
"""
import json
import sqlite3

from . import signing


class Problem(Exception):
    def __init__(self, where, kind, detail):
        super().__init__(f"{where}: {kind}: {detail}")
        self.where, self.kind, self.detail = where, kind, detail


def read_capture(lines):
    """[(where, payload text)] of a capture file's lines."""
    out = []
    for i, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            out.append((f"line {i}", line))      # the checker names it
            continue
        if isinstance(doc, dict) and "seq" not in doc and isinstance(doc.get("payload"), str):
            line = doc["payload"]
        out.append((f"line {i}", line))
    return out


def check_stream(items, public=None, allow_repeats=False):
    """Check [(where, text)] in order received. Returns a summary dict; raises Problem."""
    parsed = []
    for where, text in items:
        try:
            m = json.loads(text)
            seq = m["seq"]
            if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(m.get("prev"), str):
                raise ValueError
        except (ValueError, TypeError, KeyError):
            raise Problem(where, "altered", "not a table event (no JSON object with seq and prev)")
        parsed.append((where, text, m, seq))
    first = {}                    # seq -> (where, hash) as first received
    for where, text, m, seq in parsed:
        first.setdefault(seq, (where, signing.digest(text)))
    last = None                   # (seq, hash) of the last message applied
    count = repeats = 0
    for i, (where, text, m, seq) in enumerate(parsed):
        if public is not None and "sig" not in m:
            raise Problem(where, "altered", f"seq {seq}: not signed (no sig field: a table without "
                                            f"a signing key, or the field was cut off)")
        if public is not None and not signing.signature_ok(text, public):
            raise Problem(where, "altered", f"seq {seq}: the signature does not match (a byte was "
                                            f"changed, or another key signed it)")
        h = signing.digest(text)
        if last is None:          # a capture may start anywhere, but not after what follows it
            later = sorted(s for _, _, _, s in parsed[i + 1:] if s < seq)
            if later:
                raise Problem(where, "reordered", f"seq {seq} before seq {later[0]} (which comes "
                                                  f"later, at {first[later[0]][0]})")
        if last is not None and seq <= last[0]:
            was_where, was_hash = first[seq]
            if was_hash != h:
                raise Problem(where, "altered", f"seq {seq} again with other content than at {was_where}")
            if allow_repeats:
                repeats += 1
                continue
            raise Problem(where, "replayed", f"seq {seq} again (first at {was_where})")
        if last is not None and seq > last[0] + 1:
            later = sorted(s for _, _, _, s in parsed[i + 1:] if last[0] < s < seq)
            if later:
                raise Problem(where, "reordered", f"seq {seq} before seq {later[0]} (which comes "
                                                  f"later, at {first[later[0]][0]})")
            gap = f"{last[0] + 1}" if seq == last[0] + 2 else f"{last[0] + 1}-{seq - 1}"
            raise Problem(where, "missing", f"seq {gap} never came (seq {seq} follows seq {last[0]})")
        want = last[1] if last is not None else (signing.GENESIS if seq == 1 else None)
        if want is not None and m["prev"] != want:
            raise Problem(where, "altered", f"seq {seq}: prev is not the hash of seq {seq - 1} "
                                            f"(seq {seq - 1} or this message was changed)")
        last = (seq, h)
        count += 1
    return {"messages": count, "repeats": repeats,
            "first_seq": parsed[0][3] if parsed else None, "last_seq": last[0] if last else None,
            "signatures": "checked" if public is not None else "not checked (no public key)"}


def check_audit(db):
    """The journal's audit log: each entry names the hash of the one before, and its own hash is
    its text's. Returns the number of entries; raises Problem."""
    prev = signing.GENESIS
    n = 0
    for n, entry, h in db.execute("SELECT n, entry, hash FROM audit ORDER BY n"):
        if signing.digest(entry) != h:
            raise Problem(f"audit entry {n}", "altered", "its hash does not match its text")
        try:
            named = json.loads(entry).get("prev")
        except ValueError:
            named = None
        if named != prev:
            raise Problem(f"audit entry {n}", "altered", "it does not name the entry before it "
                                                         "(one was changed, inserted or removed)")
        prev = h
    return n


def check_journal(path, public=None):
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        rows = db.execute("SELECT seq, body FROM outbox ORDER BY seq").fetchall()
    except sqlite3.Error as e:
        raise Problem(path, "unreadable", str(e)) from None
    try:
        summary = check_stream([(f"outbox seq {s}", b) for s, b in rows], public)
        has_audit = db.execute("SELECT 1 FROM sqlite_master WHERE name='audit'").fetchone()
        summary["audit_entries"] = check_audit(db) if has_audit else 0
        return summary
    finally:
        db.close()


def _public_key(args):
    from .signing import KeyFileError, load_private, load_public
    try:
        if args.public_key:
            return load_public(args.public_key)
        if args.config:
            from .config import ConfigError, read_config
            try:
                cfg = read_config(args.config)
            except ConfigError as e:
                raise SystemExit("dealer-station verify: " + "; ".join(e.errors))
            if cfg["integrity"]["signing_key"]:
                return load_private(cfg["integrity"]["signing_key"]).public_key()
    except KeyFileError as e:
        raise SystemExit(f"dealer-station verify: {e}")
    return None


def _cmd(args):
    public = _public_key(args)
    try:
        with open(args.source, "rb") as f:
            is_db = f.read(16) == b"SQLite format 3\0"
        if is_db:
            summary = check_journal(args.source, public)
        else:
            with open(args.source, encoding="utf-8", errors="replace") as f:
                summary = check_stream(read_capture(f), public, args.allow_repeats)
    except OSError as e:
        raise SystemExit(f"dealer-station verify: {args.source}: {e.strerror}")
    except Problem as p:
        print(f"{args.source}: {p}")
        return 1
    s = summary
    span = f"seq {s['first_seq']}-{s['last_seq']}" if s["messages"] else "no message"
    extra = f", {s['repeats']} repeats skipped" if s.get("repeats") else ""
    audit = f", audit log of {s['audit_entries']} entries unbroken" if "audit_entries" in s else ""
    print(f"{args.source}: ok: {s['messages']} messages, {span}, chain unbroken, signatures "
          f"{s['signatures']}{extra}{audit}")
    return 0


def add_parser(sub):
    v = sub.add_parser("verify", help="check a captured event stream or a journal: signatures, "
                                      "hash chain, sequence (names the first bad message)")
    v.add_argument("source", help="a capture (JSON Lines of event payloads) or a journal file")
    key = v.add_mutually_exclusive_group()
    key.add_argument("--public-key", help="the table's public key (PEM, or base64 of its 32 bytes)")
    key.add_argument("--config", help="the table's configuration (its integrity.signing_key)")
    v.add_argument("--allow-repeats", action="store_true",
                   help="skip a message received again unchanged (a republish after a restart) "
                        "instead of reporting it as replayed")
    v.set_defaults(func=_cmd)

