"""The hunters' scenes, drawn as bench/hunt_wrong.py and bench/hunt_hands.py draw them, for the
tests that replay a wrong read they found (tests do not import bench code). Each test asserts the
deck, surface, condition and cards it draws, so a drift from the bench fails loudly."""
import numpy as np

from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.synth import default_zones
from drivers.camera.visual import VisualRecognizer

ZONES = default_zones()
COND_WEIGHTS = dict({c: 1.0 for c in cm.CONDITIONS}, motion=6.5, defocus=6.5)
TWIN_PRONE = [c for c in CARDS if c[0] in "A234"]          # hunt_wrong: ranks whose suits blur
TWIN_SUIT = {"s": "c", "c": "s", "h": "d", "d": "h"}
RANK_PAIRS = ("69", "38", "QK", "56", "7T", "JQ", "A4", "89", "23")


def tigullio():
    """The sweep's templates of the held-out deck (bench_camera: its seed is its place in DECKS)."""
    return VisualRecognizer(cm.reference_templates("tigullio", seed=cm.DECKS.index("tigullio")))


def _setting(rng):
    deck = cm.DECKS[int(rng.integers(len(cm.DECKS)))]
    table = cm.SURFACES[int(rng.integers(len(cm.SURFACES)))]
    p = np.float64([COND_WEIGHTS[c] for c in cm.CONDITIONS])
    cond = cm.CONDITIONS[int(rng.choice(len(p), p=p / p.sum()))]
    return deck, table, cond


def _noisy(base, rng, n):
    """`n` frames of one scene, each with fresh sensor noise (as the daemon reads frames)."""
    return [np.clip(base.astype(np.int16) + rng.integers(-3, 4, base.shape), 0, 255).astype(np.uint8)
            for _ in range(n)]


def _deal(rng, n):
    """hunt_hands' deal: twin suits and like ranks side by side."""
    out = []
    while len(out) < n:
        r = rng.random()
        if r < 0.45:
            c = CARDS[int(rng.integers(52))]
            pair = [c, c[0] + TWIN_SUIT[c[1]]]
        elif r < 0.85:
            a, b = RANK_PAIRS[int(rng.integers(len(RANK_PAIRS)))]
            s = "shdc"[int(rng.integers(4))]
            pair = [a + s, b + (s if rng.random() < 0.5 else TWIN_SUIT[s])]
        else:
            pair = [CARDS[int(rng.integers(52))]]
        if rng.random() < 0.5:
            pair = pair[::-1]
        out += [c for c in pair if c not in out]
    return out[:n]


def hunted(seed, n=2):
    """bench/hunt_wrong.py's scene `seed`: (deck, surface, condition, {zone: card}, true quads,
    `n` frames)."""
    rng = np.random.default_rng([17, seed])
    deck, table, cond = _setting(rng)
    cards = {z: (TWIN_PRONE[int(rng.integers(len(TWIN_PRONE)))] if rng.random() < 0.5
                 else CARDS[int(rng.integers(52))]) for z in ZONES}
    base, where = cm.table_frame(deck, cards, ZONES, table, cond, rng)
    return deck, table, cond, cards, where, _noisy(base, rng, n)


def hunted_hands(seed, n=5):
    """bench/hunt_hands.py's hands scene `seed`: (deck, surface, condition, [(card, quad)], `n`
    frames)."""
    rng = np.random.default_rng([33, seed])
    deck, table, cond = _setting(rng)
    assert rng.random() < 0.6              # a hands scene
    frame = cm.surface(table, 1280, 720, rng)
    deal, truth = _deal(rng, 12), []
    for x in (250, 640, 1030):             # bench_hands' three hands at 125 pixels
        k = int(rng.integers(2, 5))
        cs, deal = deal[:k], deal[k:]
        truth += list(zip(cs, cm.hand(frame, deck, cs, (x, 360), 125, rng.uniform(0, 360), rng)))
    return deck, table, cond, truth, _noisy(cm.camera(frame, rng, cond), rng, n)


def hunted_turned(seed, n=5):
    """bench/hunt_hands.py's turned-cards scene `seed`: (deck, surface, condition,
    [(card, quad)], `n` frames)."""
    rng = np.random.default_rng([33, seed])
    deck, table, cond = _setting(rng)
    assert rng.random() >= 0.6             # a turned-cards scene
    frame = cm.surface(table, 1280, 720, rng)
    faces, zones, truth = cm.load_deck(deck), cm.framed(ZONES, 125), []
    for z, c in zip(zones, _deal(rng, len(zones))):
        q = cm.pose(rng, "rotation", np.float32(zones[z]).mean(axis=0), 125,
                    faces[c].shape[0] / faces[c].shape[1])
        cm.lay(frame, faces[c], q)
        truth.append((c, q))
    return deck, table, cond, truth, _noisy(cm.camera(frame, rng, cond), rng, n)


def bench_hand_scene(deck, k, n=5):
    """bench/bench_hands.py's hands scene `k` (0, 1, ...) of `deck` at its default seed (7): the
    earlier scenes drawn too, their frames' noise with them, so that the random draws match the
    bench's. (surface, [(card, quad)], `n` frames); the bench reads each deck with the templates
    of seed `cm.DECKS.index(deck)` when run with --decks in DECKS' order."""
    rng = np.random.default_rng(7)
    for j in range(k + 1):
        table = cm.SURFACES[j % len(cm.SURFACES)]
        frame = cm.surface(table, 1280, 720, rng)
        deal, truth = [CARDS[int(i)] for i in rng.choice(52, 12, replace=False)], []
        for x in (250, 640, 1030):          # bench_hands._hand_places at 125 pixels
            m = int(rng.integers(2, 5))
            cs, deal = deal[:m], deal[m:]
            truth += list(zip(cs, cm.hand(frame, deck, cs, (x, 360), 125, rng.uniform(0, 360), rng)))
        frames = _noisy(cm.camera(frame, rng), rng, 5)
    return table, truth, frames[:n]


def judged_reads(rec, frames, truth):
    """`rec`'s reads of `frames`: (the wrong ones [card]: no card of `truth` [(card, quad)] of
    that name within 25 pixels of where it was read; the right ones [(card, kind)])."""
    wrong, right = [], []
    for f in frames:
        got = rec.read_image(f)
        for (card, q), kind in zip(got, rec.kinds):
            c = np.float32(q).mean(axis=0)
            near = min(truth, key=lambda t: np.linalg.norm(np.float32(t[1]).mean(axis=0) - c))
            if near[0] != card or np.linalg.norm(np.float32(near[1]).mean(axis=0) - c) > 25:
                wrong.append(card)
            else:
                right.append((card, kind))
    return wrong, right
