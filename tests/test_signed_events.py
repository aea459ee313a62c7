"""The signed, hash-chained event stream (dealer_station/signing.py) and `dealer-station verify`:
every message carries its seq, the previous message's hash and an Ed25519 signature made once at
outbox time, so a republish after a crash is byte-identical; the verifier names the first altered,
replayed, reordered or missing message of a tampered capture."""
import json
import os
import subprocess
import sys

import pytest

from dealer_station import signing
from dealer_station.verify import Problem, check_journal, check_stream
from integrity_rig import Rig


def cli(*args):
    return subprocess.run([sys.executable, "-m", "dealer_station.cli", *args], capture_output=True,
                          text=True, timeout=60)


@pytest.fixture(scope="module")
def key(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("key") / "events.key")
    signing.generate(path)
    return path


@pytest.fixture(scope="module")
def stream(tmp_path_factory, key):
    """A luxury21 table's messages, with a crash and recovery in the middle."""
    rig = Rig(tmp_path_factory.mktemp("j") / "journal.sqlite", "luxury21",
              signer=signing.Signer(signing.load_private(key)))
    rig.play(seed=3, rounds=3)
    rig.before = list(rig.published)
    rig.crash()                   # nothing was acknowledged: recovery publishes all of it again
    rig.republished = rig.published[len(rig.before):]
    rig.play(seed=4, rounds=2)    # a second shoe, after the restart
    rig.stream = [b for _, b in rig.j.outbox_from(1)]
    return rig


def test_every_message_is_signed_and_chained(stream, key):
    pub = signing.load_public(key + ".pub")
    msgs = stream.stream
    assert len(msgs) > 60
    assert json.loads(msgs[0])["prev"] == signing.GENESIS
    for a, b in zip(msgs, msgs[1:]):
        assert json.loads(b)["seq"] == json.loads(a)["seq"] + 1
        assert json.loads(b)["prev"] == signing.digest(a)      # across the restart too
    assert all(signing.signature_ok(m, pub) for m in msgs)
    assert check_stream([(str(i), m) for i, m in enumerate(msgs)], pub)["messages"] == len(msgs)
    assert check_journal(stream.path, pub)["last_seq"] == len(msgs)


def test_republished_and_resent_messages_are_the_journaled_bytes(stream):
    """The outbox holds the sealed text: what recovery republishes and resend sends is it."""
    assert stream.republished == stream.before
    assert stream.published == stream.before * 2 + stream.stream[len(stream.before):]
    sig_a = json.loads(stream.published[5])["sig"]
    # Ed25519 is deterministic: sealing the same body again gives the same bytes
    body, _ = signing.split(stream.published[5])
    assert json.loads(stream.st.s.signer.seal(body))["sig"] == sig_a


def capture(tmp_path, lines, wrap=False):
    p = tmp_path / "capture.jsonl"
    if wrap:
        lines = [json.dumps({"topic": "dealer-station/v1/t1/events", "payload": m}) for m in lines]
    p.write_text("".join(m + "\n" for m in lines))
    return str(p)


def verify(path, key, *more):
    r = cli("verify", path, "--public-key", key + ".pub", *more)
    return r.returncode, r.stdout.strip()


def test_verify_accepts_the_untouched_stream(stream, key, tmp_path):
    rc, out = verify(capture(tmp_path, stream.stream[:40], wrap=True), key)
    assert rc == 0, out
    assert "ok: 40 messages, seq 1-40, chain unbroken, signatures checked" in out
    rc, out = verify(stream.path, key)
    assert rc == 0 and "audit log" in out, out


def test_one_byte_changed_is_named(stream, key, tmp_path):
    msgs = list(stream.stream[:30])
    i = next(i for i, m in enumerate(msgs) if '"card":"' in m and i > 10)
    m = msgs[i]
    j = m.index('"card":"') + 8
    msgs[i] = m[:j] + ("K" if m[j] != "K" else "Q") + m[j + 1:]      # another card, same length
    rc, out = verify(capture(tmp_path, msgs), key)
    assert rc == 1
    assert f"line {i + 1}: altered: seq {i + 1}: the signature does not match" in out
    # without the key the chain still catches it: the next message does not name it
    r = cli("verify", capture(tmp_path, msgs))
    assert r.returncode == 1 and f"line {i + 2}: altered: seq {i + 2}: prev is not the hash" in r.stdout


