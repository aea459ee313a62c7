"""Why covered (and top) cards of blackjack hands are not read (issue 17): for each card of
bench_hands' scenes not read in a frame, the first step that failed. Diagnosis only.

  outline   no blob of the hand holds the card's index corner (the hand's outline not found whole)
  no_hyp    no corner hypothesis within 0.15 of a card width of the true index corner
  edges     hypotheses near it, but refine_corner found no corner (an edge missing / not straight)
  off       a refined corner near it, but more than 2.5 px off the true one
  colour    located, but the ink's colour undecided
  score     located, best rank or suit below STRICT (0.88)
  margin    located, the margin to the next rank or suit below 0.05
  strip     located and it reads, its top and left strips' face under CORNER_FACE_MIN
  dup/other located and it reads, but another card took it / lost elsewhere (the hand's
            top card refused: 'top?' marks a hand whose top card was not read in the frame)
--bench: the scenes of bench_hands.py (the same seeds, five noisy frames, the tracker): only
the cards not reported within five frames, classified on the first frame.
Also reads the true corner itself: 'true:' the same classes when the true quad is read."""
import argparse
import collections
import os
import sys

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402
from drivers.camera import index as V  # noqa: E402
from drivers.camera.deckprint import CORNER_FACE_MIN, corner_face_score  # noqa: E402
from drivers.camera.find import find_cards  # noqa: E402
from drivers.camera.hands import both_corners, fit_outline_corner, refine_corner  # noqa: E402
from drivers.camera.outline import find_corners, whiteness  # noqa: E402
from drivers.camera.recognize import VisualRecognizer  # noqa: E402
from drivers.camera.tracker import ZoneTracker  # noqa: E402

import bench_hands  # noqa: E402  (its scenes, for --bench)


def corner_detail(rec, bgr, quad, need=V.STRICT):
    """(cause, card, conf, margin) of the index at quad's tl corner, as read_corner decides
    (its likeness rule left out), a score of `need` asked (STRICT: a covered card alone)."""
    patch = V.corner(bgr, quad, rec.t.box, V.SEARCH)
    colour = V._ink(patch[V.SEARCH:-V.SEARCH, V.SEARCH:-V.SEARCH])[2]
    if colour is None:
        return "colour", None, 0, 0
    gray = V._match_gray(patch)
    cards, rank_m, suit_m = rec._by_colour[colour][:3]
    s = rec.t.cut + V.S
    rs = V._best_over_shifts(gray[:s + V.S], rec.t.part_shapes[0], rank_m)
    ss = V._best_over_shifts(gray[s - V.S:], rec.t.part_shapes[1], suit_m)
    rank, suit = {}, {}
    for c, r, u in zip(cards, rs.tolist(), ss.tolist()):
        rank[c[0]] = max(rank.get(c[0], -1), r)
        suit[c[1]] = max(suit.get(c[1], -1), u)
    (r1, k1), (r2, _) = sorted(((v, k) for k, v in rank.items()), reverse=True)[:2]
    (s1, j1), (s2, _) = sorted(((v, k) for k, v in suit.items()), reverse=True)[:2]
    conf, marg = min(r1, s1), min(r1 - r2, s1 - s2)
    if conf < need:
        return "score", k1 + j1, conf, marg
    if marg < rec.margin:
        return "margin", k1 + j1, conf, marg
    return "ok", k1 + j1, conf, marg


def classify(rec, bgr, card, tq, blobs, quads, gray):
    w = rec.t.card_size[0]
    corners = [np.float32(tq)]
    tc = corners[0][0]
    inblob = [b for b in blobs if cv2.pointPolygonTest(np.float32(b).reshape(-1, 1, 2), (float(tc[0]), float(tc[1])), True) > -0.05 * w]
    if not inblob:
        return "outline"
    hyps = []
    for eps in (0.012, 0.006):
        for b in inblob:
            for q in find_corners(b, rec.t.card_size, quads, dedupe=False, eps=eps,
                                  fit=fit_outline_corner(gray, rec.t.card_size)):
                hyps += [v for v in both_corners(q) if np.linalg.norm(v[0] - tc) < 0.15 * w]
    if not hyps:
        return "no_hyp"
    refined = [r for r in (refine_corner(gray, v, rec.t.card_size, outer=o) for v in hyps for o in (False, True))
               if r is not None]
    if not refined:         # the corner as laid from the fitted outline corner (read at LAID)
        got, conf = rec.read_corner(bgr, hyps[0], strict=True)
        return "dup/other" if got == card and conf >= V.LAID else "edges"
    best = min(refined, key=lambda r: np.linalg.norm(r[0] - tc))
    if np.linalg.norm(best[0] - tc) > 2.5:
        return "off"
    k, got, conf, marg = corner_detail(rec, bgr, best)
    if rec.read_corner(bgr, best, strict=True)[0] == card:
        # the reader's own rule (the margin against the likeness) reads it: lost after that
        if corner_face_score(V.face(bgr, best), rec.t.faces[card]) < CORNER_FACE_MIN:
            return "strip"          # the covered card's deck check: its top and left strips
        return "dup/other"
    if k == "ok" and got != card:
        return "WRONGREAD"
    return k


