"""table-sim's live view: the table as the dealer sees it (seats, cards, totals, what the table
waits for, the panel's lights, the last events), redrawn in place."""
from controller.blackjack import Hand

LIGHTS = ("deal", "decision", "last_round", "shuffle_due", "paused")


def _hand(cards):
    return f"{' '.join(cards):<18} {Hand(tuple(cards)).total:>2}" if cards else "-"


def draw(h):
    bs = h.bs
    done = h.resulted + h.voided
    lines = ["\x1b[2J\x1b[H" + f"dealer-station simulated table: {h.profile.name}   "
             f"{h.progress.line(done) if h.progress else done}: {h.resulted} resulted, "
             f"{h.voided} voided   message {bs.last}",
             f"  broker {h.broker_at}   daemon log {h.log_path}"]
    if h.profile.game == "blackjack":
        lines.append(f"  dealer   {bs.up or '-'} [hole card hidden]")
        for seat, hands in sorted(bs.hands.items()):
            lines.append(f"  seat {seat}   " + "  |  ".join(_hand(x) for x in hands))
    elif h.profile.game == "baccarat":
        for side in ("player", "banker"):
            lines.append(f"  {side:<7} {' '.join(bs.table_cards.get(side, [])) or '-'}")
    lit = h.panel.lights()
    lines.append("")
    lines.append(f"  waiting for: {h.waiting}")
    lines.append("  panel: " + "  ".join(f"[{'*' if lit.get(n) else ' '}] {n}" for n in LIGHTS))
    if bs.balances:
        lines.append("  balances: " + "  ".join(f"{k} {v}" for k, v in sorted(bs.balances.items())))
    lines += ["", *h.view_lines]
    print("\n".join(lines), file=h.out, flush=True)
