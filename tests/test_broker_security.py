"""The broker as shipped (docs/mosquitto/): no other user can take a table's session, and the
daemon's MQTT over TLS (server certificate checked, a wrong CA refused and said so, client
certificates) against a real Mosquitto with certificates made by the test."""
import json
import re
import subprocess
import sys
import time
import urllib.request

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from broker_rig import ShippedBroker, make_pki
from drivers.virtual_shoe import VirtualShoe
from mqtt_rig import ROOT, Client, DaemonProc, wait_for, workdir

USERS = {"t1": "pw-t1", "betting-system": "pw-bs", "monitor": "pw-mon", "s-carol": "pw-sc",
         "d-anna": "pw-da"}
MONITOR = "user monitor\ntopic read dealer-station/v1/+/status\n"   # the test's observer only
STATUS = "dealer-station/v1/t1/status"


@pytest.fixture
def studio(tmp_path):
    d = workdir()
    pki = make_pki(str(tmp_path / "pki"))
    shoe = VirtualShoe(decks=8, seed=4, heartbeat=0.2)
    shoe.start()
    made = []

    def broker(**kw):
        b = ShippedBroker(d, USERS, pki, acl_extra=MONITOR, **kw)
        b.start()
        made.append(b)
        return b

    def daemon(port, broker_lines, extra=""):
        pw = tmp_path / "pw-t1"
        pw.write_text("pw-t1\n")
        p = DaemonProc(d, port, shoe.path)
        text = open(p.config).read().replace(
            "[broker]\n", f'[broker]\nusername = "t1"\npassword_file = "{pw}"\n{broker_lines}') + extra
        open(p.config, "w").write(text)
        made.append(p)
        p.start()
        return p
    yield broker, daemon, pki, shoe
    for m in reversed(made):
        m.stop()
    shoe.close()


def monitor(port):
    return Client(port, topics=[STATUS], user=("monitor", "pw-mon"), name="monitor")


def intruder(port, client_id, tls_ca=None):
    """The betting system's credentials with the table's client id; returns its CONNACK code."""
    got = {}
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
    c.username_pw_set("betting-system", "pw-bs")
    if tls_ca:
        c.tls_set(ca_certs=tls_ca)
    c.on_connect = lambda cl, u, f, rc, p: got.setdefault("rc", rc)
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 3600
    c.connect("127.0.0.1", port, clean_start=False, properties=props)
    c.loop_start()
    try:
        wait_for(lambda: "rc" in got, 5, "the intruder's CONNACK")
        time.sleep(0.5)   # connected: give a takeover the time to show (nothing to wait on)
    finally:
        c.disconnect()
        c.loop_stop()
    return got["rc"]


def test_another_user_cannot_take_over_the_tables_client_id(studio):
    broker, daemon, pki, shoe = studio
    b = broker()
    d = daemon(b.port, "")
    mon = monitor(b.port)
    try:
        mon.wait_online()
        # on both listeners, with the daemon's client id and with its user name as client id
        for port, ca in ((b.port, None), (b.tls_port, pki["ca"])):
            for cid in ("dealer-station-t1", "t1"):
                rc = intruder(port, cid, ca)
                assert not rc.is_failure       # it may connect, but as "betting-system"
        log = b.logtext()
        assert "already connected, closing old connection" not in log, log[-3000:]
        assert "New client connected from 127.0.0.1" in log and " as betting-system " in log
        assert d.logtext().count("broker connected") == 1
        assert "broker disconnected" not in d.logtext()
        # no will (offline) published for it, and it never had to reconnect
        assert {s["state"] for s in mon.statuses()} == {"online"}
        # the table still answers its betting system
        bs = Client(b.port, user=("betting-system", "pw-bs"))
        try:
            assert bs.command({"type": "shoe_loaded"})["status"] == "accepted"
        finally:
            bs.close()
    finally:
        mon.close()


def test_the_tables_persistent_session_survives_a_restart_under_the_shipped_config(studio):
    """Its client id is its user name now: the session (and a command sent while the daemon was
    down) is still there when it comes back."""
    broker, daemon, pki, shoe = studio
    b = broker()
    d = daemon(b.port, "")
    mon = monitor(b.port)
    bs = Client(b.port, user=("betting-system", "pw-bs"))
    try:
        mon.wait_online()
        d.stop()
        wait_for(lambda: mon.statuses()[-1]["state"] == "offline", 10, "the offline status")
        cid = bs.command({"type": "shoe_loaded"}, wait=False)
        d.start()
        wait_for(lambda: cid in bs.replies, 15, "the reply to the command sent while down")
        assert bs.replies[cid]["status"] == "accepted"
        # the loop takes the link's own items and each sender's commands in turn: the kept
        # command can be answered before the connection's log line is written (CI, under load)
        wait_for(lambda: "broker connected (session present: True)" in d.logtext(), 10,
                 "the log line of a session kept")
    finally:
        bs.close()
        mon.close()


