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
    if t.round is not None:
        snap["round"] = t.game.public_view(t.round)     # the game hides what is face down
    return snap


def _waiting(e):
    if e is None:
        return None
    if e.what == "card":
        return {"what": "card", "to": e.to, "seat": e.seat, "hand": e.hand, "face": e.face}
    if e.what == "decision":
        return {"what": "decision", "seat": e.seat, "hand": e.hand}
    if e.what == "result":
        return {"what": "winning_number"}
    return {"what": "insurance"}
