"""find_cards' CPU time a frame on one table surface, this checkout's code against another's (main's)
side by side: bench_camera.py --speed-only's frame (cardsJS, eight cards, clean light, fresh sensor
noise each frame) laid on any surface, one thread. `--speed-only` runs on green felt; the white and
light tables take masks and outlines green felt never needs.

Both find.py's are loaded in one process (each checkout's drivers/camera as a package of its own:
find.py and what it imports are relative imports) and timed frame by frame in turn, so both see
the same load: on a shared machine two separate runs differ by more than the change measured.
Also each mask's cost (--masks) and a profile (--profile) of this checkout's code.
  nice -n 10 taskset -c 1 .venv/bin/python bench/diag_find_speed.py --surface white --versus /work/main"""
import argparse
import importlib.util
import os
import sys
import time

HERE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, HERE)
import cv2  # noqa: E402
import numpy as np  # noqa: E402

cv2.setNumThreads(1)
from bench.bench_camera import ZONES, noisy  # noqa: E402
from drivers.camera import camera_model as cm  # noqa: E402


def load_find(root, name, module="find"):
    """`root`'s drivers/camera/find.py (or `module`) as `name`.camera.find (its relative imports
    from `root`)."""
    for pkg, path in ((name, os.path.join(root, "drivers")), (f"{name}.camera", os.path.join(root, "drivers", "camera"))):
        spec = importlib.util.spec_from_file_location(pkg, os.path.join(path, "__init__.py"),
                                                      submodule_search_locations=[path])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[pkg] = mod
        spec.loader.exec_module(mod)
    return importlib.import_module(f"{name}.camera.{module}")


def pipeline(root, name, t):
    """`root`'s visual driver as bench_camera.py's visual_speed runs it: every zone decoded every
    frame; a callable of one frame."""
    drv = load_find(root, name, "driver")
    vis = importlib.import_module(f"{name}.camera.visual")
    d = drv.CameraDriver(iter([]), drv.Zones(ZONES), "visual", recognizer=vis.VisualRecognizer(t))
    d.tracker.settled = lambda zone: False
    return lambda f: d.process(f, lambda e: None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--surface", default="white")
    ap.add_argument("--deck", default="cardsjs")
    ap.add_argument("--condition", default="clean")
    ap.add_argument("--versus", default=None, help="another checkout (e.g. /work/main), timed in turn")
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--pipeline", action="store_true",
                    help="the whole visual driver (bench_camera.py --speed-only's figure), not find_cards")
    ap.add_argument("--masks", action="store_true", help="each mask's own cost")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rng = np.random.default_rng(0)
    cards = dict(zip(ZONES, ["As", "Td", "7h", "Qc", "2d", "9s", "Jh", "Kd"]))
    base, _ = cm.table_frame(args.deck, cards, ZONES, args.surface, args.condition, rng)
    t = cm.reference_templates(args.deck, seed=cm.DECKS.index(args.deck))
    size = t.card_size
    seq = [noisy(base, rng) for _ in range(args.frames)]
    roots = {"this": HERE, "versus": os.path.abspath(args.versus) if args.versus else None}
    finds = {k: load_find(r, f"{k}_drivers") for k, r in roots.items() if r}
    calls = {k: (pipeline(r, f"{k}_drivers", t) if args.pipeline else
                 lambda f, fd=finds[k]: fd.find_cards(f, size)) for k, r in roots.items() if r}
    for k in calls:
        calls[k](seq[0])                        # the driver's first frame (its zones, caches)
    times = {k: [] for k in finds}
    for _ in range(args.reps):
        run = {k: 0.0 for k in finds}
        for f in seq:
            for k, call in calls.items():        # in turn, frame by frame: the same load
                c0 = time.process_time()
                call(f)
                run[k] += time.process_time() - c0
        for k in finds:
            times[k].append(1000 * run[k] / len(seq))
    found = {k: len(fd.find_cards(seq[0], size)) for k, fd in finds.items()}
    line = "; ".join(f"{k} {min(v):.1f} ms min, {np.median(v):.1f} median ({found[k]} cards)" for k, v in times.items())
    if args.versus:
        d = [a - b for a, b in zip(times["this"], times["versus"])]
        line += f"; this - versus per run: {' '.join(f'{x:+.1f}' for x in d)}"
    what = "the visual driver, every zone decoded," if args.pipeline else "find_cards"
    print(f"{what} on {args.surface} ({args.deck}, {args.condition}): {line}; load {os.getloadavg()[0]:.1f}",
          flush=True)
    find = finds["this"]
    if args.masks:
        kinds = {}
        for f in seq:
            small = cv2.resize(f, (f.shape[1] // 2, f.shape[0] // 2), interpolation=cv2.INTER_AREA)
            g = find._masks(small, (size[0] / 2, size[1] / 2))
            while True:
                c0 = time.process_time()
                try:
                    kind, _ = next(g)
                except StopIteration:
                    break
                kinds[kind] = kinds.get(kind, 0.0) + time.process_time() - c0
        print("  masks made: " + ", ".join(f"{k} {1000 * v / len(seq):.2f} ms" for k, v in kinds.items()))
    if args.profile:
        import cProfile
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        for f in seq:
            find.find_cards(f, size)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
