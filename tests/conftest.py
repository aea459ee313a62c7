"""Test groups and their times, so growth is visible (issue #15).

Every test file belongs to a group, a pytest marker: `core` is what existed when issue #15 set the
3-minute budget (tests/ at e593656, 2026-11-29, and the shorter table-sim runs split off
test_harness.py since); the others are the suites later issues added, each kept to its own budget.
`./scripts/test -m core` runs one group, `-m "not browser"` all but one. A test may name its own
group with the marker (test_harness_runs.py: the house procedures' and the scanner's runs came
with their issues). A new test file must be given a group here: collection fails otherwise."""
import collections
import resource

import pytest

GROUPS = {
    "core": ("test_baccarat", "test_blackjack", "test_calibration", "test_camera", "test_daemon",
             "test_harness", "test_harness_runs", "test_panel", "test_players_analysis",
             "test_profiles_cards", "test_properties", "test_purity", "test_replay", "test_roulette",
             "test_service", "test_settlement", "test_shoe_driver", "test_shoe_protocol", "test_shoe_status",
             "test_table"),
    # issue #15's own: the station core, one Game interface
    "station": ("test_station", "test_station_broker", "test_station_probe",
                "test_station_shoe_position", "test_station_resend", "test_station_outage",
                "test_clock_facts", "test_layering"),
    # the hostile world (#14): poison commands, hostile shoe, one daemon per journal, broker ACL
    "hardening": ("test_archive", "test_checkpoint", "test_guard", "test_hostile_commands",
                  "test_shoe_hostile", "test_daemon_shoe", "test_journal_storage", "test_refused_budget", "test_counted_ids",
                  "test_command_ids",
                  "test_refused_flood",
                  "test_broker_security", "test_sim_client", "test_config_errors",
                  "test_broker_not_mqtt", "test_protocol_zone", "test_flood_fair",
                  "test_loop_lanes", "test_busy_lane", "test_flood_broker", "test_backlog_hold",
                  "test_packet_limit"),
    "fuzz": ("test_driver_fuzz", "test_hostile_devices", "test_signed_stream_properties"),
    "hid": ("test_hid_scanner",),                                           # #22
    "integrity": ("test_signed_events", "test_staff_rights", "test_round_export",
                  "test_software_integrity"),                               # #16
    "procedures": (),                                                       # #18: marked per test
    "operators": ("test_calibration_ports", "test_calibration_trial", "test_calibration_recognize_hand",
                  "test_operations",
                  "test_sim_operations", "test_docs_commands", "test_bench_args"),  # #19
    "console": ("test_console_security",),                                  # #20
    "browser": ("test_console_browser",),                                   # #20, in Chromium
    "studio": ("test_studio",),                                             # #21
    "camera_decks": ("test_camera_decks", "test_camera_more_decks", "test_camera_hands",
                     "test_camera_rotation", "test_camera_table_foreign",
                     "test_camera_webcam_model", "test_camera_occluded",
                     "test_camera_faults", "test_camera_labelcheck",
                     "test_camera_hand_edges", "test_camera_motion",
                     "test_camera_heldout_deck", "test_camera_heldout_standard", "test_camera_capture",
                     "test_camera_frame", "test_camera_white_table", "test_camera_white_rounding",
                     "test_camera_white_outline", "test_camera_white_border", "test_camera_white_relocated",
                     "test_camera_defocus",
                     "test_camera_deckcheck", "test_camera_rounding_channels",
                     "test_camera_same_arithmetic", "test_camera_twin_suit",
                     "test_camera_same_artwork", "test_camera_covered_conflict",
                     "test_camera_streak_rounding", "test_camera_light_speed",
                     "test_camera_gap_blob", "test_camera_well_measured_cut",
                     "test_camera_white_speed", "test_camera_white_square_cut"),     # #17
}
# the budget a group's issue states (seconds of wall time with the group run alone on this 2-core
# machine: ./scripts/test -m GROUP), printed beside the group's time
BUDGET_S = {"core": 180}

