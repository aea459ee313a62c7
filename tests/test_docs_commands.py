"""Every command example in README.md and docs/ (```sh blocks, and `$ ` lines with their output)
is either run here exactly as written, with what the docs say it prints checked, or listed in
NOT_RUN with the reason. A new example that is in neither fails the test, so the docs cannot
drift from the commands unnoticed.

The commands run in a scratch directory that looks like a fresh clone after the README's setup
(the repository's files linked in, `.venv` included, the documented commands on the PATH as the
README's `source .venv/bin/activate` puts them), so what they write (report.json, zones.png)
lands there. That the activation line really puts them there is checked with a PATH without them."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# command prefix -> why it is not run here (hardware, root, a studio's own files, or minutes)
NOT_RUN = {
    "./scripts/test": "the whole test suite (this test is part of it)",
    "./scripts/bench": "benchmarks: minutes, figures in docs/",
    ".venv/bin/table-sim --profile punto_banco --rounds 10000": "the soak run, about 50 minutes",
    ".venv/bin/python bench/crash_test.py": "the crash test, about 15 minutes",
    ".venv/bin/python bench/studio_bench.py": "the studio benchmark, 10 minutes",
    ".venv/bin/python bench/tier_restart.py": "the whole tier restarted again and again: minutes",
    ".venv/bin/python bench/bench_camera.py": "the camera benchmark: minutes (figures in docs/camera.md)",
    ".venv/bin/python bench/bench_webcam.py": "the technician-photo benchmark: minutes (docs/camera.md)",
    ".venv/bin/python bench/bench_hands.py": "the hands and rotation benchmark: minutes (docs/camera.md)",
    ".venv/bin/python bench/diag_": "camera diagnosis runs: minutes (docs/camera.md)",
    ".venv/bin/python bench/hunt_hands.py": "a hunt for wrong reads in hands: hours (docs/camera.md)",
    ".venv/bin/python bench/probe_foreign_frames.py": "a per-frame foreign probe: minutes (docs/camera.md)",
    ".venv/bin/python bench/bench_capture.py": "correct reference sets captured: minutes (docs/camera.md)",
    "./scripts/fetch-decks": "the npm registry (network) and rsvg-convert; the decks are committed",
    ".venv/bin/table-sim --tables": "a studio with 60 s outages: minutes (tests/test_studio.py runs a short one)",
    "sudo ./scripts/install --bridge": "an installed table (root)",
    ".venv/bin/python bench/powercut_test.py": "the power-cut test, minutes (gcc, an LD_PRELOAD shim)",
    ".venv/bin/dealer-station replay --profile my-table.toml": "a studio's own profile file",
    ".venv/bin/dealer-station analyze luxury21 --rounds 1430000": "Monte Carlo, minutes",
    "dealer-station analyze luxury21 --rounds": "Monte Carlo, minutes",
    "dealer-station analyze european --rounds": "Monte Carlo, minutes",
    "dealer-station analyze lucky7 --rounds": "Monte Carlo, minutes",
    ".venv/bin/dealer-station check-config /etc/": "an installed table's configuration",
    "dealer-station check-config /etc/": "an installed table's configuration",
    "/opt/dealer-station/venv/bin/": "an installed table (scripts/install)",
    ".venv/bin/dealer-station run --config /etc/": "the daemon on an installed table",
    ".venv/bin/dealer-station journal ": "an installed table's journal and archive",
    "shoe-calibrate learn-codebook": "a scanner on the port (tests/test_calibration*.py: virtual)",
    "shoe-calibrate verify-": "a shoe on the port (tests/test_calibration*.py: virtual)",
    "shoe-calibrate read-test": "a shoe on the port (tests/test_calibration*.py: virtual)",
    "shoe-calibrate monitor": "a device on the port (tests/test_calibration*.py: virtual)",
    "shoe-calibrate camera sweep": "a camera (tests/test_calibration_ports.py: a video)",
    "shoe-calibrate camera templates": "a reference deck's photos",
    "shoe-calibrate camera accuracy": "captured templates in /etc",
    "shoe-calibrate camera recognize": "captured templates in /etc",
    "dealer-station status": "a running table (tests/test_operations.py)",
    ".venv/bin/dealer-station status": "a running table (tests/test_operations.py)",
    "table-sim --profile NAME": "a synopsis, not a command",
    "[--": "a synopsis, not a command",
    "sudo ": "system administration on the Pi (root)",
    "systemctl ": "systemd on the Pi",
    "journalctl ": "systemd on the Pi",
    "timedatectl": "systemd on the Pi",
    "udevadm ": "udev on the Pi, with the device plugged in",
    "ls -l /dev/": "the device plugged in",
    "git clone": "your repository",
    "cd ~/dealer-station": "the Pi's clone",
    "sudoedit ": "system administration on the Pi (root)",
    "echo 'the-password' | sudo": "system administration on the Pi (root)",
    "curl -s localhost:9464": "a running table (tests/test_operations.py: /metrics, /healthz)",
    "mosquitto_sub -h broker.studio.lan": "the studio's broker",
    "D=/var/lib/dealer-station": "a damaged journal on the Pi",
    "sudo -u dealer-station": "system administration on the Pi (root)",
    "# ": "a comment",
    "dealer-station verify ": "a capture or a table's journal (tests/test_signed_events.py)",
    "mosquitto_sub -h 127.0.0.1 -t dealer-station/v1/bj-01/events": "a running table's broker",
    "dealer-station export --round": "a table's journal (tests/test_round_export.py)",
    "dealer-station replay --profile luxury21 round-": "a round export (tests/test_round_export.py)",
}


def examples():
    """[(file:line, command, expected output lines or None)]."""
    out = []
    for path in ["README.md"] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        full = os.path.join(ROOT, path)
        text = open(full).read()
        name = os.path.relpath(full, ROOT)
        for m in re.finditer(r"^( *)```(sh)?\n(.*?)^\1```", text, re.S | re.M):
            line0 = text[:m.start()].count("\n") + 2
            body = m.group(3)
            if m.group(2):
                joined = re.sub(r"\\\n\s*", " ", body)
                for cmd in joined.splitlines():
                    cmd = re.sub(r"\s+#\s.*$", "", cmd).strip()   # a trailing comment
                    if cmd:
                        out.append((f"{name}:{line0}", cmd, None))
            else:                      # `$ command` with its output below it
                chunks = re.split(r"^\$ ", body, flags=re.M)[1:]
                for c in chunks:
                    lines = c.rstrip("\n").split("\n")
                    out.append((f"{name}:{line0}", lines[0].strip(), lines[1:]))
    return out


def why_not(cmd):
    return next((why for prefix, why in NOT_RUN.items() if cmd.startswith(prefix)), None)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    d = tmp_path_factory.mktemp("clone")
    for entry in os.listdir(ROOT):
        if entry not in (".git",) and not entry.endswith(".egg-info"):
            os.symlink(os.path.join(ROOT, entry), d / entry)
    shutil.copy(os.path.join(ROOT, "docs", "samples", "punto_banco-shoe.jsonl"), d / "record.jsonl")
    # a table photo and its zones, for `camera zones`
    import cv2
    from drivers.camera.synth import default_zones, felt
    zones = default_zones()
    cv2.imwrite(str(d / "table.png"), felt(1280, 720) if felt.__code__.co_argcount >= 2 else felt())
    (d / "calibration.toml").write_text("[zones]\n" + "".join(
        f"{n} = {[[int(x), int(y)] for x, y in p]}\n" for n, p in zones.items()))
    return d


def env(activated=True):
    """The environment after the README's setup: `source .venv/bin/activate` (what it sets)."""
    e = dict(os.environ)
    venv_bin = os.path.join(ROOT, ".venv", "bin")
    e["PATH"] = os.pathsep.join(d for d in e["PATH"].split(os.pathsep)
                                if os.path.realpath(d) != os.path.realpath(venv_bin))
    e.pop("VIRTUAL_ENV", None)
    if activated:
        e["PATH"] = venv_bin + os.pathsep + e["PATH"]
        e["VIRTUAL_ENV"] = os.path.join(ROOT, ".venv")
    return e


