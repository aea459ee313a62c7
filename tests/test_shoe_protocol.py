"""Shoe protocol v1 framing: checksum, encoding, and a parser that never raises."""
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from drivers import shoe_protocol as sp


def test_crc16_ccitt_false_check_value_and_the_documented_example():
    assert sp.crc16(b"123456789") == 0x29B1   # the standard check value of CRC-16/CCITT-FALSE
    assert sp.encode("CARD", 17, "As", 98) == b"$CARD,17,As,98*F998\r\n"   # docs/shoe-protocol.md


def test_decode_rejects_each_kind_of_bad_frame():
    good = sp.encode("CARD", 5, "Td", 99).rstrip(b"\r\n")
    assert sp.decode(good) == sp.Frame("CARD", ("5", "Td", "99"))
    assert sp.decode(good).seq == 5
    cases = {
        good[:-1] + b"0": "checksum mismatch",
        good.replace(b"*", b"#"): "no '*CCCC' checksum",
        sp.encode("CARD", 5, "Td").rstrip(b"\r\n"): "CARD takes 3 fields",
        sp.encode("WHAT", 5).rstrip(b"\r\n"): "unknown frame type",
        sp.encode("CARD", "x", "Td", 9).rstrip(b"\r\n"): "bad sequence number",
        sp.encode("CARD", 10000, "Td", 9).rstrip(b"\r\n"): "out of range",
        b"$CARD,1,As,9*ZZZZ": "checksum not four upper-case hex digits",
        b"$CARD,1,As,9*0x1F": "checksum not four upper-case hex digits",
        b"$CARD,1,As,9*1_2F": "checksum not four upper-case hex digits",
        b"$CARD,1,\xc3\xa9,9*1234": "body not ASCII",
    }
    for line, reason in cases.items():
        f = sp.decode(line)
        assert isinstance(f, sp.BadFrame) and reason in f.reason, (line, f)


def test_sequence_arithmetic_wraps():
    assert sp.seq_after(9999, 0) and sp.seq_after(5, 6) and not sp.seq_after(6, 5)
    assert sp.seq_range(9998, 1) == [9999, 0, 1]


frames = st.one_of(
    st.builds(lambda s, c, conf: sp.encode("CARD", s, c, conf), st.integers(0, 9999),
              st.sampled_from(["As", "Td", "7h", "Kc"]), st.integers(0, 100)),
    st.builds(lambda s: sp.encode("HB", s), st.integers(0, 9999)),
    st.builds(lambda s: sp.encode("CUT", s), st.integers(0, 9999)),
    st.builds(lambda s, r: sp.encode("UNRD", s, r), st.integers(0, 9999), st.sampled_from(["dirty", "no code"])),
    st.builds(lambda s: sp.encode("STAT", s, "closed", 0, "ok", "ok", "unlocked"), st.integers(0, 9999)),
)
garbage = st.binary(min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), frames, garbage), min_size=1, max_size=30),
       st.integers(1, 17))
def test_parser_finds_every_valid_frame_in_noise_and_counts_the_rest(items, chunk):
    stream = b""
    sent = []
    noise_runs = 0
    for noisy, frame, junk in items:
        if noisy:
            stream += junk + b"\n"          # a run of line noise, ended by the line
            noise_runs += bool(junk.strip(b"\r\n"))  # bare line ends are not garbage
        stream += frame
        sent.append(frame)
    p = sp.FrameParser()
    got = []
    for i in range(0, len(stream), chunk):   # arrives in arbitrary pieces
        got.extend(p.feed(stream[i:i + chunk]))
    good = [f for f in got if isinstance(f, sp.Frame)]
    bad = [f for f in got if isinstance(f, sp.BadFrame)]
    assert [sp.encode(f.kind, *f.fields) for f in good] == sent
    assert p.bad == len(bad)
    assert (noise_runs == 0) == (len(bad) == 0)
    assert len(bad) >= noise_runs


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_parser_never_raises_on_any_bytes(data):
    p = sp.FrameParser()
    out = p.feed(data)
    assert all(isinstance(f, (sp.Frame, sp.BadFrame)) for f in out)


