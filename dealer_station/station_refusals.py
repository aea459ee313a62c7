"""The budget of refused commands kept in the journal (a part of the station core, pure: no I/O,
no clock; time arrives with each event).

Every refused (malformed) command was a row of the journal's `refused` table: three floods of
20,000 grew a journal to 31 MB, and any login may write its own `commands/<login>`, so a
sustained flood filled the SD card and the table stopped on disk full (cold trial). Now, in each
window of `window_s` (monotonic, from the first refusal after the last window ended), a sender
has `keep` rows kept in full; beyond that its refusals are counted: one `refused_counts` row per
sender and window (the count, the first and last time, the first one's code, reason and payload
as a sample), whose count the journal adds one to for each (so a row archived while its window
is open goes on in a new row: the sum stays exact). Nothing is silently lost: kept + counted is
every refusal. At most SENDERS senders have their own budget in a window; the rest share one
(sender "*"), so a broker that let anyone write any `commands/<name>` still bounds the rows: at
most (SENDERS + 1) * (keep + 1) per window.
"""
from .station_types import Count, Log, Refuse

SENDERS = 16        # senders with their own budget in one window; the others share "*"
OTHERS = "*"


class RefusalBudget:
    def __init__(self, keep=20, window_s=60.0):
        self.keep, self.window_s = keep, window_s
        self.start = None          # (monotonic, wall) of the window's first refusal
        self.kept = {}             # sender -> rows kept in full this window
        self.counted = {}          # sender -> refusals counted (not kept) this window
        self.flooding = set()      # senders counted in the window before: said once per flood

    def configure(self, keep, window_s):
        self.keep, self.window_s = keep, window_s

    def bound(self):
        """Rows (kept and counted) one window can add to the journal."""
        return (SENDERS + 1) * (self.keep + 1)

    def refused(self, sender, origin, code, reason, sample, mono, wall):
        """[effects] for one refused command from `sender` ("" for the shared `commands` topic)."""
        if self.start is None or mono >= self.start[0] + self.window_s or mono < self.start[0]:
            # the senders counted in the window just before: the same flood, not said again
            gone = self.start is None or mono >= self.start[0] + 2 * self.window_s
            self.flooding = set() if gone else set(self.counted)
            self.start, self.kept, self.counted = (mono, wall), {}, {}
        who = sender             # a kept row names its sender even when its budget is shared
        if sender not in self.kept and sender not in self.counted:
            named = {s for s in (*self.kept, *self.counted) if s != OTHERS}
            if len(named) >= SENDERS:
                sender = OTHERS
        if self.kept.get(sender, 0) < self.keep:
            self.kept[sender] = self.kept.get(sender, 0) + 1
            return [Refuse(origin, code, reason, sample, who)]
        effects = []
        if sender not in self.counted:
            self.counted[sender] = 0
            if sender not in self.flooding:
                named = (f"login {sender}" if sender not in ("", OTHERS) else "the shared "
                         "commands topic" if sender == "" else f"senders beyond the first {SENDERS}")
                effects.append(Log("warning", f"refused commands from {named}: more than "
                                   f"{self.keep} in {self.window_s:g} s, the rest only counted "
                                   f"(journal table refused_counts) while the flood lasts"))
        self.counted[sender] += 1
        return effects + [Refuse(origin, code, reason, sample, sender, (self.start[1], wall)),
                          Count("commands_refused_counted_total")]
