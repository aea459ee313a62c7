"""The round controller: a pure functional core, `step(table, input) -> (table, outputs)`.

No I/O, no clock, no randomness, no threads (tests/test_purity.py enforces the imports).
"""
from .profiles import BUILTIN, Profile, ProfileError, get_profile, profile_from_mapping
from .protocol import VERSION, Rejected
from .table import Table, announce, expect, new_table, step
from .guard import guarded_step

__all__ = ["BUILTIN", "Profile", "ProfileError", "Rejected", "Table", "VERSION", "announce",
           "expect", "get_profile", "guarded_step", "new_table", "profile_from_mapping", "step"]
