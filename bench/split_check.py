"""A module split moved code and changed none of it: every function and method of the old
module (read from git at REV, run under its own name, so `logging.getLogger(__name__)` is the
very logger it used) is found in the new modules with an equal `ast.dump`, each global name it
reads is bound to the same object where it now lives as where it lived (a def of that name found
in one of the split's own modules; a table of the module's own defs, as controller/table.py's
handlers and Ops, entry by entry; a sentinel such as daemon.RELOAD = object(), made anew by each
import, the one the old module's place holds now), each method is what the new class resolves
its name to (no other part shadows it), a class made of mixins has no name defined in two of
its parts, and every public top-level name of the old module, and every name the repository's
code imports from it (a test may import a private one), is still importable from it
(re-exported where it moved), and no def reading a name a test patches on the old module moved
out of it. A class's own statements (its __slots__, bases) are compared too. And the modules of
dealer_station/sim/, dealer_station/console/, dealer_station/ and drivers/ import one another
without a cycle (top-level imports; controller/'s cycles are tests/test_layering.py's). Defs
changed on purpose after a split (CHANGED) are named as such; their globals and resolution are
still checked.

Splits: sim's harness, studio, bettor (and outputs.py); sim_cli; controller's blackjack and
table; console/server.py; dealer_station/daemon.py; drivers/shoe.py.

    .venv/bin/python bench/split_check.py [REV]

REV: each split's own commit before it by default (REVS): 186e4e6 for the daemon's and the
shoe's, DEFAULT_REV 0495b29 for the others (before the first splits: harness, studio, bettor,
sim_cli, blackjack; table.py and console/server.py did not change from there to f07ec00, main
before their split, so it checks theirs too). A REV given is used for every split: f07ec00
checks only what moved since in the others (bettor's outputs.py too), and the daemon and the
shoe, changed between f07ec00 and 186e4e6, then differ.

Exit 0 when all of it holds; otherwise each difference on its own line and exit 1."""
import ast
import builtins
import importlib
import inspect
import os
import pathlib
import subprocess
import symtable
import sys
import types

ROOT = __file__.rsplit("/bench/", 1)[0]
sys.path.insert(0, ROOT)

# the old module -> the modules its code went to (the old module's own path first)
SPLITS = {
    "dealer_station.sim.harness": ("dealer_station.sim.harness", "dealer_station.sim.bringup",
                                   "dealer_station.sim.faults", "dealer_station.sim.tracking",
                                   "dealer_station.sim.staff", "dealer_station.sim.diagnostics"),
    "dealer_station.sim.studio": ("dealer_station.sim.studio", "dealer_station.sim.studio_edges",
                                  "dealer_station.sim.studio_faults",
                                  "dealer_station.sim.studio_report"),
    "dealer_station.sim.bettor": ("dealer_station.sim.bettor", "dealer_station.sim.bettor_game",
                                  "dealer_station.sim.outputs"),
    "dealer_station.sim_cli": ("dealer_station.sim_cli", "dealer_station.sim_devices_cli"),
    "controller.blackjack": ("controller.blackjack", "controller.blackjack_state",
                             "controller.blackjack_end"),
    "controller.table": ("controller.table", "controller.table_state", "controller.table_pause",
                         "controller.table_round", "controller.table_cards"),
    "dealer_station.console.server": ("dealer_station.console.server",
                                      "dealer_station.console.handler"),
    "dealer_station.daemon": ("dealer_station.daemon", "dealer_station.daemon_effects",
                              "dealer_station.daemon_devices", "dealer_station.daemon_lifecycle"),
    "drivers.shoe": ("drivers.shoe", "drivers.shoe_session", "drivers.shoe_boots",
                     "drivers.shoe_gaps", "drivers.shoe_reports"),
}
# the commit before each split (the default REV); the others' is DEFAULT_REV
DEFAULT_REV = "0495b29"
REVS = {"dealer_station.daemon": "186e4e6", "drivers.shoe": "186e4e6"}

