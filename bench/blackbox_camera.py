#!/usr/bin/env python3
"""An independent black-box trial of the camera (issue 17): unseen decks, an outside camera.

Deck designs and a camera model the project never saw, used only through the documented
`shoe-calibrate camera` commands.

Written without reading the project's camera code or camera model: nothing here imports
`drivers/`; the recognizer is reached only through the CLI, exactly as docs/calibration.md says.

Deck designs: Debian `gnome-cards-data` 1:3.22.23-1 (aisleriot's card themes), fetched with
`apt-get download`, checked against the sha256 pinned below, unpacked with `dpkg-deb -x` into the
work folder (nothing installed). Its copyright file (usr/share/doc/gnome-cards-data/copyright)
gives `Files: *` as GPL-3+ (Jonathan Blandford, Anders Carlsson, Neil Roberts, Christian Persch)
and names no other licence for the card themes, so every theme used here is GPL-3+ as Debian
ships it. Themes: `anglo` and `anglo_poker` (two-colour Anglo-American pips and indices) and
`plastic` (two-colour, stylised pips and an unusual rounded index font). `bellot` (= svg-cards)
and `tigullio` are skipped: the project already has them. Each theme is one SVG sheet of 13 x 5
cells (rows clubs, diamonds, hearts, spades, extras; columns A..K), rendered with rsvg-convert and
cut into cells, each trimmed to its card's opaque area.

The camera model (this file's own, from physics and common sense): a procedural table (green
and blue felt with fibre noise and mottling, wood grain, grey, white cloth) in linear light;
the card's paper tint and, sometimes, a glossy highlight; a card at any angle with a slight
perspective (corner jitter), a soft drop shadow and sometimes a hand's shadow across the scene;
a lighting gradient and vignetting, a colour temperature with an imperfect white balance; the
scene drawn at twice the resolution and integrated down (the sensor's pixels); lens blur, at the
table sometimes motion blur; shot and read noise on an RGGB Bayer mosaic demosaiced by OpenCV;
gamma, JPEG at quality 60-90.

Outputs (`render`): per theme, `tech_ref` (technician photos 800x600, card ~300 px wide, near
upright, on green felt: the templates' photos), `tech_check` (800x600, any angle, every surface),
`table_ref` (1280x720, card 125 px wide, near upright, green felt, taken sharp: blurred ones
were refused by `templates`; refused cards retaken with `retake`: table Kd of every design and
anglo_poker's Jd, Jh; plastic's photo 2h), `table_check` (1280x720, one
card, any angle, every surface, some motion blur) and `hands` (1280x720, 2-4 overlapping cards
fanned as dealt, any angle, truth in hands.json). Each with a labels.csv (image,rank,suit,deck,
condition) for `shoe-calibrate camera templates/accuracy`. `score_hands` runs `recognize --json`
on the hands and counts read/refused/wrong (a card not in the hand = wrong).

Usage: bench/blackbox_camera.py fetch WORK; render WORK [THEME,...]; table_check2 WORK THEME;
retake WORK THEME SET CARD; score_hands WORK THEME TEMPLATES (it runs `shoe-calibrate` from the
PATH, else the one beside this Python: .venv/bin). Then, from WORK, the documented
commands, e.g. `shoe-calibrate camera templates --labels anglo/table_ref/labels.csv --out T` and
`shoe-calibrate camera accuracy --templates T --labels anglo/table_check/labels.csv --json`.
"""
import csv
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys

import cv2
import numpy as np

DEB = "gnome-cards-data"
DEB_SHA256 = "54ef445826dd7701d3ea83f999fbc8f058d304b714732425b23cde5c632596e0"
THEMES = ("anglo", "anglo_poker", "plastic")
BY_ID = ("anglo_poker",)  # themes whose cards are cut by their SVG ids, not by the sheet's grid
SUITS = "cdhs"  # the sheets' row order
RANKS = "A23456789TJQK"
SURFACES = ("green", "blue", "wood", "grey", "white")