def test_every_frame_example_in_the_protocol_doc_is_valid():
    import pathlib
    import re
    doc = (pathlib.Path(__file__).parent.parent / "docs" / "shoe-protocol.md").read_text()
    examples = re.findall(r"^(\$[A-Z]+,[^*\n]*\*[0-9A-F]{4})(?:\\r\\n)?$", doc, re.M)
    assert len(examples) >= 6
    for line in examples:
        assert isinstance(sp.decode(line.encode()), sp.Frame), line


def framed(body):
    return b"$" + body + b"*" + f"{sp.crc16(body):04X}".encode()


def test_every_number_in_a_frame_is_checked_before_the_session_sees_it():
    """A valid CRC does not make a field usable: the session must never meet a number it cannot
    read (a HELLO with boot 'x' used to kill the reader thread; a GONE to 10000 looped forever)."""
    cases = {
        b"HELLO,0,VS-1,1.0,VS0001,x": "bad boot count",
        b"HELLO,0,VS-1,1.0,VS0001,": "bad boot count",
        b"HELLO,+1,VS-1,1.0,VS0001,1": "bad sequence number",
        b"HB, 5": "bad sequence number",
        b"HB,1_0": "bad sequence number",
        b"CARD,-0,As,9": "bad sequence number",
        b"GONE,1,x": "bad sequence number",
        b"GONE,1,10000": "out of range",
        b"GONE,10000,3": "out of range",
    }
    for body, reason in cases.items():
        f = sp.decode(framed(body))
        assert isinstance(f, sp.BadFrame) and reason in f.reason, (body, f)
    assert sp.decode(framed(b"HELLO,12,VS-1,1.0,VS0001,12345")).boot == 12345
    assert sp.decode(framed(b"GONE,9999,0")) == sp.Frame("GONE", ("9999", "0"))


def spellings(check):
    """Other spellings int(x, 16) reads as the same, right, checksum: lower case, a sign, a space."""
    n = int(check, 16)
    out = {check.lower()} - {check}
    if n < 0x1000:
        out |= {f"+{n:03X}", f" {n:03X}"}
    return out


@settings(max_examples=300, deadline=None)
@given(frames)
def test_a_checksum_not_in_upper_case_hex_is_a_bad_frame_and_changes_nothing(frame):
    """docs/shoe-protocol.md: `*CCCC`, four upper-case hex digits. Any other spelling int() would
    read (lower case 'f998', '+F99', '0xF9', 'F_98') is refused as malformed, CRC right or not;
    the session counts it and delivers nothing, and the frame in upper case still goes through."""
    from drivers.shoe import ShoeSession
    line = frame.rstrip(b"\r\n")
    check = line[-4:].decode()
    assume(spellings(check))
    for other in spellings(check):
        bad = line[:-4] + other.encode()
        f = sp.decode(bad)
        assert isinstance(f, sp.BadFrame) and "upper-case hex" in f.reason, (bad, f)
        events = []
        session = ShoeSession(events.append, lambda b: True, stall_timeout=1e9)
        session.data(bad + b"\r\n", 0.0)
        assert events == [] and session.counts["bad_frames"] == 1 and session.counts["frames"] == 0
        session.data(frame, 0.1)
        assert session.counts["frames"] == 1


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(-1000, 1000).map(str), st.text(max_size=6)))
def test_a_confidence_that_is_not_0_to_100_in_plain_digits_is_a_bad_frame(conf):
    """The cold trial: `CARD,12,As,-98` (a valid CRC) was delivered as a low-confidence read; the
    spec says a number the host cannot read makes a bad frame, and confidence is 0-100."""
    assume("," not in conf and "*" not in conf and all(" " <= c <= "~" for c in conf))
    f = sp.decode(framed(f"CARD,12,As,{conf}".encode()))
    if conf.isdigit() and len(conf) <= 9 and int(conf) <= 100:
        assert f == sp.Frame("CARD", ("12", "As", conf)), (conf, f)
    else:
        assert isinstance(f, sp.BadFrame) and "bad confidence" in f.reason, (conf, f)
