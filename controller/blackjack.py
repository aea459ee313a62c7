"""A blackjack round for the luxury21, european and lucky7 profiles (RULES.md).

Pure and immutable: every function takes a round and returns a new round plus the outputs it
causes. What the round waits for next is derived from its data by `expect`, never stored twice.
The round's state is in blackjack_state.py, its end (the reveal, the dealer's drawing rule, the
result) in blackjack_end.py; their names are importable from here as before.
"""
from .blackjack_end import (_dealer_draws, _finish, _reveal, expose_hole,  # noqa: F401
                            lucky7_count, pairs_pattern)
from .blackjack_state import Hand, Round, Seat
from .cards import BJ_VALUE, hand_total
from .expectation import Expect, describe
from .protocol import Rejected

DEALER = -1


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
