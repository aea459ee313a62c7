"""`table-sim shoe` and `table-sim wheel`: a virtual device on a pty, driven from standard input
(`sim_cli.main` hands these commands here).

    table-sim shoe --pty [--mode v1|line|hid] [--layout us|uk|de] [--decks N] [--seed S] [--cut N]
                   [--link PATH]

starts a virtual shoe on a pty (mode hid: a keyboard-mode scanner, input_event records in a FIFO
for `[shoe] protocol = "hid"`), prints its device path (a stable symlink) on the first line, then
takes commands on standard input, one per line, and answers each with one line:

    deal [N]         draw N cards (default 1); prints them
    corrupt | drop | lose | unreadable | double | foreign CARD
                     a fault on the next card (lose: dropped and not resendable)
    unplug | replug | restart | stall | unstall
    status [door=open] [jam=1] [sensor=fault] [light=low]
    partial | layout [NAME] | unplug_mid_code
                     (hid) the next code without its suffix key, typed with another layout, or
                     cut by an unplug
    codebook         (line and hid) prints the payload of every card, as TOML
    quit
"""
import argparse
import sys

from drivers.virtual_shoe import VirtualShoe


def shoe_main(argv):
    ap = argparse.ArgumentParser(prog="table-sim shoe", description="a virtual shoe on a pty")
    ap.add_argument("--pty", action="store_true", required=True, help="serve on a pseudo-terminal")
    ap.add_argument("--mode", choices=["v1", "line", "hid"], default="v1")
    ap.add_argument("--layout", choices=["us", "uk", "de"], default="us", help="hid: the keyboard layout")
    ap.add_argument("--decks", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cut", type=int, default=None, help="cut card position, cards from the back")
    ap.add_argument("--link", default=None, help="path of the stable symlink to the pty")
    args = ap.parse_args(argv)
    if args.mode == "hid":
        from drivers.virtual_hid_scanner import VirtualHidScanner
        shoe = VirtualHidScanner(decks=args.decks, seed=args.seed, cut_from_back=args.cut,
                                 layout=args.layout, link=args.link)
    else:
        shoe = VirtualShoe(decks=args.decks, seed=args.seed, cut_from_back=args.cut, mode=args.mode,
                           link=args.link)
    print(shoe.start(), flush=True)
    try:
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            cmd, rest = words[0], words[1:]
            try:
                reply = _command(shoe, cmd, rest)
            except (ValueError, IndexError) as e:
                reply = f"error: {e}"
            if reply is None:
                break
            print(reply, flush=True)
    finally:
        shoe.close()
    return 0


# the status a virtual shoe can report (docs/shoe-protocol.md, STAT)
STATUS_WORDS = {"door": ("open", "closed"), "jam": ("0", "1"), "sensor": ("ok", "fault"),
                "light": ("ok", "low")}


def _command(shoe, cmd, rest):
    faults = {"corrupt": shoe.corrupt_next, "drop": shoe.drop_next,
              "lose": lambda: shoe.drop_next(resendable=False), "unreadable": shoe.unreadable_next,
              "double": shoe.double_fire_next, "unplug": shoe.unplug, "replug": shoe.replug,
              "restart": shoe.restart, "stall": shoe.stall, "unstall": lambda: shoe.stall(False)}
    if hasattr(shoe, "partial_next"):
        faults.update(partial=shoe.partial_next, unplug_mid_code=shoe.unplug_mid_code_next)
    if cmd == "layout" and hasattr(shoe, "wrong_layout_next"):
        shoe.wrong_layout_next(rest[0] if rest else None)
        return "ok"
    if cmd == "quit":
        return None
    if cmd == "deal":
        if rest and not (rest[0].isascii() and rest[0].isdigit() and int(rest[0]) >= 1):
            raise ValueError(f"deal N: N is a number of cards, at least 1, got {rest[0]!r}")
        n = int(rest[0]) if rest else 1
        cards = [shoe.deal() for _ in range(n)]
        return " ".join(c or "-" for c in cards)
    if cmd == "foreign":
        from controller.cards import CARDS
        if not rest or rest[0] not in CARDS:
            raise ValueError("foreign CARD: the card the next read gives, e.g. 'foreign As'"
                             + (f", got {rest[0]!r}" if rest else ""))
        shoe.foreign_next(rest[0])
        return "ok"
    if cmd == "status":
        kw = {}
        for w in rest:
            key, _, value = w.partition("=")
            if value not in STATUS_WORDS.get(key, ()):
                raise ValueError(f"status: {w!r}: expected "
                                 + " ".join(f"{k}={'|'.join(v)}" for k, v in STATUS_WORDS.items()))
            kw[key] = value
        if "jam" in kw:
            kw["jam"] = kw["jam"] == "1"
        shoe.status(**kw)
        return "ok"
    if cmd == "codebook":
        return "\n".join(f'"{p}" = "{c}"' for p, c in shoe.codebook().items())
    if cmd in faults:
        faults[cmd]()
        return "ok"
    known = ["deal", "foreign", "status", *faults, "codebook",
             *(["layout"] if hasattr(shoe, "wrong_layout_next") else []), "quit"]
    raise ValueError(f"unknown command {cmd!r}; known: {', '.join(known)}")


def wheel_main(argv):
    """table-sim wheel --pty: a virtual Cammegh SS2 wheel; commands on standard input:
    miss_spin | failed_launch [PERIODS] | no_ball [PERIODS] | fault [CODE] | garble |
    double_number | ball_out | respin | quit."""
    from drivers.virtual_wheel import VirtualWheel
    ap = argparse.ArgumentParser(prog="table-sim wheel", description="a virtual roulette wheel on a pty")
    ap.add_argument("--pty", action="store_true", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--period", type=float, default=0.5, help="seconds between status packets")
    ap.add_argument("--link", default=None)
    args = ap.parse_args(argv)
    w = VirtualWheel(seed=args.seed, period=args.period, link=args.link)
    print(w.start(), flush=True)
    try:
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            reply = _wheel_command(w, words)
            if reply is None:
                break
            print(reply, flush=True)
    finally:
        w.close()
    return 0


def _wheel_command(w, words):
    """One line of the wheel's console -> its one-line answer (None: quit)."""
    acts = {"miss_spin": lambda r: w.miss_spin_next(),
            "failed_launch": lambda r: w.failed_launch_next(int(r[0]) if r else 10),
            "no_ball": lambda r: w.no_ball_next(int(r[0]) if r else 12),
            "fault": lambda r: w.component_fault(r[0] if r else "12"),
            "garble": lambda r: w.garble_next(),
            # the next number read twice, differently (a reader fault: number_mismatch)
            "double_number": lambda r: w.double_number_next(),
            # the no-spin of docs/table-sim.md's no_spin fault: the next spin's ball leaves the
            # wheel (no number comes) until the dealer, having declared the no-spin, launches again
            "ball_out": lambda r: w.ball_out_next(),
            "respin": lambda r: w.respin()}
    cmd, rest = words[0], words[1:]
    if cmd == "quit":
        return None
    if cmd not in acts:
        return f"error: unknown command {cmd!r}; known: {', '.join(acts)}, quit"
    if cmd == "respin" and not ("ball_out" in w.faults and w.state == 4):
        return "error: respin: no ball is out (ball_out, then respin once its spin waits for a number)"
    if cmd in ("failed_launch", "no_ball") and rest and not (rest[0].isascii() and rest[0].isdigit()
                                                         and int(rest[0]) >= 1):
        return f"error: {cmd} PERIODS: a number of status periods, at least 1, got {rest[0]!r}"
    acts[cmd](rest)
    return "ok"