def tls_lines(ca, cert=None, key=None):
    lines = f'tls = true\nhost = "localhost"\nca_file = "{ca}"\n'
    if cert:
        lines += f'cert_file = "{cert}"\nkey_file = "{key}"\n'
    return lines


def test_daemon_over_tls_checks_the_brokers_certificate(studio):
    broker, daemon, pki, shoe = studio
    b = broker()
    d = daemon(b.tls_port, tls_lines(pki["ca"]))
    bs = Client(b.port, user=("betting-system", "pw-bs"))
    try:
        bs.wait_online(15)
        assert bs.command({"type": "shoe_loaded"})["status"] == "accepted"
        shoe.deal()
        wait_for(lambda: any(m["type"] == "card_dealt" for m in bs.in_order()), 10, "card_dealt")
        assert "New connection from 127.0.0.1" in b.logtext()
    finally:
        bs.close()


def test_a_broker_certificate_from_another_ca_is_refused_and_said_so(studio):
    broker, daemon, pki, shoe = studio
    b = broker()
    d = daemon(b.tls_port, tls_lines(pki["other_ca"]))
    mon = monitor(b.port)
    try:
        wait_for(lambda: "certificate verify failed" in d.logtext(), 15, "the TLS error in the log")
        log = d.logtext()
        line = next(x for x in log.splitlines() if "certificate verify failed" in x)
        assert "TLS" in line and "broker.ca_file" in line and pki["other_ca"] in line, line
        assert line.count("certificate verify failed") == 1
        time.sleep(2.5)      # two more reconnect attempts: the same error is not logged again
        assert d.logtext().count("certificate verify failed") == 1
        assert d.alive() and mon.statuses() == []       # it never got through
        # the operator's health view says the broker is down
        port = int(wait_for(lambda: re.search(r"metrics on http://127.0.0.1:(\d+)/", d.logtext()),
                            10, "the metrics port").group(1))
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert 'dealer_station_device_up{device="broker"} 0' in body
    finally:
        mon.close()


def test_client_certificate_where_the_broker_requires_one(studio):
    broker, daemon, pki, shoe = studio
    b = broker(require_certificate=True)
    d = daemon(b.tls_port, tls_lines(pki["ca"], pki["cert"], pki["key"]))
    bs = Client(b.port, user=("betting-system", "pw-bs"))
    try:
        bs.wait_online(15)
        assert bs.command({"type": "shoe_loaded"})["status"] == "accepted"
    finally:
        bs.close()
    d.stop()
    # without its certificate the broker refuses it, and the log says why, once
    before = len(d.logtext())
    d2 = daemon(b.tls_port, tls_lines(pki["ca"]))
    wait_for(lambda: "broker refused" in d2.logtext()[before:], 15, "the refusal in the log")
    time.sleep(2.5)      # two more reconnect attempts: the same error is not logged again
    new = d2.logtext()[before:]
    line = next(x for x in new.splitlines() if "broker refused" in x)
    assert "certificate required" in line and "broker.cert_file" in line, line
    assert new.count("broker refused") == 1 and "broker disconnected" not in new, new


def staff_client(port, user):
    """A staff member's login; returns (client, {mid: PUBACK reason code})."""
    acks = {}
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"staff-{user}", protocol=mqtt.MQTTv5)
    c.username_pw_set(user, USERS[user])
    c.on_publish = lambda cl, u, mid, rc, p: acks.__setitem__(mid, rc)
    c.connect("127.0.0.1", port)
    c.loop_start()
    return c, acks


def test_staff_identity_is_the_login_the_broker_vouches_for(studio):
    """commands/<login> is writable by that login alone (the shipped ACL): a dealer's void is
    refused by the table's rights, a supervisor's gets past them (to the engine: no round under
    way), and a dealer writing on the supervisor's topic is stopped by the broker."""
    broker, daemon, pki, shoe = studio
    b = broker()
    d = daemon(b.port, "", '\n[staff]\ndealer = ["d-anna"]\nsupervisor = ["s-carol"]\n')
    bs = Client(b.port, user=("betting-system", "pw-bs"))
    carol, _ = staff_client(b.port, "s-carol")
    anna, anna_acks = staff_client(b.port, "d-anna")
    try:
        bs.wait_online(timeout=20)
        base = "dealer-station/v1/t1/commands"
        void = {"type": "void_round", "reason": "misdeal"}
        carol.publish(f"{base}/s-carol", json.dumps({**void, "id": "v1"}), qos=1)
        anna.publish(f"{base}/d-anna", json.dumps({**void, "id": "v2"}), qos=1)
        forged = anna.publish(f"{base}/s-carol", json.dumps({**void, "id": "v3"}), qos=1).mid
        anna.publish(f"{base}/d-anna", json.dumps({"type": "shoe_loaded", "id": "v4"}), qos=1)
        wait_for(lambda: all(i in bs.replies for i in ("v1", "v2", "v4")), 15, "the replies")
        assert bs.replies["v1"]["code"] == "no_round"           # past the rights
        assert bs.replies["v2"]["code"] == "not_authorized"
        assert bs.replies["v4"]["status"] == "accepted"
        wait_for(lambda: forged in anna_acks, 5, "the broker's answer to the forged command")
        assert anna_acks[forged].is_failure                      # Not authorized
        assert "v3" not in bs.replies
    finally:
        for c in (carol, anna):
            c.disconnect()
            c.loop_stop()
        bs.close()