def fetch(work):
    os.makedirs(work, exist_ok=True)
    subprocess.run(["apt-get", "download", DEB], cwd=work, check=True)
    deb = [f for f in os.listdir(work) if f.startswith(DEB) and f.endswith(".deb")][0]
    digest = hashlib.sha256(open(os.path.join(work, deb), "rb").read()).hexdigest()
    if digest != DEB_SHA256:
        sys.exit(f"{deb}: sha256 {digest}, pinned {DEB_SHA256}")
    subprocess.run(["dpkg-deb", "-x", deb, "x"], cwd=work, check=True)
    for theme in THEMES:
        svg = os.path.join(work, f"{theme}.svg")
        with gzip.open(os.path.join(work, "x/usr/share/aisleriot/cards", f"{theme}.svgz")) as f:
            open(svg, "wb").write(f.read())
        out = os.path.join(work, "cards", theme)
        os.makedirs(out, exist_ok=True)
        if theme in BY_ID:  # its sheet's last column runs past the page: render each card's group
            for suit, sname in zip(SUITS, ("club", "diamond", "heart", "spade")):
                for rank, rname in zip(RANKS, [str(i) for i in range(1, 11)] + ["jack", "queen", "king"]):
                    subprocess.run(["rsvg-convert", f"--export-id={sname}_{rname}", "-w", "520", svg,
                                    "-o", os.path.join(out, f"{rank}{suit}.png")], check=True)
            continue
        sheet_png = os.path.join(work, f"{theme}_sheet.png")
        subprocess.run(["rsvg-convert", "-w", str(13 * 520), svg, "-o", sheet_png], check=True)
        sheet = cv2.imread(sheet_png, cv2.IMREAD_UNCHANGED)
        ch, cw = sheet.shape[0] / 5, sheet.shape[1] / 13
        for r, suit in enumerate(SUITS):
            for c, rank in enumerate(RANKS):
                cell = sheet[int(r * ch):int((r + 1) * ch), int(c * cw):int((c + 1) * cw)]
                ys, xs = np.nonzero(cell[:, :, 3] > 200)
                card = cell[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
                cv2.imwrite(os.path.join(out, f"{rank}{suit}.png"), card)


# ---- the camera model ---------------------------------------------------------------------------

def lin(srgb):
    return (np.asarray(srgb, np.float32) / 255.0) ** 2.2


def smooth_noise(rng, h, w, scale):
    """Noise with features about `scale` pixels wide: drawn coarse, smoothed, then enlarged."""
    sh, sw = max(4, h // scale * 4), max(4, w // scale * 4)
    small = cv2.GaussianBlur(rng.standard_normal((sh, sw)).astype(np.float32), (0, 0), 1.5)
    small /= small.std() + 1e-6
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)


def surface(rng, kind, h, w):
    """The table in linear light (h x w x 3, BGR)."""
    fine = cv2.GaussianBlur(rng.standard_normal((h, w), np.float32), (5, 5), 1.0)
    fine /= fine.std() + 1e-6
    mottle = smooth_noise(rng, h, w, 64)
    if kind in ("green", "blue"):
        base = (50, 105, 30) if kind == "green" else (110, 60, 20)
        base = np.array(base, np.float32) * rng.uniform(0.8, 1.2, 3)
        img = np.ones((h, w, 3), np.float32) * lin(base)
        img *= (1 + 0.05 * fine + 0.05 * mottle)[:, :, None]
    elif kind == "wood":
        warp = smooth_noise(rng, h, w, 128) * 30 + smooth_noise(rng, h, w, 16) * 2
        yy = np.arange(h, dtype=np.float32)[:, None] + warp
        ang = rng.uniform(-0.2, 0.2)
        xx = np.arange(w, dtype=np.float32)[None, :]
        grain = np.sin(2 * np.pi * (yy + ang * xx) / rng.uniform(9, 22))
        base = lin(np.array((45, 85, 140)) * rng.uniform(0.85, 1.15))
        img = np.ones((h, w, 3), np.float32) * base
        img *= (1 + 0.15 * grain + 0.03 * fine + 0.06 * mottle)[:, :, None]
    else:
        level = {"grey": rng.uniform(105, 150), "white": rng.uniform(225, 245)}[kind]
        img = np.ones((h, w, 3), np.float32) * lin((level,) * 3)
        img *= (1 + 0.015 * fine + 0.02 * mottle)[:, :, None]
        if kind == "white":  # cloth weave
            yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
            img *= (1 + 0.02 * np.sin(xx * 1.7) * np.sin(yy * 1.7))[:, :, None]
    return np.clip(img, 0, 1)


def card_quad(rng, cx, cy, cw, chh, angle, jitter):
    pts = np.array([[-cw / 2, -chh / 2], [cw / 2, -chh / 2], [cw / 2, chh / 2], [-cw / 2, chh / 2]],
                   np.float32)
    pts += rng.uniform(-jitter, jitter, pts.shape).astype(np.float32) * cw
    a = np.deg2rad(angle)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]], np.float32)
    return pts @ rot.T + np.array([cx, cy], np.float32)


