"""Where the read of a refused card stops, per deck and condition (issue 17: the white table's
cells under 95%). The deck sweep's scenes (bench_camera.py --deck-trials 1: the same seeds and
templates), each card's five frames read as the sweep reads them (CameraDriver.read_frame, fresh
noise each, the tracker's three agreeing frames); for each card not reported, every frame in which
it was not read is followed to the step that refused it:

- cut: the card reaches beyond the frame (refused by design; 2 of the sweep's 80 a deck, rotation)
- not_found / not_found_blob: no outline centred on the card (a blob holds its centre or not)
- on the nearest outline (`off`: its index corners' distance from the true ones, px; over 3 the
  card is also counted as `outline_off`), the first step that refuses, as VisualRecognizer takes
  them: colour (an index corner's ink colour undecided), index (a corner under the threshold
  0.8), margin_rank / margin_suit (a part's runner-up within the margin 0.05), other_colour (the
  other colour's suits fit the suit's shape better), disagree (two corners read two cards), then
  for a card read at both corners (plainly, by its face or by a blurred read): proportion, face
  (under FACE_MIN_SMALL), twins (twins._twins_apart; a blurred suit's face over its twin), shift
  (the index place), rounding (outside the learned window, or unmeasured), cut_rule (inside the
  window, refused by the cut judged under the card's blur or by its well-measured corners),
  face_rank (a blurred rank the face does not back);
- reads_here: that outline reads the card alone (lost elsewhere in the frame's reading);
- the condition is the sweep's (glare, shadow, defocus, ...); each frame's step carries its
  numbers (-v).

A card's bucket is the step that refused it in most of its unread frames (its first on a tie).
With the card's true outline the same steps are tried ("truth"): what a perfect finder leaves.

Usage: diag_white_refusals.py [--surface white] [--decks cardsjs,...] [--scenes SEED] [-v] [--json]
"""
import argparse
import collections
import json
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.bench_camera import ZONES, noisy  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import index as ix  # noqa: E402
from drivers.camera.deckprint import SMALL, aspect, proportioned  # noqa: E402
from drivers.camera.driver import CameraDriver, Zones  # noqa: E402
from drivers.camera.find import find_cards  # noqa: E402
from drivers.camera.hands import both_corners  # noqa: E402
from drivers.camera.indexplace import placed_shift  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.rounding import rounding, roundings  # noqa: E402
from drivers.camera.tracker import ZoneTracker  # noqa: E402

TUNED = ("cardsjs", "svgcards", "kennard", "responsive", "synth")


def _off(q, tq):
    """The larger of the two index corners' distances (either way round)."""
    return min(max(np.linalg.norm(q[i] - tq[0]), np.linalg.norm(q[(i + 2) % 4] - tq[2])) for i in range(4))


def corner_scores(rec, img, c):
    """A corner's plain read, every number the reader weighs: (colour, rank, r1, r2, suit, s1,
    s2, the other colour's best suit score)."""
    patch = ix.corner(img, c, rec.t.box, ix.SEARCH)
    colour = ix._ink(patch[ix.SEARCH:-ix.SEARCH, ix.SEARCH:-ix.SEARCH])[2]
    if colour is None:
        return None
    gray = ix._match_gray(patch)
    cards, rank_m, suit_m, _, _ = rec._by_colour[colour]
    other = rec._by_colour["black" if colour == "red" else "red"][2]
    s = rec.t.cut + ix.S
    rs = ix._scores(gray[:s + ix.S], rec.t.part_shapes[0], rank_m).max(axis=0)
    windows = ix._windows(gray[s - ix.S:], rec.t.part_shapes[1])
    ss = ix._product(windows, suit_m).max(axis=0)
    best = lambda sc, j: sorted(((max(float(v) for v, c in zip(sc, cards) if c[j] == k), k)   # noqa: E731
                                 for k in {c[j] for c in cards}), reverse=True)[:2]
    (r1, k1), (r2, _) = best(rs, 0)
    (s1, j1), (s2, _) = best(ss, 1)
    return colour, k1, r1, r2, j1, s1, s2, float(ix._product(windows, other).max())


def corner_step(rec, sc):
    """The step refusing one corner's plain read, or None when it reads."""
    if sc is None:
        return "colour"
    colour, k1, r1, r2, j1, s1, s2, oc = sc
    if min(r1, s1) < rec.threshold:
        return "index"
    if r1 - r2 < rec.margin:
        return "margin_rank"
    if s1 - s2 < rec.margin:
        return "margin_suit"
    if oc >= s1:
        return "other_colour"
    return None