_FILE_GROUP = {f"{name}.py": group for group, names in GROUPS.items() for name in names}


def pytest_configure(config):
    for group in GROUPS:
        config.addinivalue_line("markers", f"{group}: the {group} test group (tests/conftest.py)")


def _file(nodeid):
    return nodeid.split("::", 1)[0].rsplit("/", 1)[-1]


def group_of(item):
    own = [m.name for m in item.iter_markers() if m.name in GROUPS]
    return own[0] if own else _FILE_GROUP.get(_file(item.nodeid))


# The longest files first, so that a parallel run does not start one of them last and wait for it
# alone (scripts/test keeps this order: --no-loadscope-reorder; xdist's default sorts by the
# number of tests, which put the 5-test 200-round matrix behind files of short tests).
LONGEST_FIRST = ("test_harness.py", "test_studio.py", "test_harness_runs.py", "test_daemon.py",
                 "test_calibration.py", "test_service.py", "test_console_browser.py",
                 "test_sim_client.py", "test_docs_commands.py", "test_config_errors.py",
                 "test_camera.py", "test_hostile_devices.py", "test_broker_security.py")


def pytest_collection_modifyitems(config, items):
    lost = sorted({_file(i.nodeid) for i in items if group_of(i) is None})
    if lost:
        raise pytest.UsageError(f"{', '.join(lost)}: in no test group (GROUPS in tests/conftest.py)")
    for item in items:
        item.add_marker(group_of(item))
        # the group travels on the report (with xdist the controller sees reports only)
        item.user_properties.append(("group", group_of(item)))

    def rank(item):
        name = _file(item.nodeid)
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)        # stable: the order inside a file is kept


_reports = []       # (file, group, start, stop, duration, cpu)
_cpu_mark = [0.0]


def _cpu():
    """CPU seconds of this process and of its children it has waited for (daemons, brokers and
    table-sims a test started and stopped): far less than wall time inflated by a loaded machine."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def pytest_runtest_logstart(nodeid, location):
    _cpu_mark[0] = _cpu()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    now = _cpu()
    report.cpu_s = now - _cpu_mark[0]      # travels to the xdist controller with the report
    _cpu_mark[0] = now
    return report


def pytest_runtest_logreport(report):
    group = dict(report.user_properties).get("group", "?")
    _reports.append((report.nodeid.split("::", 1)[0], group, report.start, report.stop,
                     report.duration, getattr(report, "cpu_s", 0.0)))


def _wall(spans):
    """Seconds during which at least one of the spans was running (the union of the intervals)."""
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def pytest_terminal_summary(terminalreporter):
    if not _reports:
        return
    tr = terminalreporter
    files, groups = collections.Counter(), collections.Counter()
    fcpu, gcpu, spans = collections.Counter(), collections.Counter(), collections.defaultdict(list)
    file_group = collections.defaultdict(set)
    for f, g, start, stop, duration, cpu in _reports:
        files[f] += duration
        groups[g] += duration
        fcpu[f] += cpu
        gcpu[g] += cpu
        spans[g].append((start, stop))
        file_group[f].add(g)
    tr.write_sep("=", "time per file (setup, call and teardown) and CPU (with its subprocesses)")
    for f, seconds in sorted(files.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{seconds:8.1f} s {fcpu[f]:7.1f} s CPU  {f}  [{'+'.join(sorted(file_group[f]))}]")
    tr.write_sep("=", "time per group: wall (some test of it running), summed over the workers, CPU")
    for g, seconds in sorted(groups.items(), key=lambda kv: -kv[1]):
        budget = f"  (budget {BUDGET_S[g]} s wall, run alone)" if g in BUDGET_S else ""
        tr.write_line(f"{_wall(spans[g]):8.1f} s wall {seconds:8.1f} s summed {gcpu[g]:7.1f} s CPU  "
                      f"{g}{budget}")
    every = [s for g in spans.values() for s in g]
    tr.write_line(f"{_wall(every):8.1f} s wall {sum(groups.values()):8.1f} s summed "
                  f"{sum(gcpu.values()):7.1f} s CPU  in all")
