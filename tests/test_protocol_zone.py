"""A camera's zone (`card_seen.zone`) is one of the table's names, exactly. `str.isdigit()` took
"seat_01" and "seat_\u0661" (an Arabic-Indic 1) for seat 1, zone names nothing else knows, and
"seat_\u00b2" (a superscript 2) failed inside int() with Python's own message."""
from hypothesis import given
from hypothesis import strategies as st

from controller.protocol import Rejected, validate

NAMES = ["dealer", "player", "banker"] + [f"seat_{n}" for n in range(1, 8)]


@given(st.one_of(st.sampled_from(NAMES),
                 st.builds("seat_{}".format, st.text(min_size=1, max_size=3)),
                 st.text(max_size=10)))
def test_a_zone_is_a_name_the_table_knows_or_a_clear_refusal(zone):
    ev = {"type": "card_seen", "card": "Ah", "zone": zone}
    try:
        out = validate(ev)
    except Rejected as e:
        assert zone not in NAMES
        assert e.code == "malformed" and "expected a zone" in e.reason
    else:
        assert zone in NAMES and out["zone"] == zone


def test_digits_that_are_not_ascii_are_not_seats():
    for zone in ("seat_01", "seat_\u0661", "seat_\u00b2", "seat_\uff11"):
        try:
            validate({"type": "card_seen", "card": "Ah", "zone": zone})
        except Rejected as e:
            assert "expected a zone" in e.reason
        else:
            raise AssertionError(f"{zone!r} taken for a zone")