# the packages whose modules import one another without a cycle (controller/'s are
# tests/test_layering.py's; dealer_station/'s own modules, not its subpackages', which are listed)
CYCLE_FREE = ("dealer_station.sim", "dealer_station.console", "dealer_station", "drivers")

# defs changed on purpose after the split, each in its own commit with its test: reported as
# such, not as a problem (anything else in them is still compared: globals, resolution)
CHANGED = {
    "dealer_station.sim.studio.parse_faults":
        "at_s NaN or Infinity refused (a bug fix after the split; tests/test_studio.py)",
    "controller.table._identify":
        "an irregularity the identified card raises stays pending, no second round_paused (a bug "
        "fix after the split; tests/test_table.py)",
    "dealer_station.console.server._handler":
        "an export's round number that str.isdigit takes and int() does not (\"²\") is a 400, "
        "not an exception that drops the connection (tests/test_console_security.py)",
    "dealer_station.sim_cli._command":
        "deal N takes ASCII digits only (\"²\" passed isdigit and failed in int(): aed057d, "
        "after the split, with the protocol's zone fix; now in sim_devices_cli.py)",
    "dealer_station.sim_cli._wheel_command":
        "failed_launch/no_ball PERIODS take ASCII digits only (aed057d, as _command; now in "
        "sim_devices_cli.py)",
    "dealer_station.daemon.Daemon.do":
        "a Refuse is handed to journal.refuse whole, for the refused-command budget (flood37, "
        "merged after the split in 0573f92; tests/test_refused_budget.py); a counted Refuse "
        "summed for the burst's end, a command's PUBACK held behind it (flood38; "
        "tests/test_refused_flood.py); an Audit's rights refusal id journaled with it (ids41; "
        "tests/test_command_ids.py)",
    "dealer_station.daemon.Daemon.__init__":
        "counts_write and held_cmd_acks: a burst's counted refusals and the PUBACKs held for "
        "them (flood38)",
    "dealer_station.daemon.Daemon.run_once":
        "the queue empty while counted refusals wait for their write, the next item is waited "
        "for up to GATHER_S (_gather): one write for the broker's window (flood38; "
        "bench/bench_flood.py); per-source lanes taken in turn (fair38; tests/test_loop_lanes.py)",
    "dealer_station.daemon.Daemon._build_console":
        "the console's commands put into their own lane (fair38; tests/test_loop_lanes.py)",
    "dealer_station.daemon.Daemon.start":
        "each device's events put into its own lane (fair38; tests/test_flood_fair.py)",
    "dealer_station.daemon.Daemon.close":
        "a storage error writing the burst's held position or counts no longer stops the rest "
        "from closing (the link, devices, journal and its lock); raised at the end (review38; "
        "tests/test_journal_storage.py)",
    "dealer_station.daemon.Daemon.handle":
        "a batch of commands beyond their sender's lane answered busy (fair38; "
        "tests/test_flood_fair.py); its defect's log and acknowledgement in _defect, shared "
        "with the busy batch's (review38; tests/test_loop_lanes.py)",
    "dealer_station.daemon.clock":
        "the clock facts (synchronised, boot id) on every Clock, for the outage rule (ntp41; "
        "tests/test_clock_facts.py)",
    "dealer_station.daemon.Daemon._flush_position":
        "also writes the burst's counted refusals in one transaction, then the PUBACKs held for "
        "them (flood38; tests/test_refused_flood.py)",
    "dealer_station.daemon.Daemon._reads":
        "a command's reply looked up by (sender, id): each sender's own ids (ids41; "
        "tests/test_command_ids.py)",
}


def path_of(module):
    return module.replace(".", "/") + ".py"


def old_module(name, rev):
    """The module as it was at `rev`, imported beside today's package (its relative imports
    resolve to today's sibling modules, which the split did not touch)."""
    src = subprocess.run(["git", "-C", ROOT, "show", f"{rev}:{path_of(name)}"], check=True,
                         capture_output=True, text=True).stdout
    # its own name, as it ran: `logging.getLogger(__name__)` is then the very logger it used
    mod = types.ModuleType(name)
    mod.__package__ = name.rpartition(".")[0]
    mod.__file__ = f"{ROOT}/{path_of(name)}"     # where it was (console's STATIC is beside it)
    exec(compile(src, f"{rev}:{path_of(name)}", "exec"), mod.__dict__)
    return mod, src


