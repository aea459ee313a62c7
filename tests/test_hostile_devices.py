"""The fuzz suite's device half (issue #14): arbitrary bytes and CRC-valid frames at the shoe's pty,
arbitrary bytes and status packets at the wheel's, through the real daemon behind a real
Mosquitto. After each example the daemon is alive and answers a command; at the end the
subscriber's sequence has no gap. (The drivers alone: tests/test_driver_fuzz.py.)"""
import itertools
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers import shoe_protocol as sp
from mqtt_rig import Broker, Client, DaemonProc, wait_for, workdir
from test_driver_fuzz import Device, crc_frames

FUZZ = settings(max_examples=120, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
_ids = itertools.count()


def probe(c, daemon):
    """A harmless command answered: the daemon's loop is alive and has handled what came before."""
    r = c.command({"type": "resend", "from": 10 ** 9, "id": f"p{next(_ids)}"}, timeout=15)
    assert r["status"] == "accepted" and daemon.alive()


def no_gap_at_the_end(c, daemon):
    r = c.command({"type": "resend", "from": 1})
    if r["seq"]:
        wait_for(lambda: c.events and max(c.events) >= r["seq"][1], 20, "every event")
    assert c.gaps() == [] and daemon.alive()


@pytest.fixture(scope="module")
def shoe_table(tmp_path_factory):
    d = workdir()
    broker = Broker(d)
    broker.start()
    dev = Device(tmp_path_factory.mktemp("dev"), "shoe", hello=sp.encode("HELLO", 0, "FZ-1", "1.0", "FZ0001", 1))
    c = Client(broker.port)
    daemon = DaemonProc(d, broker.port, dev.path)
    daemon.start()
    c.wait_online(timeout=20)
    c.command({"type": "shoe_loaded"})
    yield dev, daemon, c
    no_gap_at_the_end(c, daemon)
    c.close()
    daemon.stop()
    dev.close()
    broker.stop()


@FUZZ
@given(data=st.one_of(st.binary(max_size=400),
                      st.lists(crc_frames(), min_size=1, max_size=8).map(b"".join)))
def test_fuzz_the_shoe_pty_through_the_daemon(shoe_table, data):
    dev, daemon, c = shoe_table
    dev.write(b"\r\n" + data + b"\r\n")
    probe(c, daemon)


@pytest.fixture(scope="module")
def wheel_table(tmp_path_factory):
    d = workdir()
    broker = Broker(d)
    broker.start()
    dev = Device(tmp_path_factory.mktemp("dev"), "wheel")
    config = os.path.join(d, "table.toml")
    journal = os.path.join(d, "journal.sqlite")
    with open(config, "w") as f:
        f.write(f'[table]\nid = "t1"\nprofile = "roulette"\n\n[shoe]\nprotocol = "none"\n\n'
                f'[wheel]\nenabled = true\nurl = "{dev.path}"\n\n'
                f'[broker]\nport = {broker.port}\nreconnect_min_s = 1\nreconnect_max_s = 1\n\n'
                f'[paths]\njournal = "{journal}"\n\n[metrics]\nport = 0\n')
    daemon = DaemonProc(d, broker.port, dev.path)
    daemon.config, daemon.journal = config, journal
    c = Client(broker.port)
    daemon.start()
    c.wait_online(timeout=20)
    yield dev, daemon, c
    no_gap_at_the_end(c, daemon)
    c.close()
    daemon.stop()
    dev.close()
    broker.stop()


wheel_fields = st.one_of(st.integers(0, 9).map(str), st.integers(0, 999).map(lambda n: f"{n:03d}"),
                         st.integers(0, 40).map(lambda n: f"{n:>2}"), st.just("  "),
                         st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=6))
status_packets = st.lists(wheel_fields, min_size=0, max_size=9).map(
    lambda fs: ("*X;" + ";".join(fs) + "\r\n").encode("ascii", "replace"))


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), st.lists(status_packets, min_size=1, max_size=6)
                      .map(b"".join)))
def test_fuzz_the_wheel_pty_through_the_daemon(wheel_table, data):
    dev, daemon, c = wheel_table
    dev.write(b"\r\n" + data + b"\r\n")
    probe(c, daemon)
