"""`dealer-station journal export`: the journal between two times, for a dispute, in the form
`dealer-station replay` reads (the archive's JSON Lines, dealer_station/archive.py):

    {"archive": "dealer-station-export", "table", "profile", "from", "to", "from_input",
     "to_input", "start": CHECKPOINT | null}
    {"kind": "input", "n", "at", "origin", "body", "shoe_seq"}     every input in the range
    {"kind": "output", "seq", "input_n", "body"}                   what the table sent for them

A range that begins inside a round is widened back to that round's first input: `start` is the
table before it (between rounds, so a checkpoint can hold it), and replaying the file gives the
very outputs recorded, which is what a dispute needs to show.
"""
import datetime
import json
import sqlite3

from controller import checkpoint, get_profile
from controller.profiles import ProfileError

from .archive import ArchiveError, _starts, _state_at


def parse_time(text):
    """Epoch seconds, or an ISO 8601 date/time (UTC when it names no zone)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        t = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise ArchiveError(f"{text!r}: not a time (2026-11-30T14:00:00, or epoch seconds)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.timestamp()


def _iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def export(journal, t_from, t_to, out, profile=None):
    """Write the export to the text file `out`; returns {"inputs", "outputs", "from_input", ...}."""
    db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=30)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta"))
        rows = db.execute("SELECT MIN(n), MAX(n) FROM inputs WHERE at >= ? AND at <= ?",
                          (t_from, t_to)).fetchone()
        if rows[0] is None:
            lo, hi = db.execute("SELECT MIN(at), MAX(at) FROM inputs").fetchone()
            raise ArchiveError("no input in that time range" + (
                f" (the journal's inputs run from {_iso(lo)} to {_iso(hi)})" if lo else
                " (the journal holds no input)"))
        lo, hi = rows
        first = db.execute("SELECT MIN(n) FROM inputs").fetchone()[0]
        rounds = [n for n in _starts(db, "round_started") if n <= lo]
        shoes = [n for n in _starts(db, "shoe_started") if n <= lo]
        begin = max([first] + rounds[:1] + shoes[:1])
        # the round under way at `lo` began at its round_started input (or its shoe's start)
        if profile is None:
            try:
                profile = get_profile(meta.get("profile"))
            except ProfileError:
                raise ArchiveError(f"the journal's profile {meta.get('profile')!r} is not built "
                                   f"in: give --config (its profile file)") from None
        start = json.loads(meta["archive_start"]) if "archive_start" in meta else None
        try:
            state = start if begin == first else _state_at(db, profile, start, first, begin)
        except checkpoint.CheckpointError as e:
            raise ArchiveError(f"the table before input {begin}: {e}") from None

        def line(obj):
            out.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n")
        line({"archive": "dealer-station-export", "table": meta.get("table"),
              "profile": meta.get("profile"), "from": t_from, "to": t_to, "from_input": begin,
              "to_input": hi, "start": state})
        counts = {"inputs": 0, "outputs": 0, "from_input": begin, "to_input": hi}
        for n, at, origin, body, shoe_seq in db.execute(
                "SELECT n, at, origin, body, shoe_seq FROM inputs WHERE n >= ? AND n <= ? "
                "ORDER BY n", (begin, hi)):
            line({"kind": "input", "n": n, "at": at, "origin": origin, "body": json.loads(body),
                  "shoe_seq": shoe_seq})
            counts["inputs"] += 1
        for seq, input_n, body in db.execute(
                "SELECT seq, input_n, body FROM outbox WHERE input_n >= ? AND input_n <= ? "
                "ORDER BY seq", (begin, hi)):
            line({"kind": "output", "seq": seq, "input_n": input_n, "body": json.loads(body)})
            counts["outputs"] += 1
        return counts
    finally:
        db.close()


def add_parser(jsub, cmd):
    e = jsub.add_parser("export", help="the inputs and outputs between two times, for a dispute "
                                       "(what `dealer-station replay` reads)")
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", help="the table's configuration (its paths.journal)")
    src.add_argument("--journal", help="the journal file")
    e.add_argument("--from", dest="t_from", required=True, help="ISO 8601 (UTC) or epoch seconds")
    e.add_argument("--to", dest="t_to", required=True)
    e.add_argument("--format", choices=["jsonl"], default="jsonl")
    e.add_argument("--out", default="-", help="a file (default: standard output)")
    e.set_defaults(func=cmd)
