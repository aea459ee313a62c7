"""The benches refuse what they cannot run as asked, by hand (the cold trial: an unknown option
was ignored and the full default bench ran; `--cards 0 --dealt` divided by zero; `--speed-runs 0`
crashed). Under scripts/bench (DS_BENCH_ALL=1) each bench leaves the options it does not know."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args, **env):
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


@pytest.mark.parametrize("args, said", [
    (["bench/bench_hands.py", "--cards", "0", "--dealt"], "--cards: expected an integer of at least 1"),
    (["bench/bench_hands.py", "--cards", "x"], "--cards: expected an integer of at least 1"),
    (["bench/bench_hands.py", "--dealt", "--hands-only"], "--dealt is a measure of its own"),
    (["bench/bench_hands.py", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["bench/bench_camera.py", "--speed-only", "--speed-runs", "0"], "--speed-runs: expected an integer"),
    (["bench/bench_engine.py", "--shoes", "1", "--no-such-option"], "unrecognized arguments"),
    # the cold trial of the docs' "To measure again" block (docs/camera.md): a prefix was taken
    # for the option it begins, a count of 0 or an empty seed range ran and measured nothing, a
    # mistyped deck, pair or core ended in a traceback (or ran the whole setup first)
    (["bench/bench_engine.py", "--shoe", "1"], "unrecognized arguments: --shoe"),
    (["bench/bench_capture.py", "--sets", "0"], "--sets: expected an integer of at least 1"),
    (["bench/bench_capture.py", "--decks", "tigulio"], "--decks: unknown deck 'tigulio'"),
    (["bench/hunt_hands.py", "--seeds", "5:1"], "--seeds: expected A:B with 0 <= A < B"),
    (["bench/hunt_hands.py", "--seeds", "0:4", "--cpu", "99"], "--cpu: expected a core"),
    (["bench/probe_foreign_frames.py", "--pairs", "responsive"], "--pairs: expected deck pairs A:B"),
    (["bench/probe_foreign_frames.py", "--scenes", "0"], "--scenes: expected an integer of at least 1"),
    (["bench/diag_hands.py", "--deck", "responsiv"], "--deck: unknown deck 'responsiv'"),
    # cold39: `--keep` beyond [commands] refused_keep's range waited 60 s for a daemon that had
    # refused its configuration, then a TimeoutError; `--root` not a checkout measured this one's
    # code (the daemon imports dealer_station from the venv's editable install) or a traceback
    (["bench/bench_flood.py", "--keep", "10001"], "--keep: expected an integer of 1 to 10000"),
    (["bench/bench_flood_fair.py", "--root", "/nonexistent"], "--root: not a dealer-station checkout"),
    (["bench/outage_clock.py", "--root", "/nonexistent"], "--root: not a dealer-station checkout"),
    (["bench/bench_flood_fair.py", "--root", "/tmp"], "--root: not a dealer-station checkout"),
    (["bench/bench_staff_session.py", "--rate", "-1"], "--rate: expected an integer of 0 to 100000"),
    (["bench/bench_staff_session.py", "--mode", "two"], "--mode: invalid choice: 'two'"),
    # cold41: no command ended in an IndexError, a mistyped one did nothing and exited 0
    (["bench/blackbox_camera.py"], "the following arguments are required: cmd"),
    (["bench/blackbox_camera.py", "rendr", "/tmp/x"], "invalid choice: 'rendr'"),
    (["bench/blackbox_camera.py", "render", "/tmp/x", "anglo,bellot"], "unknown theme 'bellot'"),
])
def test_a_bench_run_by_hand_refuses_what_it_cannot_run(args, said):
    p = run(args)
    assert p.returncode == 2 and said in p.stderr, (p.returncode, p.stderr[-500:])


def test_under_scripts_bench_a_bench_leaves_the_options_it_does_not_know():
    p = run(["bench/bench_engine.py", "--shoes", "1", "--no-such-option", "--json"], DS_BENCH_ALL="1")
    assert p.returncode == 0 and '"luxury21"' in p.stdout, p.stderr[-500:]


def test_every_bench_help_opens_with_a_whole_sentence():
    """A bench's --help shows its docstring's first line (`__doc__.split("\\n")[0]`); cold41:
    bench_alive.py's said "... one `alive_at`" and bench_staff_session.py's "does it keep the
    betting", cut mid-sentence. Each such first line ends a sentence."""
    import ast
    import glob
    cut = []
    for path in sorted(glob.glob(os.path.join(ROOT, "bench", "*.py"))):
        text = open(path).read()
        if '__doc__.split("\\n")[0]' not in text:
            continue
        first = (ast.get_docstring(ast.parse(text), clean=False) or "").split("\n")[0]
        if not first.rstrip().endswith((".", "?", ")", "!")):
            cut.append(f"{os.path.basename(path)}: {first}")
    assert not cut, cut
