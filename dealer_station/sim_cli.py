"""`table-sim`: simulated hardware. A whole simulated table (`table_main`: the real daemon on
simulated devices, dealer_station/sim/harness.py), a studio of tables (`studio_main`, `--tables N`:
dealer_station/sim/studio.py), and the virtual shoe and wheel on a pty (`table-sim shoe --pty`,
`table-sim wheel --pty`: sim_devices_cli.py, with their commands on standard input).
"""
import argparse
import os
import sys

# STATUS_WORDS, _command and _wheel_command (tests call them): importable from here as before
from .sim_devices_cli import (STATUS_WORDS, _command, _wheel_command,  # noqa: F401
                              shoe_main, wheel_main)


KNOWN_COMMANDS = "shoe --pty, wheel --pty"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "shoe":
        return shoe_main(argv[1:])
    if argv and argv[0] == "wheel":
        return wheel_main(argv[1:])
    if argv and not argv[0].startswith("-"):
        # argparse alone said "unrecognized arguments: shoes", naming neither shoe nor wheel
        print(f"table-sim: unknown command {argv[0]!r}; known: {KNOWN_COMMANDS}, or none for a "
              f"whole table (table-sim --help)", file=sys.stderr)
        return 2
    return table_main(argv)


def table_main(argv):
    """table-sim --profile NAME --rounds N --seed S [--faults FILE] [--speed X]
    [--broker mqtt://HOST:PORT] [--report FILE.json] [--plain]"""
    import json
    import signal
    from .sim import scenario
    from .sim.harness import Harness
    ap = argparse.ArgumentParser(prog="table-sim", description="a whole simulated table: the real "
                                 "daemon, a broker, a virtual shoe or wheel, a virtual camera, the "
                                 "dealer panel on mock pins, a simulated dealer and betting system",
                                 epilog=f"other commands: {KNOWN_COMMANDS} (each with --help)")
    ap.add_argument("--profile", default=None, help="luxury21 (the default), european, lucky7, "
                    "punto_banco, roulette")
    ap.add_argument("--rounds", type=int, default=None, help="rounds to play (0: until stopped)")
    ap.add_argument("--seed", type=int, default=None, help="the shoe's (or wheel's) seed")
    ap.add_argument("--faults", "--scenario", dest="scenario",
                    help='a scenario file (JSON): {"seed", "rounds", "players", "faults"} or a '
                         'list of faults [{"round": 3, "fault": "corrupt_frame"}, ...]')
    ap.add_argument("--speed", type=float, default=1.0, help="0: as fast as the table goes")
    ap.add_argument("--broker", help="mqtt://HOST:PORT: use this broker, start none")
    ap.add_argument("--report", help="write the JSON report here")
    ap.add_argument("--plain", action="store_true", help="log lines instead of the live view")
    ap.add_argument("--progress", type=float, default=30.0, metavar="SECONDS",
                    help="--plain: a line `N/M rounds (P%%), X/min, ETA T` every SECONDS (0: none)")
    ap.add_argument("--level", choices=scenario.LEVELS, default="hard",
                    help="the computer players' level where the scenario names none")
    ap.add_argument("--no-camera", action="store_true", help="run without the virtual camera")
    ap.add_argument("--shoe", choices=scenario.SHOES, default=None,
                    help="v1: the protocol-v1 shoe on a pty (the default); hid: a keyboard-mode "
                         "barcode scanner shoe (input_event records through a FIFO)")
    ap.add_argument("--tables", type=int, default=None,
                    help="a studio of N tables: each with its own edge broker bridged to a 3-node "
                         "central cluster (docs/scale.md); the camera is off unless --camera")
    ap.add_argument("--camera", action="store_true", help="--tables: run the virtual cameras too")
    ap.add_argument("--studio-faults", help='--tables: a JSON list of studio faults, e.g. '
                    '[{"fault": "uplink_cut", "at": 10, "table": 2, "seconds": 60}]')
    ap.add_argument("--debug-dir", help="--tables: keep the studio's directory here, with "
                    "evidence of the central tier and the consumers (docs/scale.md)")
    ap.add_argument("--console-port", type=int, default=0,
                    help="the table console's port (0: a free one); its URL is printed at start")
    ap.add_argument("--pit-boss", choices=["sim", "console"], default="sim",
                    help="who resolves irregularities: the simulated pit boss, or you on the "
                         "console's pit-boss page")
    a = ap.parse_args(argv)
    # a negative count or pace is an error (--rounds -3 started a table that played nothing and
    # exited 1; --speed -1 played as --speed 0), as the scenario file's own rounds are
    for opt, v, least in (("--rounds", a.rounds, 0), ("--speed", a.speed, 0),
                          ("--progress", a.progress, 0), ("--tables", a.tables, 1)):
        if v is not None and not (least <= v < float("inf")):
            print(f"table-sim: {opt} {v}: a number >= {least}", file=sys.stderr)
            return 2
    # an option the chosen mode does not use is an error, not silently dropped
    studio_only = {"--camera": a.camera, "--studio-faults": a.studio_faults,
                   "--debug-dir": a.debug_dir}
    table_only = {"--faults": a.scenario, "--broker": a.broker, "--shoe": a.shoe,
                  "--console-port": a.console_port, "--pit-boss": a.pit_boss != "sim",
                  "--level": a.level != "hard"}
    unused = [k for k, v in (table_only if a.tables is not None else studio_only).items() if v]
    if unused:
        print(f"table-sim: {unused[0]} " + ("is not used with --tables (a studio)" if a.tables is not None
                                            else "needs --tables (a studio)"), file=sys.stderr)
        return 2
    if a.tables is not None:
        return studio_main(a)
    import re
    import secrets
    if a.broker and not re.fullmatch(r"mqtt://[^:/\s]+:\d{1,5}", a.broker):
        print(f"table-sim: --broker {a.broker}: expected mqtt://HOST:PORT", file=sys.stderr)
        return 2
    # the console's accounts for this run: fresh passwords, printed with its URL
    accounts = [("pit", "supervisor", secrets.token_urlsafe(9)),
                ("dealer", "dealer", secrets.token_urlsafe(9))]
    try:
        sc = scenario.load(a.scenario) if a.scenario else scenario.parse([])
        profile = a.profile or sc.get("profile") or "luxury21"
        h = Harness(profile, a.rounds if a.rounds is not None else sc.get("rounds", 0),
                    a.seed if a.seed is not None else sc.get("seed", 1), sc["faults"], a.speed,
                    a.broker, plain=a.plain or not sys.stdout.isatty(), level=a.level,
                    players=sc["players"], camera=not a.no_camera,
                    shoe=a.shoe or sc.get("shoe") or "v1",
                    console={"port": a.console_port, "accounts": accounts},
                    pit_boss=a.pit_boss == "sim",
                    progress_every=a.progress if a.plain else 0.0)
        rounds = h.rounds
        late = [f for f in sc["faults"] if rounds and f["round"] > rounds]
        if late:                      # --rounds cut the scenario short: say what it leaves out
            print(f"table-sim: {len(late)} of the scenario's faults come after round {rounds} and "
                  f"are not injected (the first: {late[0]['fault']} at round {late[0]['round']})",
                  file=sys.stderr)
    except ValueError as e:          # a bad scenario, an unknown profile or fault
        for line in str(e).splitlines():     # a profile file's errors: all of them, one a line
            print(f"table-sim: {line}", file=sys.stderr)
        return 2

    def stop(*_):      # a TERM stops the table like Ctrl-C: report, then stop the children
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    report = None
    stuck = False
    try:
        h.start()
    except (OSError, TimeoutError, RuntimeError, ValueError) as e:
        h.close()                     # what did start is stopped: no daemon left behind
        where = a.broker or "the local broker"
        print(f"table-sim: cannot start the table ({where}): {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        h.close()
        return 130
    print(f"table-sim: broker {h.broker_at}, events public key {h.public_key_path}, daemon log "
          f"{h.log_path}", file=sys.stderr, flush=True)
    print(f"table-sim: console {h.console_url}dealer (pit boss: {h.console_url}pit, "
          f"{accounts[0][0]} / {accounts[0][2]}; dealer {accounts[1][0]} / {accounts[1][2]})",
          file=sys.stderr, flush=True)
    if not h.plain:        # the live view draws over the terminal: the URL stays in its lines
        h.say(f"console {h.console_url}dealer, pit boss {h.console_url}pit ({accounts[0][0]} / "
              f"{accounts[0][2]})")
    try:
        h.play()
    except KeyboardInterrupt:
        pass
    except TimeoutError as e:        # a stuck table: say what it waited for, then the report
        print(e, file=sys.stderr)
        stuck = True
    finally:
        try:
            report = h.report()
        finally:
            h.close()
    text = json.dumps(report, indent=1)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text + "\n")
    print(text)
    # the live view cleared the start line off the screen: where the log is, said again
    print(f"table-sim: daemon log kept in {h.log_path}", file=sys.stderr, flush=True)
    return 0 if report["messages_lost"] == 0 and report["balances_match"] and not stuck else 1