def scenes(a, rec):
    """(surface, truth [(card, quad, top, hand)], first frame, cards reported) per scene: one frame
    each, or with --bench bench_hands' own scenes (five noisy frames, the tracker)."""
    rng = np.random.default_rng(7 + a.seed)
    for k in range(a.scenes):
        surf = cm.SURFACES[k % len(cm.SURFACES)]
        frame = cm.surface(surf, 1280, 720, rng)
        deal = [CARDS[int(i)] for i in rng.choice(52, 12, replace=False)]
        truth = []
        places = bench_hands._hand_places(a.width) if a.bench else [250 + 390 * j for j in range(3)]
        for j, x in enumerate(places):
            n = int(rng.integers(2, 5))
            cs, deal = deal[:n], deal[n:]
            qs = cm.hand(frame, a.deck, cs, (x, 360), a.width, rng.uniform(0, 360), rng)
            truth += [(c, q, i == n - 1, j) for i, (c, q) in enumerate(zip(cs, qs))]
        img = cm.camera(frame, rng)
        if a.only and k not in a.only:
            if a.bench:
                for _ in range(5):
                    bench_hands.noisy(img, rng)     # the same random draws as the bench's
            continue
        if not a.bench:
            yield surf, truth, img, {c for c, _ in rec.read_image(img)}
            continue
        tracker, reported, frames = ZoneTracker(3, 8), set(), []
        for _ in range(5):
            frames.append(bench_hands.noisy(img, rng))
            for ev, c in tracker.update("table", [c for c, _ in rec.read_image(frames[-1])]):
                if ev == "seen":
                    reported.add(c)
        yield surf, truth, frames, reported


def main():
    ap = argparse.ArgumentParser()
    from cli_args import names, parse, positive   # strict: a typo is a usage error
    ap.add_argument("--deck", type=names(cm.DECKS, "deck"), default="cardsjs")
    ap.add_argument("--scenes", type=positive, default=20)
    ap.add_argument("--width", type=int, default=125)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--place", type=int, default=None,
                    help="the deck's place in bench_hands' --decks: its templates' seed there (seed + place); "
                         "the scenes keep --seed (bench_hands --only D reads D's scenes so)")
    ap.add_argument("--bench", action="store_true", help="bench_hands' scenes, read within five frames")
    ap.add_argument("--only", type=lambda v: {int(x) for x in v.split(",")},
                    help="read only these scenes (comma separated numbers), the others only drawn")
    ap.add_argument("--save", help="a folder: each missed card's first frame and truth (.npz)")
    ap.add_argument("--verbose", action="store_true")
    a = parse(ap)
    tseed = a.seed + (a.place or 0)
    rec = VisualRecognizer(cm.reference_templates(a.deck, seed=tseed, width=a.width))
    causes = collections.Counter()
    true_causes = collections.Counter()
    by_surface = collections.Counter()
    total = read = 0
    for k, (surf, truth, frames, got) in enumerate(scenes(a, rec)):
        img = frames[0] if a.bench else frames
        quads, blobs = find_cards(img, rec.t.card_size, with_blobs=True)
        gray = cv2.GaussianBlur(whiteness(img), (3, 3), 0).astype(np.float32)
        first = {c for c, _ in rec.read_image(img)} if a.bench else got
        for c, q, top, h in truth:
            total += 1
            if c in got:
                read += 1
                continue
            why = classify(rec, img, c, q, blobs, quads, gray)
            if not top and not any(t and hh == h and cc in first for cc, _, t, hh in truth):
                why += " top?"
            tk = corner_detail(rec, img, np.float32(q))
            causes[("top " if top else "cov ") + why] += 1
            true_causes[tk[0]] += 1
            by_surface[surf] += 1
            if a.save:
                os.makedirs(a.save, exist_ok=True)
                np.savez_compressed(os.path.join(a.save, f"{k:03d}_{c}.npz"), img=img,
                                    frames=np.stack(frames) if a.bench else img[None], quad=np.float32(q),
                                    card=c, top=top, truth=np.float32([t[1] for t in truth]),
                                    cards=[t[0] for t in truth])
            if a.verbose:
                print(k, surf, c, "top" if top else "cov", why, "true:", tk[0], tk[1], round(tk[2], 3),
                      round(tk[3], 3), flush=True)
    how = "within five frames" if a.bench else "in one frame"
    print(f"{a.deck} w={a.width}: read {read}/{total} {how} ({100 * read / total:.1f}%)")
    print("  missed by cause:", dict(causes.most_common()))
    print("  the true corner would read:", dict(true_causes.most_common()))
    print("  missed by surface:", dict(by_surface.most_common()))


if __name__ == "__main__":
    main()
