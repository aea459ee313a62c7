"""The `dealer-station` console script's entry point, outside the package on purpose.

`dealer_station/cli.py` turns a game module that does not load into the integrity failure's exit
3 naming the file; but when cli.py itself, or the package's `__init__.py`, does not load, nothing
of the package can run: `manifest --check` and `run` died with a traceback and exit 1, and
systemd restarted the table until its start limit (cold trial). This module imports nothing of
the package until it is asked to: if the command line does not load, `manifest --check` still
checks the installed files (integrity.py, loaded by its path) and names the first that changed;
every other command exits 3, naming the file that does not load (RestartPreventExitStatus=3).
"""
import importlib.util
import os
import sys
import traceback

ROOT = os.path.dirname(os.path.abspath(__file__))      # the folder holding the packages


def _unnamed(e):
    """The file of a SyntaxError that names none (a NUL byte in the source: its traceback ends in
    importlib, whose frames are removed), found as the first of our files whose source gives the
    same error; None if none does. Cold trial: it named dealer_station_main.py, the importer."""
    for pkg in ("dealer_station", "controller", "drivers", "calibration"):
        for dirpath, dirs, files in sorted(os.walk(os.path.join(ROOT, pkg))):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                path = os.path.join(dirpath, f)
                try:
                    with open(path, "rb") as fh:
                        compile(fh.read(), path, "exec")
                except SyntaxError as x:
                    if x.msg == e.msg:
                        return path
                except (OSError, ValueError):
                    pass
    return None


def _where(e):
    """(file, what) of the code that does not load, the file relative to ROOT when it is ours."""
    if isinstance(e, SyntaxError) and e.filename:
        file, what = e.filename, f"line {e.lineno}: {e.msg}"
    elif isinstance(e, SyntaxError) and _unnamed(e):
        file, what = _unnamed(e), e.msg
    else:
        # the innermost frame of our code: the module whose top level raised (not importlib's)
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if not f.filename.startswith("<")]
        file = frames[-1].filename if frames else "?"
        what = f"line {frames[-1].lineno}: " if frames else ""
        what += f"{type(e).__name__}: {e}"
    rel = os.path.relpath(os.path.abspath(file), ROOT) if file != "?" else file
    return (file if rel.startswith("..") else rel), what


def _manifest_check(argv):
    """`manifest --check --out FILE` without the package: 0 as installed, 1 a file differs."""
    import argparse
    p = argparse.ArgumentParser(prog="dealer-station manifest")
    p.add_argument("--out", required=True)
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    if not args.check:
        return None             # no manifest is written from code that does not load
    spec = importlib.util.spec_from_file_location(
        "_dealer_station_integrity", os.path.join(ROOT, "dealer_station", "integrity.py"))
    integrity = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(integrity)
    try:
        n = integrity.check(args.out, ROOT)
    except integrity.IntegrityError as e:
        print(f"dealer-station manifest: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"dealer-station manifest: {args.out}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"{args.out}: ok, {n} files as installed")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        from dealer_station.cli import main as cli_main
    except Exception as e:
        # not only SyntaxError and ImportError: a file that parses but raises at its top level
        # (a line cut out: NameError; 1/0: ZeroDivisionError) gave a traceback and exit 1
        if argv[:1] == ["manifest"]:
            try:
                rc = _manifest_check(argv[1:])
            except Exception as e2:      # integrity.py itself, or drivers/
                e = e2
            else:
                if rc is not None:
                    return rc
        file, what = _where(e)
        print(f"dealer-station: software integrity failed: the code does not load ({file}, "
              f"{what}); `dealer-station manifest --check` names what changed "
              f"(reinstall: scripts/install)", file=sys.stderr)
        return 3
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
