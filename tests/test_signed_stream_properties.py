"""Properties of the signed, hash-chained event stream (issue #16): for any sequence of inputs the
station signs, `verify` accepts the stream; for any one mutation of it (a byte flipped anywhere, a
message dropped, duplicated with a change, two swapped) `verify` names the first bad message, at its
index in the capture."""
import base64
import json
import random

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller import get_profile
from dealer_station import signing
from dealer_station.station import Settings, Station
from dealer_station.station_types import Clock
from dealer_station.verify import Problem, check_stream
from helpers import drive, shoe

KEY = Ed25519PrivateKey.generate()
SIGNER = signing.Signer(KEY)
PUBLIC = KEY.public_key()
T0 = 1_800_000_000.0

# inputs beside the played rounds: mostly refused, each refusal a signed `rejected` message too
JUNK = st.fixed_dictionaries(
    {"type": st.sampled_from(["card", "pause", "resume", "void_round", "betting_closed",
                              "decision", "insurance_closed", "cut_card", "bogus"])},
    optional={"card": st.sampled_from(["As", "Td", "7h", "Zz"]),
              "reason": st.text(st.characters(codec="utf-8", exclude_characters="\ufffd"),
                                max_size=6),
              "seats": st.lists(st.integers(0, 8), max_size=3), "seat": st.integers(-1, 8),
              "action": st.sampled_from(["hit", "stand", "fly"])})

STREAMS = st.tuples(st.sampled_from(["luxury21", "punto_banco", "lucky7", "european"]),
                    st.integers(0, 10 ** 6), st.integers(1, 3), st.sampled_from([0.0, 0.2]),
                    st.lists(st.tuples(st.integers(0, 400), JUNK), max_size=4))


def signed(args):
    """The messages the station seals for played rounds (with irregularities by `mischief`) and
    junk inputs at random places: compact JSON, chained, signed, in seq order."""
    profile, seed, rounds, mischief, junk = args
    p = get_profile(profile)
    _, log = drive(p, shoe(p, seed), random.Random(seed), max_rounds=rounds, mischief=mischief)
    inputs = [i for i, _ in log]
    for at, ev in junk:
        inputs.insert(at % (len(inputs) + 1), ev)
    station = Station(Settings("t1", p, "test", inflight=10 ** 6, signer=SIGNER))
    texts = []
    for n, body in enumerate(inputs):
        _, messages, _ = station.process(body, "test", Clock(T0 + n, float(n)))
        texts += [text for _, text in messages]
    return texts


def verify(texts, allow_repeats=False):
    return check_stream([(str(i), t) for i, t in enumerate(texts)], PUBLIC, allow_repeats)


def first_bad(texts):
    try:
        verify(texts)
    except Problem as p:
        return int(p.where), p.kind
    return None


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(STREAMS)
def test_verify_accepts_every_stream_the_station_signs(args):
    texts = signed(args)
    assert texts and json.loads(texts[0])["seq"] == 1
    s = verify(texts)
    assert s["messages"] == len(texts) and s["last_seq"] == len(texts)
    assert s["signatures"] == "checked"


def flip(text, at, bit):
    raw = bytearray(text.encode("utf-8"))
    raw[at % len(raw)] ^= 1 << bit
    return raw.decode("utf-8", "replace")     # as `dealer-station verify` reads a capture


def resigned(text):
    """The same seq with other content, signed with the table's own key (a table that published
    two different messages under one seq, or a leaked key): only the chain can tell."""
    m = json.loads(text)
    del m["sig"]
    prev = m.pop("prev")
    m["table"] = "t2"
    return SIGNER.seal(json.dumps({**m, "prev": prev}, separators=(",", ":"), ensure_ascii=False))


@PROPERTY
@given(STREAMS, st.data())
def test_one_mutation_is_named_at_the_first_bad_message(args, data):
    texts = signed(args)
    n = len(texts)
    kind = data.draw(st.sampled_from(["flip", "drop", "duplicate", "swap"]) if n > 1 else
                     st.just("flip"))
    if kind == "flip":
        i = data.draw(st.integers(0, n - 1))
        # anywhere, or near the end: the signature's last characters, whose unused bits a
        # lenient base64 decoder ignores (signing.split accepts canonical base64 only)
        at = data.draw(st.one_of(st.integers(0, 10 ** 4), st.integers(-8, -1)))
        changed = flip(texts[i], at, data.draw(st.integers(0, 7)))
        assert first_bad(texts[:i] + [changed] + texts[i + 1:]) == (i, "altered")
    elif kind == "drop":
        i = data.draw(st.integers(0, n - 1))
        cut = texts[:i] + texts[i + 1:]
        # the first or the last gone is a capture that started later or ended sooner
        assert first_bad(cut) == (None if i in (0, n - 1) else (i, "missing"))
    elif kind == "duplicate":
        i = data.draw(st.integers(0, n - 1))
        j = data.draw(st.integers(i + 1, n))              # the copy comes after the original
        how = data.draw(st.sampled_from(["flip", "resigned", "same"]))
        copy = {"flip": lambda t: flip(t, data.draw(st.integers(0, 10 ** 4)),
                                       data.draw(st.integers(0, 7))),
                "resigned": resigned, "same": lambda t: t}[how](texts[i])
        dup = texts[:j] + [copy] + texts[j:]
        assert first_bad(dup) == (j, {"same": "replayed"}.get(how, "altered"))
        if how == "same":       # a republish after a restart: skipped when repeats are allowed
            assert verify(dup, allow_repeats=True)["repeats"] == 1
    else:
        i = data.draw(st.one_of(st.just(0), st.integers(0, n - 2)))   # the first one too
        j = data.draw(st.integers(i + 1, n - 1))
        swapped = list(texts)
        swapped[i], swapped[j] = texts[j], texts[i]
        assert first_bad(swapped) == (i, "reordered")


def test_a_signature_in_non_canonical_base64_is_altered():
    """A lenient base64 decoder ignores the last character's unused bits: another spelling of the
    same signature. The bytes changed, so verify names the message (found by the flip property)."""
    texts = signed(("punto_banco", 1, 1, 0.0, []))
    text = texts[-1]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    assert text.endswith('=="}')          # 64 bytes: 86 characters, the last with 4 unused bits
    c = text[-5]
    other = text[:-5] + alphabet[alphabet.index(c) ^ 1] + text[-4:]
    assert base64.b64decode(other[-90:-2]) == base64.b64decode(text[-90:-2])
    assert first_bad(texts[:-1] + [other]) == (len(texts) - 1, "altered")