def test_a_message_without_its_signature_is_named_as_unsigned(stream, key, tmp_path):
    """A message with its sig cut off (or a table with no signing key) checked against a key:
    refused, and said so, not blamed on a changed byte or another key."""
    msgs = list(stream.stream[:10])
    text, _ = signing.split(msgs[4])
    msgs[4] = text
    rc, out = verify(capture(tmp_path, msgs), key)
    assert rc == 1 and "line 5: altered: seq 5: not signed (no sig field" in out, out


def test_a_replayed_message_is_named(stream, key, tmp_path):
    msgs = list(stream.stream[:20])
    msgs.insert(15, msgs[6])
    rc, out = verify(capture(tmp_path, msgs), key)
    assert rc == 1 and "line 16: replayed: seq 7 again (first at line 7)" in out
    rc, out = verify(capture(tmp_path, msgs), key, "--allow-repeats")
    assert rc == 0 and "1 repeats skipped" in out


def test_two_swapped_messages_are_named(stream, key, tmp_path):
    msgs = list(stream.stream[:20])
    msgs[8], msgs[9] = msgs[9], msgs[8]
    rc, out = verify(capture(tmp_path, msgs), key)
    assert rc == 1 and "line 9: reordered: seq 10 before seq 9 (which comes later, at line 10)" in out


def test_a_dropped_message_is_named(stream, key, tmp_path):
    msgs = list(stream.stream[:20])
    del msgs[11]
    rc, out = verify(capture(tmp_path, msgs), key)
    assert rc == 1 and "line 12: missing: seq 12 never came (seq 13 follows seq 11)" in out


def test_a_message_signed_by_another_key_is_named(stream, tmp_path):
    other = str(tmp_path / "other.key")
    signing.generate(other)
    forged = signing.Signer(signing.load_private(other))
    msgs = list(stream.stream[:10])
    body, _ = signing.split(msgs[9])
    msgs[9] = forged.seal(body.replace('"v":1', '"v":1', 1))
    with pytest.raises(Problem) as e:
        check_stream([(f"m{i}", m) for i, m in enumerate(msgs)],
                     signing.load_public(str(tmp_path / "other.key.pub")))
    assert e.value.where == "m0" and e.value.kind == "altered"


def test_a_key_others_may_read_is_refused(tmp_path):
    path = str(tmp_path / "k")
    signing.generate(path)
    os.chmod(path, 0o640)
    with pytest.raises(signing.KeyFileError, match="mode 0640 lets others read it.*chmod 600"):
        signing.load_private(path)
    cfg = tmp_path / "t.toml"
    cfg.write_text(f'[table]\nid = "t1"\nprofile = "luxury21"\n[shoe]\nprotocol = "none"\n'
                   f'[paths]\njournal = "{tmp_path}/j.sqlite"\n[integrity]\nsigning_key = "{path}"\n')
    r = cli("check-config", str(cfg))
    assert r.returncode == 1 and "integrity.signing_key: signing key" in r.stdout and "0640" in r.stdout
    os.chmod(path, 0o600)
    assert cli("check-config", str(cfg)).returncode == 0


def test_keygen_never_overwrites(tmp_path):
    path = str(tmp_path / "k")
    r = cli("keygen", "--out", path)
    assert r.returncode == 0 and os.stat(path).st_mode & 0o777 == 0o600
    before = open(path).read()
    r = cli("keygen", "--out", path)
    assert r.returncode == 2 and "already exists (an existing key is never overwritten)" in r.stderr
    assert open(path).read() == before


def test_keygen_into_a_missing_folder_says_so_and_creates_nothing(tmp_path):
    """It said "No such file or directory (an existing key is never overwritten)"."""
    path = str(tmp_path / "etc" / "k")
    r = cli("keygen", "--out", path)
    assert r.returncode == 2 and r.stdout == ""
    assert f"the folder {tmp_path / 'etc'} does not exist; create it first" in r.stderr
    assert "overwritten" not in r.stderr and not os.path.exists(tmp_path / "etc")


