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
    # a temporary folder of its own: a table-sim started meanwhile by a parallel test worker would
    # otherwise clean this killed run's scratch directories before we look
    # (short: the panel's pin socket is a Unix socket in it, whose path may not exceed 107 bytes)
    import tempfile
    tmp = tempfile.mkdtemp(prefix="ts-")
    p = subprocess.Popen(SIM + ["--rounds", "0", "--speed", "0", "--plain", "--no-camera"],
                         cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "TMPDIR": str(tmp)})
    try:
        line = p.stderr.readline()
        assert line.startswith("table-sim: broker mqtt://127.0.0.1:"), line
        log = line.rsplit("daemon log ", 1)[1].strip()
        kids = children(p.pid)
        assert len(kids) == 2                                  # mosquitto and the daemon
        p.send_signal(signal.SIGKILL)                          # no chance to clean up
        p.wait()
        # they get a TERM and stop as they would (the daemon's close waits up to 2 s for its
        # offline status); 1-2 s on a quiet machine, longer beside a loaded parallel suite
        wait_for(lambda: not any(alive(k) for k in kids), 30,
                 f"the children to die with it (alive: {[k for k in kids if alive(k)]})")
        text = open(log).read()
        assert "starting dealer-station" in text
        pub = line.split("events public key ", 1)[1].split(",", 1)[0]
        assert pub == log[:-len("daemon.log")] + "events.key.pub"     # kept beside the log
        assert open(pub).read().startswith("-----BEGIN PUBLIC KEY-----")
        # its scratch directories stay (a killed process cannot remove them) until the next start
        import glob
        from drivers.scratch import scratch_dir
        left = [glob.glob(os.path.join(tmp, f"{prefix}-{p.pid}-*"))
                for prefix in ("table-sim", "vshoe")]
        assert all(len(x) == 1 for x in left), left
        for prefix in ("table-sim", "vshoe"):          # what table-sim and its shoe do at start
            os.rmdir(scratch_dir(prefix, str(tmp)))
        assert not any(os.path.exists(x[0]) for x in left)
    finally:
        if p.poll() is None:
            p.kill()
    os.unlink(log)
    os.unlink(pub)
    os.rmdir(tmp)


def test_only_the_newest_runs_kept_logs_and_keys_stay(tmp_path):
    """Each finished run keeps its daemon log and public key in /tmp for its user; the next
    start removes all but the newest 20 runs' (those of a running table-sim stay)."""
    from drivers.scratch import prune_kept
    dead = subprocess.Popen(["true"])
    dead.wait()
    names = []
    for i in range(25):
        pid = os.getpid() if i == 0 else dead.pid       # the oldest run is still running
        for kind in ("daemon.log", "events.key.pub"):
            names.append(f"table-sim-20260101-1200{i:02d}-{pid}-{kind}")
            (tmp_path / names[-1]).write_text("x")
    (tmp_path / "table-sim-notes.txt").write_text("not a run's")
    (tmp_path / "table-sim-20250101-120000-1-dir").mkdir()          # a directory: not ours
    removed = prune_kept("table-sim", folder=str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == sorted(names[2:10])
    left = sorted(os.listdir(tmp_path))
    assert names[0] in left and names[10] in left and names[-1] in left
    assert "table-sim-notes.txt" in left and "table-sim-20250101-120000-1-dir" in left
    assert prune_kept("table-sim", folder=str(tmp_path)) == []      # once is enough


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


def test_scratch_dirs_of_dead_owners_are_removed_and_live_ones_kept(tmp_path):
    from drivers.scratch import scratch_dir
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / f"vshoe-{dead.pid}-abc").mkdir()
    (tmp_path / f"vshoe-{dead.pid}-abc" / "shoe").write_text("")
    (tmp_path / f"vshoe-{os.getppid()}-def").mkdir()      # its owner runs
    (tmp_path / "vshoe-old").mkdir()                        # no owner named: not ours to judge
    made = scratch_dir("vshoe", str(tmp_path))
    assert os.path.basename(made).startswith(f"vshoe-{os.getpid()}-")
    assert sorted(os.listdir(tmp_path)) == sorted(
        [f"vshoe-{os.getppid()}-def", "vshoe-old", os.path.basename(made)])


def test_progress_line_counts_rounds_rate_and_eta():
    from dealer_station.sim.progress import Progress
    now = [100.0]
    p = Progress(10000, every=30, clock=lambda: now[0])
    assert p.due(0) is None                                    # not yet 30 s
    now[0] += 300                                              # 5 minutes, 1200 rounds
    assert p.due(1200) == "1200/10000 rounds (12%), 240/min, ETA 37 min"
    assert p.due(1201) is None                                 # said: the next in 30 s
    now[0] += 60 * 60
    assert p.line(10000) == "10000/10000 rounds (100%), 154/min"
    assert Progress(0, clock=lambda: now[0]).line(5).startswith("5 rounds, ")   # until stopped
    assert Progress(5, every=0).due(1) is None                 # off


def test_soak_progress_and_the_log_path_in_the_live_view(tmp_path):
    import pty
    args = ["--profile", "punto_banco", "--rounds", "2", "--speed", "0", "--no-camera"]
    plain = subprocess.Popen(SIM + args + ["--plain", "--progress", "0.01"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    master, slave = pty.openpty()                    # the live view: stdout a terminal
    live = subprocess.Popen(SIM + args, cwd=tmp_path, stdout=slave, stderr=subprocess.PIPE,
                            text=True)
    os.close(slave)
    screen = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:                              # EIO: the view's terminal closed
            break
        if not data:
            break
        screen += data
    os.close(master)
    assert live.wait(60) == 0 and plain.wait(60) == 0
    out, err = plain.communicate()
    lines = out.splitlines()
    assert any(x.startswith("1/2 rounds (50%), ") and "/min, ETA " in x for x in lines), lines
    assert "2/2 rounds (100%), " in out
    log = err.splitlines()[0].rsplit("daemon log ", 1)[1]
    assert err.splitlines()[-1] == f"table-sim: daemon log kept in {log}"
    view = screen.decode(errors="replace")
    live_err = live.stderr.read()
    live_log = live_err.splitlines()[0].rsplit("daemon log ", 1)[1]
    assert f"daemon log {live_log}" in view.split("\x1b[2J")[-1]   # on the screen, not cleared
    assert "2/2 rounds (100%)" in view and "/2 rounds (" in view
    assert live_err.splitlines()[-1] == f"table-sim: daemon log kept in {live_log}"
    for f in (log, live_log):
        os.unlink(f)


def test_a_broker_url_that_is_not_mqtt_host_port_is_one_line(tmp_path):
    r = subprocess.run(SIM + ["--broker", "http://x", "--rounds", "1", "--plain"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr == "table-sim: --broker http://x: expected mqtt://HOST:PORT\n"


def test_a_broker_that_never_connects_is_not_said_to_miss_a_suback():
    import socket
    from controller import get_profile
    from dealer_station.sim.bettor import BettingSystem
    silent = socket.socket()            # accepts the TCP connection, never answers CONNECT
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    port = silent.getsockname()[1]
    bs = BettingSystem("127.0.0.1", port, "sim", get_profile("punto_banco"))
    try:
        try:
            bs.wait_subscribed(0.5)
            raise AssertionError("it did not time out")
        except TimeoutError as e:
            assert str(e) == (f"betting system: no MQTT connection to 127.0.0.1:{port} in 0.5 s "
                              f"(nothing answers there as a broker)")
    finally:
        bs.close()
        silent.close()
