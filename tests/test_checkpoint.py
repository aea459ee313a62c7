"""Checkpoints (controller/checkpoint.py): a table between rounds written out as versioned JSON
and read back must go on exactly as the original; anything else is refused with a reason."""
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller import get_profile, new_table, step
from controller import checkpoint as cp
from helpers import drive, shoe

PROFILES = ["luxury21", "european", "lucky7", "punto_banco"]


def _inputs(profile, seed, mischief):
    _, log = drive(profile, shoe(profile, seed), random.Random(seed), max_rounds=6,
                   mischief=mischief)
    return [ev for ev, _ in log]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(PROFILES), seed=st.integers(0, 2 ** 32 - 1),
       mischief=st.sampled_from([0.0, 0.05, 0.2]), pick=st.randoms(use_true_random=False))
def test_a_table_read_back_from_its_checkpoint_goes_on_identically(name, seed, mischief, pick):
    profile = get_profile(name)
    inputs = _inputs(profile, seed, mischief)
    t = new_table(profile)
    tables = []
    for i, ev in enumerate(inputs):
        t, _ = step(t, ev)
        tables.append(t)
    points = [i for i, t in enumerate(tables) if cp.quiescent(t)]
    assert points, "a shoe of rounds has points between rounds"
    for i in pick.sample(points, min(3, len(points))):
        doc = json.loads(json.dumps(cp.encode(tables[i])))     # through real JSON text
        back = cp.decode(profile, doc)
        assert cp.encode(back) == doc
        a, b = tables[i], back
        for ev in inputs[i + 1:]:
            a, out_a = step(a, ev)
            b, out_b = step(b, ev)
            assert out_b == out_a


def test_not_between_rounds_is_no_checkpoint():
    profile = get_profile("luxury21")
    t, _ = step(new_table(profile), {"type": "shoe_loaded"})
    assert cp.encode(t) is not None
    t, _ = step(t, {"type": "pause", "reason": "x"})
    assert cp.encode(t) is None


def test_roulette_checkpoint_round_trips():
    profile = get_profile("roulette")
    t = new_table(profile)
    for ev in ({"type": "betting_closed"}, {"type": "winning_number", "number": 17}):
        t, _ = step(t, ev)
    doc = cp.encode(t)
    assert doc["rounds"] == 1 and doc["shoe"] is None
    assert cp.encode(cp.decode(profile, doc)) == doc


def _doc():
    profile = get_profile("luxury21")
    t, _ = step(new_table(profile), {"type": "shoe_loaded"})
    return profile, cp.encode(t)


@pytest.mark.parametrize("change, says", [
    (lambda d: d.update(format=2), "format 2"),
    (lambda d: d.update(profile="european"), "profile 'european'"),
    (lambda d: d.update(decks=6), "6 decks"),
    (lambda d: d.update(extra=1), "fields must be exactly"),
    (lambda d: d.update(phase="round"), "not a phase between rounds"),
    (lambda d: d["shoe"].update(counts=[0] * 51), "52 counts"),
    (lambda d: d["shoe"].update(drawn=-1), "shoe.drawn must be a count"),
    (lambda d: d.update(seen=[["dealer", "Xx"]]), "seen must be a list"),
])
def test_a_checkpoint_this_version_cannot_trust_is_refused_with_the_reason(change, says):
    profile, doc = _doc()
    change(doc)
    with pytest.raises(cp.CheckpointError, match=says):
        cp.decode(profile, doc)


def test_garbage_is_refused():
    profile = get_profile("luxury21")
    for doc in (None, [], "x", {"format": 1}):
        with pytest.raises(cp.CheckpointError):
            cp.decode(profile, doc)
