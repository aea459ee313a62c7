"""A blackjack round for the luxury21, european and lucky7 profiles (RULES.md).

Pure and immutable: every function takes a round and returns a new round plus the outputs it
causes. What the round waits for next is derived from its data by `expect`, never stored twice.
"""
from .cards import BJ_VALUE, RED, hand_total
from .expectation import Expect, describe
from .protocol import Rejected

DEALER = -1


class Hand:
    __slots__ = ("cards", "total", "soft", "split", "split_aces", "doubled", "surrendered",
                 "stood", "auto", "want")

    def __init__(self, cards=(), split=False, split_aces=False, doubled=False,
                 surrendered=False, stood=False, auto=False, want=False):
        self.cards = cards
        self.total, self.soft = hand_total(cards)
        self.split = split                # made by a split: never a blackjack
        self.split_aces = split_aces      # one card each, no decision
        self.doubled = doubled
        self.surrendered = surrendered
        self.stood = stood
        self.auto = auto                  # decision timed out: auto-play (hit to 12)
        self.want = want                  # a hit or double asked for, its card not yet here

    def but(self, **kw):
        # Explicit copies: several times faster than a loop over __slots__ (hot path).
        h = Hand.__new__(Hand)
        h.cards = self.cards
        h.total = self.total
        h.soft = self.soft
        h.split = self.split
        h.split_aces = self.split_aces
        h.doubled = self.doubled
        h.surrendered = self.surrendered
        h.stood = self.stood
        h.auto = self.auto
        h.want = self.want
        for k, v in kw.items():
            setattr(h, k, v)
        return h

    def add(self, card):
        cards = self.cards + (card,)
        h = self.but(cards=cards, want=False)
        h.total, h.soft = hand_total(cards)
        return h

    @property
    def natural(self):
        return len(self.cards) == 2 and self.total == 21 and not self.split

    @property
    def needs_card(self):
        return len(self.cards) < 2 or self.want

    @property
    def done(self):
        return (self.surrendered or self.stood or self.total >= 21
                or (self.doubled and not self.want) or (self.split_aces and len(self.cards) >= 2))

    def public(self):
        return {"cards": list(self.cards), "total": self.total, "soft": self.soft}


class Seat:
    __slots__ = ("seat", "hands", "dealt")

    def __init__(self, seat, hands, dealt):
        self.seat = seat      # seat number on the table, 1-7
        self.hands = hands    # tuple of Hand, in playing order
        self.dealt = dealt    # every card dealt to this seat, in dealing order


class Round:
    __slots__ = ("number", "profile", "seats", "dealer", "order", "deal_i", "phase", "cur_s",
                 "cur_h", "revealed", "pre")

    def but(self, **kw):
        r = Round.__new__(Round)
        r.number = self.number
        r.profile = self.profile
        r.seats = self.seats
        r.dealer = self.dealer
        r.order = self.order
        r.deal_i = self.deal_i
        r.phase = self.phase
        r.cur_s = self.cur_s
        r.cur_h = self.cur_h
        r.revealed = self.revealed
        r.pre = self.pre
        for k, v in kw.items():
            setattr(r, k, v)
        return r

    @property
    def hole_index(self):
        return 1 if self.profile.dealer_order == "up_hole" else 0

    @property
    def up_card(self):
        i = 1 - self.hole_index
        return self.dealer[i] if len(self.dealer) > i else None

    def seat_pos(self, seat):
        for i, s in enumerate(self.seats):
            if s.seat == seat:
                return i
        return None


# -- outputs ------------------------------------------------------------------------------------

def _dealt(rnd, card, to, seat, hand, face):
    return {"type": "card_dealt", "round": rnd.number, "card": card, "to": to, "seat": seat,
            "hand": hand, "face": face}


def _awaiting_card(rnd, to, seat, hand, face):
    return {"type": "awaiting_card", "round": rnd.number, "to": to, "seat": seat, "hand": hand,
            "face": face}


# -- what the round waits for -------------------------------------------------------------------

_DEALER_UP, _DEALER_DOWN = Expect.card("dealer", face="up"), Expect.card("dealer", face="down")


def expect(rnd):
    """An AwaitCard, AwaitDecision or AwaitInsurance (`expectation.py`), or None."""
    ph = rnd.phase
    if ph == "deal":
        dest = rnd.order[rnd.deal_i]
        if dest == DEALER:
            face = "down" if len(rnd.dealer) == rnd.hole_index else "up"
            return _DEALER_DOWN if face == "down" else _DEALER_UP
        return Expect.card("seat", rnd.seats[dest].seat, 0, "up")
    if ph == "play":
        s = rnd.seats[rnd.cur_s]
        h = s.hands[rnd.cur_h]
        if h.needs_card:
            return Expect.card("seat", s.seat, rnd.cur_h, "up")
        return Expect.decision(s.seat, rnd.cur_h)
    if ph == "dealer":
        return _DEALER_UP
    if ph == "insurance":
        return Expect.INSURANCE
    return None


