"""Checkpoints: the table between rounds as a plain, versioned JSON document.

A checkpoint lets recovery replay only the inputs after it, so a restart costs the same on a
journal of one hour and of one year. It is taken only where the table is quiescent (no round
under way, not paused, nothing pending): there the whole state is a few counters and the shoe,
which this module writes out field by field. Never a pickle of internal classes: a pickle
written by another version may fail to load, or load wrongly.

Format 1 (`docs/architecture.md`, "Checkpoints"):
    {"format": 1, "profile": NAME, "decks": N, "phase": ..., "rounds": R, "shoes": S,
     "last_round": bool, "seen": [[zone, card]...], "early": [[zone, card]...],
     "finished": null | [round, [[zone, [cards]]...], [[zone, card]...]],
     "shoe": null | {"number", "decks", "counts": [52 ints], "drawn", "unknown",
                     "log": [[n, card|null, source, dest]...], "exposed", "burn_required",
                     "burned", "cut_at"}}
A reader refuses a format it does not know, a profile or deck count other than its own, and any
field it does not expect (CheckpointError): the caller then replays from further back.
"""
from .cards import INDEX
from .expectation import Finished, Sighting
from .shoe import Shoe
from .table import Table, new_table

FORMAT = 1
PHASES = ("no_shoe", "burn", "ready", "shuffle_due")
_TOP = {"format", "profile", "decks", "phase", "rounds", "shoes", "last_round", "seen", "early",
        "finished", "shoe"}
_SHOE = {"number", "decks", "counts", "drawn", "unknown", "log", "exposed", "burn_required",
         "burned", "cut_at"}


class CheckpointError(ValueError):
    pass


def quiescent(t):
    return t.round is None and not t.paused and not t.pending and not t.faults


def encode(t):
    """The checkpoint document of table `t`, or None where `t` is not quiescent."""
    if not quiescent(t):
        return None
    s = t.shoe
    shoe = None
    if s is not None:
        shoe = {"number": s.number, "decks": s.decks, "counts": list(s.counts), "drawn": s.drawn,
                "unknown": s.unknown, "log": [list(e) for e in s.entries()],
                "exposed": s.exposed, "burn_required": s.burn_required, "burned": s.burned,
                "cut_at": s.cut_at}
    fin = t.finished
    return {"format": FORMAT, "profile": t.profile.name, "decks": t.profile.decks,
            "phase": t.phase, "rounds": t.rounds, "shoes": t.shoes, "last_round": t.last_round,
            "seen": [list(x) for x in t.seen], "early": [list(x) for x in t.early],
            "finished": None if fin is None else [
                fin[0], [[z, list(c)] for z, c in fin[1]], [list(x) for x in fin[2]]],
            "shoe": shoe}


def _need(cond, what):
    if not cond:
        raise CheckpointError(f"checkpoint: {what}")


def _count(v, what):
    _need(isinstance(v, int) and not isinstance(v, bool) and v >= 0, f"{what} must be a count")
    return v


def _card_or_none(v, what):
    _need(v is None or (isinstance(v, str) and v in INDEX), f"{what} must be a card or null")
    return v


def _pairs(v, what):
    _need(isinstance(v, list) and all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], str)
                                      and isinstance(x[1], str) and x[1] in INDEX for x in v),
          f"{what} must be a list of [zone, card]")
    return tuple(Sighting(x[0], x[1]) for x in v)


def _shoe(d):
    _need(isinstance(d, dict) and set(d) == _SHOE, f"shoe must have exactly {sorted(_SHOE)}")
    counts = d["counts"]
    _need(isinstance(counts, list) and len(counts) == 52, "shoe.counts must hold 52 counts")
    log = None
    entries = d["log"]
    _need(isinstance(entries, list), "shoe.log must be a list")
    for i, row in enumerate(entries, 1):
        _need(isinstance(row, list) and len(row) == 4 and row[0] == i and isinstance(row[2], str)
              and isinstance(row[3], str), f"shoe.log[{i - 1}] must be [{i}, card, source, dest]")
        _card_or_none(row[1], f"shoe.log[{i - 1}]")
        log = (tuple(row), log)
    return Shoe(_count(d["number"], "shoe.number"), _count(d["decks"], "shoe.decks"),
                tuple(_count(c, "shoe.counts[]") for c in counts), _count(d["drawn"], "shoe.drawn"),
                _count(d["unknown"], "shoe.unknown"), log, len(entries),
                _card_or_none(d["exposed"], "shoe.exposed"),
                None if d["burn_required"] is None else _count(d["burn_required"], "shoe.burn_required"),
                _count(d["burned"], "shoe.burned"),
                None if d["cut_at"] is None else _count(d["cut_at"], "shoe.cut_at"))


def decode(profile, d):
    """The table a checkpoint document describes, for `profile`. Raises CheckpointError."""
    _need(isinstance(d, dict), "not a JSON object")
    fmt = d.get("format")
    _need(fmt == FORMAT, f"format {fmt!r}: this version reads format {FORMAT} only")
    _need(set(d) == _TOP, f"fields must be exactly {sorted(_TOP)}")
    _need(d["profile"] == profile.name, f"written for profile {d['profile']!r}, not {profile.name!r}")
    _need(d["decks"] == profile.decks,
          f"written for {d['decks']} decks; profile {profile.name} now has {profile.decks}")
    _need(d["phase"] in PHASES, f"phase {d['phase']!r} is not a phase between rounds")
    _need(isinstance(d["last_round"], bool), "last_round must be true or false")
    fin = d["finished"]
    if fin is not None:
        _need(isinstance(fin, list) and len(fin) == 3 and isinstance(fin[1], list)
              and all(isinstance(z, list) and len(z) == 2 and isinstance(z[0], str)
                      and isinstance(z[1], list) and all(c in INDEX for c in z[1] if isinstance(c, str))
                      and all(isinstance(c, str) for c in z[1]) for z in fin[1]),
              "finished must be [round, [[zone, [cards]]...], [[zone, card]...]]")
        fin = Finished(_count(fin[0], "finished[0]"), tuple((z, tuple(c)) for z, c in fin[1]),
               _pairs(fin[2], "finished[2]"))
    shoe = None if d["shoe"] is None else _shoe(d["shoe"])
    t = new_table(profile)
    _need((shoe is None) == (d["phase"] == "no_shoe" or not t.game.uses_cards),
          "a shoe must be there exactly when the phase has one")
    return t.but(phase=d["phase"], shoe=shoe, rounds=_count(d["rounds"], "rounds"),
                 shoes=_count(d["shoes"], "shoes"), last_round=d["last_round"],
                 seen=_pairs(d["seen"], "seen"), early=_pairs(d["early"], "early"), finished=fin)


__all__ = ["CheckpointError", "FORMAT", "Table", "decode", "encode", "quiescent"]
