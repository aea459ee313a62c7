"""Per-zone tracking: a card is reported once, after it has been read in the same zone in
`stable` consecutive processed frames; a reported card not read for `gone` frames was picked up.
Two copies of one card in a zone (a multi-deck shoe) are tracked as two cards."""
from collections import Counter


class ZoneTracker:
    def __init__(self, stable=3, gone=8):
        self.stable = stable
        self.gone = gone
        self.streak = {}      # (zone, card, copy) -> consecutive frames read
        self.absent = {}      # (zone, card, copy) reported -> consecutive frames not read
        self.reported = set()

    def update(self, zone, cards):
        """`cards`: the cards read in `zone` in this frame (a card twice when two copies lie
        there). Returns [(event, card)] with event 'seen' or 'gone'."""
        out = []
        now = {(zone, c, i) for c, n in Counter(cards).items() for i in range(n)}
        for k in sorted(now):
            self.streak[k] = self.streak.get(k, 0) + 1
            self.absent.pop(k, None)
            if k not in self.reported and self.streak[k] >= self.stable:
                self.reported.add(k)
                out.append(("seen", k[1]))
        for k in [k for k in self.streak if k[0] == zone and k not in now]:
            del self.streak[k]
        for k in sorted(k for k in self.reported if k[0] == zone and k not in now):
            self.absent[k] = self.absent.get(k, 0) + 1
            if self.absent[k] >= self.gone:
                self.reported.discard(k)
                del self.absent[k]
                out.append(("gone", k[1]))
        return out

    def settled(self, zone):
        """True when every card seen in the zone is reported: nothing is being confirmed."""
        return all(k in self.reported for k in self.streak if k[0] == zone)
