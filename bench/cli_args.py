"""Argument parsing for the benches: strict when a bench is run by hand (an unknown option or a
typo is a usage error, not a silent full default run), lenient only under scripts/bench, which
passes every bench the same arguments (DS_BENCH_ALL=1)."""
import argparse
import os


def parse(ap, argv=None):
    if os.environ.get("DS_BENCH_ALL"):
        return ap.parse_known_args(argv)[0]
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
