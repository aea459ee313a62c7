"""Software integrity (dealer_station/integrity.py): the installed files' hashes are recorded at
install (`dealer-station manifest`) and checked by the daemon at start; a changed byte keeps the
table closed: the retained status says `integrity_failed` and names the file, exit 3."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from dealer_station import integrity
from mqtt_rig import ROOT, Broker, Client, wait_for, workdir


def copy_tree(dest):
    for pkg in integrity.PACKAGES:
        shutil.copytree(os.path.join(ROOT, pkg), os.path.join(dest, pkg),
                        ignore=shutil.ignore_patterns("__pycache__"))
    for name in integrity.MODULES:
        shutil.copy(os.path.join(ROOT, name), os.path.join(dest, name))


def flip(path, at=-2):
    data = bytearray(open(path, "rb").read())
    data[at] ^= 0x01
    open(path, "wb").write(bytes(data))


def test_check_names_the_first_changed_missing_or_added_file(tmp_path):
    copy_tree(tmp_path)
    m = str(tmp_path / "manifest.sha256")
    integrity.write_manifest(m, tmp_path)
    assert integrity.check(m, tmp_path) > 50
    flip(tmp_path / "controller" / "table.py")
    with pytest.raises(integrity.IntegrityError) as e:
        integrity.check(m, tmp_path)
    assert e.value.file == "controller/table.py" and e.value.why.startswith("changed")
    flip(tmp_path / "controller" / "table.py")          # back as it was
    assert integrity.check(m, tmp_path)
    (tmp_path / "drivers" / "evil.py").write_text("import os\n")
    with pytest.raises(integrity.IntegrityError, match="drivers/evil.py: not in the manifest"):
        integrity.check(m, tmp_path)
    os.remove(tmp_path / "drivers" / "evil.py")
    os.remove(tmp_path / "dealer_station" / "lock.py")
    with pytest.raises(integrity.IntegrityError, match="dealer_station/lock.py: missing"):
        integrity.check(m, tmp_path)


def _site(tmp_path):
    """A copy of the packages (as an installed site-packages) and a runner of the command on it."""
    src = tmp_path / "site"
    copy_tree(src)
    env = {**os.environ, "PYTHONPATH": str(src)}
    return src, lambda *a: subprocess.run([sys.executable, "-m", "dealer_station.cli", *a], cwd=src,
                                          env=env, capture_output=True, text=True, timeout=60)


def test_the_daemon_refuses_to_open_the_table_when_a_byte_changed(tmp_path):
    """The daemon runs from a copy of the packages (as from an installed site-packages): one
    byte of one file changed after the manifest was written."""
    src, run = _site(tmp_path)
    manifest = str(tmp_path / "manifest.sha256")
    r = run("manifest", "--out", manifest)
    assert r.returncode == 0, r.stderr
    assert run("manifest", "--check", "--out", manifest).returncode == 0
    flip(src / "controller" / "blackjack.py", at=5)      # in its docstring: the code still loads
    r = run("manifest", "--check", "--out", manifest)
    assert r.returncode == 1 and "controller/blackjack.py: changed" in r.stderr
    d = workdir()
    b = Broker(d)
    b.start()
    watcher = Client(b.port)
    try:
        cfg = tmp_path / "table.toml"
        cfg.write_text(f'[table]\nid = "t1"\nprofile = "luxury21"\n[shoe]\nprotocol = "none"\n'
                       f'[broker]\nport = {b.port}\n[paths]\njournal = "{d}/journal.sqlite"\n'
                       f'[metrics]\nenabled = false\n[integrity]\nmanifest = "{manifest}"\n')
        r = run("run", "--config", str(cfg))
        assert r.returncode == 3, r.stderr
        assert "software integrity failed: controller/blackjack.py: changed" in r.stderr
        wait_for(lambda: any(s.get("state") == "integrity_failed" for s in watcher.statuses()),
                 10, "the integrity_failed status")
        st = [s for s in watcher.statuses() if s.get("state") == "integrity_failed"][-1]
        assert st["file"] == "controller/blackjack.py" and st["table"] == "t1"
        assert not any(s.get("state") == "online" for s in watcher.statuses())
    finally:
        watcher.close()
        b.stop()
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("how", ["syntax", "raises", "name"])
def test_a_change_that_leaves_the_code_unable_to_load_is_named_not_a_traceback(tmp_path, how):
    """A byte flipped near blackjack.py's end turned its last `)` into `(`: the command imported
    the game's code before it checked anything, so `manifest --check` and `run` died with a
    SyntaxError traceback instead of naming the changed file. A game module that parses but
    raises at its top level (1/0, a NameError) gave a traceback and exit 1 (cold trial)."""
    src, run = _site(tmp_path)
    manifest = str(tmp_path / "manifest.sha256")
    assert run("manifest", "--out", manifest).returncode == 0
    path = src / "controller" / "blackjack.py"
    text = path.read_text()
    path.write_text({"syntax": text.rstrip("\n") + "(\n", "raises": text + "1 / 0\n",
                     "name": text + "undefined_name_here\n"}[how])
    r = run("manifest", "--check", "--out", manifest)
    assert r.returncode == 1 and "controller/blackjack.py: changed" in r.stderr, r.stderr
    cfg = tmp_path / "table.toml"
    cfg.write_text(f'[table]\nid = "t1"\nprofile = "luxury21"\n[shoe]\nprotocol = "none"\n'
                   f'[paths]\njournal = "{tmp_path}/journal.sqlite"\n[metrics]\nenabled = false\n'
                   f'[integrity]\nmanifest = "{manifest}"\n')
    r = run("run", "--config", str(cfg))
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    assert "software integrity failed: the code does not load" in r.stderr
    assert "blackjack.py" in r.stderr and "manifest --check" in r.stderr


@pytest.mark.parametrize("broken, how", [
    ("dealer_station/cli.py", "syntax"), ("dealer_station/__init__.py", "syntax"),
    ("dealer_station/__init__.py", "import"), ("dealer_station/cli.py", "raises"),
    ("dealer_station/__init__.py", "raises"), ("dealer_station/cli.py", "nul")])
def test_the_console_script_names_a_broken_cli_or_package_init_exit_3(tmp_path, broken, how):
    """The cold trial: with dealer_station/cli.py or the package's __init__.py itself unable to
    load, `manifest --check` and `run` died with a traceback and exit 1 (systemd restarts that
    forever). The console script's entry (dealer_station_main.py, outside the package) checks
    the files itself for `manifest --check`, and exits 3 naming the file for anything else."""
    src = tmp_path / "site"
    copy_tree(src)
    env = {**os.environ, "PYTHONPATH": str(src)}

    def run(*a):     # as the installed `dealer-station` runs: the console script's entry point
        return subprocess.run([sys.executable, "-c", "import sys, dealer_station_main; "
                               "sys.exit(dealer_station_main.main())", *a], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=60)
    manifest = str(tmp_path / "manifest.sha256")
    assert run("manifest", "--out", manifest).returncode == 0
    assert run("manifest", "--check", "--out", manifest).returncode == 0
    path = src / broken
    text = path.read_text()
    # raises: parses, then fails at its top level (cold trial: a traceback, exit 1); nul: a NUL
    # byte, whose SyntaxError names no file (cold trial: dealer_station_main.py was named)
    path.write_text({"syntax": text + "(\n", "import": text.replace("__version__ =", "_v ="),
                     "raises": "1 / 0\n" + text, "nul": text + "\0\n"}[how])
    r = run("manifest", "--check", "--out", manifest)
    assert r.returncode == 1 and f"{broken}: changed" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    cfg = tmp_path / "table.toml"
    cfg.write_text(f'[table]\nid = "t1"\nprofile = "luxury21"\n[shoe]\nprotocol = "none"\n'
                   f'[paths]\njournal = "{tmp_path}/journal.sqlite"\n[metrics]\nenabled = false\n'
                   f'[integrity]\nmanifest = "{manifest}"\n')
    for args in (("run", "--config", str(cfg)), ("status",), ("manifest", "--out", manifest)):
        r = run(*args)
        assert r.returncode == 3 and "Traceback" not in r.stderr, (args, r.stderr)
        # a name gone from __init__.py: the import in cli.py that needs it, and the module
        assert re.search(re.escape(f"the code does not load ({broken}") if how != "import" else
                         r"the code does not load \(dealer_station/cli\.py, line \d+: ImportError",
                         r.stderr), r.stderr
        assert broken in r.stderr, r.stderr
    assert run("manifest", "--check", "--out", manifest).returncode == 1   # not rewritten
