"""The cost of the signed event stream (issue #16): Ed25519 per message, and the daemon's events
per second with and without `integrity.signing_key`.

Per message: sealing (Ed25519 sign over the message text, base64, cut and append: Signer.seal),
the chain hash (SHA-256), and a consumer's check (signature_ok: strict base64 and Ed25519 verify),
over the real messages of a luxury21 shoe.
The daemon: a full 8-deck luxury21 shoe (7 seats) through Daemon.process, as bench_daemon.py's
recovery figure does: engine step, seal, journal transaction (SQLite, synchronous=FULL unless
--no-sync), publish queue; messages per second without and with a key. No broker: what the key
adds to the daemon's own work, not to the network's.
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from controller import get_profile  # noqa: E402
from controller.autoplay import hit_below_17, play_shoe  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from dealer_station import signing  # noqa: E402


def shoe_inputs(seed=5):
    p = get_profile("luxury21")
    cards = list(CARDS) * 8
    random.Random(seed).shuffle(cards)
    return [ev for ev, _ in play_shoe(p, cards, hit_below_17, cut_at=len(cards) - 14)]


def daemon_run(key, sync, inputs):
    from dealer_station.config import check_config
    from dealer_station.daemon import Daemon
    work = tempfile.mkdtemp(prefix="ds-bench-")
    raw = {"table": {"id": "bench", "profile": "luxury21"}, "shoe": {"protocol": "none"},
           "paths": {"journal": os.path.join(work, "j.sqlite")}}
    if key:
        raw["integrity"] = {"signing_key": key}
    cfg, errors = check_config(raw)
    assert not errors, errors
    d = Daemon(cfg)
    d.recover()
    if not sync:
        d.journal.db.execute("PRAGMA synchronous=OFF")
    texts = []
    t0 = time.perf_counter()
    for ev in inputs:
        messages, _ = d.process(ev, "bench")
        texts += [t for _, t in messages]
    seconds = time.perf_counter() - t0
    d.journal.close()
    return texts, seconds


def per_message(texts, signer, public, rounds=3):
    """Microseconds per message for seal, digest and signature_ok (the best of `rounds`)."""
    bodies = [signing.split(t)[0][:-1] + "}" for t in texts]   # the text as sealed
    out = {}
    for name, fn in (("seal_us", lambda: [signer.seal(b) for b in bodies]),
                     ("sha256_us", lambda: [signing.digest(t) for t in texts]),
                     ("verify_us", lambda: [signing.signature_ok(t, public) for t in texts])):
        best = None
        for _ in range(rounds):
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        out[name] = round(1e6 * best / len(texts), 1)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--no-sync", action="store_true", help="the journal with synchronous=OFF "
                    "(the daemon's own work without the disk's flushes)")
    ap.add_argument("--runs", type=int, default=3, help="daemon runs each way (the best counts)")
    ap.add_argument("--json", action="store_true")
    from cli_args import parse       # bench/: strict by hand; scripts/bench passes all the same
    args = parse(ap)
    work = tempfile.mkdtemp(prefix="ds-bench-key-")
    key = os.path.join(work, "events.key")
    signing.generate(key)
    inputs = shoe_inputs()
    t_plain = t_signed = None
    for _ in range(args.runs):        # alternated, the best of each: the machine is shared
        plain, t = daemon_run(None, not args.no_sync, inputs)
        t_plain = t if t_plain is None else min(t, t_plain)
        signed, t = daemon_run(key, not args.no_sync, inputs)
        t_signed = t if t_signed is None else min(t, t_signed)
    assert len(plain) == len(signed) and all('"sig":"' in t for t in signed)
    private = signing.load_private(key)
    r = {"bench": "signing", "messages": len(signed), "inputs": len(inputs),
         "journal": "synchronous=OFF" if args.no_sync else "synchronous=FULL",
         **per_message(signed, signing.Signer(private), private.public_key()),
         "bytes_added": round((sum(map(len, signed)) - sum(map(len, plain))) / len(signed)),
         "events_per_s_unsigned": round(len(plain) / t_plain),
         "events_per_s_signed": round(len(signed) / t_signed)}
    if args.json:
        print(json.dumps(r))
        return
    print(f"signing: {r['messages']} messages of a luxury21 shoe: seal (Ed25519 sign) "
          f"{r['seal_us']} us, SHA-256 chain hash {r['sha256_us']} us, a consumer's verify "
          f"{r['verify_us']} us per message; {r['bytes_added']} bytes more per message")
    print(f"signing: the daemon ({r['inputs']} inputs, journal {r['journal']}, no broker, best of "
          f"{args.runs}): "
          f"{r['events_per_s_unsigned']} events/s without a key, {r['events_per_s_signed']} "
          f"events/s with one")


if __name__ == "__main__":
    main()
