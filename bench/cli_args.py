"""Argument parsing for the benches: strict when a bench is run by hand (an unknown option or a
typo is a usage error, not a silent full default run), lenient only under scripts/bench, which
passes every bench the same arguments (DS_BENCH_ALL=1)."""
import argparse
import os


def parse(ap, argv=None):
    if os.environ.get("DS_BENCH_ALL"):
        return ap.parse_known_args(argv)[0]
    ap.allow_abbrev = False     # `--card 10` was taken as `--cards 10`: a typo is no abbreviation
    return ap.parse_args(argv)


def positive(text):
    """An argparse type: an integer of at least 1 (a count of cards or runs)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 1, got {text!r}")
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 1, got {n}")
    return n


def names(known, what):
    """An argparse type: a comma-separated list of `known` names, none empty (a deck's name
    mistyped ran the whole bench's setup, then ended in a KeyError or a missing file)."""
    def check(text):
        got = text.split(",")
        bad = [n for n in got if n not in known]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(repr(n) for n in bad)}; known: {', '.join(known)}")
        return text
    return check


def pairs(known, what):
    """An argparse type: comma-separated A:B pairs of `known` names."""
    one = names(known, what)

    def check(text):
        for pair in text.split(","):
            if pair.count(":") != 1:
                raise argparse.ArgumentTypeError(f"expected {what} pairs A:B, got {pair!r}")
            for n in pair.split(":"):
                one(n)
        return text
    return check


def seed_range(text):
    """An argparse type: A:B, the seeds A to B-1 (A < B: an empty range measured nothing)."""
    try:
        lo, hi = (int(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected A:B, two integers, got {text!r}") from None
    if not 0 <= lo < hi:
        raise argparse.ArgumentTypeError(f"expected A:B with 0 <= A < B, got {text!r}")
    return text


def cpu(text):
    """An argparse type: a core this process may run on."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is None or (allowed is not None and n not in allowed):
        raise argparse.ArgumentTypeError(f"expected a core this process may use "
                                         f"({', '.join(map(str, allowed or []))}), got {text!r}")
    return n


def int_range(lo, hi):
    """An argparse type: an integer of lo to hi (a configuration key's own range: beyond it the
    daemon refuses its configuration, and the bench waited for it to come online)."""
    def check(text):
        try:
            n = int(text)
        except ValueError:
            n = None
        if n is None or not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer of {lo} to {hi}, got {text!r}")
        return n
    return check


def checkout(text):
    """An argparse type: a dealer-station checkout to run the daemon from. The daemon is started
    with `python -m dealer_station.cli` in that folder; where it holds no dealer_station, the
    venv's editable install (this clone) ran instead: the code "before" was silently this one."""
    path = os.path.abspath(text)
    need = ("dealer_station/cli.py", "controller/__init__.py", "drivers/__init__.py")
    missing = [n for n in need if not os.path.isfile(os.path.join(path, n))]
    if missing:
        raise argparse.ArgumentTypeError(f"not a dealer-station checkout: {text!r} has no "
                                         f"{missing[0]}")
    return path
