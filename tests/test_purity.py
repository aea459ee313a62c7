"""controller/ is a pure functional core: it imports nothing that does I/O, reads the clock,
draws random numbers or starts threads (DEVELOPERS.md)."""
import ast
import copy
import pathlib

import controller
from controller import get_profile, new_table, step

FORBIDDEN = {"serial", "cv2", "pyzbar", "zxingcpp", "gpiozero", "paho", "sqlite3", "time", "random",
             "logging", "threading", "asyncio", "socket", "os", "subprocess", "io", "datetime",
             "select", "selectors", "multiprocessing", "signal", "pathlib", "shutil", "tempfile",
             "urllib", "http", "secrets", "uuid", "builtins"}
ALLOWED = {"dataclasses", "fractions", "types", "decimal", "itertools", "functools", "math",
           "collections", "typing", "__future__"}

ROOT = pathlib.Path(controller.__file__).parent


def imports_of(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                yield node.module.split(".")[0], node.lineno
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("open", "__import__",
                                                                                "exec", "eval", "input", "print"):
            yield f"call to {node.func.id}()", node.lineno


def test_controller_imports_only_pure_modules():
    bad = []
    files = sorted(ROOT.rglob("*.py"))
    assert len(files) >= 6
    for f in files:
        for name, line in imports_of(f):
            if name in FORBIDDEN or name not in ALLOWED:
                bad.append(f"{f.relative_to(ROOT.parent)}:{line}: {name}")
    assert not bad, "controller/ must stay pure:\n" + "\n".join(bad)


def test_the_import_check_catches_a_forbidden_import(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("import time\nfrom paho.mqtt import client\nopen('x')\n")
    found = {n for n, _ in imports_of(f)}
    assert {"time", "paho", "call to open()"} <= found


def test_step_never_changes_the_state_it_was_given():
    t = new_table(get_profile("luxury21"))
    history = []
    evs = [{"type": "shoe_loaded"}, {"type": "card", "card": "2s"}, {"type": "card", "card": "3s"},
           {"type": "card", "card": "4s"}, {"type": "betting_closed", "seats": [1, 2]}]
    evs += [{"type": "card", "card": c} for c in ["8s", "8h", "9c", "5d", "Tc", "7d"]]
    evs += [{"type": "decision", "seat": 1, "hand": 0, "action": "split"}]
    for ev in evs:
        before = _dump(t)
        history.append((t, before))
        t, _ = step(t, ev)
        assert _dump(history[-1][0]) == before
    for old, snap in history:
        assert _dump(old) == snap


def _dump(obj, depth=0):
    """A deep, comparable copy of an engine object graph (slots objects, tuples)."""
    if hasattr(obj, "__slots__") and not isinstance(obj, type):
        return (type(obj).__name__,) + tuple(_dump(getattr(obj, k, None), depth + 1)
                                             for k in obj.__slots__)
    if isinstance(obj, tuple):
        return tuple(_dump(x, depth + 1) for x in obj)
    if isinstance(obj, (list, dict, set)):
        return copy.deepcopy(obj)
    return obj


def test_copy_helpers_copy_every_slot():
    """The hand-written copy methods (`but`, `_copy`) must not forget a slot added later."""
    t = new_table(get_profile("luxury21"))
    for ev in [{"type": "shoe_loaded"}, {"type": "card", "card": "As"}, {"type": "card", "card": "2s"},
               {"type": "betting_closed", "seats": [1]}, {"type": "card", "card": "8s"},
               {"type": "card", "card": "9d"}]:
        t, _ = step(t, ev)
    objs = [t, t.shoe, t.round, t.round.seats[0].hands[0]]
    for o in objs:
        copy_ = o._copy() if hasattr(o, "_copy") else o.but()
        for k in type(o).__slots__:
            assert getattr(copy_, k) is getattr(o, k), (type(o).__name__, k)


STATION = ROOT.parent / "dealer_station"
# The station core may read the engine, the drivers' event types and the command parser; never
# the journal, the broker, a device, the clock or a thread.
STATION_ALLOWED = ALLOWED | {"controller", "drivers", "dealer_station", "json", "datetime",
                             "traceback"}


def test_the_station_core_does_no_io():
    bad = []
    for f in (*STATION.glob("station*.py"), STATION / "commands.py"):
        for name, line in imports_of(f):
            if name in (FORBIDDEN - {"datetime"}) or name not in STATION_ALLOWED:
                bad.append(f"{f.name}:{line}: {name}")
    assert not bad, "the station core must stay pure: " + "; ".join(bad)


def loaded_by(imports, watch):
    """Which of `watch` a fresh interpreter has loaded after `imports` (a module list)."""
    import subprocess
    import sys
    code = (f"import sys, {imports}; print(sorted(m for m in {watch!r} if m in sys.modules))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT.parent, check=True).stdout.strip()


def test_the_station_core_loads_no_device_library():
    assert loaded_by("dealer_station.station, drivers.events, drivers.panel",
                     ("serial", "cv2", "gpiozero", "paho", "sqlite3", "numpy")) == "[]"


def test_a_table_without_camera_or_panel_never_imports_opencv_or_gpiozero():
    assert loaded_by("dealer_station.daemon, dealer_station.cli",
                     ("cv2", "gpiozero", "numpy", "zxingcpp", "pyzbar")) == "[]"


def test_checking_a_config_with_camera_and_panel_loads_neither():
    """Each module owns its config section (drivers/section.py); reading those sections must not
    drag in the device libraries that only building the device needs."""
    code = ("dealer_station.config; dealer_station.config.check_config({'table': {'id': 't1', "
            "'profile': 'luxury21', 'calibration': 'c.toml'}, 'camera': {'enabled': True}, "
            "'panel': {'enabled': True, 'pins': {'resume': 5}}})")
    assert loaded_by(code, ("cv2", "gpiozero", "numpy", "zxingcpp", "pyzbar")) == "[]"


def test_every_config_section_is_owned_outside_the_config_reader():
    """Klipper's habit: the schema of [shoe] lives with the shoe, [broker] with the MQTT link...;
    the reader keeps only the table's identity and its paths."""
    from dealer_station import config
    owners = {s.name: s for s in config.sections()}
    mine = {n for n, s in owners.items() if vars(config).get(n.upper()) is s}
    assert mine == {"table", "paths"}, mine