def functions(src):
    """(class or None, name) -> the def's ast node, for top-level functions and methods."""
    out = {}
    for n in ast.parse(src).body:
        if isinstance(n, ast.FunctionDef):
            out[(None, n.name)] = n
        elif isinstance(n, ast.ClassDef):
            for m in n.body:
                if isinstance(m, ast.FunctionDef):
                    out[(n.name, m.name)] = m
    return out


def own_names(src):
    """The names the module itself binds at its top level (defs, classes, assignments)."""
    out = set()
    for n in ast.parse(src).body:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Assign, ast.AnnAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                out |= {x.id for x in ast.walk(t) if isinstance(x, ast.Name)}
    return out


CLASS_SKIP = {"__dict__", "__weakref__", "__module__", "__doc__", "__slots__"}


def same_binding(was, now, own, home=(), sentinel=None, depth=0):
    """A global read binds the same thing: the very object, or for a name the old module bound
    itself, the same value (a constant moved) or the def of that name (moved, compared apart),
    found in one of the modules the split made (`home`). A table the module built of its own
    defs (a dict of handlers, a class of staticmethods) is compared entry by entry, and a
    function made at import (a lambda) by what it closes over. A sentinel (`RELOAD = object()`,
    made anew by each import) is the one the old module's place holds now (`sentinel`), so that
    every part reads that one."""
    if was is now:
        return True
    if not own or depth > 8:
        return False
    if type(was) is object:
        return sentinel is not None and now is sentinel

    def same(a, b):
        return same_binding(a, b, True, home, None, depth + 1)
    if isinstance(was, (types.FunctionType, type)):
        if type(was) is not type(now) or was.__qualname__ != now.__qualname__:
            return False
        if home and now.__module__ not in home:
            return False
        if isinstance(was, type):
            # its defs, properties and __slots__ are compared apart; here what else its body
            # binds: a def of another module bound as a staticmethod (table.Ops), a value
            for k, v in vars(was).items():
                if k in CLASS_SKIP or isinstance(v, (types.FunctionType, property,
                                                     types.MemberDescriptorType)):
                    continue
                w = inspect.getattr_static(now, k, KeyError)
                if isinstance(v, (staticmethod, classmethod)):
                    v, w = v.__func__, getattr(w, "__func__", None)
                if not same(v, w):
                    return False
            return True
        if "<locals>" not in was.__qualname__:
            return True                 # a top-level def: its ast is compared apart
        cw, cn = was.__closure__ or (), now.__closure__ or ()
        return (was.__code__.co_code == now.__code__.co_code and len(cw) == len(cn)
                and all(same(x.cell_contents, y.cell_contents) for x, y in zip(cw, cn)))
    if type(was) is not type(now):
        return False
    if isinstance(was, dict):
        return list(was) == list(now) and all(same(was[k], now[k]) for k in was)
    if isinstance(was, (tuple, list)):
        return len(was) == len(now) and all(same(x, y) for x, y in zip(was, now))
    return was == now


