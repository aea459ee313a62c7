"""The `dealer-station` command."""
import argparse
import sys

from controller.profiles import ProfileError

from . import __version__


def _replay(args):
    from .profiles_file import load_profile
    from .replay import run

    profile = load_profile(args.profile)
    if args.file == "-":
        run(profile, sys.stdin, sys.stdout)
    else:
        try:
            f = open(args.file, encoding="utf-8")
        except OSError as e:
            raise SystemExit(f"dealer-station replay: {args.file}: {e.strerror}")
        with f:
            run(profile, f, sys.stdout)
    return 0


def parser():
    p = argparse.ArgumentParser(prog="dealer-station", description="Live card table controller.")
    p.add_argument("--version", action="version", version=f"dealer-station {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("replay", help="replay input events (JSON Lines) through the engine")
    r.add_argument("--profile", required=True,
                   help="built-in profile (luxury21, european, lucky7, punto_banco) or a .toml file")
    r.add_argument("file", help="input events, one JSON object per line; - for standard input")
    r.set_defaults(func=_replay)
    from .analyze import add_parser
    add_parser(sub)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except ProfileError as e:
        print(f"dealer-station: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
