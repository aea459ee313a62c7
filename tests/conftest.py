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
    tr.write_line(f"{sum(_times.values()):8.1f} s  in all (summed over the parallel workers)")


# The longest groups first, so that a parallel run (pytest-xdist, --dist loadfile) does not start
# one of them last and wait for it alone.
LONGEST_FIRST = ("test_harness.py", "test_studio.py", "test_harness_runs.py", "test_daemon.py",
                 "test_calibration.py", "test_service.py", "test_sim_client.py", "test_docs_commands.py", "test_config_errors.py",
                 "test_camera.py", "test_hostile_devices.py", "test_broker_security.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        name = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)        # stable: the order inside a file is kept
