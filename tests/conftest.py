"""Test-session reporting: the time each group (test file) took, so growth is visible."""
import collections

_times = collections.Counter()


def pytest_runtest_logreport(report):
    _times[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _times:
        return
    tr = terminalreporter
    tr.write_sep("=", "time per group (setup, call and teardown)")
    for group, seconds in sorted(_times.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{seconds:8.1f} s  {group}")
    tr.write_line(f"{sum(_times.values()):8.1f} s  in all")