def lay(rng, scene, card_bgra, quad, shadow):
    """Composites one card (sRGB BGRA) onto the linear scene at quad, with its drop shadow."""
    H, W = scene.shape[:2]
    x0, y0 = np.maximum(np.floor(quad.min(0)).astype(int) - 40, 0)
    x1, y1 = np.minimum(np.ceil(quad.max(0)).astype(int) + 40, [W, H])
    roi = scene[y0:y1, x0:x1]  # a view: the card and its shadow touch only this box
    h, w = roi.shape[:2]
    q = (quad - np.float32([x0, y0])).astype(np.float32)
    ch, cw = card_bgra.shape[:2]
    src = np.array([[0, 0], [cw, 0], [cw, ch], [0, ch]], np.float32)
    m = cv2.getPerspectiveTransform(src, q)
    rgb = cv2.warpPerspective(lin(card_bgra[:, :, :3]), m, (w, h), flags=cv2.INTER_LINEAR)
    alpha = cv2.warpPerspective(card_bgra[:, :, 3].astype(np.float32) / 255, m, (w, h))
    if shadow:
        dx, dy, blur, depth = shadow
        sh = cv2.GaussianBlur(np.roll(alpha, (int(dy), int(dx)), (0, 1)), (0, 0), blur)
        roi *= (1 - depth * sh)[:, :, None]
    tint = np.array(rng.uniform([0.90, 0.94, 0.96], [0.97, 0.99, 1.0]), np.float32)  # paper, BGR
    rgb = rgb * tint
    if rng.random() < 0.2:  # a glossy highlight on the card
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        c = q.mean(0) + rng.uniform(-0.3, 0.3, 2) * (q.max(0) - q.min(0))
        r = (q.max(0) - q.min(0)).mean() * rng.uniform(0.15, 0.4)
        rgb += (rng.uniform(0.1, 0.35) * np.exp(-((xx - c[0]) ** 2 + (yy - c[1]) ** 2) / (2 * r * r)))[:, :, None]
    roi[:] = roi * (1 - alpha[:, :, None]) + rgb * alpha[:, :, None]


