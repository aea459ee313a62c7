"""The shell's clock facts for the outage rule (dealer_station/clock_facts.py): is the wall
clock synchronised, and which boot is this. The kernel's answer comes through a seam (the
adjtimex function, the sync file's path, the environment), never a flag."""
import errno

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
    assert synced(adjtimex=refused, sync_file=str(f)) is False     # nothing can say: not synced
    f.write_text("")
    assert synced(adjtimex=refused, sync_file=str(f)) is True


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
