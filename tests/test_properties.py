"""The engine as a Hypothesis state machine over its inputs, for every profile: cards (the one
expected, one out of turn, a foreign one), unreadable cards and their manual identification,
decisions legal and illegal, timeouts, pause / resume / void, betting_closed, shoe_loaded,
the cut card, the wheel's numbers, and camera sightings (in the right zone, in another zone,
before the shoe's read). Hypothesis draws every input, so a failure shrinks to a short story.

After every step: a rejected input changes nothing (the same table object), every card read is
placed once or raises an irregularity, nothing is announced while paused, and no output mentions
the face-down hole card before it is revealed. At the end of a run: every round's result follows
from the cards it was dealt and the rules.
"""
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, invariant, rule,
                                 run_state_machine_as_test)

from controller import expect, get_profile, new_table, step
from controller.blackjack import allowed
from controller.camera_check import zone_cards
from controller.cards import BJ_VALUE, CARDS, hand_total
from controller.expectation import AwaitCard, AwaitDecision, AwaitInsurance, AwaitResult
from controller.profiles import with_changes
from controller.protocol import ACTIONS, DEALER_ERRORS, DECISIONS
from controller.settlement import correction, money, settle
from controller.table import ANNOUNCEMENTS
from helpers import ready

# Issue #16: the hole card once leaked before its reveal through a camera sighting at the hole's
# place ahead of the shoe's read, the identification of an unreadable hole card, a camera
# sighting of the hole card's code in any zone, and the shoe's own detail on an unreadable hole
# card. All closed (test_no_leak_*); the machine sends those inputs too.
HOLE_LEAKS_FIXED = True
DEVICES = ("shoe", "wheel")