def run(cmd, cwd, timeout=60):
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                          env=env(), timeout=timeout)


def interrupted(cmd, cwd, until=r"^table-sim: broker mqtt://"):
    """A command that runs until stopped: start it, wait for its first line, then Ctrl-C."""
    # Ctrl-C as at a terminal: a suite started in the background (`... &` from a script) has
    # SIGINT ignored, the command inherits that, and Python then raises no KeyboardInterrupt
    p = subprocess.Popen(["bash", "-c", f"exec {cmd}"], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env(), start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = p.stderr.readline()
        assert re.match(until, first), (cmd, first, p.stderr.read() if p.poll() is not None else "")
        time.sleep(1.0)    # let a round start: there is no signal for "a little play" to wait on
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=60)
        log = first.rsplit("daemon log ", 1)[1].strip()     # kept by table-sim: ours to remove
        os.unlink(log)
        os.unlink(log[:-len("daemon.log")] + "events.key.pub")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    return p.returncode, out, err


def check(cmd, expected, cwd):
    """Run one example; assert what the docs say of it."""
    if cmd.startswith("./scripts/run") or cmd.startswith(".venv/bin/table-sim --profile"):
        rc, out, err = interrupted(cmd, cwd)
        report = json.loads(out[out.find("{\n"):])   # after --plain's log lines; stopped mid-round: balances are checked at a round's end
        assert report["messages_lost"] == 0 and report["profile"] == (
            "punto_banco" if "punto_banco" in cmd else "luxury21"), report
        if "--report report.json" in cmd:
            assert json.load(open(os.path.join(cwd, "report.json")))["profile"]
        return
    if cmd.startswith(".venv/bin/table-sim shoe --pty"):
        p = subprocess.run(["bash", "-c", cmd], cwd=cwd, input="deal 3\nquit\n", text=True,
                           capture_output=True, env=env(), timeout=30)
        lines = p.stdout.splitlines()
        assert p.returncode == 0 and lines[0].startswith("/") and len(lines[1].split()) == 3
        return
    if cmd == "source .venv/bin/activate":      # from a shell where they are not found before
        r = subprocess.run(["bash", "-c", cmd + " && for c in shoe-calibrate table-sim "
                            "dealer-station; do command -v $c; done"],
                           cwd=cwd, capture_output=True, text=True, env=env(activated=False))
        lines = r.stdout.split()
        assert r.returncode == 0, r.stderr
        assert [os.path.relpath(x, ROOT) for x in lines] == [
            ".venv/bin/shoe-calibrate", ".venv/bin/table-sim", ".venv/bin/dealer-station"], lines
        return
    r = run(cmd, cwd)
    if cmd == "./scripts/setup":
        assert r.returncode == 0 and r.stdout == "" and r.stderr == ""     # installed: nothing to do
    elif "replay --profile luxury21 docs/samples/luxury21-shoe.jsonl" in cmd:
        assert r.returncode == 0
        assert r.stdout == open(os.path.join(ROOT, "docs/samples/luxury21-shoe.out.jsonl")).read()
    elif "replay --profile punto_banco -" in cmd:
        assert r.returncode == 0
        assert r.stdout == open(os.path.join(ROOT, "docs/samples/punto_banco-shoe.out.jsonl")).read()
    elif cmd == "shoe-calibrate ports":
        assert r.returncode in (0, 1), r.stderr
        assert r.stdout.startswith("USB keyboards (keyboard-mode scanners):") or \
            r.stdout.startswith("no serial ports or USB keyboards found"), r.stdout
    elif cmd.startswith("shoe-calibrate camera zones"):
        assert r.returncode == 0 and r.stdout.strip() == "zones.png"
        assert os.path.exists(os.path.join(cwd, "zones.png"))
    elif "analyze" in cmd:
        assert r.returncode == 0, r.stderr
        if expected is not None:       # what the docs print under the command, line for line
            got = r.stdout.splitlines()
            for line in expected:
                assert line in got, (cmd, line)
    else:
        raise AssertionError(f"no check written for {cmd!r}: add one, or a NOT_RUN reason")


def test_every_example_is_run_or_has_a_reason(clone):
    t0 = time.monotonic()
    ran, skipped = [], []
    for where, cmd, expected in examples():
        reason = why_not(cmd)
        if reason:
            skipped.append((where, cmd, reason))
            continue
        check(cmd, expected, str(clone))
        ran.append((where, cmd))
    took = time.monotonic() - t0
    print(f"\n{len(ran)} examples run in {took:.0f} s, {len(skipped)} not run:")
    for where, cmd, reason in skipped:
        print(f"  {where}: {cmd[:70]}: {reason}")
    assert len(ran) >= 10
