"""Visual recognition at the technician's photo scale (issue 17): 800x600 webcam photos, straight
down, one card per photo at any angle, the card about 300 x 420 pixels. Templates from one photo
per card on a light-grey table at any angle (`shoe-calibrate camera templates --labels`), then other photos of
the same deck on every surface under every condition of the camera model read through
`shoe-calibrate camera accuracy`; and every other deck's photos read with those templates (all
must be refused). Prints per deck, per surface and per condition, with the confusion."""
import argparse
import csv
import json
import os
import re
import shutil
import sys
import tempfile
import time

import cv2
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from calibration import camera_accuracy as ca, camera_tools as ct  # noqa: E402
from controller.cards import CARDS  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402


def write_photos(folder, deck, seed, items):
    """items: [(card, table, cond)] -> labels.csv of webcam photos."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows, truth = [], {}
    for i, (c, table, cond) in enumerate(items):
        img, quad = cm.webcam_photo(deck, c, table, rng, cond)
        name = f"{i:04d}_{c}.jpg"
        cv2.imwrite(os.path.join(folder, name), img, [cv2.IMWRITE_JPEG_QUALITY, 90])
        rows.append({"image": name, "rank": c[0], "suit": c[1], "deck": deck, "condition": f"{table}/{cond}"})
        truth[name] = np.asarray(quad, float).round(2).tolist()
    with open(os.path.join(folder, "truth.json"), "w") as f:     # where the card is: diag_webcam.py
        json.dump(truth, f)
    path = os.path.join(folder, "labels.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["image", "rank", "suit", "deck", "condition"])
        w.writeheader()
        w.writerows(rows)
    return path


def labelled(path):
    base = os.path.dirname(path)
    with open(path, newline="") as f:
        return [(os.path.join(base, r["image"]), r["rank"] + r["suit"], (r["deck"], r["condition"]))
                for r in csv.DictReader(f)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    from cli_args import names, parse, positive   # bench/: strict by hand; scripts/bench passes all the same
    ap.add_argument("--decks", type=names(cm.DECKS, "deck"), default=",".join(cm.DECKS))
    ap.add_argument("--per-cell", type=positive, default=3, help="photos per deck, surface and condition")
    ap.add_argument("--conditions", type=names(cm.WEBCAM_CONDITIONS, "condition"),
                    default=",".join(cm.WEBCAM_CONDITIONS))
    ap.add_argument("--keep", help="folder to keep the photos in")
    ap.add_argument("--seed", type=int, default=0, help="added to every photo's seed: other photos")
    ap.add_argument("--reuse", action="store_true", help="read the photos already in --keep (no new ones)")
    ap.add_argument("--foreign", type=int, default=0,
                    help="another deck's photos read with each deck's templates (0: all of them)")
    ap.add_argument("--json", action="store_true")
    a = parse(ap)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    decks, conds = a.decks.split(","), a.conditions.split(",")
    root = a.keep or tempfile.mkdtemp(prefix="webcam-")
    report, held = {}, {}
    for di, deck in enumerate(decks):     # every deck's photos first: each deck's templates read all others
        held[deck] = os.path.join(root, deck, "held_out", "labels.csv")
        if a.reuse:
            continue
        write_photos(os.path.join(root, deck, "reference"), deck, 100 + di + a.seed,
                     [(c, "light_grey", "rotation") for c in CARDS])
        rng = np.random.default_rng(200 + di + a.seed)
        items = [(CARDS[int(rng.integers(52))], s, c) for s in cm.SURFACES for c in conds
                 for _ in range(a.per_cell)]
        write_photos(os.path.join(root, deck, "held_out"), deck, 300 + di + a.seed, items)
    di_of = {d: i for i, d in enumerate(decks)}
    for deck in decks:
        tdir = os.path.join(root, deck, "templates")
        t0 = time.perf_counter()
        ref = os.path.join(root, deck, "reference")
        refusals = []
        for retake in range(6):
            try:
                ct.templates_from_labels(os.path.join(ref, "labels.csv"), tdir)
                break
            except ct.ToolError as e:     # a photo refused: the technician takes that card again
                refusals.append(str(e))
                # a photo named by its file, or cards named by the templates' check
                named = set(re.findall(r"\b\d{4}_([2-9TJQKA][shdc])\.jpg", str(e))) or \
                    set(re.findall(r"\b([2-9TJQKA][shdc])\b", str(e)))
                if not named or retake == 5:      # a deck the capture refuses is a result too
                    print(f"   {deck}: templates refused after {retake + 1} capture(s): {e}")
                    report[deck] = {"templates_refused": refusals}
                    break
                print(f"   {deck}: {e}; photographing {', '.join(sorted(named))} again")
                rng = np.random.default_rng(7919 * (retake + 1) + di_of[deck] + a.seed)
                for name in os.listdir(ref):
                    if name.endswith(".jpg") and name[5:7] in named:
                        img, _ = cm.webcam_photo(deck, name[5:7], "light_grey", rng, "rotation")
                        cv2.imwrite(os.path.join(ref, name), img, [cv2.IMWRITE_JPEG_QUALITY, 90])
        if deck in report:
            continue
        report[deck] = {"retakes": len(refusals)}
        r = ca.accuracy(labelled(held[deck]), tdir)
        foreign = {}
        for other in decks:
            if other != deck:
                fl = labelled(held[other])
                fr = ca.accuracy(fl[:a.foreign or None], tdir)
                foreign[other] = {"photos": fr["photos"], "read": fr["correct"] + fr["wrong"],
                                  "wrong": fr["wrong"]}
        report[deck].update({"accuracy": r, "foreign": foreign, "seconds": round(time.perf_counter() - t0, 1)})
        if not a.json:
            print(f"== {deck}: templates from 52 photos on a light-grey table; {r['photos']} other photos")
            by = {}
            for g, x in r["groups"].items():
                for part in g.split("/")[1:]:
                    b = by.setdefault(part, [0, 0, 0])
                    b[0] += x["correct"]
                    b[1] += x["photos"]
                    b[2] += x["wrong"]
            print(f"   correct {100 * r['correct'] / r['photos']:.1f}%, refused {r['unknown']}, "
                  f"wrong {r['wrong']}; another deck's photos read: " + ", ".join(
                      f"{o} {f['read']} of {f['photos']}" + (f" ({f['wrong']} wrong)" if f["wrong"] else "")
                      for o, f in foreign.items()))
            print("   " + ", ".join(f"{k} {100 * b[0] / b[1]:.0f}%" + (f" ({b[2]} WRONG)" if b[2] else "")
                                   for k, b in by.items()))
            print("   refused: " + (", ".join(f"{c}:{n}" for c, n in sorted(r["refused"].items())) or "none"))
            if r["wrong_as"]:
                print("   WRONG: " + str(r["wrong_as"]))
            sys.stdout.flush()
    if a.json:
        print(json.dumps(report))
    if not a.keep:                  # 45 MB of photos at --per-cell 1: not left in /tmp
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
