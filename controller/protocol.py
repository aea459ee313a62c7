"""Event protocol v1: the inputs the table accepts, validated before the engine sees them.

Every input is one JSON object with a `type`; `id` (a command's id) and `ts` (a timestamp) are
optional envelope fields that the engine copies onto what the input causes. A field the schema
does not know is an error, never silently dropped.
"""
from .cards import INDEX

VERSION = 1
SOURCES = ("shoe", "camera", "manual")
ACTIONS = ("hit", "stand", "double", "split", "surrender")
ENVELOPE = ("type", "id", "ts")
DEALER_ERRORS = ("exposed_card", "exposed_hole_card", "wrong_place", "misdeal")
DECISIONS = ("continue", "replace", "void")


class Rejected(Exception):
    """An input that is malformed or not allowed now. Carries a machine code and a reason."""

    def __init__(self, code, reason):
        super().__init__(reason)
        self.code = code
        self.reason = reason


def _card(v):
    if isinstance(v, str) and v in INDEX:
        return v
    raise ValueError(f"not a card: {v!r} (rank A 2-9 T J Q K then suit s h d c, e.g. 'As')")


def _source(v):
    if v in SOURCES:
        return v
    raise ValueError(f"must be one of {', '.join(SOURCES)}, got {v!r}")


def _seat(v):
    # a table has at most 7 seats (profiles.py), numbered from 1 (zones seat_1..seat_7)
    if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 7:
        return v
    raise ValueError(f"expected a seat number 1-7 (an integer), got {v!r}")


def _hand(v):
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 99:
        return v
    raise ValueError(f"expected a hand index 0-99 (an integer, 0: the seat's first hand), "
                     f"got {v!r}")


def _action(v):
    if v in ACTIONS:
        return v
    raise ValueError(f"must be one of {', '.join(ACTIONS)}, got {v!r}")


def _text(v):
    if isinstance(v, str) and 0 < len(v) <= 500:
        return v
    raise ValueError(f"expected a non-empty string of at most 500 characters, got {v!r}")


def _seats(v):
    if not isinstance(v, list) or not v or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in v):
        raise ValueError(f"expected a non-empty list of seat numbers, got {v!r}")
    if len(set(v)) != len(v):
        raise ValueError(f"a seat is listed twice: {v!r}")
    return sorted(v)


# exact names: str.isdigit() takes "seat_01" and "seat_\u0661" (an Arabic-Indic 1) for seat 1,
# zone names nothing else knows, and "seat_\u00b2" (a superscript 2) raised int()'s own error
ZONES = ("dealer", "player", "banker") + tuple(f"seat_{n}" for n in range(1, 8))


def _zone(v):
    if isinstance(v, str) and v in ZONES:
        return v
    raise ValueError(f"expected a zone: dealer, player, banker or seat_1..seat_7, got {v!r}")


def _pocket(v):
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 36:
        return v
    raise ValueError(f"expected a pocket 0-36, got {v!r}")


def _spin(v):
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 999:
        return v
    raise ValueError(f"expected the wheel's spin number 0-999, got {v!r}")


def _staff(v):
    if isinstance(v, str) and 0 < len(v) <= 64 and v.isprintable():
        return v
    raise ValueError(f"expected a staff id (1-64 printable characters), got {v!r}")


def _revolutions(v):
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 99:
        return v
    raise ValueError(f"expected a count of revolutions 0-99, got {v!r}")


def _seq(v):
    if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 2 ** 53 - 1:
        return v
    raise ValueError(f"expected a published event's sequence number (1 or more), got {v!r}")


def _round_no(v):
    if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 2 ** 53 - 1:
        return v
    raise ValueError(f"expected a round number (1 or more), got {v!r}")


def _true(v):
    if v is True:
        return v
    raise ValueError(f"expected true (leave it out otherwise), got {v!r}")


def _one_of(*choices):
    def check(v):
        if v in choices:
            return v
        raise ValueError(f"must be one of {', '.join(choices)}, got {v!r}")
    return check


def _word(v):
    if isinstance(v, str) and 0 < len(v) <= 32 and v.replace("_", "").isalnum():
        return v
    raise ValueError(f"expected a name of 1-32 letters, digits or _, got {v!r}")


def _seconds(v):
    if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1e9:
        return float(v)
    raise ValueError(f"expected seconds 0-1e9, got {v!r}")


