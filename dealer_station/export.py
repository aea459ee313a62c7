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


# -- one round, for an auditor ------------------------------------------------------------------

ROUND_FORMAT = "dealer-station-round"


def _json(text):
    return json.loads(text)


def export_round(journal, number, shoe=None, profile=None):
    """One round as one JSON document (docs/protocol.md, "Round export"): the table before it,
    its inputs with times and origins, its cards in dealing order, its outputs as published (with
    their seq, hash chain and signature), the staff's actions, and the software and configuration
    that played it. `dealer-station replay` re-lays it and checks the outputs are the same."""
    from . import __version__
    db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=30)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta"))
        if profile is None:
            try:
                profile = get_profile(meta.get("profile"))
            except ProfileError:
                raise ArchiveError(f"the journal's profile {meta.get('profile')!r} is not built "
                                   f"in: give --config (its profile file)") from None

        def outputs_of(kind):
            return db.execute("SELECT input_n, body FROM outbox WHERE json_extract(body, '$.type') = ? "
                              "AND json_extract(body, '$.round') = ? ORDER BY seq", (kind, number))
        started = outputs_of("round_started").fetchone()
        if started is None:
            raise ArchiveError(f"round {number} is not in this journal (archived, or not played yet)")
        begin = started[0]
        row = db.execute("SELECT json_extract(body, '$.shoe') FROM outbox WHERE "
                         "json_extract(body, '$.type') = 'shoe_started' AND input_n <= ? "
                         "ORDER BY seq DESC LIMIT 1", (begin,)).fetchone()
        round_shoe = row[0] if row else None
        if shoe is not None and shoe != round_shoe:
            raise ArchiveError(f"round {number} was played in shoe {round_shoe}, not shoe {shoe}")
        ends = [n for kind in ("round_result", "round_voided") for n, _ in outputs_of(kind)]
        last = db.execute("SELECT MAX(n) FROM inputs").fetchone()[0]
        end = min(ends) if ends else last
        first = db.execute("SELECT MIN(n) FROM inputs").fetchone()[0]
        start = json.loads(meta["archive_start"]) if "archive_start" in meta else None
        try:
            state = start if begin == first else _state_at(db, profile, start, first, begin)
        except checkpoint.CheckpointError as e:
            raise ArchiveError(f"the table before input {begin}: {e}") from None
        inputs = [{"n": n, "at": at, "origin": origin, "body": _json(body), "shoe_seq": shoe_seq}
                  for n, at, origin, body, shoe_seq in db.execute(
                      "SELECT n, at, origin, body, shoe_seq FROM inputs WHERE n BETWEEN ? AND ? "
                      "ORDER BY n", (begin, end))]
        outputs = [{"seq": seq, "input_n": n, "message": body} for seq, n, body in db.execute(
            "SELECT seq, input_n, body FROM outbox WHERE input_n BETWEEN ? AND ? ORDER BY seq",
            (begin, end))]
        t0, t1 = inputs[0]["at"], inputs[-1]["at"]
        staff, software = [], []
        has_audit = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'audit'").fetchone()
        for n, entry, h in (db.execute("SELECT n, entry, hash FROM audit ORDER BY n")
                            if has_audit else ()):
            e = _json(entry)
            if e.get("action") == "start":
                if e.get("after_input", 0) < begin:
                    software = [e]              # the software that started the round
                elif e.get("after_input", 0) <= end:
                    software.append(e)          # a restart during it
            elif (e.get("input") is not None and begin <= e["input"] <= end) or (
                    e.get("input") is None and _in_time(e.get("at"), t0, t1)):
                staff.append({**e, "audit_n": n, "hash": h})
    finally:
        db.close()
    return {"format": ROUND_FORMAT, "version": 1, "table": meta.get("table"),
            "profile": meta.get("profile"), "round": number, "shoe": round_shoe,
            "finished": bool(ends), "exported_by": __version__, "software": software,
            "start": state, "inputs": inputs, "cards": _cards(inputs, outputs),
            "outputs": outputs, "staff": staff}


