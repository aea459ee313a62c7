"""What an operator sees of the daemon: a start and a stop line, device and broker failures with
their reasons (a port that does not open, a broker ACL that refuses the table's user), every
irregularity logged, counters typed as counters, build info, uptime and /healthz. Against a real
Mosquitto with the shipped configuration and the virtual shoe."""
import json
import re
import urllib.error
import urllib.request

import pytest

from broker_rig import ShippedBroker, make_pki
from controller import get_profile
from dealer_station.station_types import Clock, Log
from drivers.events import CardRead
from drivers.virtual_shoe import VirtualShoe
from mqtt_rig import DaemonProc, wait_for, workdir
from test_station import Rig

USERS = {"t1": "pw-t1", "t2": "pw-t2", "betting-system": "pw-bs"}


@pytest.fixture
def studio(tmp_path):
    d = workdir()
    pki = make_pki(str(tmp_path / "pki"))
    shoe = VirtualShoe(decks=8, seed=4, heartbeat=0.2)
    shoe.start()
    b = ShippedBroker(d, USERS, pki)
    b.start()
    made = []

    def daemon(user="t1", shoe_url=None, args=()):
        pw = tmp_path / f"pw-{user}"
        pw.write_text(f"pw-{user}\n")
        p = DaemonProc(d, b.port, shoe_url or shoe.path)
        text = open(p.config).read().replace(
            "[broker]\n", f'[broker]\nusername = "{user}"\npassword_file = "{pw}"\n')
        open(p.config, "w").write(text)
        made.append(p)
        p.start()
        return p
    yield daemon
    for m in made:
        m.stop()
    b.stop()
    shoe.close()


def endpoint(p):
    m = wait_for(lambda: re.search(r"metrics on (http://\S+)/metrics", p.logtext()), 10,
                 "the metrics endpoint")
    return m.group(1)


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except urllib.error.URLError:
        return 0, ""                      # not listening yet


