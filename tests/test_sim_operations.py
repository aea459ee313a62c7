"""table-sim as an operator meets it: it says where its broker and the daemon's log are, keeps
the log, leaves no orphan when it is killed, and an unreachable --broker is one line. And the
scripts: setup installs only what is missing (offline once installed), run works from any
directory."""
import os
import signal
import subprocess
import sys
import time

from mqtt_rig import wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = [sys.executable, "-m", "dealer_station.sim_cli"]


def children(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(x) for x in f.read().split()]
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_an_unreachable_broker_is_one_line_and_leaves_nothing(tmp_path):
    r = subprocess.run(SIM + ["--broker", "mqtt://127.0.0.1:9", "--rounds", "1", "--plain"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr == ("table-sim: cannot start the table (mqtt://127.0.0.1:9): [Errno 111] "
                        "Connection refused\n")


def test_it_names_its_broker_and_log_keeps_the_log_and_its_children_die_with_it(tmp_path):
    p = subprocess.Popen(SIM + ["--rounds", "0", "--speed", "0", "--plain", "--no-camera"],
                         cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        assert line.startswith("table-sim: broker mqtt://127.0.0.1:"), line
        log = line.rsplit("daemon log ", 1)[1].strip()
        kids = children(p.pid)
        assert len(kids) == 2                                  # mosquitto and the daemon
        p.send_signal(signal.SIGKILL)                          # no chance to clean up
        p.wait()
        wait_for(lambda: not any(alive(k) for k in kids), 15, "the children to die with it")
        text = open(log).read()
        assert "starting dealer-station" in text
        pub = line.split("events public key ", 1)[1].split(",", 1)[0]
        assert pub == log[:-len("daemon.log")] + "events.key.pub"     # kept beside the log
        assert open(pub).read().startswith("-----BEGIN PUBLIC KEY-----")
    finally:
        if p.poll() is None:
            p.kill()
    os.unlink(log)
    os.unlink(pub)


def test_setup_needs_no_index_once_installed_and_run_takes_paths_from_the_caller(tmp_path):
    env = {**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_NO_INDEX": "1"}
    subprocess.run([os.path.join(ROOT, "scripts", "setup")], check=True, capture_output=True,
                   env=env)   # installed here already: the second call is the one that counts
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(ROOT, "scripts", "setup")], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    assert time.monotonic() - t0 < 10
    (tmp_path / "mine.json").write_text('[{"round": 1, "fault": "no_such_fault"}]')
    r = subprocess.run([os.path.join(ROOT, "scripts", "run"), "--faults", "mine.json"],
                       cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
    # read from the caller's directory (not the repository's): its content is what is refused
    assert r.returncode == 2 and r.stderr.startswith(
        "table-sim: mine.json.faults[0]: unknown fault 'no_such_fault'")