def _fmt(sc):
    if sc is None:
        return "colour?"
    colour, k1, r1, r2, j1, s1, s2, oc = sc
    return f"{k1}{j1} r{r1:.2f}+{r1 - r2:.3f} s{s1:.2f}+{s2 and s1 - s2:.3f}{' oc%.2f' % oc if oc >= s1 else ''}"


def deck_step(rec, img, q, card):
    """The step of the whole card's deck check refusing `card` on outline `q` (visual._of_deck's
    order), with its numbers; None when it passes."""
    grays = {}
    corners = both_corners(q)
    for c in corners:
        rec.read_corner(img, c, keep=grays)
    if not proportioned(q, rec.t.card_size):
        return "proportion", f"aspect {aspect(q):.3f}"
    face_min = ix.FACE_MIN if rec.t.card_size[0] >= SMALL else ix.FACE_MIN_SMALL
    f = ix.face(img, q)
    fs = ix.face_score(f, rec.t.faces[card])
    if fs < face_min:
        return "face", f"face {fs:.3f} < {face_min}"
    if not rec._twins_apart(card, grays, corners, f):
        twin = card[0] + ix.TWIN[card[1]]
        return "twins", f"index over twin {rec._index_over_twin(card, grays, corners)}, face over twin " \
                        f"{fs - ix.face_score(f, rec.t.faces[twin]):.3f}"
    p = rec.t.print
    shifts = [placed_shift(rec.t, img, c, card, grays.get(np.float32(c).tobytes())) for c in corners]
    ok = p.card_matches(img, q, (ix.CW, ix.CH), shifts, blur=rec._blur_for_cut(img, q, grays),
                        streak=rec._streak_for_cut(img, q))
    r, best = roundings(img, q, (ix.CW, ix.CH))
    detail = (f"face {fs:.3f} rounding {r:.2f} best {best:.2f} (learned {p.rounding:.2f} +- "
              f"{p.rounding_tol:.2f}, cut {p.cut()}) shifts {min(shifts):.2f} (tol {p.shift_tol:.1f})")
    if ok:
        return None, detail
    if min(shifts) > p.shift_tol:
        return "shift", detail
    if np.isnan(r) or abs(r - p.rounding) > p.rounding_tol:
        return "rounding", detail
    return "cut_rule", detail


def step(rec, img, q, card):
    """(the step refusing `card` on outline `q`, its numbers): 'reads_here' when it reads."""
    got, _, foreign = rec._read_quad(img, q)
    if got == card:
        return "reads_here", ""
    if got:
        return "WRONG", got
    scs = [corner_scores(rec, img, c) for c in both_corners(q)]
    detail = " | ".join(_fmt(s) for s in scs)
    if foreign and foreign != card:
        return "foreign_card", f"{foreign} {detail}"
    steps = [corner_step(rec, s) for s in scs]
    plain = [None if st else s[1] + s[4] for st, s in zip(steps, scs)]
    if plain[0] and plain[1] and plain[0] != plain[1]:
        return "disagree", detail
    if foreign == card or plain[0] == plain[1] == card:
        st, more = deck_step(rec, img, q, card)
        if st is None:      # the plain deck check passes: the blurred path's own guards refused it
            return "face_rank", f"{detail} {more}"
        return st, f"{detail} {more}"
    first = next(s for s in steps if s)
    return first, detail


def classify(rec, img, tq, card):
    """(step on the nearest outline, step on the true outline, outline's offset or None, detail)."""
    h, w = img.shape[:2]
    if tq.min() < -2 or tq[:, 0].max() > w + 1 or tq[:, 1].max() > h + 1:
        return "cut", "cut", None, ""
    truth, _ = step(rec, img, tq, card)
    quads, blobs = find_cards(img, rec.t.card_size, with_blobs=True)
    c = tq.mean(axis=0)
    near = [q for q in quads if np.linalg.norm(q.mean(axis=0) - c) < 0.2 * rec.t.card_size[0]]
    if not near:
        inblob = any(cv2.pointPolygonTest(b.reshape(-1, 1, 2), (float(c[0]), float(c[1])), False) >= 0
                     for b in blobs)
        return ("not_found_blob" if inblob else "not_found"), truth, None, ""
    q = min(near, key=lambda q: _off(q, tq))
    st, detail = step(rec, img, q, card)
    return st, truth, _off(q, tq), detail


