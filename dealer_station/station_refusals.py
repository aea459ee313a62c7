"""The budget of refused commands kept in full in the journal (a part of the station core, pure:
no I/O, no clock; time arrives with each event).

Three kinds of refusal (docs/protocol.md, "Replies"): `malformed` (never parsed: a `refused` row
each), `rights` (well formed, refused by the staff rights: an audit entry each) and `engine` (well
formed, rejected by the engine with the table unchanged: a journaled input, its `rejected` event
and its reply each). Unbounded, a flood of any of them grew the journal by a row (three, for
the engine's) per command: three floods of 20,000 malformed ones made 31 MB, and any login may
write its own `commands/<login>` (cold trials). Now, in each window of `window_s` (monotonic,
from the first refusal after the last window ended), a sender has `keep` refusals of any kind
kept in full; beyond that they are counted: one `refused_counts` row per sender, kind and code
in the window (the count, the first and last time, the first one's reason and payload as a
sample), which the journal adds one to for each (a row archived while its window is open goes
on in a new row: the sum stays exact). Nothing is silently lost: kept + counted is every
refusal, and every command is still answered. A counted engine rejection needs no input row:
the engine returned the same table, so replay rebuilds the same state without it.

Bounded whatever comes: at most SENDERS senders have their own budget in a window, the rest share
one (sender "+": MQTT's wildcard for one topic level, which no login can be, as no topic holds a
wildcard and a console account is letters, digits and . _ @ -; it was "*", which a login could
be, and then shared the others' budget, unnamed); a sender has at most CODES counted rows of
their own code, the rest of each kind share its code "*". So a window adds at most `bound()`
rows.

Said once per flood: a sender's first counted refusal in a window is logged unless the sender
was counted in the window before, by its own login whichever budget it had (senders rotating
through the shared budget were said again each window they had their own, lows39).
"""
from collections import OrderedDict

from .station_types import Count, Log, Refuse

SENDERS = 16        # senders with their own budget in one window; the others share OTHERS
OTHERS = "+"        # no login: a topic level holding a wildcard is no topic
SEEN = 1000         # senders remembered as counted in a window (said once per flood)
KINDS = ("malformed", "rights", "engine")
CODES = 8           # counted rows of their own (kind, code) a sender has in one window
IDS = 1000          # counted engine and rights refusals' ids remembered in memory until their
                    # count is written; journaled with it (journal.py counted_ids), where they
                    # outlive a restart


class RefusalBudget:
    def __init__(self, keep=20, window_s=60.0):
        self.keep, self.window_s = keep, window_s
        self.start = None          # (monotonic, wall) of the window's first refusal
        self.kept = {}             # sender -> refusals kept in full this window
        self.counted = {}          # sender -> {(kind, code): refusals counted} this window
        self.seen = set()          # senders (their own names) counted this window
        self.flooding = set()      # senders counted in the window before: said once per flood
        # (sender, id) -> reply of the last IDS engine or rights refusals counted: no `commands`
        # row answers a retry with the same id `duplicate`, so this does (one id, one command,
        # per sender) until the burst's write puts it in the journal's counted_ids
        # (Journal.command_reply)
        self.ids = OrderedDict()

    def configure(self, keep, window_s):
        self.keep, self.window_s = keep, window_s

    def bound(self):
        """Rows (kept and counted) one window can add to the journal."""
        return (SENDERS + 1) * (self.keep + CODES + len(KINDS))

    def _window(self, mono, wall):
        if self.start is None or mono >= self.start[0] + self.window_s or mono < self.start[0]:
            # the senders counted in the window just before: the same flood, not said again
            gone = self.start is None or mono >= self.start[0] + 2 * self.window_s
            self.flooding = set() if gone else self.seen
            self.start, self.kept, self.counted, self.seen = (mono, wall), {}, {}, set()

    def over(self, sender, kind, code, reason, sample, mono, wall):
        """One refusal of `kind` from `sender` ("" for the shared `commands` topic). None while
        the sender has budget left: the caller keeps it in full (its row, audit entry or input).
        Else ([effects] that count it, first): first is True for the sender's first refusal of
        this kind counted in the window (the station says so in the audit log)."""
        self._window(mono, wall)
        own = sender
        if sender not in self.kept and sender not in self.counted:
            named = {s for s in (*self.kept, *self.counted) if s != OTHERS}
            if len(named) >= SENDERS:
                sender = OTHERS
        if self.kept.get(sender, 0) < self.keep:
            self.kept[sender] = self.kept.get(sender, 0) + 1
            return None
        effects, rows = [], self.counted.setdefault(sender, {})
        say = own not in self.seen and own not in self.flooding and len(self.seen) < SEEN
        if own not in self.seen and len(self.seen) < SEEN:
            self.seen.add(own)          # beyond SEEN senders in a window: counted, not said
        if say:
            named = f"login {own}" if own else "the shared commands topic"
            if sender == OTHERS:
                named += (f" (one of the senders beyond the first {SENDERS}, counted together "
                          f"as sender {OTHERS})")
            effects.append(Log("warning", f"refused commands from {named}: more than "
                               f"{self.keep} in {self.window_s:g} s, the rest only counted "
                               f"(journal table refused_counts) while the flood lasts"))
        first = not any(k == kind for k, _ in rows)
        key = (kind, code) if (kind, code) in rows or len(rows) < CODES else (kind, OTHERS)
        rows[key] = rows.get(key, 0) + 1
        return effects + [Refuse("command", key[1], reason, sample, sender, (self.start[1], wall),
                                 kind),
                          Count("commands_refused_counted_total", (("kind", kind),))], first

    def remember(self, key, reply):
        self.ids[key] = reply
        while len(self.ids) > IDS:
            self.ids.popitem(last=False)

    def refused(self, sender, origin, code, reason, sample, mono, wall):
        """[effects] for one malformed command: its `refused` row (naming its own sender even
        when its budget is the shared one), or its count."""
        over = self.over(sender, "malformed", code, reason, sample, mono, wall)
        return [Refuse(origin, code, reason, sample, sender)] if over is None else over[0]


def tally(refuses, into=None):
    """Counted `Refuse` effects summed by (window, sender, kind, code): {key: [origin, first at,
    last at, count, reason, payload]} (the first one's origin, reason and payload)."""
    into = {} if into is None else into
    for r in refuses:
        window_at, at = r.counted
        row = into.get((window_at, r.sender, r.kind, r.code))
        if row is None:
            into[(window_at, r.sender, r.kind, r.code)] = [r.origin, at, at, 1, r.reason,
                                                           bytes(r.payload)]
        else:
            row[2], row[3] = max(row[2], at), row[3] + 1
    return into