def test_the_daemons_stream_on_the_wire_verifies_across_a_kill(tmp_path, key):
    """The real daemon and Mosquitto: what a subscriber received, repeats after a SIGKILL
    included, is the table's signed chain."""
    from controller import get_profile
    from drivers.virtual_shoe import VirtualShoe
    from mqtt_rig import Broker, Client, DaemonProc, workdir
    from table_driver import TableDriver
    import shutil
    d = workdir()
    own = str(tmp_path / "events.key")
    shutil.copy(key, own)
    os.chmod(own, 0o600)
    b = Broker(d)
    b.start()
    shoe = VirtualShoe(heartbeat=0.2, decks=8, seed=5)
    shoe.start()
    c = Client(b.port)
    p = DaemonProc(d, b.port, shoe.path, profile="punto_banco",
                   extra_config=f'\n[integrity]\nsigning_key = "{own}"\n')
    try:
        p.start()
        c.wait_online()
        assert c.command({"type": "shoe_loaded"})["status"] == "accepted"
        drv = TableDriver(c, shoe, "baccarat", seed=2)
        drv.play(lambda x: len(x.results) >= 1)
        p.kill()
        p.start()
        c.wait_online(count=2)
        drv.play(lambda x: len(x.results) >= 3)
        c.caught_up(p.journal)
        with c.lock:
            events = [pl for t, pl in c.all if t.endswith("/events")]
        path = capture(tmp_path, events)
        rc, out = verify(path, key, "--allow-repeats")
        assert rc == 0 and "signatures checked" in out, out
        rc, out = verify(p.journal, key)
        assert rc == 0, out
        assert "events signed (Ed25519, key" in p.logtext()
    finally:
        p.stop()
        c.close()
        shoe.close()
        b.stop()
        shutil.rmtree(d, ignore_errors=True)


def doc_consumer(key, tmp_path, monkeypatch):
    """docs/protocol.md's consumer snippet, exactly as written (run where events.key.pub is)."""
    text = open(os.path.join(os.path.dirname(__file__), "..", "docs", "protocol.md")).read()
    code = text.split("Verifying in a consumer", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "events.key.pub").write_bytes(open(key + ".pub", "rb").read())
    monkeypatch.chdir(tmp_path)
    ns = {}
    exec(compile(code, "protocol.md", "exec"), ns)
    return ns


def test_the_protocol_docs_consumer_accepts_the_stream_and_drops_repeats(stream, key, tmp_path,
                                                                         monkeypatch):
    ns = doc_consumer(key, tmp_path, monkeypatch)
    got = [ns["accept"](m.encode()) for m in stream.published]     # a republish after a crash
    assert [m["seq"] for m in got if m] == list(range(1, len(stream.stream) + 1))
    assert got.count(None) == len(stream.republished)


@pytest.mark.parametrize("change", ["byte", "drop", "swap", "first_dropped", "respelled_sig",
                                    "other_key"])
def test_the_protocol_docs_consumer_refuses_a_tampered_stream(stream, key, tmp_path, monkeypatch,
                                                              change):
    msgs = [m.encode() for m in stream.stream[:30]]
    i = 20
    if change == "byte":
        msgs[i] = msgs[i].replace(b'"table":"t1"', b'"table":"t2"')
    elif change == "drop":
        del msgs[i]
    elif change == "swap":
        msgs[i], msgs[i + 1] = msgs[i + 1], msgs[i]
    elif change == "first_dropped":
        del msgs[0]
        i = 0
    elif change == "respelled_sig":      # the same signature bytes, the last character's spare bits
        a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        m = msgs[i].decode()
        msgs[i] = (m[:-5] + a[a.index(m[-5]) ^ 1] + m[-4:]).encode()
    else:
        other = str(tmp_path / "other.key")
        signing.generate(other)
        key = other
    ns = doc_consumer(key, tmp_path, monkeypatch)
    for k, m in enumerate(msgs):
        if k < (0 if change == "other_key" else i):
            assert ns["accept"](m)["seq"] == k + 1
        else:
            with pytest.raises(Exception):
                ns["accept"](m)
            break