def expose(rng, scene, out_wh, blur_sigma, motion, jpeg_q):
    """Light, optics, sensor and codec: linear scene at 2x -> JPEG bytes at out_wh."""
    img = cv2.resize(scene, out_wh, interpolation=cv2.INTER_AREA)  # the sensor's pixels
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    gx, gy = rng.uniform(-0.35, 0.35, 2)
    light = 1 + gx * (xx / w - 0.5) + gy * (yy / h - 0.5)
    r2 = ((xx / w - 0.5) ** 2 + (yy / h - 0.5) ** 2) * 2
    light *= 1 - rng.uniform(0.1, 0.35) * r2  # vignetting
    if rng.random() < 0.3:  # a hand's or an arm's soft shadow across part of the scene
        a = rng.uniform(0, np.pi)
        d = (xx - w / 2) * np.cos(a) + (yy - h / 2) * np.sin(a) - rng.uniform(-0.3, 0.3) * w
        light *= 1 - rng.uniform(0.2, 0.45) / (1 + np.exp(-d / (0.03 * w)))
    # colour temperature (warm tungsten .. cool daylight), white balance off by a few percent
    warm = rng.uniform(-1, 1)
    illum = np.array([1 - 0.25 * warm, 1.0, 1 + 0.25 * warm], np.float32)
    wb = 1 / illum * rng.uniform(0.93, 1.07, 3).astype(np.float32)
    img = img * light[:, :, None] * (illum * wb * rng.uniform(0.7, 1.0))
    img = cv2.GaussianBlur(img, (0, 0), blur_sigma)
    if motion:
        length, ang = motion
        k = np.zeros((length * 2 + 1,) * 2, np.float32)
        c = length
        dx, dy = np.cos(np.deg2rad(ang)), np.sin(np.deg2rad(ang))
        cv2.line(k, (int(c - dx * length / 2), int(c - dy * length / 2)),
                 (int(c + dx * length / 2), int(c + dy * length / 2)), 1.0, 1)
        img = cv2.filter2D(img, -1, k / k.sum())
    # RGGB mosaic, photon (shot) noise and read noise, demosaic
    H, W = img.shape[:2]
    mosaic = np.empty((H, W), np.float32)
    mosaic[0::2, 0::2] = img[0::2, 0::2, 2]
    mosaic[0::2, 1::2] = img[0::2, 1::2, 1]
    mosaic[1::2, 0::2] = img[1::2, 0::2, 1]
    mosaic[1::2, 1::2] = img[1::2, 1::2, 0]
    full_well = rng.uniform(300, 1500)
    mosaic = mosaic + rng.standard_normal(mosaic.shape).astype(np.float32) * (
        np.sqrt(np.clip(mosaic, 0, None) / full_well) + rng.uniform(0.002, 0.008))
    raw = (np.clip(mosaic, 0, 1) * 65535).astype(np.uint16)
    # OpenCV names a Bayer pattern by its second row's first pixels: BayerBG is this RGGB
    bgr = cv2.cvtColor(raw, cv2.COLOR_BayerBG2BGR).astype(np.float32) / 65535
    out = (np.clip(bgr, 0, 1) ** (1 / 2.2) * 255 + 0.5).astype(np.uint8)
    return cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, int(jpeg_q)])[1].tobytes()


def photo(rng, cards, kind, out_wh, card_w, upright, table, hand=False, clean=False):
    """One photo: cards (list of BGRA), returns (jpeg bytes, quads at output scale). `clean`: the
    table camera's reference photos taken with care (focus set, blur 0.3 px, JPEG 95, still)."""
    W, H = out_wh[0] * 2, out_wh[1] * 2
    scene = surface(rng, kind, H, W)
    cw = card_w * 2 * rng.uniform(0.96, 1.04)
    quads = []
    angle0 = rng.uniform(-6, 6) if upright else rng.uniform(0, 360)
    aspect = cards[0].shape[0] / cards[0].shape[1]
    chh = cw * aspect
    shadow = (rng.uniform(-4, 4) * 2, rng.uniform(1, 6) * 2, rng.uniform(3, 8) * 2, rng.uniform(0.2, 0.5))
    t = np.deg2rad(angle0)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    for i in range(len(cards)):  # the hand laid round (0, 0), then moved to a place in view
        a = angle0 + (rng.uniform(-8, 8) if i else 0)
        off = np.array([cw * rng.uniform(0.22, 0.35) * i, chh * rng.uniform(0.05, 0.2) * i])
        quads.append(card_quad(rng, *(rot @ off), cw, chh, a, 0.02 if table else 0.03))
    lo, hi = np.min(quads, axis=(0, 1)), np.max(quads, axis=(0, 1))
    pad = 0.02 * W
    shift = [rng.uniform(pad - lo[k], max(pad - lo[k], size - pad - hi[k])) for k, size in enumerate((W, H))]
    for card, q in zip(cards, quads):
        lay(rng, scene, card, q + np.float32(shift), shadow)
    quads = [(q + np.float32(shift)) / 2 for q in quads]
    blur = rng.uniform(0.4, 1.1) if table else rng.uniform(0.5, 1.6)
    motion = None
    if table and rng.random() < 0.25:
        motion = (int(rng.integers(3, 8)), rng.uniform(0, 180))
    quality = rng.integers(60, 91)
    if clean:
        blur, motion, quality = 0.3, None, 95
    return expose(rng, scene, out_wh, blur, motion, quality), quads