PROFILES = ["luxury21", "european", "lucky7", "punto_banco", "roulette"]
MACHINE = settings(max_examples=30, stateful_step_count=60, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def one_deck(profile):
    """A one-deck copy, so that a foreign card (a read beyond the shoe's copies) and the end of
    the shoe are reachable within a short run."""
    if profile.decks == 0:
        return profile
    cut = profile.cut_card_from_back
    return with_changes(profile, decks=1, cut_card_from_back=None if cut is None else min(cut, 15),
                        cut_card_tolerance=min(profile.cut_card_tolerance, 5))


def hidden_hole(t):
    """(round, card) of the dealer's face-down card while it is not revealed, else None."""
    r = t.round
    if r is None or not hasattr(r, "hole_index") or r.revealed or len(r.dealer) <= r.hole_index:
        return None
    return r.number, r.dealer[r.hole_index]


class EngineMachine(RuleBasedStateMachine):
    profile = None      # set per profile (machine_for)

    def __init__(self):
        super().__init__()
        self.t = new_table(self.profile)
        self.log = []
        self.next_card = None       # the camera saw this card land before the shoe read it

    # -- feeding and the per-step checks ---------------------------------------------------

    def feed(self, ev):
        before = self.t
        t, out = step(before, ev)
        self.log.append((ev, out))
        self.t = t
        rejected = [o for o in out if o["type"] == "rejected"]
        if rejected:
            assert len(out) == 1 and t is before, (ev, out)     # rejection changes nothing
            return out
        if t.paused:
            assert not any(o["type"] in ANNOUNCEMENTS for o in out), (ev, out)
        self.check_card_placed(before, ev, t, out)
        self.check_hole_secret(before, ev, t, out)
        return out

    def check_card_placed(self, before, ev, t, out):
        """A card read leaves the shoe once and goes to exactly one place in its log; the
        identification of an unreadable card takes nothing more from the shoe and logs where
        that card went. Either way something is published about it."""
        kind = ev["type"]
        if kind == "card_seen" and self.profile.card_source == "camera":
            kind = "card" if t.shoe is not before.shoe else None
        if kind not in ("card", "card_unreadable") or before.shoe is None:
            return
        kinds = [o["type"] for o in out]
        identified = "card_identified" in kinds
        if identified:
            assert kind == "card" and ev.get("source", "camera") != "shoe"
            assert t.shoe.drawn == before.shoe.drawn and t.shoe.unknown == before.shoe.unknown - 1
            assert t.shoe.log_len == before.shoe.log_len + 1
            assert sum(p.kind == "misread" for p in t.pending) == \
                sum(p.kind == "misread" for p in before.pending) - 1
        else:
            assert t.shoe.log_len == before.shoe.log_len + 1, (ev, out)
            assert t.shoe.drawn == before.shoe.drawn + 1, (ev, out)
            assert "card_dealt" in kinds or "irregularity" in kinds, (ev, out)

    def check_hole_secret(self, before, ev, t, out):
        """Nothing published before the reveal mentions the face-down card. Its code may appear
        for the face-up copies of it, and as the echo of the input's own card (another copy,
        read for another place), but never from the input that placed the hole card, nor from a
        camera report of the dealer's zone."""
        hole = hidden_hole(before) or hidden_hole(t)
        if hole is None:
            return
        number, card = hole
        placed_now = hidden_hole(before) is None
        echo = (ev.get("card") == card and not placed_now
                and not (ev["type"] == "card_seen" and ev["zone"] == "dealer"))
        code = json.dumps(card)
        # Other copies of that card may be public (several decks): face up on the table, or read
        # out of turn and held for resume (its summary lists them). The code may appear as often
        # as they do, and once more as the echo.
        visible = max(sum(cards.count(card) for cards in zone_cards(x).values())
                      + sum(p.card == card for p in x.pending if p.kind in ("unexpected", "foreign"))
                      for x in (before, t))
        for o in out:
            if o["type"] == "hole_card_revealed" and o["round"] == number:
                return
            if json.dumps(o).count(code) > visible + echo:
                raise AssertionError(f"the hole card {card} of round {number} leaked before its "
                                     f"reveal: input {ev} published {o}")

    @invariant()
    def expectation_is_typed(self):
        e = expect(self.t)
        assert e is None or isinstance(e, (AwaitCard, AwaitDecision, AwaitInsurance, AwaitResult))
        if self.t.paused:
            assert e is None

    def teardown(self):
        check_rounds(self.profile, self.log)
        check_settlement(self.profile, self.log)
        if self.t.shoe is not None:
            for _, card, source, dest in self.t.shoe.entries():
                assert dest in ("burn", "dealer", "player", "banker", "unexpected", "foreign",
                                "unreadable", "after_end") or dest.startswith("seat:"), dest

    # -- helpers --------------------------------------------------------------------------------

    @property
    def cards(self):
        return self.profile.decks > 0

    def available(self):
        """Cards the shoe may still hold (not foreign)."""
        s = self.t.shoe
        return [c for c in CARDS if s is None or not s.is_foreign(c)]

    def zones(self):
        if self.profile.seats:
            return ["dealer"] + [f"seat_{i}" for i in range(1, self.profile.seats + 1)]
        return ["player", "banker"]

    def expected_card(self):
        e = expect(self.t)
        return e if e is not None and e.what == "card" else None

    def _leak_path(self, ev):
        """The inputs that reach a known hole-card leak (issue #16), while it is open."""
        if HOLE_LEAKS_FIXED or not self.profile.seats:
            return False
        t = self.t
        e = self.expected_card()
        hole = hidden_hole(t)
        oldest = next((p for p in t.pending if p.kind == "misread"), None)
        hole_misread = (oldest is not None and oldest.expect is not None
                        and oldest.expect.what == "card" and oldest.expect.face == "down")
        if ev["type"] == "card_seen" and hole is not None and ev["card"] == hole[1]:
            return True         # echoed in source_mismatch's `seen`, at once or on the shoe's read
        if ev["type"] == "card_seen" and ev["zone"] == "dealer":
            return (e is not None and e.to == "dealer" and e.face == "down") or (t.paused and hole_misread)
        if ev["type"] == "card" and ev.get("source") in ("manual", "camera"):
            return t.paused and hole_misread
        return False

    def feed_unless_leak(self, ev):
        if not self._leak_path(ev):
            self.feed(ev)

    # -- the rules: the table's natural course, and mischief ------------------------------------
    # Hypothesis picks among enabled rules evenly; `advance` plays up to ten inputs of the natural
    # course per call, so rounds get played between the irregular inputs.

    @rule(data=st.data())
    def advance(self, data):
        for _ in range(data.draw(st.integers(1, 10), label="steps")):
            ev = self.natural(data)
            if ev is None:
                return
            self.feed(ev)

    def natural(self, data):
        """The input a dealer, pit boss and players would give next, or None."""
        t = self.t
        if t.paused:
            misread = next((p for p in t.pending if p.kind == "misread"), None)
            how = data.draw(st.sampled_from(["resume", "void", "identify", "camera"]), label="boss")
            if how == "void" and t.round is not None:
                return {"type": "void_round", "reason": "pit boss"}
            avail = self.available()
            if how in ("identify", "camera") and misread is not None and avail:
                card = data.draw(st.sampled_from(avail), label="identified")
                where = misread.expect
                ev = ({"type": "card", "card": card, "source": "manual"} if how == "identify"
                      or where is None or where.what != "card" or where.to == "burn"
                      else {"type": "card_seen", "card": card, "zone": where.zone})
                if not self._leak_path(ev):
                    return ev
            return {"type": "resume"}
        if self.cards and (t.shoe is None or t.phase == "shuffle_due"):
            self.next_card = None
            return {"type": "shoe_loaded"}
        e = expect(t)
        if e is None:
            if t.round is not None or t.phase not in ("ready",):
                return None
            return self.closing(data, valid=True)
        if e.what == "card":
            avail = self.available()
            if not avail:
                return None
            card = (self.next_card if self.next_card in avail
                    else data.draw(st.sampled_from(avail), label="card"))
            self.next_card = None
            return {"type": "card", "card": card}
        if e.what == "decision":
            rnd = t.round
            s = rnd.seats[rnd.cur_s]
            if data.draw(st.integers(0, 9), label="timeout?") == 0:
                return {"type": "decision_timeout", "seat": e.seat, "hand": e.hand}
            return {"type": "decision", "seat": e.seat, "hand": e.hand,
                    "action": data.draw(st.sampled_from(allowed(rnd, s, s.hands[e.hand])),
                                        label="action")}
        if e.what == "insurance":
            return {"type": "insurance_closed"}
        return {"type": "winning_number", "number": data.draw(st.integers(0, 36), label="number")}

    def closing(self, data, valid):
        p = self.profile
        if not p.seats:
            return {"type": "betting_closed"}
        seats = st.lists(st.integers(1, p.seats), min_size=1, max_size=p.seats, unique=True)
        if not valid:
            seats = seats | st.just([0]) | st.just([p.seats + 1])
        return {"type": "betting_closed", "seats": sorted(data.draw(seats, label="seats"))}

    @rule(data=st.data())
    def mischief(self, data):
        kinds = ["betting_closed", "decision", "decision_timeout", "insurance_closed", "pause",
                 "resume", "void_round"]
        if self.cards:
            kinds += ["shoe_loaded", "cut_card", "card_out_of_turn", "card_unreadable",
                      "manual_identification", "seen_anywhere"]
            if self.t.shoe is not None and any(self.t.shoe.is_foreign(c) for c in CARDS):
                kinds.append("foreign_card")
            if self.placed():
                kinds += ["seen_where_placed", "seen_in_another_zone"]
            e = self.expected_card()
            if e is not None and e.to != "burn":
                kinds.append("seen_before_the_shoe_read")
        else:
            kinds += ["winning_number", "miss_spin", "no_spin", "manual_number",
                      "number_mismatch"]
        # the house procedures (issue #18), for every profile (most are refused somewhere)
        kinds += ["device_fault", "device_restored", "dealer_error", "supervisor_decision",
                  "correct_result", "shoe_loaded_inspected"]
        kind = data.draw(st.sampled_from(kinds), label="mischief")
        ev = getattr(self, "m_" + kind)(data)
        if ev is not None and not self._leak_path(ev):
            self.feed(ev)
            if kind == "seen_before_the_shoe_read" and data.draw(st.booleans(), label="same?"):
                self.next_card = ev["card"]     # the shoe then reads the card the camera saw

    # each m_* returns one input (any may be rejected: that is checked too)

    def m_shoe_loaded(self, data):
        self.next_card = None
        return {"type": "shoe_loaded"}

    def m_cut_card(self, data):
        return {"type": "cut_card"}

    def m_card_out_of_turn(self, data):
        """A card whenever: out of turn when nothing (or a decision) is awaited."""
        avail = self.available()
        return {"type": "card", "card": data.draw(st.sampled_from(avail))} if avail else None

    def m_foreign_card(self, data):
        foreign = [c for c in CARDS if self.t.shoe.is_foreign(c)]
        return {"type": "card", "card": data.draw(st.sampled_from(foreign))}

    def m_card_unreadable(self, data):
        return {"type": "card_unreadable"}

    def m_manual_identification(self, data):
        avail = self.available() or list(CARDS)
        return {"type": "card", "card": data.draw(st.sampled_from(avail)), "source": "manual"}

    def m_betting_closed(self, data):
        return self.closing(data, valid=False)

    def m_decision(self, data):
        """Any decision: mostly illegal (out of turn, not allowed, no decision awaited)."""
        return {"type": "decision", "seat": data.draw(st.integers(0, 8)),
                "hand": data.draw(st.integers(0, 3)), "action": data.draw(st.sampled_from(ACTIONS))}

    def m_decision_timeout(self, data):
        return {"type": "decision_timeout", "seat": data.draw(st.integers(0, 8)),
                "hand": data.draw(st.integers(0, 3))}

    def m_insurance_closed(self, data):
        return {"type": "insurance_closed"}

    def m_pause(self, data):
        return {"type": "pause", "reason": "pit boss"}

    def m_resume(self, data):
        return {"type": "resume"}

    def m_void_round(self, data):
        return {"type": "void_round", "reason": "pit boss"}

    def m_winning_number(self, data):
        spin = data.draw(st.none() | st.integers(0, 999))
        return {"type": "winning_number", "number": data.draw(st.integers(0, 36)),
                **({} if spin is None else {"spin": spin})}

    def m_miss_spin(self, data):
        return {"type": "miss_spin"}

    # -- the procedures ---------------------------------------------------------------------

    def m_device_fault(self, data):
        return {"type": "device_fault", "device": data.draw(st.sampled_from(DEVICES)),
                "reason": "unplugged"}

    def m_device_restored(self, data):
        return {"type": "device_restored", "device": data.draw(st.sampled_from(DEVICES))}

    def m_dealer_error(self, data):
        return {"type": "dealer_error", "error": data.draw(st.sampled_from(DEALER_ERRORS)),
                "by": "dealer", **data.draw(st.sampled_from([{}, {"detail": "a card flashed"}]))}

    def m_supervisor_decision(self, data):
        return {"type": "supervisor_decision", "decision": data.draw(st.sampled_from(DECISIONS)),
                "reason": "seen on camera", "by": "super"}

    def m_correct_result(self, data):
        """A correction of any round (mostly one with a result), to a number or a void."""
        results = [(o["round"], i) for i, (_, out) in enumerate(self.log) for o in out
                   if o["type"] == "round_result"]
        rnd = (data.draw(st.sampled_from(results))[0] if results and data.draw(st.booleans())
               else data.draw(st.integers(1, 5)))
        fix = data.draw(st.sampled_from([{"void": True}, {"number": 17}, {}, {"void": True,
                                                                          "number": 3}]))
        return {"type": "correct_result", "round": rnd, "seq": data.draw(st.integers(1, 500)),
                "reason": "announced wrongly", "by": "super", **fix}

    def m_shoe_loaded_inspected(self, data):
        self.next_card = None
        return {"type": "shoe_loaded", "inspection": data.draw(st.sampled_from(["scanner",
                                                                                "manual"])),
                **data.draw(st.sampled_from([{}, {"confirmed_by": "super"}]))}

    def m_no_spin(self, data):
        return {"type": "no_spin", "reason": "ball left the wheel", "by": "dealer"}

    def m_manual_number(self, data):
        return {"type": "manual_number", "number": data.draw(st.integers(0, 36)),
                "reason": "reader fault", "by": "super"}

    def m_number_mismatch(self, data):
        a = data.draw(st.integers(0, 36))
        return {"type": "number_mismatch", "first": a, "then": (a + 1) % 37}

    def placed(self):
        t = self.t
        zc = zone_cards(t) if t.round is not None else dict(t.finished[1]) if t.finished else {}
        return [(z, c) for z, cards in zc.items() for c in cards]

    def m_seen_where_placed(self, data):
        zone, card = data.draw(st.sampled_from(self.placed()))
        return {"type": "card_seen", "card": card, "zone": zone}

    def m_seen_in_another_zone(self, data):
        zone, card = data.draw(st.sampled_from(self.placed()))
        other = data.draw(st.sampled_from([z for z in self.zones() if z != zone]))
        return {"type": "card_seen", "card": card, "zone": other}

    def m_seen_before_the_shoe_read(self, data):
        """The camera sees the card land before the shoe's read arrives; the shoe then reads
        the same card, or (a fault) another."""
        avail = self.available()
        if not avail:
            return None
        return {"type": "card_seen", "card": data.draw(st.sampled_from(avail)),
                "zone": self.expected_card().zone}

    def m_seen_anywhere(self, data):
        return {"type": "card_seen", "card": data.draw(st.sampled_from(CARDS)),
                "zone": data.draw(st.sampled_from(self.zones()))}


def machine_for(profile):
    return type(f"Machine_{profile.name}_{profile.decks}", (EngineMachine,), {"profile": profile})


CASES = [(n, 1) for n in PROFILES] + [("luxury21", None), ("punto_banco", None)]


@pytest.mark.parametrize("name,decks", CASES)
def test_engine_state_machine(name, decks):
    p = get_profile(name)
    run_state_machine_as_test(machine_for(one_deck(p) if decks == 1 else p), settings=MACHINE)


def test_engine_state_machine_camera_as_card_source():
    p = with_changes(one_deck(get_profile("luxury21")), card_source="camera")
    run_state_machine_as_test(machine_for(p), settings=MACHINE)


# -- the rules a finished round must obey -----------------------------------------------------

def standard_bets(profile):
    """One bet of every simple kind the profile's game takes, on every seat."""
    if profile.game == "roulette":
        return [{"id": "red", "kind": "red", "amount": 10},
                {"id": "zero", "kind": "straight", "numbers": [0], "amount": 10},
                {"id": "trio", "kind": "trio", "numbers": [0, 1, 2], "amount": 10}]
    if profile.game == "baccarat":
        return [{"id": k, "kind": k, "amount": 100} for k in ("player", "banker", "tie")]
    return [{"id": f"s{s}", "kind": "seat", "seat": s, "amount": 100,
             **({"pairs": 10} if profile.pairs else {})} for s in range(1, profile.seats + 1)]


def check_settlement(profile, log):
    """Every published result settles the standard bets (seats that took no cards refunded), a
    void refunds every stake, and a correction's difference is exactly the new settlement less
    the original one (the original stays on record)."""
    bets = standard_bets(profile)
    stakes = {b["id"]: money(b["amount"] + b.get("pairs", 0)) for b in bets}
    results = {}
    for _, out in log:
        for o in out:
            if o["type"] == "round_result":
                results[o["round"]] = o
                for r in settle(profile, o, bets):
                    assert r["returned"] >= 0 and r["net"] == r["returned"] - r["staked"]
            elif o["type"] == "round_voided":
                assert all(r["returned"] == stakes[r["id"]] for r in settle(profile, o, bets))
            elif o["type"] == "result_corrected":
                original = results.get(o["round"])   # a correction refers to a published result
                if original is None:
                    continue    # a voided round "corrected": see test_a_voided_round_has_no_result_to_correct
                now = settle(profile, o, bets)
                for c, r in zip(correction(profile, original, o, bets), now):
                    assert c["now"] == r["returned"]
                    assert c["was"] + c["difference"] == c["now"]
                if o["voided"]:
                    assert all(r["returned"] == stakes[r["id"]] for r in now)


def check_rounds(profile, log):
    outs = [o for _, out in log for o in out]
    dealt = {}
    hole = {}
    for o in outs:
        if o["type"] == "card_dealt" and o["round"] is not None:
            dealt.setdefault(o["round"], []).append(o)
        if o["type"] == "card_replaced":      # the last card dealt went back to the discard rack
            dealt[o["round"]].pop()
        if o["type"] == "hole_card_revealed":
            hole[o["round"]] = o["card"]
    voided = {o["round"] for o in outs if o["type"] == "round_voided"}
    for res in (o for o in outs if o["type"] == "round_result"):
        assert res["round"] not in voided
        if res["game"] == "roulette":
            continue
        cards = dealt[res["round"]]
        if res["game"] == "baccarat":
            assert [c["card"] for c in cards if c["to"] == "player"] == res["player"]["cards"]
            assert [c["card"] for c in cards if c["to"] == "banker"] == res["banker"]["cards"]
            continue
        d = [hole[res["round"]] if c["card"] is None else c["card"] for c in cards if c["to"] == "dealer"]
        assert d == res["dealer"]["cards"]
        total, soft = hand_total(d)
        assert (total, total > 21) == (res["dealer"]["total"], res["dealer"]["bust"])
        if len(d) > 2:
            assert hand_total(d[:-1])[0] < 17  # drew only below 17 (S17 in every profile)
        live = [h for s in res["seats"] for h in s["hands"]
                if h["outcome"] not in ("surrender",) and h["total"] <= 21
                and not (h["outcome"] in ("blackjack", "push") and len(h["cards"]) == 2
                         and h["total"] == 21 and not h["split"])]
        if live and not res["dealer"]["blackjack"]:
            assert total >= 17  # the dealer draws to 17 while any hand depends on its total
        elif len(d) > 2:
            raise AssertionError(f"dealer drew with no hand depending on it: {res}")
        for s in res["seats"]:
            seat_cards = [c["card"] for c in cards if c["to"] == "seat" and c["seat"] == s["seat"]]
            assert sorted(seat_cards) == sorted(x for h in s["hands"] for x in h["cards"])
            assert len(s["hands"]) <= profile.max_hands
            for h in s["hands"]:
                tot, sft = hand_total(h["cards"])
                assert (tot, sft) == (h["total"], h["soft"])
                assert hand_total(h["cards"][:-1])[0] < 21 or len(h["cards"]) <= 2
                if h["doubled"]:
                    assert len(h["cards"]) == 3
                if h["split"] and h["cards"][0][0] == "A":
                    assert len(h["cards"]) == 2
                assert h["outcome"] == _outcome(h, res["dealer"])


def _outcome(h, dealer):
    natural = len(h["cards"]) == 2 and h["total"] == 21 and not h["split"]
    if h["outcome"] == "surrender":
        return "surrender"
    if h["total"] > 21:
        return "lose"
    if natural:
        return "push" if dealer["blackjack"] else "blackjack"
    if dealer["blackjack"]:
        return "lose"
    if dealer["bust"] or h["total"] > dealer["total"]:
        return "win"
    return "push" if h["total"] == dealer["total"] else "lose"


# -- the hole card, by difference ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["luxury21", "european", "lucky7"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False), other=st.sampled_from(CARDS))
def test_the_hole_card_cannot_be_learned_before_it_is_revealed(name, rng, other):
    """Two shoes that differ only in the first round's hole card publish the same outputs up to
    the reveal: nothing published before it depends on the hole card. (Hypothesis' random
    shrinks, unlike a drawn seed.)"""
    profile = get_profile(name)
    cards = list(CARDS) * profile.decks
    rng.shuffle(cards)
    state = rng.getstate()
    burn = 1 + BJ_VALUE[cards[0]] if profile.burn else 0
    seats = profile.seats
    hole = burn + (seats * 2 + 1 if profile.dealer_order == "up_hole" else seats)
    changed = list(cards)
    changed[hole] = other
    runs = []
    for c in (cards, changed):
        rng.setstate(state)
        t = new_table(profile)
        seen = []
        i = 0
        ev = {"type": "shoe_loaded"}
        while True:
            t, out = step(t, ev)
            kinds = [o["type"] for o in out]
            if "hole_card_revealed" in kinds:
                seen.extend(out[:kinds.index("hole_card_revealed")])
                break
            seen.extend(out)
            e = expect(t)
            if e is None:
                ev = {"type": "betting_closed", "seats": list(range(1, profile.seats + 1))}
            elif e.what == "card":
                ev = {"type": "card", "card": c[i]}
                i += 1
            elif e.what == "decision":
                rnd = t.round
                s = rnd.seats[rnd.cur_s]
                ev = {"type": "decision", "seat": e.seat, "hand": e.hand,
                      "action": rng.choice(allowed(rnd, s, s.hands[e.hand]))}
            else:
                ev = {"type": "insurance_closed"}
        runs.append(seen)
    # With a peek, a dealer blackjack is revealed at once: that run is shorter. Up to its reveal,
    # both published exactly the same.
    a, b = runs
    n = min(len(a), len(b))
    assert n > 0 and a[:n] == b[:n]


# -- the paths the hole card once leaked by (issue #16), each closed -----------------------------------------------------------

def _to_the_hole(*extra):
    """luxury21, seat 1 in play, dealt up to the hole card (face down, dealt next)."""
    r = ready("luxury21")
    r.close(1)
    r.feed("9c", "5d", "8h", *extra)
    assert expect(r.table) == ("card", "dealer", None, None, "down") or extra
    return r


def _published(outputs, card):
    return [o for o in outputs if json.dumps(card) in json.dumps(o)]


def test_no_leak_camera_sees_the_hole_place_first_and_the_shoe_confirms():
    r = _to_the_hole()
    r.feed({"type": "card_seen", "zone": "dealer", "card": "Ks"})
    assert not _published(r.feed("Ks"), "Ks")           # card_confirmed, zone dealer, Ks


def test_no_leak_camera_sees_the_hole_place_first_and_the_shoe_disagrees():
    r = _to_the_hole()
    r.feed({"type": "card_seen", "zone": "dealer", "card": "2h"})
    assert not _published(r.feed("Ks"), "Ks")           # source_mismatch, read: [Ks]


def test_no_leak_camera_reports_the_hole_card_in_the_dealer_zone():
    r = _to_the_hole("Ks")
    assert not _published(r.feed({"type": "card_seen", "zone": "dealer", "card": "Ks"}), "Ks")


def test_no_leak_an_unreadable_hole_card_identified_by_hand():
    r = _to_the_hole({"type": "card_unreadable"})
    assert not _published(r.feed({"type": "card", "card": "Ks", "source": "manual"}), "Ks")


def test_no_leak_the_shoe_s_detail_on_an_unreadable_hole_card():
    r = _to_the_hole()
    assert not _published(r.feed({"type": "card_unreadable", "detail": {"partial": "Ks"}}), "Ks")


def test_no_leak_a_misread_s_detail_while_the_hole_card_lies_unrevealed():
    """A reader's detail arriving after the hole card was dealt (a shoe frame conflicting with an
    earlier number carries the card that frame read) is not published before the reveal."""
    r = _to_the_hole("Ks")
    assert expect(r.table).what == "decision"
    out = r.feed({"type": "card_unreadable", "detail": {"seq": 11, "read": "Ks",
                                                        "reason": "sequence conflict: number already used"}})
    assert [o["code"] for o in out if o["type"] == "irregularity"] == ["misread"]
    assert not _published(out, "Ks")


def test_no_leak_the_shoe_frames_of_a_conflict_under_the_hole_card_s_number():
    """The same path from the shoe's bytes: the hole card's frame comes again under its number
    with other content (a re-read on a resend); the driver reports the conflict with the card it
    read, and the engine publishes a misread that must not name it."""
    from drivers import shoe_protocol as sp
    from drivers.events import CardRead, CardUnreadable
    from drivers.shoe import ShoeSession
    got = []
    sess = ShoeSession(got.append, lambda b: None)
    sess.connected(0.0)
    sess.data(sp.encode("HELLO", 0, "X", "1", "S", 1), 0.0)
    r = _to_the_hole()
    sess.data(sp.encode("CARD", 1, "Ks", 98), 0.1)            # the hole card, face down
    sess.data(sp.encode("CARD", 1, "Ks", 97), 0.2)            # its number again, other content
    reads = [e for e in got if isinstance(e, (CardRead, CardUnreadable))]
    assert [type(e) for e in reads] == [CardRead, CardUnreadable]
    assert reads[1].detail.get("read") == "Ks"
    out = r.feed(reads[0].as_input())
    assert not _published(out, "Ks") and expect(r.table).what == "decision"
    out = r.feed(reads[1].as_input())
    assert [o["code"] for o in out if o["type"] == "irregularity"] == ["misread"]
    assert not _published(out, "Ks")


def test_no_leak_a_camera_sighting_of_the_hole_code_ahead_of_a_seat_card():
    """Found by the state machine (lucky7: the hole card is dealt before the seats' second
    cards): the camera reports the hole card's code at a seat before the shoe's read there; the
    shoe reads another card and the source_mismatch publishes what the camera saw."""
    r = ready("lucky7")
    seat = r.table.profile.seats                         # lucky7 seats 3 (004)
    r.close(seat)
    r.feed("7c", "4d")                                   # the seat, then the hole card
    assert expect(r.table) == ("card", "seat", seat, 0, "up")
    r.feed({"type": "card_seen", "zone": f"seat_{seat}", "card": "4d"})
    assert not _published(r.feed("7s"), "4d")            # source_mismatch, seen: 4d
