"""The simulated dealer's cards as the virtual camera sees them: each card drawn from the shoe is
laid in its place on the virtual table, the hole card face down until it is revealed, and the
cards are picked up once the camera has confirmed them. Writes the calibration file (zones and
the cards' codes) and the daemon's [camera] section, as the calibration tool would."""
import os
import time

from drivers.camera.virtual import VirtualCamera, codebook

CONFIRM_WAIT_S = 1.0      # how long the dealer waits for the camera before picking cards up
FPS = 40


class TableCamera:
    def __init__(self, game, workdir, fps=FPS):
        self.cam = VirtualCamera(game, fps=fps)
        self.game = game
        self.path = os.path.join(workdir, "calibration.toml")
        self.round = None
        self.laid = 0             # face-up cards of the round on the table, within view
        self.confirmed = 0
        self.hole = None          # index of the face-down card in the dealer's place
        self.ended_at = None
        self.cleared_at = 0.0
        self.stats = {"cards_laid": 0, "cards_confirmed": 0, "unconfirmed_at_pickup": 0,
                      "shown_differently": 0}

    def start(self):
        url = self.cam.start()
        with open(self.path, "w") as f:
            f.write("[zones]\n")
            for name, poly in self.cam.zones.items():
                f.write(f"{name} = {poly}\n")
            f.write("\n[codebook]\n")
            for p, c in codebook().items():
                f.write(f'"{p}" = "{c}"\n')
        return url

    def config(self):
        return (f'[camera]\nenabled = true\nsource = "{self.cam.url}"\nmode = "barcode"\n'
                f'decoder = "zxing"\nsymbology = "qrcode"\nstable_frames = 2\ngone_frames = 3\n\n')

    def close(self):
        self.cam.close()

    @staticmethod
    def zone(m):
        if m["to"] == "seat":
            return f"seat_{m['seat']}"
        return None if m["to"] == "burn" else m["to"]

    def lay(self, m, card):
        """The dealer lays the card announced by `m` (an awaiting_card)."""
        zone = self.zone(m)
        if zone is None or card is None:
            return
        if m["round"] != self.round:
            self.round, self.laid, self.confirmed, self.hole = m["round"], 0, 0, None
        n = self.cam.cards_in(zone)
        up = m["face"] == "up"
        crosswise = self.game == "baccarat" and n == 2      # a third card lies across
        if not up:
            self.hole = n
        shown = self.cam.lay(zone, card, face_up=up, crosswise=crosswise)
        self.stats["shown_differently"] += shown != card
        if up and n < len(self.cam.slots[zone]):
            self.laid += 1
            self.stats["cards_laid"] += 1

    def note(self, m):
        t = m["type"]
        if t == "card_confirmed" and m["round"] == self.round:
            self.confirmed += 1
            self.stats["cards_confirmed"] += 1
        elif (t == "irregularity" and m["round"] == self.round
              and m["code"] in ("source_mismatch", "misplaced_card")):
            self.confirmed += 1       # seen, and found wrong: the camera has done its part
        elif t == "hole_card_revealed" and self.hole is not None:
            self.cam.turn_over("dealer", self.hole)
            self.hole = None
            self.laid += 1
            self.stats["cards_laid"] += 1
        elif t in ("round_result", "round_voided"):
            self.ended_at = time.monotonic()
            if t == "round_voided":
                self.laid = self.confirmed      # void: nothing left to confirm

    def discard_last(self, zone):
        """An unreadable card the camera did not identify goes to the discard rack."""
        if zone is not None:
            self.cam.pick_up(zone)
            self.laid -= 1

    def table_clear(self):
        """The camera has seen the table empty (the tracker's gone frames, and one more)."""
        return time.monotonic() - self.cleared_at > 5 / self.cam.fps

    def ready_to_pick_up(self):
        return (self.ended_at is None or self.confirmed >= self.laid
                or time.monotonic() - self.ended_at > CONFIRM_WAIT_S)

    def pick_up(self):
        self.stats["unconfirmed_at_pickup"] += max(0, self.laid - self.confirmed)
        self.cam.clear()
        self.cleared_at = time.monotonic()
        self.laid = self.confirmed = 0
        self.ended_at = None