def load_cards(work, theme):
    d = os.path.join(work, "cards", theme)
    return {f"{r}{s}": cv2.imread(os.path.join(d, f"{r}{s}.png"), cv2.IMREAD_UNCHANGED)
            for s in SUITS for r in RANKS}


def render(work, themes=THEMES, seed=40, checks=2, hands_n=40):
    """Per theme: one reference photo per card at each scale; `checks` check photos per card at
    each scale (surfaces taken in turn); `hands_n` hands."""
    for theme in themes:
        ti = THEMES.index(theme)
        cards = load_cards(work, theme)
        names = list(cards)
        sets = {"tech_ref": ((800, 600), 300, True, False, 1),
                "table_ref": ((1280, 720), 125, True, True, 1),
                "tech_check": ((800, 600), 300, False, False, checks),
                "table_check": ((1280, 720), 125, False, True, checks)}
        for si, (name, (wh, cw, upright, table, n)) in enumerate(sets.items()):
            # table_ref: seed 7 and clean, as measured (the first, blurred, set was refused)
            rng = np.random.default_rng(7 if name == "table_ref" else [seed, ti, si])
            d = os.path.join(work, theme, name)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "labels.csv"), "w", newline="") as f:
                wr = csv.writer(f)
                wr.writerow(["image", "rank", "suit", "deck", "condition"])
                for k in range(n * len(names)):
                    card = names[k % len(names)]
                    kind = "green" if n == 1 else SURFACES[k % len(SURFACES)]
                    jpg, _ = photo(rng, [cards[card]], kind, wh, cw, upright, table,
                                   clean=name == "table_ref")
                    fn = f"{kind}_{card}_{k // len(names)}.jpg"
                    open(os.path.join(d, fn), "wb").write(jpg)
                    wr.writerow([fn, card[0].replace("T", "10"), card[1], theme, kind])
            print(theme, name, "done", flush=True)
        rng = np.random.default_rng([seed, ti, 9])
        d = os.path.join(work, theme, "hands")
        os.makedirs(d, exist_ok=True)
        truth = {}
        for i in range(hands_n):
            kind = SURFACES[i % len(SURFACES)]
            hand = list(rng.choice(names, int(rng.integers(2, 5)), replace=False))
            jpg, quads = photo(rng, [cards[c] for c in hand], kind, (1280, 720), 125, False, True, hand=True)
            fn = f"{kind}_{i:03d}.jpg"
            open(os.path.join(d, fn), "wb").write(jpg)
            truth[fn] = {"cards": hand, "surface": kind, "quads": [q.tolist() for q in quads]}
        json.dump(truth, open(os.path.join(d, "hands.json"), "w"), indent=1)
        print(theme, "hands done", flush=True)