def announce(rnd):
    """The output that tells the table and the betting system what the round waits for."""
    e = expect(rnd)
    if e is None:
        return []
    if e.what == "card":
        return [_awaiting_card(rnd, e.to, e.seat, e.hand, e.face)]
    if e.what == "decision":
        s = rnd.seats[rnd.cur_s]
        return [{"type": "awaiting_decision", "round": rnd.number, "seat": e.seat, "hand": e.hand,
                 "allowed": allowed(rnd, s, s.hands[e.hand])}]
    return [_insurance_offered(rnd)]


def allowed(rnd, seat, hand):
    p = rnd.profile
    acts = ["hit", "stand"]
    if len(hand.cards) == 2:
        if not hand.split or p.double_after_split:
            acts.append("double")
        c0, c1 = hand.cards
        if (BJ_VALUE[c0] == BJ_VALUE[c1] and len(seat.hands) < p.max_hands
                and not (hand.split and c0[0] == "A" and not p.resplit_aces)):
            acts.append("split")
        up = rnd.up_card
        if (p.surrender and not hand.split and len(seat.hands) == 1
                and up[0] != "A" and BJ_VALUE[up] != 10):
            acts.append("surrender")
    return acts


# -- the round ----------------------------------------------------------------------------------

def start(profile, number, seats):
    """Betting closed for `seats` (sorted seat numbers): the round and its first outputs."""
    n = len(seats)
    order = tuple(range(n)) + (DEALER,) + tuple(range(n)) + (DEALER,)
    rnd = Round.__new__(Round)
    rnd.number = number
    rnd.profile = profile
    rnd.seats = tuple(Seat(s, (Hand(),), ()) for s in seats)
    rnd.dealer = ()
    rnd.order = order
    rnd.deal_i = 0
    rnd.phase = "deal"
    rnd.cur_s = rnd.cur_h = 0
    rnd.revealed = False
    rnd.pre = ()          # (seat, action), ...: decisions pre-selected before the seat's turn
    out = [{"type": "round_started", "round": number, "game": "blackjack",
            "profile": profile.name, "seats": list(seats)}]
    return rnd, out + announce(rnd)


def on_card(rnd, card):
    """A card from the shoe, when `expect(rnd)` is a card."""
    ph = rnd.phase
    if ph == "deal":
        dest = rnd.order[rnd.deal_i]
        if dest == DEALER:
            down = len(rnd.dealer) == rnd.hole_index
            rnd = rnd.but(dealer=rnd.dealer + (card,), deal_i=rnd.deal_i + 1)
            out = [_dealt(rnd, None if down else card, "dealer", None, None,
                          "down" if down else "up")]
        else:
            s = rnd.seats[dest]
            s2 = Seat(s.seat, (s.hands[0].add(card),), s.dealt + (card,))
            rnd = rnd.but(seats=_put(rnd.seats, dest, s2), deal_i=rnd.deal_i + 1)
            out = [_dealt(rnd, card, "seat", s.seat, 0, "up")]
        if rnd.deal_i < len(rnd.order):
            return rnd, out + announce(rnd)
        return _after_deal(rnd, out)
    if ph == "play":
        s = rnd.seats[rnd.cur_s]
        h = s.hands[rnd.cur_h]
        s2 = Seat(s.seat, _put(s.hands, rnd.cur_h, h.add(card)), s.dealt + (card,))
        rnd = rnd.but(seats=_put(rnd.seats, rnd.cur_s, s2))
        return _advance(rnd, [_dealt(rnd, card, "seat", s.seat, rnd.cur_h, "up")])
    # dealer drawing
    rnd = rnd.but(dealer=rnd.dealer + (card,))
    out = [_dealt(rnd, card, "dealer", None, None, "up")]
    if _dealer_draws(rnd):
        return rnd, out + announce(rnd)
    return _finish(rnd, out)


