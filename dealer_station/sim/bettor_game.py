"""The simulated betting system's game (a part of `BettingSystem`, bettor.py): betting closed
with random seats and bets (roulette's from the layout), the cards it has seen kept from the events
(never the hole card), each hand decided by a computer player, and every result and correction
settled with the settlement reference into its balances."""
from controller.blackjack import Hand
from controller.settlement import correction, settle


class BettorGame:
    """A mixin of `BettingSystem`: its bets, hands, players and balances are set in its __init__;
    its commands go through `BettingSystem.command`."""

    def close_betting(self, round_no):
        p = self.profile
        if p.game == "baccarat":
            kind = self.rng.choice(["player", "banker", "tie"])
            self.bets[round_no] = [{"id": "bac", "kind": kind, "amount": 100}]
            self.command({"type": "betting_closed"})
            return
        seats = sorted(self.rng.sample(range(1, p.seats + 1), self.rng.randint(1, p.seats)))
        self.bets[round_no] = [{"id": f"p{s}", "kind": "seat", "seat": s, "amount": 100,
                                **({"pairs": 10} if p.pairs else {})} for s in seats]
        self.hands = {s: [[]] for s in seats}
        self.up = None
        self.command({"type": "betting_closed", "seats": seats})

    def place_roulette_bets(self, round_no):
        """A few bets from the layout, placed before no more bets (recorded when the round opens)."""
        from controller.roulette import INSIDE
        bets = []
        for i in range(self.rng.randint(1, 4)):
            kind = self.rng.choice(["straight", "split", "corner", "red", "black", "odd", "even",
                                    "low", "high", "dozen", "column"])
            bet = {"id": f"r{i}", "kind": kind, "amount": 10}
            if kind in INSIDE:
                bet["numbers"] = sorted(self.rng.choice(sorted(INSIDE[kind], key=sorted)))
            elif kind in ("dozen", "column"):
                bet["which"] = self.rng.randint(1, 3)
            bets.append(bet)
        self.bets[round_no] = bets

    def note(self, m):
        t = m["type"]
        if t == "card_dealt" and m["to"] == "seat":
            hands = self.hands.setdefault(m["seat"], [[]])
            while len(hands) <= m["hand"]:
                hands.append([])
            hands[m["hand"]].append(m["card"])
        elif t == "card_dealt" and m["to"] == "dealer" and m["card"] and self.up is None:
            self.up = m["card"]
        elif t == "card_dealt" and m["to"] in ("player", "banker"):
            self.table_cards.setdefault(m["to"], []).append(m["card"])
        elif t == "round_started":
            self.table_cards = {}
        elif t == "round_result":
            self.results[m["round"]] = m
            self._settle(m["round"], m)
        elif t == "round_voided":
            self.voided[m["round"]] = m
        elif t == "result_corrected":
            self.corrected[m["round"]] = m
            original = self.results.get(m["round"])
            if original is not None:      # the difference is paid or collected; both on record
                for c in correction(self.profile, original, m, self.bets.get(m["round"], [])):
                    self.balances[c["id"]] += c["difference"]
        elif t == "irregularity":
            self.counts[f"irregularity:{m['code']}"] += 1

    def _settle(self, round_no, result):
        for r in settle(self.profile, result, self.bets.get(round_no, [])):
            self.balances[r["id"]] += r["net"]

    def decide(self, m):
        """A computer player's move for the announced hand: it sees its cards, the up card and the
        allowed moves, never the hole card."""
        seat, h, allowed = m["seat"], m["hand"], m["allowed"]
        cards = self.hands[seat][h]
        level = self.levels.get(seat, self.level)
        if level == "easy":
            action = "hit" if Hand(tuple(cards)).total < 17 else "stand"
        else:
            action = self.charts[level].move(Hand(tuple(cards)), self.up, allowed,
                                             self.profile.double_after_split)
        if action == "split":
            c0, c1 = cards
            self.hands[seat][h:h + 1] = [[c0], [c1]]
        self.command({"type": "decision", "seat": seat, "hand": h, "action": action})