READ_COMMANDS = ("pattern read dealer-station/v1/%u/commands",
                 "pattern read dealer-station/v1/%u/commands/+")
PROBE = "probe_timeout_s = 1\n"      # the probe's deadline, short for the test


def status_cli(config):
    """`dealer-station status --json` on the table's configuration: (exit code, document)."""
    r = subprocess.run([sys.executable, "-m", "dealer_station.cli", "status", "--config", config,
                        "--json"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    return r.returncode, json.loads(r.stdout)


def test_a_table_its_acl_does_not_let_read_its_commands_says_it_is_deaf(studio):
    """Mosquitto 2.0 grants the SUBSCRIBE to a topic the ACL does not let the table read, then
    drops every command silently: the table looked healthy. Its probe does not come back: the
    status, the health and the log say so, and name the ACL."""
    broker, daemon, pki, shoe = studio
    b = broker(acl_without=READ_COMMANDS)
    d = daemon(b.port, PROBE)
    mon = monitor(b.port)
    try:
        mon.wait_online(timeout=20)
        wait_for(lambda: "commands not delivered: broker ACL?" in d.logtext(), 15, "the alarm")
        wait_for(lambda: mon.statuses()[-1]["devices"].get("commands", {}).get("state") == "fault",
                 10, "the status saying the commands path is down")
        reason = mon.statuses()[-1]["devices"]["commands"]["reason"]
        assert "dealer-station/v1/t1/commands" in reason and "docs/install.md" in reason
        # `status` reads what the daemon last reported: unhealthy ("commands connecting") before
        # the verdict too, so wait for the verdict itself
        wait_for(lambda: status_cli(d.config)[1].get("health", "").startswith(
            "unhealthy: commands fault"), 10, "`dealer-station status` naming the fault")
        code, doc = status_cli(d.config)
        assert code == 1 and doc["healthy"] is False, doc
        assert doc["health"].startswith(
            "unhealthy: commands fault: commands not delivered: broker ACL?"), doc
    finally:
        mon.close()


def test_a_table_its_acl_lets_read_its_commands_raises_no_alarm(studio):
    """The shipped ACL: the probe comes back, the commands path is `ok`, nothing said about it."""
    broker, daemon, pki, shoe = studio
    b = broker()
    d = daemon(b.port, PROBE)
    mon = monitor(b.port)
    bs = Client(b.port, user=("betting-system", "pw-bs"))
    try:
        mon.wait_online(timeout=20)
        wait_for(lambda: "commands path checked" in d.logtext(), 15, "the probe's echo")
        wait_for(lambda: mon.statuses()[-1]["devices"].get("commands") == {"state": "ok"}, 10,
                 "the status saying the commands path is ok")
        # ... and stays so past several probe deadlines (1 s each, probed at every connect):
        # the table still answers, its probes were not taken as commands
        assert bs.command({"type": "shoe_loaded"})["status"] == "accepted"
        # the metrics endpoint's copy is the loop's of up to 0.5 s ago
        wait_for(lambda: status_cli(d.config)[1]["devices"]["commands"] == {"state": "ok"}, 10,
                 "`dealer-station status` saying the commands path is ok")
        assert "commands not delivered" not in d.logtext()
        assert "refused" not in d.logtext()
    finally:
        bs.close()
        mon.close()


def test_a_table_its_acl_does_not_let_write_its_commands_says_which_line(studio):
    """An ACL from before the probe (no `pattern write .../commands`): the broker refuses the
    probe's publish (a v5 PUBACK Not authorized); the alarm says the broker refused it, and the
    broker link is not taken for down."""
    broker, daemon, pki, shoe = studio
    b = broker(acl_without=("pattern write dealer-station/v1/%u/commands",))
    d = daemon(b.port, PROBE)
    mon = monitor(b.port)
    try:
        mon.wait_online(timeout=20)
        wait_for(lambda: mon.statuses()[-1]["devices"].get("commands", {}).get("state") == "fault",
                 15, "the status saying the commands path is not checked")
        devices = mon.statuses()[-1]["devices"]
        assert "the broker refused the table's probe" in devices["commands"]["reason"], devices
        assert "Not authorized" in devices["commands"]["reason"], devices
        assert devices["broker"]["state"] == "connected", devices
    finally:
        mon.close()