def on_decision(rnd, seat, hand, action):
    e = expect(rnd)
    if e is None or e.what != "decision":
        raise Rejected("not_awaiting_decision", f"no decision is awaited now (waiting for {describe(e)})")
    if (seat, hand) != (e.seat, e.hand):
        pos = rnd.seat_pos(seat)
        if hand != 0 or pos is None or pos <= rnd.cur_s or action not in ACTIONS_PRE:
            raise Rejected("out_of_turn", f"it is seat {e.seat} hand {e.hand}'s turn, not seat "
                                          f"{seat} hand {hand} (a later seat may pre-select "
                                          f"hit, stand or double for its hand 0)")
        # 000: a player may pre-select before the turn; applied at the turn if still legal
        pre = tuple(x for x in rnd.pre if x[0] != seat) + ((seat, action),)
        return rnd.but(pre=pre), [{"type": "decision_preselected", "round": rnd.number,
                                   "seat": seat, "hand": 0, "action": action}]
    s = rnd.seats[rnd.cur_s]
    h = s.hands[hand]
    acts = allowed(rnd, s, h)
    if action not in acts:
        raise Rejected("not_allowed", f"{action} is not allowed on seat {seat} hand {hand} now "
                                      f"(allowed: {', '.join(acts)})")
    if action == "hit":
        hands = _put(s.hands, hand, h.but(want=True))
    elif action == "stand":
        hands = _put(s.hands, hand, h.but(stood=True))
    elif action == "double":
        hands = _put(s.hands, hand, h.but(doubled=True, want=True))
    elif action == "surrender":
        hands = _put(s.hands, hand, h.but(surrendered=True))
    else:  # split: hand i becomes hands i and i+1, one card each; later hands shift by one
        c0, c1 = h.cards
        aces = c0[0] == "A"
        hands = s.hands[:hand] + (Hand((c0,), split=True, split_aces=aces),
                                  Hand((c1,), split=True, split_aces=aces)) + s.hands[hand + 1:]
    rnd = rnd.but(seats=_put(rnd.seats, rnd.cur_s, Seat(s.seat, hands, s.dealt)))
    return _advance(rnd, [])


ACTIONS_PRE = ("hit", "stand", "double")


def _preselected(rnd, out):
    """At a seat's first decision: its pre-selected action, applied if still legal."""
    s = rnd.seats[rnd.cur_s]
    mine = [a for x, a in rnd.pre if x == s.seat]
    if not mine or rnd.cur_h != 0:
        return None
    rnd = rnd.but(pre=tuple(x for x in rnd.pre if x[0] != s.seat))
    action = mine[0]
    acts = allowed(rnd, s, s.hands[0])
    if action not in acts:
        out.append({"type": "preselection_dropped", "round": rnd.number, "seat": s.seat, "hand": 0,
                    "action": action, "allowed": acts})
        return rnd, out + announce(rnd)
    out.append({"type": "preselection_applied", "round": rnd.number, "seat": s.seat, "hand": 0,
                "action": action})
    rnd, more = on_decision(rnd, s.seat, 0, action)
    return rnd, out + more


def on_timeout(rnd, seat, hand):
    e = expect(rnd)
    if e is None or e.what != "decision" or (seat, hand) != (e.seat, e.hand):
        raise Rejected("out_of_turn", f"no decision of seat {seat} hand {hand} is awaited "
                                      f"(waiting for {describe(e)})")
    s = rnd.seats[rnd.cur_s]
    h = s.hands[hand]
    h = h.but(auto=True) if rnd.profile.timeout_play == "hit_to_12" else h.but(stood=True)
    rnd = rnd.but(seats=_put(rnd.seats, rnd.cur_s, Seat(s.seat, _put(s.hands, hand, h), s.dealt)))
    return _advance(rnd, [])


def on_insurance_closed(rnd):
    if rnd.phase != "insurance":
        raise Rejected("not_awaiting_insurance", f"insurance is not open (waiting for {describe(expect(rnd))})")
    return _peek(rnd.but(phase="play"), [])


def _put(tup, i, v):
    return tup[:i] + (v,) + tup[i + 1:]


def _insurance_offered(rnd):
    even = rnd.profile.even_money
    return {"type": "insurance_offered", "round": rnd.number,
            "insurance": [s.seat for s in rnd.seats if not (even and s.hands[0].natural)],
            "even_money": [s.seat for s in rnd.seats if even and s.hands[0].natural]}


def _after_deal(rnd, out):
    up = rnd.up_card
    if rnd.profile.insurance and up[0] == "A":
        rnd = rnd.but(phase="insurance")
        return rnd, out + [_insurance_offered(rnd)]
    return _peek(rnd.but(phase="play"), out)