def run(deck, surface, conditions, scenes, verbose, rows):
    rec = VisualRecognizer(cm.reference_templates(deck, seed=cm.DECKS.index(deck)))
    d = CameraDriver(iter([]), Zones(ZONES), "visual", recognizer=rec)
    si = cm.SURFACES.index(surface)
    for cond in conditions:
        key = 1000 * si + cm.CONDITIONS.index(cond)
        rng = np.random.default_rng(key if scenes is None else (scenes, key))
        cards = {z: CARDS[int(rng.integers(52))] for z in ZONES}
        base, where = cm.table_frame(deck, cards, ZONES, surface, cond, rng)
        d.tracker = ZoneTracker(3, 8)
        frames, reads, reported = [], [], set()
        for i in range(5):
            img = noisy(base, rng)
            got = d.read_frame(img)
            frames.append(img)
            reads.append(got)
            for z, cs in got.items():
                if any(c != cards[z] for c in cs):
                    rows.append(dict(deck=deck, cond=cond, zone=z, card=cards[z], bucket="WRONG", frames=[]))
                reported |= {z for ev, c in d.tracker.update(z, cs) if ev == "seen" and c == cards[z]}
        for z in ZONES:
            if z in reported:
                rows.append(dict(deck=deck, cond=cond, zone=z, card=cards[z], bucket="read", frames=[]))
                continue
            per = []
            for img, got in zip(frames, reads):
                if cards[z] in got.get(z, []):
                    per.append(("read", "", None, ""))
                else:
                    per.append(classify(rec, img, np.float32(where[z]), cards[z]))
            unread = [p[0] for p in per if p[0] != "read"]
            bucket = collections.Counter(unread).most_common(1)[0][0] if unread else "tracker"
            offs = [p[2] for p in per if p[2] is not None]
            row = dict(deck=deck, cond=cond, zone=z, card=cards[z], bucket=bucket,
                       outline_off=bool(offs) and max(offs) > 3, truth=[p[1] for p in per if p[0] != "read"],
                       frames=[{"step": p[0], "off": None if p[2] is None else round(float(p[2]), 1),
                                "detail": p[3]} for p in per])
            rows.append(row)
            if verbose:
                print(f"  {deck} {cond} {z} {cards[z]}: {bucket}"
                      f"{' (outline off)' if row['outline_off'] else ''}, truth {','.join(row['truth'])}", flush=True)
                for i, fr in enumerate(row["frames"]):
                    print(f"      frame {i}: {fr['step']} off {fr['off']} {fr['detail']}", flush=True)


def table(rows):
    """Per deck: the refused cards' buckets, and per condition."""
    out = []
    for deck in dict.fromkeys(r["deck"] for r in rows):
        mine = [r for r in rows if r["deck"] == deck]
        n = collections.Counter(r["bucket"] for r in mine)
        out.append(f"{deck}: read {n.pop('read', 0)} of {len(mine)}; refused: "
                   + ", ".join(f"{k} {v}" for k, v in n.most_common()))
        for cond in dict.fromkeys(r["cond"] for r in mine):
            miss = [r for r in mine if r["cond"] == cond and r["bucket"] != "read"]
            if miss:
                out.append(f"    {cond}: " + ", ".join(
                    f"{r['card']} {r['bucket']}{'*' if r.get('outline_off') else ''}" for r in miss))
    allb = collections.Counter(r["bucket"] for r in rows if r["bucket"] != "read")
    out.append("all decks, refused: " + ", ".join(f"{k} {v}" for k, v in allb.most_common())
               + "   (* the nearest outline lies over 3 px off)")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    from cli_args import names, parse
    ap.add_argument("--surface", default="white", choices=cm.SURFACES)
    ap.add_argument("--decks", type=names(cm.DECKS, "deck"), default=",".join(TUNED))
    ap.add_argument("--conditions", type=names(cm.CONDITIONS, "condition"), default=",".join(cm.CONDITIONS))
    ap.add_argument("--scenes", type=int, default=None, help="other scenes than the sweep's (a seed)")
    ap.add_argument("-v", action="store_true", help="every refused card's frames")
    ap.add_argument("--json", action="store_true", help="the rows as JSON (one line)")
    a = parse(ap)
    cv2.setNumThreads(1)
    rows = []
    for deck in a.decks.split(","):
        run(deck, a.surface, a.conditions.split(","), a.scenes, a.v, rows)
        if not a.json:
            print(table([r for r in rows if r["deck"] == deck]), flush=True)
    print(json.dumps(rows) if a.json else table(rows))


if __name__ == "__main__":
    main()
