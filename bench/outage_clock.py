"""What the station core decides at a restart when the clock lies (the outage rule, a Raspberry Pi
with no real-time clock): a luxury21 round open, `void_after_outage_s` 600, 30 s of quiet
running (the `alive_at` stamps), then each scenario, on a real journal. It prints, per scenario,
what the table did at recovery: `goes on`, `voided (reason)` or `paused (reason)`, and for the
paused ones what came once NTP synced. No timing: a decision table.

    .venv/bin/python bench/outage_clock.py [--root DIR]

`--root DIR` judges another checkout's code (the code before a change: `git archive main | tar
-x -C DIR`); a core without clock facts gets the wall and monotonic times only."""
import argparse
import importlib
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LIMIT = 600.0
T0 = 1_800_000_000.0        # the true wall time at the start


def checkout(path):
    if not os.path.isfile(os.path.join(path, "dealer_station", "station.py")):
        raise argparse.ArgumentTypeError(f"not a dealer-station checkout: {path}")
    return os.path.abspath(path)


class Table:
    """A station over a real journal, driven as the daemon's loop drives it."""

    def __init__(self, m, path):
        self.m, self.path = m, path
        self.wall, self.mono, self.synced, self.boot = T0, 1000.0, True, "boot-1"
        self.timer = None
        self.open()
        self.carry(self.st.replay(self.j.inputs_after(self.n0), self.j.unsent(), self.clock(),
                                  self.n0))

    def clock(self):
        try:
            return self.m.Clock(self.wall, self.mono, synced=self.synced, boot=self.boot)
        except TypeError:                   # a core from before the clock facts
            return self.m.Clock(self.wall, self.mono)

    def open(self):
        m = self.m
        self.j = m.Journal(self.path, "t1", "luxury21")
        self.st = m.Station(m.Settings("t1", m.get_profile("luxury21"), "bench",
                                       void_after_outage_s=LIMIT))
        kw = {"alive_at": self.j.get_meta("alive_at")}
        if "clock_base" in m.Station.restore.__code__.co_varnames:
            kw["clock_base"] = self.j.get_meta("clock_base")
        self.n0, _ = self.st.restore(self.j.checkpoints(), self.j.last_input()[0] + 1,
                                     self.j.next_seq, **kw)

    def carry(self, effects):
        for e in effects:
            if isinstance(e, self.m.Record):
                self.j.write(e)
            elif isinstance(e, self.m.SetMeta):
                self.j.set_meta(e.key, e.value)
            elif isinstance(e, self.m.Timer):
                self.timer = e.deadline
        return effects

    def step(self, ev):
        return self.carry(self.st.step(ev, self.clock()))

    def run_for(self, seconds):
        end = self.mono + seconds
        while self.timer is not None and self.timer <= end:
            self.wall += max(0.0, self.timer - self.mono)
            self.mono = max(self.mono, self.timer)
            self.timer = None
            self.step(self.m.TimerDue())
        self.wall += end - self.mono
        self.mono = end

    def restart(self, down, boot, wall_after, synced):
        """Down `down` s; `boot` True: a reboot (monotonic from 12 s); the wall clock then."""
        self.j.close()
        true = self.wall + down
        self.mono = 12.0 if boot else self.mono + down
        if boot:
            self.boot = "boot-2"
        self.wall = true if wall_after is None else wall_after(true, self)
        self.synced = synced
        self.true_at, self.mono_at = true, self.mono
        self.timer = None
        self.open()
        return self.carry(self.st.replay(self.j.inputs_after(self.n0), self.j.unsent(),
                                         self.clock(), self.n0))

    def into_a_round(self):
        m = self.m
        self.step(m.ShoeHello("VS", "1", "S1", 1, 0))
        self.step(m.Command(b'{"id":"a","type":"shoe_loaded"}'))
        i = 0
        while self.st.expectation() is not None and self.st.expectation()[1] == "burn":
            i += 1
            self.step(m.CardRead("2c", seq=i))
        self.step(m.Command(b'{"id":"b","type":"betting_closed","seats":[1,2]}'))
        self.step(m.CardRead("9h", seq=i + 1))

    def said(self):
        out = []
        for (body,) in self.j.db.execute("SELECT body FROM outbox ORDER BY seq"):
            o = json.loads(body)
            if o["type"] in ("round_voided", "round_paused", "round_resumed", "outage_measured"):
                out.append(o)
        return out


def verdict(events):
    if not events:
        return "goes on"
    o = events[-1]
    if o["type"] == "round_voided":
        return f"voided ({o['reason']})"
    if o["type"] == "round_paused":
        return f"paused ({o['reason']})"
    if o["type"] == "round_resumed":
        return "goes on (resumed)"
    return o["type"]


SCENARIOS = [
    # name, down s, reboot, the wall clock after (None: right), synced after
    ("power cut 40 min, clock from fake-hwclock (last stamp + 5 s), no NTP yet", 2400, True,
     lambda true, t: t.stamp + 5.0, False),
    ("power cut 40 min, clock at 1970, no NTP yet", 2400, True, lambda true, t: 30.0, False),
    ("power cut 20 s, clock at 1970, no NTP yet", 20, True, lambda true, t: 30.0, False),
    ("power cut 10 min 30 s, NTP synced but the clock 1 h behind (gone back)", 630, True,
     lambda true, t: true - 3600.0, True),
    ("crash, down 700 s, one boot, the clock set back 1 h meanwhile (never synced)", 700, False,
     lambda true, t: true - 3600.0, False),
    ("crash, down 700 s, one boot, the clock set forward 1 h meanwhile", 700, False,
     lambda true, t: true + 3600.0, True),
    ("crash, down 20 s, one boot, the clock set forward 1 h meanwhile", 20, False,
     lambda true, t: true + 3600.0, True),
    ("power cut 40 min, NTP synced at start (control)", 2400, True, None, True),
    ("power cut 20 s, NTP synced at start (control)", 20, True, None, True),
]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=checkout, default=os.path.join(HERE, ".."))
    a = ap.parse_args(argv)
    sys.path.insert(0, a.root)
    m = argparse.Namespace()
    st = importlib.import_module("dealer_station.station")
    ty = importlib.import_module("dealer_station.station_types")
    for n in ("Clock", "Command", "Record", "SetMeta", "Timer", "TimerDue"):
        setattr(m, n, getattr(ty, n))
    m.Station, m.Settings = st.Station, st.Settings
    m.Journal = importlib.import_module("dealer_station.journal").Journal
    m.get_profile = importlib.import_module("controller").get_profile
    ev = importlib.import_module("drivers.events")
    m.CardRead, m.ShoeHello = ev.CardRead, ev.ShoeHello
    print(f"code judged: {os.path.abspath(st.__file__)}; limit {LIMIT:g} s")
    with tempfile.TemporaryDirectory() as d:
        for k, (name, down, boot, wall_after, synced) in enumerate(SCENARIOS):
            t = Table(m, os.path.join(d, f"{k}.sqlite"))
            t.into_a_round()
            t.run_for(30.0)
            stamp = t.j.get_meta("alive_at")
            t.stamp = float(stamp.split()[0]) if stamp else t.wall
            before = len(t.said())
            t.restart(down, boot, wall_after, synced)
            at_start = verdict(t.said()[before:])
            line = f"- {name}: {at_start}"
            if at_start.startswith("paused") and not synced:
                t.wall = t.true_at + (t.mono - t.mono_at)        # NTP steps the clock right
                t.synced = True
                t.run_for(5.0)
                line += f"; once NTP syncs: {verdict(t.said()[before:])}"
            print(line)
            t.j.close()


if __name__ == "__main__":
    main()