def _peek(rnd, out):
    up = rnd.up_card
    kind = "ace" if up[0] == "A" else "ten" if BJ_VALUE[up] == 10 else None
    if kind in rnd.profile.peek:
        bj = hand_total(rnd.dealer)[0] == 21
        # Said at once, so the betting system knows when losing insurance is collected (it never
        # names the hole card: a blackjack is revealed with the card that follows).
        insured = rnd.profile.insurance and kind == "ace"
        peeked = {"type": "peek_result", "round": rnd.number, "blackjack": bj,
                  "insurance": ("won" if bj else "lost") if insured else None}
        if bj:   # after the reveal: nothing before it may depend on the hole card
            rnd = _reveal(rnd, out)
            out.append(peeked)
            return _finish(rnd, out)
        out.append(peeked)
    return _advance(rnd.but(phase="play", cur_s=0, cur_h=0), out)


def _advance(rnd, out):
    """Move the turn to the next hand that needs something, or to the dealer."""
    s_i, h_i = rnd.cur_s, rnd.cur_h
    seats = rnd.seats
    while s_i < len(seats):
        s = seats[s_i]
        if h_i >= len(s.hands):
            s_i, h_i = s_i + 1, 0
            continue
        h = s.hands[h_i]
        if h.needs_card:
            break
        if h.done:
            h_i += 1
            continue
        if h.auto:  # timed out: hit while the total is 11 or less, then stand
            h = h.but(want=True) if h.total <= 11 else h.but(stood=True)
            s = Seat(s.seat, _put(s.hands, h_i, h), s.dealt)
            seats = _put(seats, s_i, s)
            continue
        break
    rnd = rnd.but(seats=seats, cur_s=s_i, cur_h=h_i)
    if s_i < len(seats):
        if rnd.pre and not seats[s_i].hands[h_i].needs_card:
            done = _preselected(rnd, out)
            if done is not None:
                return done
        return rnd, out + announce(rnd)
    rnd = _reveal(rnd, out)
    if _dealer_draws(rnd):
        rnd = rnd.but(phase="dealer")
        return rnd, out + announce(rnd)
    return _finish(rnd, out)


def expose_hole(rnd):
    """The hole card exposed by mistake and kept in play (the supervisor's "continue")."""
    out = []
    return _reveal(rnd, out), out


def _reveal(rnd, out):
    if rnd.revealed:        # exposed earlier (a dealer error kept in play): said once
        return rnd
    out.append({"type": "hole_card_revealed", "round": rnd.number,
                "card": rnd.dealer[rnd.hole_index]})
    return rnd.but(revealed=True)


def _dealer_draws(rnd):
    total, soft = hand_total(rnd.dealer)
    if len(rnd.dealer) == 2 and total == 21:
        return False
    if not (total < 17 or (total == 17 and soft and rnd.profile.dealer_hits_soft_17)):
        return False
    # House rules: no card that cannot change the result.
    return any(not (h.surrendered or h.total > 21 or h.natural)
               for s in rnd.seats for h in s.hands)


def pairs_pattern(a, b, up):
    """The Pairs side bet's highest pattern for a seat's first two cards and the dealer's up card."""
    if a[0] != b[0]:
        return "none"
    if a == b:
        return "suited_trips" if up == a else "perfect"
    return "coloured" if (a in RED) == (b in RED) else "mixed"


def lucky7_count(dealt):
    n = 0
    for c in dealt[:3]:
        if c[0] != "7":
            break
        n += 1
    return n


def _finish(rnd, out):
    rnd = rnd.but(phase="over")
    d_total, _ = hand_total(rnd.dealer)
    d_bj = len(rnd.dealer) == 2 and d_total == 21
    d_bust = d_total > 21
    p = rnd.profile
    seats = []
    for s in rnd.seats:
        hands = []
        for h in s.hands:
            if h.surrendered:
                res = "surrender"
            elif h.total > 21:
                res = "lose"
            elif h.natural:
                res = "push" if d_bj else "blackjack"
            elif d_bj:
                res = "lose"
            elif d_bust or h.total > d_total:
                res = "win"
            else:
                res = "push" if h.total == d_total else "lose"
            hands.append({"cards": list(h.cards), "total": h.total, "soft": h.soft,
                          "outcome": res, "doubled": h.doubled, "split": h.split})
        entry = {"seat": s.seat}
        if p.pairs:
            entry["pairs"] = pairs_pattern(s.dealt[0], s.dealt[1], rnd.up_card)
        if p.lucky7:
            entry["lucky7"] = lucky7_count(s.dealt)
        entry["hands"] = hands
        seats.append(entry)
    out.append({"type": "round_result", "round": rnd.number, "game": "blackjack",
                "profile": p.name,
                "dealer": {"cards": list(rnd.dealer), "total": d_total, "blackjack": d_bj,
                           "bust": d_bust},
                "seats": seats})
    return rnd, out
