"""Small helpers to drive the engine in tests."""
from controller import get_profile, new_table, step


class Run:
    """A table plus every output it produced, fed one input (or card) at a time."""

    def __init__(self, profile):
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.table = new_table(self.profile)
        self.outputs = []

    def feed(self, *events):
        """Feed inputs (dicts, or card strings as shorthand); return this call's outputs."""
        got = []
        for ev in events:
            if isinstance(ev, str):
                ev = {"type": "card", "card": ev}
            self.table, out = step(self.table, ev)
            got.extend(out)
        self.outputs.extend(got)
        return got

    def load(self, *burn):
        """shoe_loaded then the burn cards."""
        return self.feed({"type": "shoe_loaded"}, *burn)

    def close(self, *seats):
        return self.feed(self.table.game.betting_closed(list(seats)))

    def decide(self, seat, action, hand=0):
        return self.feed({"type": "decision", "seat": seat, "hand": hand, "action": action})


def types(outputs):
    return [o["type"] for o in outputs]


def of(outputs, kind):
    return [o for o in outputs if o["type"] == kind]


def one(outputs, kind):
    found = of(outputs, kind)
    assert len(found) == 1, (kind, outputs)
    return found[0]


def ready(profile, burn=("As", "2c")):
    """A table of `profile` with a shoe loaded and the burn done (ace up: one card burned)."""
    r = Run(profile)
    r.load(*(burn if r.profile.burn else ()))
    return r
