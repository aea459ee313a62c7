"""The `dealer-station` command."""
import argparse
import os
import sys
import traceback

from . import __version__


def _replay(args):
    from controller.checkpoint import CheckpointError

    from .profiles_file import load_profile
    from .replay import run

    profile = load_profile(args.profile)
    if args.file == "-":
        return run(profile, sys.stdin, sys.stdout, sys.stderr)
    else:
        try:
            if args.file.endswith(".gz"):
                import gzip
                f = gzip.open(args.file, "rt", encoding="utf-8")
            else:
                f = open(args.file, encoding="utf-8")
        except OSError as e:
            raise SystemExit(f"dealer-station replay: {args.file}: {e.strerror}")
        with f:
            try:
                return run(profile, f, sys.stdout, sys.stderr)
            except CheckpointError as e:     # an archive's starting state, for another table
                raise SystemExit(f"dealer-station replay: {args.file}: {e}")
    return 0


def _run(args):
    """Exit 2, with one line per error and no traceback, on a configuration or storage error
    (systemd's Restart=on-failure then retries: a disk freed or a journal released lets it on)."""
    import logging
    import sqlite3
    from .config import ConfigError, read_config
    from .config_files import config_warnings
    from .daemon import Daemon
    from .journal import JournalError, storage_error
    try:
        cfg = read_config(args.config)
        daemon = Daemon(cfg)
    except ConfigError as e:
        for line in e.errors:
            print(f"dealer-station: {line}", file=sys.stderr)
        return 2
    except JournalError as e:
        print(f"dealer-station: {e}", file=sys.stderr)
        return 2
    handler = logging.StreamHandler()   # stderr: journald under systemd
    handler.addFilter(TableContext(daemon))
    handler.setFormatter(JsonFormatter() if args.log_format == "json" else logging.Formatter(
        "%(levelname)s table=%(table)s round=%(round)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    for w in config_warnings(cfg):
        logging.getLogger("dealer-station").warning("configuration: %s", w)
    from .daemon import IntegrityFailed
    try:
        daemon.run(args.config)
    except IntegrityFailed as e:
        print(f"dealer-station: software integrity failed: {e} (reinstall: scripts/install)",
              file=sys.stderr)
        return 3           # systemd: RestartPreventExitStatus=3, a restart would not mend it
    except (JournalError, sqlite3.Error) as e:
        if isinstance(e, sqlite3.Error):
            e = storage_error(cfg["paths"]["journal"], e)
        print(f"dealer-station: {e}", file=sys.stderr)
        return 2
    return 0


class JsonFormatter:
    """One JSON object per line, for a log collector: time, level, table, round, logger, message."""

    def format(self, record):
        import datetime
        import json
        import logging
        d = {"time": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
             .isoformat(timespec="milliseconds"), "level": record.levelname.lower(),
             "table": getattr(record, "table", None), "round": getattr(record, "round", None),
             "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            d["traceback"] = logging.Formatter().formatException(record.exc_info)
        return json.dumps(d)


class TableContext:
    """Puts the table id and the current round into every log record."""

    def __init__(self, daemon):
        self.daemon = daemon

    def filter(self, record):
        record.table = self.daemon.table_id
        t = self.daemon.table
        record.round = t.round.number if t is not None and t.round is not None else "-"
        return True


def _keygen(args):
    from .signing import KeyFileError, generate
    try:
        kid = generate(args.out)
    except KeyFileError as e:
        print(f"dealer-station keygen: {e}", file=sys.stderr)
        return 2
    print(f"{args.out}: Ed25519 key {kid}; public key {args.out}.pub (give it to the betting system)")
    return 0


def _manifest(args):
    from .integrity import IntegrityError, check, write_manifest
    try:
        if args.check:
            n = check(args.out)
            print(f"{args.out}: ok, {n} files as installed")
        else:
            n = write_manifest(args.out)
            print(f"{args.out}: {n} files")
    except IntegrityError as e:
        print(f"dealer-station manifest: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"dealer-station manifest: {args.out}: {e.strerror}", file=sys.stderr)
        return 2
    return 0


def _check_config(args):
    from .config import ConfigError, read_config
    from .config_files import config_warnings
    try:
        cfg = read_config(args.config)
    except ConfigError as e:
        for line in e.errors:
            print(line)
        return 1
    for w in config_warnings(cfg):
        print(f"warning: {w}")
    print(f"{args.config}: ok")
    return 0


def _manifest_parser(sub):
    mf = sub.add_parser("manifest", help="record the installed files' hashes (scripts/install; "
                                         "checked at start with integrity.manifest)")
    mf.add_argument("--out", required=True)
    mf.add_argument("--check", action="store_true", help="check the files against --out instead")
    mf.set_defaults(func=_manifest)


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
    from .archive import add_parser as add_journal_parser
    add_journal_parser(sub)
    run = sub.add_parser("run", help="run the table daemon")
    run.add_argument("--config", required=True, help="the table's TOML configuration")
    run.add_argument("--log-format", choices=["text", "json"], default="text",
                     help="json: one JSON object per line (time, level, table, round, message)")
    run.set_defaults(func=_run)
    from .status_cmd import add_parser as add_status_parser
    add_status_parser(sub)
    pw = sub.add_parser("console-password", help="a password's scrypt hash for a [console] "
                        "account (the password is read from the terminal or standard input)")
    pw.set_defaults(func=_console_password)
    from .export import add_round_parser
    add_round_parser(sub)
    from .verify import add_parser as add_verify_parser
    add_verify_parser(sub)
    kg = sub.add_parser("keygen", help="a new Ed25519 key pair for signing the events "
                                       "(FILE, owner-only, and FILE.pub)")
    kg.add_argument("--out", required=True, help="the private key file (never overwritten)")
    kg.set_defaults(func=_keygen)
    _manifest_parser(sub)
    chk = sub.add_parser("check-config", help="validate a configuration, printing every error")
    chk.add_argument("config")
    chk.set_defaults(func=_check_config)
    from .bridge import add_parser as add_bridge_parser
    add_bridge_parser(sub)
    from .bridge_check import add_parser as add_bridge_check_parser
    add_bridge_check_parser(sub)
    return p


def _console_password(args):
    import getpass
    from .console.auth import hash_password
    pw = getpass.getpass("password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    if len(pw) < 8:
        print("dealer-station: a console password has at least 8 characters", file=sys.stderr)
        return 2
    print(hash_password(pw))
    return 0


def _unloadable(e):
    """The installed code does not load (a byte changed, a file cut short; or a module that
    parses raises at its top level): no traceback, the integrity failure's exit status (systemd
    does not restart into it)."""
    where = (f"{e.filename}, line {e.lineno}: {e.msg}" if isinstance(e, SyntaxError)
             else f"{_module_top(e)}: {type(e).__name__}: {e}")
    print(f"dealer-station: software integrity failed: the code does not load ({where}); "
          f"`dealer-station manifest --check` names what changed (reinstall: scripts/install)",
          file=sys.stderr)
    return 3


def _module_top(e):
    """'FILE, line N' of the module of ours whose top level raised `e` while it was imported
    (a game module that parses but fails to load: cold trial, a NameError or 1/0 in
    controller/blackjack.py gave a traceback and exit 1), None for an error at run time."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for f in reversed(traceback.extract_tb(e.__traceback__)):
        path = os.path.abspath(f.filename)
        if f.name == "<module>" and path.startswith(root + os.sep):
            return f"{os.path.relpath(path, root)}, line {f.lineno}"
    return None


def main(argv=None):
    try:
        p = parser()
    except Exception as e:
        # the installed code does not load (the parser takes subcommands from its modules):
        # only `manifest` runs, to name what changed
        if not isinstance(e, SyntaxError) and _module_top(e) is None:
            raise
        if (sys.argv[1:] if argv is None else list(argv))[:1] != ["manifest"]:
            return _unloadable(e)
        p = argparse.ArgumentParser(prog="dealer-station")
        _manifest_parser(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except SyntaxError as e:
        return _unloadable(e)
    except BrokenPipeError:
        return 0
    except Exception as e:
        # the game's code is not imported at the top: `manifest --check` must name a changed
        # file even when the change leaves that code unable to load
        from controller.profiles import ProfileError
        if not isinstance(e, ProfileError):
            if _module_top(e) is None:
                raise
            return _unloadable(e)
        for x in e.errors:
            print(f"dealer-station: {x}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