def _detail(v):
    if isinstance(v, (str, dict)):
        return v
    raise ValueError(f"expected a string or an object, got {v!r}")


# type: {field: (validator, required, default)}
SCHEMAS = {
    # confirmed_by: the supervisor who confirmed a manual inspection (data about the inspection;
    # who sent the command is the rights' business, station.py, never the engine's)
    "shoe_loaded": {"inspection": (_one_of("scanner", "manual"), False, None),
                    "confirmed_by": (_staff, False, None)},
    "card": {"card": (_card, True, None), "source": (_source, False, "shoe")},
    "card_unreadable": {"source": (_source, False, "shoe"), "detail": (_detail, False, None)},
    "cut_card": {},
    "betting_closed": {"seats": (_seats, False, None)},
    "decision": {"seat": (_seat, True, None), "hand": (_hand, True, None),
                 "action": (_action, True, None)},
    "insurance_closed": {},
    "decision_timeout": {"seat": (_seat, True, None), "hand": (_hand, True, None)},
    "pause": {"reason": (_text, True, None)},
    "resume": {},
    "void_round": {"reason": (_text, True, None)},
    "card_seen": {"card": (_card, True, None), "zone": (_zone, True, None)},
    "winning_number": {"number": (_pocket, True, None), "spin": (_spin, False, None),
                       "revolutions": (_revolutions, False, None)},
    "miss_spin": {"spin": (_spin, False, None), "revolutions": (_revolutions, False, None)},
    # the procedures of issue #18 (RULES.md: no-spin, device faults, dealer errors, corrections);
    # who may send each: controller/rights.py
    "no_spin": {"reason": (_text, True, None), "by": (_staff, True, None),
                "spin": (_spin, False, None)},
    "number_mismatch": {"first": (_pocket, True, None), "then": (_pocket, True, None),
                        "spin": (_spin, False, None)},
    "manual_number": {"number": (_pocket, True, None), "reason": (_text, True, None),
                      "by": (_staff, True, None)},
    "correct_result": {"round": (_round_no, True, None), "seq": (_seq, True, None),
                       "reason": (_text, True, None), "by": (_staff, True, None),
                       "number": (_pocket, False, None), "void": (_true, False, None)},
    "device_fault": {"device": (_word, True, None), "reason": (_text, True, None)},
    "device_restored": {"device": (_word, True, None)},
    # an outage across a restart the station could not count (controller/outage.py)
    "outage_unmeasured": {"reason": (_text, True, None)},
    "outage_measured": {"seconds": (_seconds, True, None), "limit": (_seconds, True, None)},
    "dealer_error": {"error": (_one_of(*DEALER_ERRORS), True, None), "by": (_staff, True, None),
                     "detail": (_text, False, None)},
    "supervisor_decision": {"decision": (_one_of(*DECISIONS), True, None),
                            "reason": (_text, True, None), "by": (_staff, True, None)},
}


def validate(event):
    """Return the input with defaults filled in, or raise Rejected(code="malformed")."""
    if type(event) is not dict:
        raise Rejected("malformed", f"an input is a JSON object, got {type(event).__name__}")
    kind = event.get("type")
    schema = SCHEMAS.get(kind) if isinstance(kind, str) else None
    if schema is None:
        raise Rejected("malformed", f"unknown input type {kind!r}; known: {', '.join(SCHEMAS)}")
    out = {"type": kind}
    seen = 1
    for key, (check, required, default) in schema.items():
        if key in event:
            seen += 1
            try:
                out[key] = check(event[key])
            except ValueError as e:
                raise Rejected("malformed", f"{kind}.{key}: {e}") from None
        elif required:
            raise Rejected("malformed", f"{kind}.{key}: missing")
        elif default is not None:
            out[key] = default
    if seen != len(event):  # envelope fields, or a field the schema does not know
        for key, value in event.items():
            if key in schema or key == "type":
                continue
            if key == "id":
                if not (isinstance(value, (str, int)) and not isinstance(value, bool)):
                    raise Rejected("malformed", f"{kind}.id: expected a string or integer")
                out["id"] = value
            elif key == "ts":
                if not (isinstance(value, (str, int, float)) and not isinstance(value, bool)):
                    raise Rejected("malformed", f"{kind}.ts: expected a number or a string")
                out["ts"] = value
            else:
                raise Rejected("malformed", f"{kind}.{key}: unknown field")
    return out
