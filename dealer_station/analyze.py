"""`dealer-station analyze`: game math from the engine's own rule code.

Exact figures for baccarat and the Pairs side bet; a Monte Carlo return for the blackjack
profiles through the real engine and the settlement code, on every core. Reproducible: round
chunks are seeded from --seed and the chunk number, and merged in chunk order, so the figures do
not depend on how many processes ran them.
"""
import argparse
import json
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from controller import get_profile
from controller.games import Blackjack, game_of
from controller.analysis import (PATTERNS, Tally, baccarat_exact, pairs_exact, roulette_exact,
                                 simulate)
from controller.cards import CARDS
from controller.players import player

CHUNK = 5000  # rounds per work unit


class LazyShuffle:
    """A shuffled shoe that is shuffled only as far as it is dealt: position i is drawn (a
    Fisher-Yates step) the first time it is read. Exactly a uniform shuffle; lucky7 deals about
    20 of 416 cards before it shuffles again, so this saves most of the random draws."""

    def __init__(self, decks, rng):
        self.cards = list(CARDS) * decks
        self.done = 0
        self.rand = rng.random

    def __len__(self):
        return len(self.cards)

    def __getitem__(self, i):
        c = self.cards
        while self.done <= i:
            k = self.done
            j = k + int(self.rand() * (len(c) - k))   # bias below 1e-13 for 416 cards
            c[k], c[j] = c[j], c[k]
            self.done += 1
        return c[i]


def _shoes(profile, seed, chunk):
    rng = random.Random(f"{seed}/{chunk}")
    while True:
        yield LazyShuffle(profile.decks, rng)


def _work(args):
    profile, strategy, seed, chunk, rounds = args
    res = simulate(profile, _shoes(profile, seed, chunk), player(strategy, profile), rounds)
    return {"rounds": res["rounds"], "tallies": {k: t.as_dict() for k, t in res["tallies"].items()},
            "lucky7_counts": res["lucky7_counts"], "pairs_counts": res["pairs_counts"]}


