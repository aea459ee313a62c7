"""Computer players (RULES.md, european): `easy`, `normal`, `hard`.

Each sees only what a player at the table sees: its own hand, the dealer's up card and the legal
moves. None of them ever knows the hole card. They never take insurance or even money (basic
strategy). The charts are data: `strategy_charts.py`.
"""
from .cards import BJ_VALUE
from .strategy_charts import EUROPEAN, LUXURY21, STANDARD

COLUMNS = ("2", "3", "4", "5", "6", "7", "8", "9", "T", "A")
CODES = {"H", "S", "P", "D", "Ds", "Rh", "Rs", "Ph"}


class ChartError(ValueError):
    pass


def parse_chart(text):
    """A chart's text -> {("hard"|"soft"|"pair", row): {column: code}}."""
    chart = {}
    section = None
    for n, line in enumerate(text.strip().splitlines(), 1):
        cells = line.split()
        if not cells:
            continue
        if cells[0] in ("hard", "soft", "pair"):
            if tuple(cells[1:]) != COLUMNS:
                raise ChartError(f"line {n}: the columns are {' '.join(COLUMNS)}")
            section = cells[0]
            continue
        if section is None or len(cells) != 11:
            raise ChartError(f"line {n}: a row is its label and ten codes: {line!r}")
        bad = [c for c in cells[1:] if c not in CODES]
        if bad:
            raise ChartError(f"line {n}: unknown code {bad[0]!r}")
        chart[(section, cells[0])] = dict(zip(COLUMNS, cells[1:]))
    return chart


def _column(up):
    v = BJ_VALUE[up]
    return "A" if v == 1 else "T" if v == 10 else str(v)


class ChartPlayer:
    """Plays a basic-strategy chart."""

    def __init__(self, chart_text):
        self.chart = parse_chart(chart_text)

    def code(self, hand, up, can_split):
        col = _column(up)
        cards = hand.cards
        if len(cards) == 2 and can_split and BJ_VALUE[cards[0]] == BJ_VALUE[cards[1]]:
            v = BJ_VALUE[cards[0]]
            row = "A" if v == 1 else "T" if v == 10 else str(v)
            return self.chart[("pair", row)][col]
        total = hand.total
        if hand.soft:
            row = str(min(max(total, 13), 20))
            return self.chart[("soft", row)][col]
        row = str(min(max(total, 5), 17))
        return self.chart[("hard", row)][col]

    def decide(self, rnd, seat, hand, allowed):
        h = rnd.seats[rnd.seat_pos(seat)].hands[hand]
        return self.move(h, rnd.up_card, allowed, rnd.profile.double_after_split)

    def move(self, h, up, allowed, double_after_split=True):
        """The chart's move for hand `h` against `up`, among the `allowed` ones."""
        code = self.code(h, up, "split" in allowed)
        if code == "Ph":
            code = "P" if double_after_split else "H"
        if code == "P":
            if "split" in allowed:
                return "split"
            code = self.code(h, up, False)  # cannot split: play the total
        if code in ("D", "Ds"):
            return "double" if "double" in allowed else ("hit" if code == "D" else "stand")
        if code in ("Rh", "Rs"):
            return "surrender" if "surrender" in allowed else ("hit" if code == "Rh" else "stand")
        return "hit" if code == "H" else "stand"


def easy(rnd, seat, hand, allowed):
    """Hits below 17, stands otherwise."""
    return "hit" if rnd.seats[rnd.seat_pos(seat)].hands[hand].total < 17 else "stand"


def chart_for(profile):
    """The full basic-strategy chart of a profile's rules (not of its name)."""
    if "ace" not in profile.peek:
        return EUROPEAN   # no hole card: a dealer blackjack takes doubles and splits
    if profile.surrender:
        return LUXURY21
    return STANDARD


def player(level, profile):
    """The decision function `decide(round, seat, hand, allowed)` of a computer player."""
    if level == "easy":
        return easy
    if level == "normal":
        return ChartPlayer(STANDARD).decide
    if level == "hard":
        return ChartPlayer(chart_for(profile)).decide
    raise ValueError(f"unknown player level {level!r}: easy, normal or hard")