def score_hands(work, theme, templates, cli="shoe-calibrate", wrong_dir="blackbox_wrong"):
    """`recognize --json` on the hands, per surface: cards shown, cards read, the top (uncovered)
    card read, and wrong reads (a card not in the hand; its photo copied to wrong_dir)."""
    import collections
    d = os.path.join(work, theme, "hands")
    truth = json.load(open(os.path.join(d, "hands.json")))
    files = sorted(truth)
    out = subprocess.run([cli, "camera", "recognize", "--templates", templates, "--json"]
                         + [os.path.join(d, f) for f in files], capture_output=True, text=True).stdout
    stats = collections.defaultdict(collections.Counter)
    for line in out.splitlines():
        r = json.loads(line)
        f = os.path.basename(r["image"])
        t = truth[f]
        st = stats[t["surface"]]
        got = [c["card"] for c in r["cards"] if c.get("card") not in (None, "unknown")]
        st["hands"] += 1
        st["cards"] += len(t["cards"])
        st["read"] += len(set(got) & set(t["cards"]))
        st["top_read"] += t["cards"][-1] in got
        for g in got:
            if g not in t["cards"]:
                st["wrong"] += 1
                os.makedirs(wrong_dir, exist_ok=True)
                shutil.copy(os.path.join(d, f), os.path.join(wrong_dir, f"{theme}_hands_{f[:-4]}_read_{g}.jpg"))
    return {k: dict(v) for k, v in stats.items()}


def table_check2(work, theme, n=3):
    """The table's second set of single cards (seed 41, n photos a card, surfaces in turn)."""
    cards = load_cards(work, theme)
    names = list(cards)
    rng = np.random.default_rng([41, THEMES.index(theme), 3])
    d = os.path.join(work, theme, "table_check2")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "labels.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["image", "rank", "suit", "deck", "condition"])
        for k in range(n * len(names)):
            card, kind = names[k % 52], SURFACES[(k + k // 52) % len(SURFACES)]
            jpg, _ = photo(rng, [cards[card]], kind, (1280, 720), 125, False, True)
            fn = f"{kind}_{card}_{k // 52}.jpg"
            open(os.path.join(d, fn), "wb").write(jpg)
            wr.writerow([fn, card[0].replace("T", "10"), card[1], theme, kind])


def retake(work, theme, name, card):
    """Takes one reference photo again (fresh seed 1234), as `templates` asks for a refused card."""
    cards = load_cards(work, theme)
    rng = np.random.default_rng(1234)
    table = name == "table_ref"
    wh, cw = ((1280, 720), 125) if table else ((800, 600), 300)
    jpg, _ = photo(rng, [cards[card]], "green", wh, cw, True, table, clean=table)
    open(os.path.join(work, theme, name, f"green_{card}_0.jpg"), "wb").write(jpg)


def shoe_calibrate():
    """The documented command: on the PATH (an activated venv, an installed table), else beside
    this Python (.venv/bin: `.venv/bin/python bench/blackbox_camera.py` without activating)."""
    here = os.path.join(os.path.dirname(sys.executable), "shoe-calibrate")
    return shutil.which("shoe-calibrate") or (here if os.path.exists(here) else "shoe-calibrate")


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch", help="download and unpack the pinned .deb").add_argument("work")
    r = sub.add_parser("render", help="render the photo sets")
    r.add_argument("work")
    r.add_argument("themes", nargs="?", default=",".join(THEMES), help="comma-separated")
    t = sub.add_parser("table_check2", help="the table's second set of single cards")
    t.add_argument("work")
    t.add_argument("theme", choices=THEMES)
    k = sub.add_parser("retake", help="take one reference photo again")
    for name in ("work", "theme", "set", "card"):
        k.add_argument(name)
    h = sub.add_parser("score_hands", help="recognize --json on the hands, scored")
    for name in ("work", "theme", "templates"):
        h.add_argument(name)
    a = ap.parse_args(argv)
    if a.cmd == "fetch":
        fetch(a.work)
    elif a.cmd == "render":
        themes = a.themes.split(",")
        bad = [x for x in themes if x not in THEMES]
        if bad:
            ap.error(f"render: unknown theme {bad[0]!r} (known: {', '.join(THEMES)})")
        render(a.work, themes)
    elif a.cmd == "table_check2":
        table_check2(a.work, a.theme)
    elif a.cmd == "retake":
        retake(a.work, a.theme, a.set, a.card)
    else:
        print(json.dumps(score_hands(a.work, a.theme, a.templates, cli=shoe_calibrate())))


if __name__ == "__main__":
    main()