def monte_carlo(profile, rounds, strategy, seed, jobs=None, progress=None):
    chunks = [(profile, strategy, seed, i, min(CHUNK, rounds - i * CHUNK))
              for i in range((rounds + CHUNK - 1) // CHUNK)]
    jobs = jobs or os.cpu_count() or 1
    results = [None] * len(chunks)
    t0 = time.perf_counter()
    done = 0
    if jobs == 1:
        it = ((i, _work(c)) for i, c in enumerate(chunks))
        for i, r in it:
            results[i] = r
            done += r["rounds"]
            if progress:
                progress(done, rounds, time.perf_counter() - t0)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(_work, c): i for i, c in enumerate(chunks)}
            from concurrent.futures import as_completed
            for f in as_completed(futures):
                results[futures[f]] = f.result()
                done += results[futures[f]]["rounds"]
                if progress:
                    progress(done, rounds, time.perf_counter() - t0)
    elapsed = time.perf_counter() - t0
    tallies = {}
    sevens = [0, 0, 0, 0]
    patterns = {p: 0 for p in PATTERNS}
    for r in results:  # chunk order: float sums come out the same whatever finished first
        for k, d in r["tallies"].items():
            tallies.setdefault(k, Tally()).merge(Tally.from_dict(d))
        sevens = [a + b for a, b in zip(sevens, r["lucky7_counts"])]
        for p, n in r["pairs_counts"].items():
            patterns[p] += n
    out = {"profile": profile.name, "strategy": strategy, "seed": seed, "rounds": rounds,
           "seconds": round(elapsed, 2), "jobs": jobs,
           "bets": {k: t.summary() for k, t in tallies.items()}}
    hands = out["bets"]["main"]["hands"]
    out["hands_per_second"] = round(hands / elapsed) if elapsed else None
    if profile.lucky7:
        out["lucky7_counts"] = {str(i): n for i, n in enumerate(sevens)}
        if "lucky7" not in tallies:
            out["lucky7_note"] = ("no Lucky-7 pay table in this profile: the operator sets "
                                  "payouts.lucky7_1..3; the counts above give its return")
    if profile.pairs:
        out["pairs_counts"] = patterns
    return out


def _pct(x, places=4):
    return f"{100 * float(x):.{places}f}%"


def _fraction_json(d):
    return {k: {"fraction": str(v), "value": float(v)} for k, v in d.items()}


def run(args):
    name = args.game
    if name == "punto_banco":
        r = baccarat_exact(get_profile("punto_banco"), args.decks)
        if args.json:
            print(json.dumps({"game": "punto_banco", "decks": r["decks"], "method": "exact",
                              "probability": _fraction_json(r["probability"]),
                              "house_edge": _fraction_json(r["house_edge"]),
                              "natural": _fraction_json({"natural": r["natural"]})["natural"]}))
            return 0
        print(f"punto banco, {r['decks']} decks, exact (every coup through the engine's drawing rule)")
        for k in ("banker", "player", "tie"):
            print(f"  {k:7s} wins {float(r['probability'][k]):.6f}   "
                  f"{k} bet house edge {_pct(r['house_edge'][k])}")
        print(f"  natural {float(r['natural']):.6f}")
        return 0
    if name == "roulette":
        r = roulette_exact(get_profile("roulette"))
        if args.json:
            print(json.dumps({"game": "roulette", "method": "exact", "bets": {
                k: {"bets": v["bets"], "house_edge": [str(-x) for x in v["expected_return"]]}
                for k, v in r.items()}}))
            return 0
        print("roulette, single zero, exact (every bet on the layout, settled on each of the 37 pockets)")
        for k, v in r.items():
            edges = ", ".join(f"{-x} = {_pct(-x)}" for x in v["expected_return"])
            print(f"  {k:9s} {v['bets']:3d} bets  house edge {edges}")
        return 0
    if name == "pairs":
        r = pairs_exact(get_profile("luxury21"), args.decks)
        if args.json:
            print(json.dumps({"game": "pairs", "decks": r["decks"], "method": "exact",
                              "probability": _fraction_json(r["probability"]),
                              "perfect_any": _fraction_json({"x": r["perfect_any"]})["x"],
                              "rtp": float(r["rtp"]), "house_edge": float(r["house_edge"])}))
            return 0
        p = r["probability"]
        print(f"Pairs side bet (luxury21 pay table), {r['decks']} decks, exact")
        for k in PATTERNS:
            print(f"  {k:13s} {str(p[k]):>12s} = {float(p[k]):.6f}")
        print(f"  perfect pair of any kind {r['perfect_any']} = {float(r['perfect_any']):.6f}")
        print(f"  RTP {_pct(r['rtp'])}, house edge {_pct(r['house_edge'])}")
        return 0
    from .profiles_file import load_profile
    profile = load_profile(args.profile_file) if args.profile_file else get_profile(name)
    if not isinstance(game_of(profile), Blackjack):
        raise SystemExit(f"dealer-station analyze: {name} is not a blackjack profile")
    show = sys.stderr.isatty() and not args.json

    def progress(done, total, secs):
        if show:
            rate = done * profile.seats / secs if secs else 0
            print(f"\ranalyze {profile.name}: {100 * done / total:5.1f}% "
                  f"({done:,}/{total:,} rounds, {rate:,.0f} hands/s)", end="", file=sys.stderr)

    out = monte_carlo(profile, args.rounds, args.strategy, args.seed, args.jobs, progress)
    if show:
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{profile.name}, strategy {args.strategy}, {out['rounds']:,} rounds, seed {args.seed} "
          f"({out['seconds']} s on {out['jobs']} processes, {out['hands_per_second']:,} hands/s)")
    for bet, s in out["bets"].items():
        print(f"  {bet:7s} {s['hands']:,} hands: RTP {_pct(s['rtp'], 3)} "
              f"(95% CI {_pct(s['ci95'][0], 3)} - {_pct(s['ci95'][1], 3)}), "
              f"house edge {_pct(s['house_edge'], 3)}")
    if "lucky7_counts" in out:
        n = sum(out["lucky7_counts"].values())
        print("  Lucky-7 leading sevens per hand: " + ", ".join(
            f"{k}: {v / n:.5f}" for k, v in out["lucky7_counts"].items()))
        if "lucky7_note" in out:
            print(f"  ({out['lucky7_note']})")
    return 0


def _count(lo, hi=None):
    """An argparse type: a whole number in lo..hi. A bad value is a usage error naming it, never a
    traceback (--rounds 0), a silent default (--decks 0 ran 8) or nonsense (--decks -1)."""
    def parse(text):
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if n < lo or (hi is not None and n > hi):
            raise argparse.ArgumentTypeError(f"must be {lo}-{hi}, got {n}" if hi is not None
                                             else f"must be at least {lo}, got {n}")
        return n
    return parse


def add_parser(sub):
    a = sub.add_parser("analyze", help="game math: exact baccarat and Pairs, blackjack Monte Carlo")
    a.add_argument("game", choices=["luxury21", "european", "lucky7", "punto_banco", "pairs",
                                    "roulette"])
    a.add_argument("--decks", type=_count(1, 8), default=None,
                   help="exact analyses: decks in the shoe (1-8)")
    a.add_argument("--rounds", type=_count(1), default=100_000, help="Monte Carlo: rounds to play")
    a.add_argument("--strategy", choices=["easy", "normal", "hard"], default="hard")
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--jobs", type=_count(1), default=None, help="processes (default: every core)")
    a.add_argument("--profile-file", default=None,
                   help="a profile TOML to simulate instead of the built-in (e.g. with a Lucky-7 pay table)")
    a.add_argument("--json", action="store_true", help="one JSON object instead of text")
    a.set_defaults(func=run)
    return a
