"""The shell's clock facts for the outage rule (dealer_station/clock_facts.py): is the wall
clock synchronised, and which boot is this. The kernel's answer comes through a seam (the
adjtimex function, the sync file's path, the environment), never a flag."""
import errno
import os
import shutil
import subprocess
import threading
import time

import pytest

from dealer_station import clock_facts, daemon
from dealer_station.clock_facts import ClockFacts, boot_id, synced


def refused():
    raise OSError(errno.EPERM, "Operation not permitted")   # the unit's seccomp filter


def test_synchronised_is_the_kernels_maxerror_under_16_s(tmp_path):
    none = str(tmp_path / "absent")
    assert synced(adjtimex=lambda: 16_000_000, sync_file=none) is False   # as at boot
    assert synced(adjtimex=lambda: 15_999_999, sync_file=none) is True
    assert synced(adjtimex=lambda: 2_500, sync_file=none) is True
    # the kernel's word wins over the file: maxerror grown past 16 s is no longer synchronised
    f = tmp_path / "synchronized"
    f.write_text("")
    assert synced(adjtimex=lambda: 16_000_000, sync_file=str(f)) is False


def test_refused_adjtimex_falls_back_to_timesyncds_file_and_else_says_not_synced(tmp_path):
    f = tmp_path / "synchronized"
    unknown = lambda: None                                          # noqa: E731
    assert synced(adjtimex=refused, sync_file=str(f), timedated=unknown) is False  # no guess
    f.write_text("")
    assert synced(adjtimex=refused, sync_file=str(f), timedated=unknown) is True


def test_with_chrony_or_ntpd_the_refused_query_is_answered_by_timedated(tmp_path):
    """chrony and ntpd never write timesyncd's file: under the unit's filter the table asked
    nothing else and took every clock for unsynchronised (each reboot's outage waited for the
    supervisor). timedated's NTPSynchronized is the kernel's answer asked from outside it."""
    none = str(tmp_path / "absent")
    assert synced(adjtimex=refused, sync_file=none, timedated=lambda: True) is True
    assert synced(adjtimex=refused, sync_file=none, timedated=lambda: False) is False
    asked = []
    # the kernel's own word, when it answers, is not second-guessed (nor a subprocess started)
    assert synced(adjtimex=lambda: 16_000_000, sync_file=none,
                  timedated=lambda: asked.append(1) or True) is False
    assert asked == []


class Done:
    def __init__(self, out, rc=0):
        self.stdout, self.returncode = out, rc


def test_timedateds_answer_is_read_strictly():
    def run_with(result):
        def run(cmd, **kw):
            assert cmd[0] == "busctl" and cmd[-1] == "NTPSynchronized" and kw["timeout"]
            if isinstance(result, BaseException):
                raise result
            return result
        return run
    assert clock_facts.timedated_synced(run_with(Done("b true\n"))) is True
    assert clock_facts.timedated_synced(run_with(Done("b false\n"))) is False
    for unknown in (Done("", 1), Done("b true", 1), Done("s \"yes\"\n"), Done("b maybe"),
                    FileNotFoundError("busctl"),
                    subprocess.TimeoutExpired("busctl", 3)):
        assert clock_facts.timedated_synced(run_with(unknown)) is None


def test_the_real_busctl_with_no_system_bus_says_unknown():
    if shutil.which("busctl") is None:
        pytest.skip("no busctl on this machine")
    # this machine's containers have no system bus; a Pi's answers True or False
    assert clock_facts.timedated_synced() in (None, True, False)
    if not os.path.exists("/run/dbus/system_bus_socket"):
        assert clock_facts.timedated_synced() is None


def test_timedated_is_asked_off_the_callers_thread_and_the_last_answer_kept():
    answers = iter([False, True, True, True, True, True])
    threads = []
    go = threading.Event()

    def ask():
        threads.append(threading.current_thread().name)
        go.wait(10)                          # a slow bus
        return next(answers)
    poll = clock_facts.TimedatedPoll(ask=ask, every=0.01)
    try:
        assert poll.value() is None          # the bus is slow: no answer yet, and no wait
        go.set()
        deadline = time.monotonic() + 10
        while poll.value() is not True and time.monotonic() < deadline:
            time.sleep(0.01)
        assert poll.value() is True
        assert threads and threading.current_thread().name not in threads
    finally:
        poll.close()


def test_the_real_adjtimex_reads_without_changing_anything():
    """This machine's kernel answers the read-only call (no seccomp filter here)."""
    assert isinstance(clock_facts._libc_adjtimex(), int)


def test_boot_id_from_the_unit_else_the_kernel_else_unknown(tmp_path):
    f = tmp_path / "boot_id"
    f.write_text("2f0c-kernel\n")
    assert boot_id({"DEALER_STATION_BOOT_ID": "ab12"}, str(f)) == "ab12"
    assert boot_id({}, str(f)) == "2f0c-kernel"
    assert boot_id({}, str(tmp_path / "hidden")) is None       # ProcSubset=pid, no variable


def test_the_answer_is_kept_a_second_and_asked_again_after():
    answers = iter([False, True])
    calls = []

    def check():
        calls.append(1)
        return next(answers)
    f = ClockFacts(check=check, boot="b")
    assert f.synced(100.0) is False and f.synced(100.9) is False and len(calls) == 1
    assert f.synced(101.0) is True and len(calls) == 2


def test_the_daemons_clock_carries_the_facts(monkeypatch):
    monkeypatch.setattr(daemon, "FACTS", ClockFacts(check=lambda: True, boot="boot-7"))
    c = daemon.clock()
    assert c.synced is True and c.boot == "boot-7"
    monkeypatch.setattr(daemon, "FACTS", ClockFacts(check=lambda: False, boot="boot-7"))
    assert daemon.clock().synced is False
