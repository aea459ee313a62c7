"""`dealer-station replay`: input events as JSON Lines in, output events as JSON Lines out.

The audit tool and the engine's black-box interface. Deterministic: the same file gives the same
bytes out. A line that is not JSON becomes a `rejected` output naming the line, like any bad input.
A journal archive (`dealer-station journal archive`, gzip or not) is read as its inputs.
"""
import itertools
import json

from controller import checkpoint, guarded_step, new_table


def replay_lines(profile, lines):
    """Yield the output dicts for an iterable of JSON text lines."""
    table = new_table(profile)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as e:
            yield {"type": "rejected", "input": None, "code": "malformed",
                   "reason": f"line {n}: not JSON: {e}"}
            continue
        if isinstance(event, dict) and ("archive" in event or "end" in event or "kind" in event):
            if event.get("archive") and event.get("start") is not None:
                table = checkpoint.decode(profile, event["start"])   # where the archive begins
            if event.get("kind") != "input":
                continue          # an archive's header, outputs, replies, end line
            event = event["body"]
        table, out = guarded_step(table, event)
        yield from out


def run(profile, infile, outfile, errfile=None):
    """Replay `infile` to `outfile`. A round export (`dealer-station export`: one JSON document,
    its first line `{`) is re-laid from its starting state and checked against the outputs it
    recorded: returns 1 (the first difference said on `errfile`) when they differ, else 0."""
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    head = infile.readline()
    if head.strip() == "{":
        from .export import replay_round
        doc = json.loads(head + infile.read())
        got, diff = replay_round(profile, doc)
        for o in got:
            outfile.write(dumps(o))
            outfile.write("\n")
        if errfile is not None:
            if diff:
                k, want, have = diff[0]
                errfile.write(f"round {doc['round']}: output {k + 1} differs from the record: "
                              f"recorded {want}, replayed {have}\n")
            else:
                errfile.write(f"round {doc['round']}: {len(got)} outputs, identical to the "
                              f"record\n")
        return 1 if diff else 0
    for o in replay_lines(profile, itertools.chain([head], infile)):
        outfile.write(dumps(o))
        outfile.write("\n")
    return 0