def _in_time(at, t0, t1):
    try:
        return t0 <= datetime.datetime.fromisoformat(at).timestamp() <= t1
    except (TypeError, ValueError):
        return False


def _cards(inputs, outputs):
    """The round's cards in the order they left the shoe (or were entered), with where each went."""
    by_input = {}
    for o in outputs:
        by_input.setdefault(o["input_n"], []).append(_json(o["message"]))
    cards = []
    for i in inputs:
        b = i["body"]
        if b.get("type") not in ("card", "card_unreadable"):
            continue
        out = by_input.get(i["n"], [])
        dealt = next((o for o in out if o["type"] == "card_dealt"), None)
        irregular = next((o["code"] for o in out if o["type"] == "irregularity"), None)
        cards.append({"input": i["n"], "at": i["at"], "card": b.get("card"),
                      "source": b.get("source", "shoe"), "shoe_seq": i["shoe_seq"],
                      "to": dealt and {k: dealt[k] for k in ("to", "seat", "hand", "face")},
                      "irregularity": irregular,
                      "identified": next((o["card"] for o in out if o["type"] == "card_identified"),
                                         None) if b.get("source") == "manual" else None})
    return cards


def replay_round(profile, doc):
    """(outputs replayed, [(index, recorded, replayed)] that differ) of a round export."""
    from controller import guarded_step
    from .signing import ENVELOPE
    if doc.get("format") != ROUND_FORMAT:
        raise ArchiveError("not a round export")
    t = checkpoint.decode(profile, doc["start"]) if doc["start"] is not None else None
    if t is None:
        from controller import new_table
        t = new_table(profile)
    got = []
    for i in doc["inputs"]:
        t, out = guarded_step(t, i["body"])
        got.extend(out)
    want = [{k: v for k, v in _json(o["message"]).items() if k not in ENVELOPE or k == "ts"}
            for o in doc["outputs"]]
    diff = [(k, w, g) for k, (w, g) in enumerate(zip(want, got)) if w != g]
    if len(want) != len(got):
        diff.append((min(len(want), len(got)), len(want), len(got)))
    return got, diff


def round_text(doc):
    """The export as written: by the command line and by the console's download alike."""
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def add_round_parser(sub):
    e = sub.add_parser("export", help="one round as one JSON document for an auditor (inputs, "
                                      "cards, outputs, staff, software; `replay` re-lays it)")
    e.add_argument("--round", type=int, required=True, dest="round_n")
    e.add_argument("--shoe", type=int, help="the round's shoe (checked)")
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--journal", help="the journal file")
    src.add_argument("--config", help="the table's configuration (its paths.journal and profile)")
    e.add_argument("--out", default="-", help="a file (default: standard output)")
    e.set_defaults(func=_round_cmd)


def _round_cmd(args):
    import os
    import sys
    from .config import ConfigError, read_config
    journal, profile = args.journal, None
    if journal is None:
        try:
            cfg = read_config(args.config)
        except ConfigError as e:
            for line in e.errors:
                print(f"dealer-station: {line}", file=sys.stderr)
            return 2
        journal, profile = cfg["paths"]["journal"], cfg["profile"]
    if not os.path.exists(journal):
        print(f"dealer-station export: {journal}: no such journal", file=sys.stderr)
        return 2
    try:
        doc = export_round(journal, args.round_n, args.shoe, profile)
    except (ArchiveError, sqlite3.Error) as e:
        print(f"dealer-station export: {e}", file=sys.stderr)
        return 1
    text = round_text(doc)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        old = os.umask(0o077)       # it names the hole card: as private as the journal
        try:
            with open(args.out, "w") as f:
                f.write(text)
        finally:
            os.umask(old)
    print(f"round {doc['round']} (shoe {doc['shoe']}): {len(doc['inputs'])} inputs, "
          f"{len(doc['outputs'])} outputs, {len(doc['staff'])} staff actions", file=sys.stderr)
    return 0
