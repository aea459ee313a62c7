"""Plays a table over MQTT as the dealer (draws from the virtual shoe when a card is awaited) and
as the betting system (closes betting, decides with a seeded random legal move)."""
import queue
import random
import time


class TableDriver:
    def __init__(self, client, shoe, profile_game, seed=1, seats=(1, 2, 3, 4, 5, 6, 7)):
        self.c = client
        self.shoe = shoe
        self.game = profile_game
        self.rng = random.Random(seed)
        self.seats = list(seats)
        self.phase = "no_shoe"
        self.results = []
        self.seen = 0
        self.hook = None        # called with each event before it is acted on

    def act(self, e):
        t = e["type"]
        if self.hook:
            self.hook(e)
        if t == "awaiting_card":
            card = self.shoe.deal()
            assert card is not None, "the virtual shoe is empty"
        elif t == "awaiting_decision":
            self.c.command({"type": "decision", "seat": e["seat"], "hand": e["hand"],
                            "action": self.rng.choice(e["allowed"])}, wait=False)
        elif t == "insurance_offered":
            self.c.command({"type": "insurance_closed"}, wait=False)
        elif t in ("burn_complete", "round_result", "round_voided") or (
                t == "shoe_started" and not e["burn"]):
            self.phase = "ready"
            if t == "round_result":
                self.results.append(e)
        elif t == "shuffle_due":
            self.phase = "shuffle_due"
        elif t == "round_started":
            self.phase = "round"

    def close_betting(self):
        self.phase = "closing"
        if self.game == "baccarat":
            self.c.command({"type": "betting_closed"}, wait=False)
        else:
            k = self.rng.randint(1, len(self.seats))
            self.c.command({"type": "betting_closed",
                            "seats": sorted(self.rng.sample(self.seats, k))}, wait=False)

    def play(self, until, timeout=120, idle=0.15, on_idle=None):
        """Act on every event until `until(self)` is true. When the table is ready and quiet,
        close betting."""
        end = time.monotonic() + timeout
        while not until(self):
            if time.monotonic() > end:
                raise TimeoutError(f"table did not get there; phase {self.phase}, "
                                   f"{len(self.results)} results")
            try:
                e = self.c.next_event(timeout=idle)
            except queue.Empty:
                if on_idle and on_idle(self):
                    continue
                if self.phase == "ready":
                    self.close_betting()
                continue
            self.act(e)
