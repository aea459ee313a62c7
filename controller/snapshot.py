"""A public view of the table for the retained status topic and the dealer's screen: what a
player may see. The hole card appears only once revealed; burned cards never."""
from .table import expect


def public_snapshot(t):
    snap = {"profile": t.profile.name, "game": t.profile.game, "phase": t.phase,
            "paused": t.paused, "rounds": t.rounds, "last_round": t.last_round,
            "shoe": None, "round": None, "waiting_for": _waiting(expect(t))}
    if t.shoe is not None:
        s = t.shoe
        snap["shoe"] = {"shoe": s.number, "cards": s.total, "drawn": s.drawn,
                        "remaining": s.remaining, "burn_complete": s.burn_required is not None
                        and s.burned >= s.burn_required, "cut_card_out": s.cut_at is not None}
    r = t.round
    if r is not None:
        if t.profile.game == "roulette":
            snap["round"] = {"round": r.number}
        elif t.profile.game == "baccarat":
            snap["round"] = {"round": r.number, "player": list(r.player), "banker": list(r.banker)}
        else:
            dealer = list(r.dealer)
            if not r.revealed and len(dealer) > r.hole_index:
                dealer[r.hole_index] = None
            snap["round"] = {
                "round": r.number, "dealer": dealer,
                "seats": [{"seat": s.seat, "hands": [
                    {"cards": list(h.cards), "total": h.total, "soft": h.soft, "doubled": h.doubled,
                     "done": h.done and not h.needs_card} for h in s.hands]} for s in r.seats]}
    return snap


def _waiting(e):
    if e is None:
        return None
    if e[0] == "card":
        return {"what": "card", "to": e[1], "seat": e[2], "hand": e[3], "face": e[4]}
    if e[0] == "decision":
        return {"what": "decision", "seat": e[1], "hand": e[2]}
    if e[0] == "result":
        return {"what": "winning_number"}
    return {"what": "insurance"}