def global_reads(src, filename):
    """(class or None, name) -> the global names the def (and what it nests) reads."""
    def names(table):
        found = {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
        for child in table.get_children():
            found |= names(child)
        return found
    out = {}
    for t in symtable.symtable(src, filename, "exec").get_children():
        if t.get_type() == "function":
            out[(None, t.get_name())] = names(t)
        elif t.get_type() == "class":
            for m in t.get_children():
                if m.get_type() == "function":
                    out[(t.get_name(), m.get_name())] = names(m)
    return out


def class_bodies(old_src, new_names):
    """Each old class's statements other than its defs (its __slots__, say) and its bases: equal
    in the new class of that name (a class moved whole is then equal whole, with its defs)."""
    def parts(node):
        body = [ast.dump(b) for b in node.body if not isinstance(b, ast.FunctionDef)
                and not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
        return body, node.decorator_list
    new = {}
    for name in new_names:
        for n in ast.parse(open(f"{ROOT}/{path_of(name)}").read()).body:
            if isinstance(n, ast.ClassDef):
                new[n.name] = n
    problems = []
    for n in ast.parse(old_src).body:
        if isinstance(n, ast.ClassDef):
            if n.name not in new:
                problems.append(f"class {n.name}: not in the new modules")
                continue
            (body, deco), (body2, deco2) = parts(n), parts(new[n.name])
            if body != body2 or [ast.dump(d) for d in deco] != [ast.dump(d) for d in deco2]:
                problems.append(f"class {n.name}: its statements other than defs differ")
            if n.bases and [ast.dump(b) for b in n.bases] != [ast.dump(b) for b in new[n.name].bases]:
                problems.append(f"class {n.name}: its bases differ")
    return problems


def imported_names(module):
    """The names the repository's code takes from `module`: `from module import x` (absolute or
    relative), and `m.x` where a file bound m to the module (`from package import module`,
    `import module as m`); private ones too (a test may import one). And the names patched
    on it with `setattr(m, "x", ...)`."""
    names, patched = set(), set()      # patched: monkeypatch.setattr(m, "x", ...)
    pkg, _, leaf = module.rpartition(".")
    for folder in ("controller", "drivers", "calibration", "dealer_station", "tests", "bench"):
        for path in sorted(pathlib.Path(ROOT, folder).rglob("*.py")):
            here = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
            tree = ast.parse(path.read_text())
            aliases = set()             # names this file binds to the module itself
            for n in ast.walk(tree):
                if isinstance(n, ast.Import):
                    aliases |= {a.asname for a in n.names if a.name == module and a.asname}
                if not isinstance(n, ast.ImportFrom):
                    continue
                base = n.module or ""
                if n.level:
                    up = here.split(".")[:len(here.split(".")) - (n.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                if base == module:
                    names |= {a.name for a in n.names}
                elif base == pkg:           # from package import module: its attributes below
                    aliases |= {a.asname or a.name for a in n.names if a.name == leaf}
            names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                      and isinstance(n.value, ast.Name) and n.value.id in aliases}
            patched |= {n.args[1].value for n in ast.walk(tree) if isinstance(n, ast.Call)
                        and isinstance(n.func, ast.Attribute) and n.func.attr == "setattr"
                        and len(n.args) >= 2 and isinstance(n.args[0], ast.Name)
                        and n.args[0].id in aliases and isinstance(n.args[1], ast.Constant)}
    return names | patched, patched


def check(old_name, new_names, rev):
    problems, moved = [], 0
    old, old_src = old_module(old_name, rev)
    old_defs, old_globals = functions(old_src), global_reads(old_src, old_name)
    own = own_names(old_src)
    new = {}                                    # (class or None, name) -> (module, node, reads)
    for name in new_names:
        mod = importlib.import_module(name)
        src = open(f"{ROOT}/{path_of(name)}").read()
        reads = global_reads(src, name)
        for key, node in functions(src).items():
            new.setdefault(key[1], []).append((mod, key[0], node, reads[key]))
    top = importlib.import_module(new_names[0])
    problems += class_bodies(old_src, new_names)
    taken, patched = imported_names(old_name)
    for (cls, fn), node in old_defs.items():
        where = f"{old_name}.{cls + '.' if cls else ''}{fn}"
        same = [c for c in new.get(fn, []) if ast.dump(c[2]) == ast.dump(node)]
        changed = not same and where in CHANGED and len(new.get(fn, [])) == 1
        if changed:
            same = new[fn]
            print(f"  {where}: changed on purpose: {CHANGED[where]}")
        if len(same) != 1:
            problems.append(f"{where}: {len(same)} equal defs in the new modules "
                            f"({len(new.get(fn, []))} of that name)")
            continue
        mod, new_cls, _, reads = same[0]
        moved += not changed
        for g in sorted(old_globals[(cls, fn)] | reads):
            was, now = old.__dict__.get(g, KeyError), mod.__dict__.get(g, KeyError)
            if was is KeyError and (now is KeyError and hasattr(builtins, g) or changed):
                continue                    # a builtin; or a name the changed def reads anew
            if not same_binding(was, now, g in own, set(new_names), getattr(top, g, None)):
                problems.append(f"{where}: global {g}: {was!r} then, {now!r} in {mod.__name__}")
            if g in patched and mod is not top:
                # a test patches it on the old module: a def that moved away reads its own copy
                problems.append(f"{where}: reads {g}, which a test patches on {old_name}, "
                                f"from {mod.__name__}")
        if cls is not None:
            # the old class's name still resolves each method to the moved one
            resolved = getattr(getattr(top, cls), fn)
            if resolved is not getattr(getattr(mod, new_cls), fn):
                problems.append(f"{where}: {cls}.{fn} resolves to {resolved.__qualname__}")
    wanted = {n for n in own if not n.startswith("_")} | (taken & set(vars(old)))
    for g in sorted(wanted):                # its public names, and any name code imports from it
        if not hasattr(top, g):
            problems.append(f"{old_name}.{g}: no longer importable from {new_names[0]}")
        elif not same_binding(getattr(old, g), getattr(top, g), True, set(new_names),
                              getattr(top, g)):
            problems.append(f"{old_name}.{g}: {getattr(old, g)!r} then, {getattr(top, g)!r} now")
    return moved, problems + shadowing(new_names)


def shadowing(new_names):
    """A class made of mixins: each name (a def, a class attribute) defined in one of its classes
    only, so splitting a class into parts cannot have one part hide another's def."""
    problems = []
    for name in new_names:
        mod = importlib.import_module(name)
        for cls in vars(mod).values():
            if not isinstance(cls, type) or cls.__module__ != name or len(cls.__mro__) <= 2:
                continue
            seen = {}
            for part in cls.__mro__:
                if part.__module__ not in new_names:    # a base of before (RuntimeError)
                    continue
                for attr in vars(part):
                    if attr in ("__module__", "__doc__", "__dict__", "__weakref__",
                                "__qualname__", "__firstlineno__", "__static_attributes__"):
                        continue
                    if attr in seen:
                        problems.append(f"{name}.{cls.__name__}.{attr}: in {seen[attr]} and "
                                        f"{part.__qualname__}")
                    seen.setdefault(attr, part.__qualname__)
    return problems


def import_cycles(package="dealer_station.sim"):
    """Cycles among the package's modules through their imports at the top level."""
    folder = f"{ROOT}/{package.replace('.', '/')}"
    mods = {f[:-3] for f in os.listdir(folder) if f.endswith(".py")}
    graph = {}
    for m in mods:
        deps = set()
        for n in ast.parse(open(f"{folder}/{m}.py").read()).body:
            if isinstance(n, ast.ImportFrom) and n.level == 1:
                deps |= {n.module} if n.module else {a.name for a in n.names}
            elif isinstance(n, ast.ImportFrom) and n.module and n.module.startswith(package + "."):
                deps.add(n.module[len(package) + 1:].split(".")[0])
        graph[m] = deps & mods
    cycles, state = [], {}

    def visit(m, path):
        state[m] = "open"
        for d in sorted(graph[m]):
            if state.get(d) == "open":
                cycles.append(" -> ".join(path[path.index(d):] + [d]))
            elif d not in state:
                visit(d, path + [d])
        state[m] = "done"
    for m in sorted(mods):
        if m not in state:
            visit(m, [m])
    return cycles


def main(rev=None):
    problems = []
    for old_name, new_names in SPLITS.items():
        at = rev or REVS.get(old_name, DEFAULT_REV)
        moved, found = check(old_name, new_names, at)
        problems += found
        print(f"{old_name} (against {at}): {moved} defs equal (ast.dump, globals, method "
              f"resolution), {len(found)} problems")
    cycles = []
    for package in CYCLE_FREE:
        found = import_cycles(package)
        print(f"{package.replace('.', '/')}/: {len(found)} import cycles")
        cycles += found
    for p in problems + [f"import cycle: {c}" for c in cycles]:
        print("  " + p)
    return 1 if problems or cycles else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