def head(url):
    """A HEAD request: (status, Content-Length, body bytes) - a health check's probe."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=5) as r:
            return r.status, int(r.headers["Content-Length"]), r.read()
    except urllib.error.HTTPError as e:
        return e.code, None, e.read()


def test_start_and_stop_lines_counters_build_info_and_healthz(studio):
    from dealer_station import __version__
    p = studio()
    base = endpoint(p)
    assert wait_for(lambda: get(base + "/healthz")[0] == 200, 10, "healthy")
    assert get(base + "/healthz") == (200, "ok\n")
    # HEAD answers as GET without the body (a load balancer's health check)
    assert head(base + "/healthz") == (200, 3, b"")
    assert head(base + "/nothing")[0] == 404
    code, text = get(base + "/metrics")
    assert "# TYPE dealer_station_shoe_frames_total counter" in text
    assert "# TYPE dealer_station_shoe_reconnects_total counter" in text
    assert (f'dealer_station_build_info{{profile="luxury21",table="t1",version="{__version__}"}} 1'
            in text)
    assert re.search(r"^dealer_station_uptime_seconds \d", text, re.M)
    p.stop()
    log = p.logtext()
    assert re.search(rf"INFO .*starting dealer-station {re.escape(__version__)}: config "
                     rf"{re.escape(p.config)}, table t1, profile luxury21", log)
    assert re.search(rf"INFO .*dealer-station {re.escape(__version__)} stopped after \d+ s", log)
    assert "WARNING table=t1 round=- shoe connected" not in log


def test_a_broker_user_the_acl_refuses_is_said_and_unhealthy(studio):
    p = studio(user="t2")               # a valid user, but the ACL gives it table t2's topics
    base = endpoint(p)
    # Mosquitto grants the subscription and delivers nothing; the publishes it refuses (v5 PUBACK
    # "Not authorized") are what show it
    line = wait_for(lambda: re.search(r"ERROR .*broker refused: the broker refused a publish.*",
                                      p.logtext()), 15, "the refusal in the log").group(0)
    assert "Not authorized" in line and "user 't2'" in line and "dealer-station/v1/t1/..." in line
    code, text = wait_for(lambda: "refused" in (r := get(base + "/healthz"))[1] and r, 5, "503")
    assert code == 503
    assert text.startswith("unhealthy: broker disconnected: the broker refused a publish")
    assert 'dealer_station_device_up{device="broker"} 0' in get(base + "/metrics")[1]


def test_a_shoe_url_that_does_not_open_is_said(studio, tmp_path):
    p = studio(shoe_url=str(tmp_path / "ttyNOPE"))
    base = endpoint(p)
    wait_for(lambda: f"shoe disconnected cannot open {tmp_path}/ttyNOPE: no such port" in p.logtext(),
             10, "the reason in the log")
    code, text = wait_for(lambda: "shoe" in (r := get(base + "/healthz"))[1] and r, 5, "503")
    assert code == 503 and "shoe disconnected: cannot open" in text


def test_json_log_lines(studio):
    p = studio()
    p.proc.kill()
    p.proc.wait()
    p.proc = None
    import subprocess
    import sys
    from mqtt_rig import ROOT
    p.proc = subprocess.Popen([sys.executable, "-m", "dealer_station.cli", "run", "--config",
                               p.config, "--log-format", "json"], cwd=ROOT, stdout=p.log,
                              stderr=p.log)
    wait_for(lambda: '"message": "starting dealer-station' in p.logtext(), 10, "the start line")
    rec = json.loads(next(x for x in p.logtext().splitlines() if '"starting dealer' in x))
    assert rec["level"] == "info" and rec["table"] == "t1" and rec["logger"] == "dealer-station"


def test_an_irregularity_is_logged_without_its_card(tmp_path):
    r = Rig(str(tmp_path / "j.sqlite"), get_profile("luxury21"))
    r.recover(Clock(0.0, 0.0))
    effects = r.step(CardRead("As", "shoe", 99, None), Clock(1.0, 1.0))
    logs = [e for e in effects if isinstance(e, Log) and "irregularity" in e.text]
    assert logs and logs[0].level == "warning"
    assert logs[0].text.startswith("irregularity unexpected_card between rounds")
    assert "As" not in logs[0].text


def test_an_irregularity_during_a_pause_does_not_read_as_its_cause(tmp_path):
    r = Rig(str(tmp_path / "j.sqlite"), get_profile("luxury21"))
    r.recover(Clock(0.0, 0.0))
    texts = []
    for i, card in enumerate(("As", "Kd")):
        effects = r.step(CardRead(card, "shoe", 99 + i, None), Clock(1.0 + i, 1.0 + i))
        texts += [e.text for e in effects if isinstance(e, Log) and "irregularity" in e.text]
    assert texts[0].endswith(": the table pauses (unexpected_card)")
    assert texts[1].endswith(", while the table is paused (since an earlier unexpected_card)")


def test_a_refused_response_topic_reply_keeps_the_command_id(tmp_path):
    from dealer_station.station_types import Command, Reply
    r = Rig(str(tmp_path / "j.sqlite"), get_profile("luxury21"))
    r.recover(Clock(0.0, 0.0))
    ev = Command(b'{"type": "pause", "id": "c5", "reason": "r"}', "dealer-station/v1/t1/events",
                 None, 1, 1)
    reply = next(e for e in r.step(ev, Clock(1.0, 1.0)) if isinstance(e, Reply))
    assert reply.payload["id"] == "c5" and reply.payload["code"] == "malformed"
    assert "response topic must be" in reply.payload["reason"] and reply.response_topic is None


def test_status_command_running_and_stopped(studio):
    import subprocess
    import sys
    from dealer_station.sim.broker import free_port
    from mqtt_rig import ROOT
    p = studio()
    p.stop()
    port = free_port()
    text = open(p.config).read().replace("[metrics]\nport = 0", f"[metrics]\nport = {port}")
    open(p.config, "w").write(text)
    p.start()
    cli = [sys.executable, "-m", "dealer_station.cli", "status", "--config", p.config]
    wait_for(lambda: get(f"http://127.0.0.1:{port}/healthz")[0] == 200, 10, "healthy")
    r = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("table t1 (luxury21), dealer-station ")
    assert "  shoe: connected (model VS-1, firmware 1.0, serial VS0001)" in r.stdout
    assert "  broker: connected" in r.stdout and "outbox: 0 not yet acknowledged" in r.stdout
    r = subprocess.run(cli + ["--json"], capture_output=True, text=True, cwd=ROOT)
    doc = json.loads(r.stdout)
    assert doc["running"] and doc["healthy"] and doc["devices"]["shoe"]["state"] == "connected"
    assert doc["outbox_depth"] == 0 and doc["config"] == p.config
    p.stop()
    r = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3
    assert r.stdout.startswith(f"table t1 (luxury21): not running: no dealer-station process "
                               f"holds the journal {p.journal}")
    assert f"journal {p.journal}: last input" in r.stdout


def test_status_sees_a_daemon_on_any_free_metrics_port(studio):
    """table-sim writes `[metrics] port = 0`: the daemon is found by its journal lock and its
    endpoint by the port it noted there."""
    import subprocess
    import sys
    from mqtt_rig import ROOT
    p = studio()                              # the rig's configuration has port = 0
    base = endpoint(p)
    wait_for(lambda: get(base + "/healthz")[0] == 200, 10, "healthy")
    r = subprocess.run([sys.executable, "-m", "dealer_station.cli", "status", "--config", p.config],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("table t1 (luxury21), dealer-station ") and "running" in r.stdout


def test_status_without_metrics_still_sees_the_daemon(tmp_path):
    from dealer_station.lock import InstanceLock, held
    from dealer_station.status_cmd import human
    journal = str(tmp_path / "j.sqlite")
    assert held(journal) is None                       # never run
    lock = InstanceLock(journal).acquire()
    import os
    assert held(journal) == (str(os.getpid()), {})
    lock.note("metrics http://127.0.0.1:4242")
    assert held(journal)[1] == {"metrics": "http://127.0.0.1:4242"}
    doc = {"running": True, "pid": "7", "table": "t1", "profile": "luxury21",
           "health_unknown": "metrics disabled in the configuration: only the journal is read",
           "journal_facts": {"journal": journal, "error": "no journal yet"}}
    assert human(doc).startswith("table t1 (luxury21): running (pid 7), health unknown: metrics "
                                 "disabled")
    lock.release()
    assert held(journal) is None                       # stopped (or killed: the kernel drops it)


def test_sighup_applies_timers_and_names_what_needs_a_restart(studio, tmp_path):
    import signal
    p = studio()
    wait_for(lambda: "broker connected" in p.logtext(), 10, "the daemon up")
    text = open(p.config).read()
    open(p.config, "w").write(text.replace("decision_s = 0", "decision_s = 7.5")
                              .replace(f'url = "', f'url = "{tmp_path}/x', 1))
    p.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "configuration changes not applied" in p.logtext(), 10, "the reload")
    log = p.logtext()
    assert "INFO table=t1 round=- configuration reloaded: timers.decision_s 0.0 -> 7.5" in log
    assert ("WARNING table=t1 round=- configuration changes not applied, they need a restart "
            "(systemctl restart dealer-station): shoe.url") in log
    open(p.config, "w").write("[table\n")
    p.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "reload refused" in p.logtext(), 10, "the refusal")
    assert p.alive()
    assert f"ERROR table=t1 round=- reload refused, {p.config} not valid" in p.logtext()


def test_status_sees_a_daemon_whose_lock_file_it_cannot_read(tmp_path, monkeypatch):
    """The service user's lock file is 0600: another user's status still sees the lock held."""
    from dealer_station import lock as lock_module
    from dealer_station.lock import InstanceLock, held
    journal = str(tmp_path / "j.sqlite")
    lock = InstanceLock(journal).acquire()
    real_open = open

    def no_read(path, *a, **kw):
        if str(path).endswith(".lock"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *a, **kw)
    monkeypatch.setattr(lock_module, "open", no_read, raising=False)
    try:
        import os
        assert held(journal) == (str(os.getpid()), {})      # its PID from /proc/locks
        assert held(str(tmp_path / "other.sqlite")) is None
    finally:
        lock.release()


def test_the_crash_test_closes_betting_only_on_seats_the_profile_has():
    """`bench/crash_test.py --kills 500` (README) stalled at lucky7 (3 seats since 004): its driver
    seated 1-7, the table refused the betting_closed, and the run ended in a TimeoutError. Every
    betting_closed its driver sends for a card profile is one the engine takes."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
    import crash_test
    from controller import new_table, step

    class Sent:
        def __init__(self):
            self.commands = []

        def command(self, cmd, wait=True):
            self.commands.append(cmd)

    for name in crash_test.CARD_PROFILES:
        profile = get_profile(name)
        for seed in range(2026, 2046):
            c = Sent()
            crash_test.seated_driver(c, None, profile, seed).close_betting()
            body = {k: v for k, v in c.commands[-1].items() if k != "id"}
            t, _ = step(new_table(profile), {"type": "shoe_loaded"})
            _, out = step(t, body)
            assert not [o for o in out if o.get("code") == "malformed"], (name, seed, body, out)
