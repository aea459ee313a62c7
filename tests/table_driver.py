"""Plays a table over MQTT as the dealer (draws from the virtual shoe when a card is awaited) and
as the betting system (closes betting, decides with a seeded random legal move).

Robust to outages and restarts: it drains every event that has arrived and acts only on the
latest announcement, once (an announcement repeated after a restart is not acted on again)."""
import queue
import random
import time

ANNOUNCEMENTS = ("awaiting_card", "awaiting_decision", "insurance_offered")


class TableDriver:
    def __init__(self, client, shoe, profile_game, seed=1, seats=(1, 2, 3, 4, 5, 6, 7)):
        self.c = client
        self.shoe = shoe
        self.game = profile_game
        self.rng = random.Random(seed)
        self.seats = list(seats)
        self.phase = "no_shoe"
        self.results = []
        self.acted = 0          # seq of the last announcement acted on
        self.events = 0
        self.hook = None        # hook(driver, event) for every event, in order

    def note(self, e):
        t = e["type"]
        self.events += 1
        if t in ("burn_complete", "round_result", "round_voided") or (
                t == "shoe_started" and not e["burn"]):
            self.phase = "ready"
            if t == "round_result":
                self.results.append(e)
        elif t == "shuffle_due":
            self.phase = "shuffle_due"
        elif t in ("round_started", "shoe_started"):
            self.phase = "round" if t == "round_started" else "burn"
        if self.hook:
            self.hook(self, e)

    def act(self, e):
        self.acted = e["seq"]
        t = e["type"]
        if t == "awaiting_card":
            assert self.shoe.deal() is not None, "the virtual shoe is empty"
        elif t == "awaiting_decision":
            self.c.command({"type": "decision", "seat": e["seat"], "hand": e["hand"],
                            "action": self.rng.choice(e["allowed"])}, wait=False)
        elif t == "insurance_offered":
            self.c.command({"type": "insurance_closed"}, wait=False)

    def close_betting(self):
        self.phase = "closing"
        if self.game == "baccarat":
            self.c.command({"type": "betting_closed"}, wait=False)
        else:
            k = self.rng.randint(1, len(self.seats))
            self.c.command({"type": "betting_closed",
                            "seats": sorted(self.rng.sample(self.seats, k))}, wait=False)

    def play(self, until, timeout=120, idle=0.2):
        end = time.monotonic() + timeout
        while not until(self):
            if time.monotonic() > end:
                raise TimeoutError(f"table did not get there: phase {self.phase}, "
                                   f"{len(self.results)} results, {self.events} events")
            burst = []
            try:
                burst.append(self.c.next_event(timeout=idle))
                while True:
                    burst.append(self.c.q.get_nowait())
            except queue.Empty:
                pass
            for e in burst:
                self.note(e)
                if until(self):
                    return
            live = [e for e in burst if e["type"] != "rejected"]  # a rejection changes nothing
            if live:
                last = live[-1]
                if last["type"] in ANNOUNCEMENTS and last["seq"] > self.acted:
                    self.act(last)
            elif not burst and self.phase == "ready":
                self.close_betting()
