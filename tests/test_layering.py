"""The engine's shape: no import cycle inside controller/, the game chosen in one place
(controller/games.py), and what the table waits for as typed tuples."""
import ast
import pathlib
import re

import controller
from controller import expect, get_profile, new_table, step
from controller.expectation import AwaitCard, AwaitDecision, Expect, Pending
from controller.games import GAMES, game_of
from helpers import ready

ROOT = pathlib.Path(controller.__file__).parent
REPO = ROOT.parent


def controller_imports(path):
    """The controller modules `path` imports, at any depth of the file (a function-level import
    is still a dependency)."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                yield node.module.split(".")[0]
            else:
                yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("controller"):
            parts = node.module.split(".")
            yield from ([parts[1]] if len(parts) > 1 else [a.name for a in node.names])


def test_no_import_cycle_inside_the_controller():
    mods = {p.stem: p for p in ROOT.glob("*.py") if p.stem != "__init__"}
    graph = {m: {d for d in controller_imports(p) if d in mods and d != m} for m, p in mods.items()}
    # it returns a verdict; the table (table.py and its table_*.py parts) applies it
    assert not {d for d in graph["camera_check"] if d == "table" or d.startswith("table_")}
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in sorted(graph[m]):
            if state.get(d) == "open":
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(d):] + [d]))
            if d not in state:
                visit(d, path + [d])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


# `x.game == ...`, `... != profile.game`, `game in (...)`, `{...}.get(p.game, ...)`
SWITCH = re.compile(r"""\.game\s*(==|!=|\bin\b|\bnot\s+in\b)|(==|!=)\s*[\w.]*\.game\b|\.get\([\w.]*\.game\b"""
                    r"""|\bgame\s*(==|!=)\s*["']""")
# Where a game's name may be compared: the registry itself. The simulated outside world (the
# table simulator's actors in dealer_station/sim/, not scanned, and the virtual camera's table
# layout) knows a game only by the name the protocol publishes, as a real one would.
ALLOWED = {ROOT / "games.py", REPO / "drivers" / "camera" / "virtual.py"}


def test_no_game_switch_outside_the_game_interface():
    files = [*ROOT.glob("*.py"), *(REPO / "drivers").rglob("*.py"),
             *(REPO / "dealer_station").glob("*.py")]
    bad = [f"{f.relative_to(REPO)}:{i}: {line.strip()}"
           for f in files if f not in ALLOWED
           for i, line in enumerate(f.read_text().splitlines(), 1) if SWITCH.search(line)]
    assert not bad, "switch on the game's name outside controller/games.py:\n" + "\n".join(bad)


def test_the_switch_pattern_catches_the_old_forms():
    for old in ('if t.profile.game == "roulette":', 'if p.game in ("baccarat", "roulette"):',
                'kinds = {"baccarat": 1}.get(profile.game, 2)', 'elif outcome.get("game") != profile.game:',
                'if self.game == "baccarat":'):
        assert SWITCH.search(old), old
    assert not SWITCH.search('snap = {"game": t.profile.game}')


def test_no_positional_reads_of_an_expectation():
    """What the table waits for is read by field name (e.seat, e.face), never as e[1], e[4]."""
    files = [*ROOT.glob("*.py"), REPO / "drivers" / "panel.py",
             *(REPO / "dealer_station").glob("daemon*.py")]   # the daemon and its parts
    pattern = re.compile(r"\b(e|was|expectation)\[\d|expect\([^()]*\)\[\d")
    bad = [f"{f.relative_to(REPO)}:{i}: {line.strip()}"
           for f in files for i, line in enumerate(f.read_text().splitlines(), 1)
           if pattern.search(line)]
    assert not bad, "\n".join(bad)


def test_every_profile_has_its_game_chosen_once():
    for name in ("luxury21", "european", "lucky7", "punto_banco", "roulette"):
        p = get_profile(name)
        t = new_table(p)
        assert t.game is game_of(p) is GAMES[p.game]
        assert step(t, {"type": "pause", "reason": "x"})[0].game is t.game   # carried, not looked up


def test_expectations_are_typed_and_equal_the_positional_tuples():
    """The daemon compares the expectation it armed a timer for with the current one: typed
    expectations keep the equality (and hash) of the tuples they replace."""
    r = ready("luxury21")
    r.close(3)
    e = expect(r.table)
    assert isinstance(e, AwaitCard) and (e.to, e.seat, e.hand, e.face, e.zone, e.dest) == (
        "seat", 3, 0, "up", "seat_3", "seat:3:0")
    assert e == ("card", "seat", 3, 0, "up") and hash(e) == hash(("card", "seat", 3, 0, "up"))
    r.feed("9c", "Kd", "8h", "5s")
    e = expect(r.table)
    assert isinstance(e, AwaitDecision) and e == Expect.decision(3, 0) == ("decision", 3, 0)
    assert e != Expect.INSURANCE and Expect.INSURANCE != Expect.RESULT


def test_pending_items_are_typed():
    r = ready("punto_banco")
    r.close()
    r.feed({"type": "card_unreadable"})
    (p,) = r.table.pending
    assert isinstance(p, Pending) and p.kind == "misread" and p.card is None
    assert p.expect == Expect.card("player")