def _check_debug_dir(path):
    """--debug-dir: an empty or new folder (a used one would resume the last run's journals:
    a false failure, its evidence mixed with this run's)."""
    if not path:
        raise ValueError("--debug-dir: an empty path")
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise ValueError(f"--debug-dir {path}: a file, not a folder")
        if os.listdir(path):
            raise ValueError(f"--debug-dir {path}: not empty (a run's evidence is there): "
                             f"give a new folder")
    else:
        try:
            os.makedirs(path)
        except OSError as e:
            raise ValueError(f"--debug-dir {path}: cannot make it: {e.strerror}") from None
    if not os.access(path, os.W_OK):
        raise ValueError(f"--debug-dir {path}: cannot write there (permission denied)")


def studio_main(a):
    """table-sim --tables N [--rounds R] [--studio-faults FILE|JSON] [--report FILE]"""
    import os
    import json
    import signal
    from .sim.studio import PROFILES, Studio
    try:
        text = a.studio_faults or "[]"
        if text.lstrip().startswith("{"):
            # inline JSON, not a file name: one fault still goes in a list
            raise ValueError("--studio-faults: a JSON list of faults, got one object: "
                             "write it as [{...}]")
        if not text.lstrip().startswith("["):
            with open(text) as f:
                text = f.read()
        try:
            faults = json.loads(text)
        except ValueError as e:
            raise ValueError(f"--studio-faults: not JSON: {e}") from None
        if not isinstance(faults, list):
            raise ValueError("--studio-faults: a JSON list of faults")
        if a.debug_dir is not None:
            _check_debug_dir(a.debug_dir)
        studio = Studio(a.tables, a.rounds if a.rounds is not None else 5, faults,
                        profiles=[a.profile] if a.profile else PROFILES,
                        seed=a.seed if a.seed is not None else 1, speed=a.speed, camera=a.camera,
                        debug_dir=os.path.abspath(a.debug_dir) if a.debug_dir is not None else None)
    except (OSError, ValueError) as e:
        print(f"table-sim: {e}", file=sys.stderr)
        return 2

    playing = True

    def stop(*_):
        studio.halt()       # every table's thread ends at its next step, the report waits not
        if playing:         # later (the report, the close) it only hurries them: the report
            raise KeyboardInterrupt         # already under way is still written
        studio.errors.append("interrupted")
    signal.signal(signal.SIGTERM, stop)
    report = None
    try:
        studio.start()
        print(f"table-sim: studio in {studio.dir}" + (
            "" if a.debug_dir is not None else " (removed at the end: --debug-dir DIR keeps it)"),
            file=sys.stderr, flush=True)
        studio.play()
    except KeyboardInterrupt:
        studio.errors.append("interrupted")
    except (OSError, TimeoutError, RuntimeError, ValueError) as e:
        print(f"table-sim: {e}", file=sys.stderr)
        studio.errors.append(str(e))
    finally:
        playing = False
        try:
            report = studio.report() if studio.tables else None
        finally:
            studio.close()
    text = json.dumps(report, indent=1)
    if a.report:
        with open(a.report, "w") as f:
            f.write(text + "\n")
    try:
        print(text, flush=True)
    except OSError:         # stdout closed by its reader: the report file (if any) has it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    # the exit code says what the report says (ok is false after any error above)
    return 0 if report and report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
