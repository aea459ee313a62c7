"""Visual recognition on deck designs nobody here drew (tests/data/decks), photographed through the
camera model on every table surface: templates from one photo per card, other photos read or
refused and never misread, another deck's templates refuse, overlapping hands. A small decisive
sample; the full sweep is bench/bench_camera.py."""
import csv
import json
import os

import cv2
import numpy as np
import pytest

from calibration.cli import main
from controller.cards import CARDS
from drivers.camera import camera_model as cm
from drivers.camera.recognize import VisualRecognizer


def write_photos(folder, deck, rng, conds, tables, n=None):
    """Webcam photos as a studio technician takes them: 800x600, straight down, one card per
    photo at any place and angle, the card about 300 x 420 pixels."""
    os.makedirs(folder, exist_ok=True)
    cards = CARDS if n is None else [CARDS[int(i)] for i in rng.choice(52, n, replace=False)]
    rows = []
    for i, c in enumerate(cards):
        cond, table = conds[i % len(conds)], tables[i % len(tables)]
        img, _ = cm.webcam_photo(deck, c, table, rng, cond)
        name = f"{c}.jpg"
        cv2.imwrite(os.path.join(folder, name), img, [cv2.IMWRITE_JPEG_QUALITY, 85])
        rows.append({"image": name, "rank": c[0], "suit": c[1], "deck": deck, "condition": f"{table}/{cond}"})
    with open(os.path.join(folder, "labels.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["image", "rank", "suit", "deck", "condition"])
        w.writeheader()
        w.writerows(rows)
    return os.path.join(folder, "labels.csv")


@pytest.fixture(scope="module")
def cardsjs_reference(tmp_path_factory):
    """The issue's case: one photo per card of a real deck on a plain light-grey table, any
    angle, slightly soft and JPEG-compressed. The old finder found no card in such a photo."""
    d = tmp_path_factory.mktemp("cardsjs")
    write_photos(d / "reference", "cardsjs", np.random.default_rng(1), ["clean", "rotation"], ["grey"])
    return d / "reference"


@pytest.fixture(scope="module")
def cardsjs_templates(cardsjs_reference):
    t = cardsjs_reference.parent / "t"
    assert main(["camera", "templates", "--labels", str(cardsjs_reference / "labels.csv"), "--out", str(t)]) == 0
    return str(t)


def test_a_reference_photo_of_another_card_or_with_two_cards_corners_is_refused(cardsjs_reference, tmp_path,
                                                                                 capsys, monkeypatch):
    """A photo of the 6 of spades labelled 5s (its 6 is like a 5: 0.81, and its suit is right),
    and an 8 of hearts whose other corner shows a 6 (a misprint, a doctored card) passed every
    check of the index: their templates would read other cards. Both corners of each photo are
    read against the rest of the deck and must show the label's card: both photos named, one
    line."""
    import shutil
    ref = tmp_path / "reference"
    shutil.copytree(cardsjs_reference, ref)
    rng = np.random.default_rng(21)
    img, _ = cm.webcam_photo("cardsjs", "6s", "grey", rng, "clean")
    cv2.imwrite(str(ref / "5s.jpg"), img, [cv2.IMWRITE_JPEG_QUALITY, 85])
    faces = cm.load_deck("cardsjs")
    eight = faces["8h"].copy()
    h, w = eight.shape[:2]
    eight[int(0.72 * h):, int(0.83 * w):] = faces["6h"][int(0.72 * h):, int(0.83 * w):]
    monkeypatch.setitem(cm._cache, "doctored", {**faces, "8h": eight})
    img, _ = cm.webcam_photo("doctored", "8h", "grey", rng, "clean")      # upright: the 8 at the tl
    cv2.imwrite(str(ref / "8h.jpg"), img, [cv2.IMWRITE_JPEG_QUALITY, 85])
    capsys.readouterr()
    assert main(["camera", "templates", "--labels", str(ref / "labels.csv"), "--out", str(tmp_path / "t")]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "5s.jpg: labelled 5s, it shows 6s" in err, err
    assert "8h.jpg: labelled 8h, it shows 8h at one index corner and 6h at the other" in err, err
    assert not (tmp_path / "t" / "deck.json").exists()


def test_templates_from_webcam_photos_read_other_photos_on_every_surface(cardsjs_templates, tmp_path,
                                                                         capsys):
    labels = write_photos(tmp_path / "other", "cardsjs", np.random.default_rng(2),
                          ["clean", "rotation", "perspective", "defocus", "white_balance", "jpeg"],
                          list(cm.SURFACES), n=24)
    capsys.readouterr()
    rc = main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels", labels, "--json"])
    r = json.loads(capsys.readouterr().out)
    assert r["wrong"] == 0 and rc == 0, r["wrong_as"]
    assert r["correct"] >= 22, r
    assert main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels", labels]) == 0
    table, err = capsys.readouterr()
    assert "cardsjs/white/" in table and "read wrongly (true card -> read as): never" in table
    assert f"pass: {r['daemon']} of 24 photo(s)" in err
    # a cold trial: the studio's own deck, checked as "another deck", passed; and 68% read passed
    assert main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels", labels,
                 "--another-deck"]) == 1
    assert f"fail: {r['correct']} of 24 photo(s) of another deck read" in capsys.readouterr().err
    assert main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels", labels,
                 "--min-read", "1"]) == (0 if r["daemon"] == 24 else 1)


def test_a_card_the_templates_never_read_fails_the_check(cardsjs_templates, tmp_path, capsys):
    """Cold trial (trial31): KDE Standard's 7h and 8h face templates swapped and the manifest
    signed again loaded, and the check passed on its share of photos (50 of 52) with both cards
    refused every time (here cardsJS's 7h and Kh): on a table dealing from the camera they would stop the game each time. A card refused in
    every one of its photos (two or more) now fails the check, a card with no photo is said, a
    photo listed twice or a misspelt column is refused, and a photo that cannot be read is named
    while the others are read."""
    import shutil
    from drivers.camera.template_files import write_manifest
    t = tmp_path / "t"
    shutil.copytree(cardsjs_templates, t)
    a, b = t / "face_7h.png", t / "face_Kh.png"
    a.rename(tmp_path / "x.png"), b.rename(a), (tmp_path / "x.png").rename(b)
    write_manifest(str(t))
    rng = np.random.default_rng(31)
    rows = ["image,rank,suit"]
    for i, c in enumerate(["7h", "Kh", "7h", "Kh", *CARDS[:16]]):
        img, _ = cm.webcam_photo("cardsjs", c, "grey", rng, "clean")
        cv2.imwrite(str(tmp_path / f"{i}.jpg"), img, [cv2.IMWRITE_JPEG_QUALITY, 85])
        rows.append(f"{i}.jpg,{c[0]},{c[1]}")
    (tmp_path / "l.csv").write_text("\n".join(rows) + "\n")
    capsys.readouterr()
    rc = main(["camera", "accuracy", "--templates", str(t), "--labels", str(tmp_path / "l.csv"),
               "--min-read", "0.75"])
    out, err = capsys.readouterr()
    assert rc == 1 and "fail: 7h, Kh refused in every one of its photos" in err, err
    assert "not checked (34 card(s) with no photo)" in out, out
    assert main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels",
                 str(tmp_path / "l.csv"), "--min-read", "0.75"]) == 0      # the right templates
    (tmp_path / "d.csv").write_text("\n".join(rows + ["3.jpg,8,h"]) + "\n")
    assert main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels",
                 str(tmp_path / "d.csv")]) == 2
    assert "d.csv:22: 3.jpg is listed twice (lines 5 and 22)" in capsys.readouterr().err
    (tmp_path / "c.csv").write_text("\n".join([rows[0] + ",conditon"] + [r + ",x" for r in rows[1:]]) + "\n")
    assert main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels",
                 str(tmp_path / "c.csv")]) == 2
    assert "column 'conditon' is not known" in capsys.readouterr().err
    (tmp_path / "5.jpg").write_bytes(b"not a photo")
    (tmp_path / "6.jpg").unlink()
    rc = main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels", str(tmp_path / "l.csv"),
               "--json"])
    out, err = capsys.readouterr()
    assert rc == 1 and "5.jpg: not an image" in err and "6.jpg: no such file" in err, err
    assert "fail: 2 photo(s) could not be read" in err and json.loads(out)["photos"] == 18


def test_a_check_photo_with_two_cards_says_both(cardsjs_templates, tmp_path, capsys):
    """A cold trial: a check photo labelled 7h that showed the 7h and a 3c said only
    "7h -> 3c", as if the 7h had been misread. It is still no pass (which card the label
    meant cannot be known), but the report names every card found."""
    zones = {"a": [(100, 60), (400, 60), (400, 540), (100, 540)],
             "b": [(600, 60), (900, 60), (900, 540), (600, 540)]}
    img, _ = cm.table_frame("cardsjs", {"a": "7h", "b": "3c"}, zones, "grey", "clean",
                            np.random.default_rng(5), size=(1000, 600), width=300)
    cv2.imwrite(str(tmp_path / "two.jpg"), img, [cv2.IMWRITE_JPEG_QUALITY, 90])
    (tmp_path / "l.csv").write_text("image,rank,suit\ntwo.jpg,7,h\n")
    capsys.readouterr()
    assert main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels", str(tmp_path / "l.csv")]) == 1
    out = capsys.readouterr().out
    assert "7h -> 7h+3c (2 cards found)" in out or "7h -> 3c+7h (2 cards found)" in out, out


def test_another_decks_templates_refuse_every_card(cardsjs_templates, tmp_path, capsys):
    """Templates of one deck never read another deck's cards (svg-cards, and the drawn deck),
    though the fonts are alike: the other deck's cards are refused."""
    for i, deck in enumerate(("svgcards", "synth")):
        labels = write_photos(tmp_path / deck, deck, np.random.default_rng(3 + i), ["clean"],
                              ["green_felt", "grey", "wood"], n=12)
        capsys.readouterr()
        rc = main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels", labels, "--json"])
        r = json.loads(capsys.readouterr().out)
        assert r["correct"] == 0 and r["wrong"] == 0 and r["unknown"] == 12, (deck, r)
        assert rc == 1          # as the studio's own deck: nothing read is no pass
        # as another deck: every photo refused is the pass (a cold trial found the exits reversed)
        assert main(["camera", "accuracy", "--templates", cardsjs_templates, "--labels", labels,
                     "--another-deck"]) == 0
        assert "pass: all 12 photo(s) of another deck refused" in capsys.readouterr().err


def test_overlapping_hand_reads_the_covered_cards_by_their_index_corner():
    """A blackjack hand: each card dealt over the last, offset so the index corners below stay
    visible. Whole-card outlines find only the top card; the covered ones are read from the
    corners of the hand's outline."""
    t = cm.reference_templates("cardsjs", seed=5, size=(640, 400))
    rec = VisualRecognizer(t)
    rng = np.random.default_rng(8)
    read = 0
    for angle in (8, 70, 130, 190, 250, 310):
        frame = cm.surface("blue_felt", 640, 400, rng)
        cards = [CARDS[int(i)] for i in rng.choice(52, 3, replace=False)]
        cm.hand(frame, "cardsjs", cards, (320, 200), 125, angle, rng)
        got = [c for c, _ in rec.read_image(cm.camera(frame, rng))]
        assert set(got) <= set(cards), (cards, got)              # never a card that is not there
        read += len(set(got))
    assert read > 6, read             # the top cards alone would be 6


@pytest.fixture(scope="module")
def samples():
    """One photo per card of cardsJS on green felt: [(frame, quad, card)] for Templates.capture."""
    from drivers.camera.find import find_cards
    rng = np.random.default_rng(4)
    out = []
    for c in CARDS:
        frame = cm.surface("green_felt", 480, 320, rng)
        cm.lay(frame, cm.load_deck("cardsjs")[c], cm.pose(rng, "clean", (240, 160), 125, 1.4))
        out.append((frame, find_cards(frame)[0], c))
    return out


def swap(samples, a, b):
    """The samples with the photos of cards a and b labelled the other way round."""
    i, j = CARDS.index(a), CARDS.index(b)
    out = list(samples)
    out[i], out[j] = (samples[j][0], samples[j][1], a), (samples[i][0], samples[i][1], b)
    return out


def test_a_reference_photo_that_shows_no_proper_index_is_refused(samples):
    """A template learned from a wrong outline or a mislabelled photo would misread other cards
    with high confidence (it did: 22 wrong reads in the svg-cards sweep before this check):
    every card's rank glyph must match its rank in other suits, its suit glyph its suit - and
    its own suit's better than the other suit of its colour's (2s and 2c swapped)."""
    from drivers.camera.templates import BadReference, Templates
    Templates.capture(samples)                                     # the deck as photographed
    for a, b in (("4h", "5h"), ("2s", "2c"), ("Kh", "Kd")):
        with pytest.raises(BadReference) as e:
            Templates.capture(swap(samples, a, b))
        assert set(e.value.cards) == {a, b}


def grey(img, keep=0.0):
    """The image with `keep` of its colour: a camera whose saturation is turned down (0: grey)."""
    g = cv2.cvtColor(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR).astype(np.float32)
    return np.uint8(np.clip(g + keep * (img.astype(np.float32) - g), 0, 255))


def test_reference_photos_without_colour_are_refused(samples):
    """Templates from a camera sending grey could not tell a diamond from a spade: refused,
    naming the red cards (their ink shows no red)."""
    from drivers.camera.templates import BadReference, Templates
    with pytest.raises(BadReference) as e:
        Templates.capture([(grey(f), q, c) for f, q, c in samples])
    assert set(e.value.cards) == {c for c in CARDS if c[1] in "hd"}
    assert "colour" in str(e.value)


def test_a_frame_with_too_little_colour_never_reads_a_red_card_as_black(cardsjs_templates, tmp_path):
    """The ink's colour only narrows the comparison: in a grey frame (or with a tenth of the
    colour left) a diamond's ink is "not red", and compared with spades and clubs alone it read
    as a spade (7 of 26 red cards, in a cold trial). The suit's shape must beat every suit."""
    from drivers.camera.templates import Templates
    rec = VisualRecognizer(Templates.load(cardsjs_templates))
    rng = np.random.default_rng(12)
    reds = [c for c in CARDS if c[1] in "hd"]
    read = coloured = 0
    for i, c in enumerate(reds):
        img, _ = cm.webcam_photo("cardsjs", c, ("grey", "white", "wood")[i % 3], rng, "clean")
        for keep in (0.0, 0.1):
            got = [card for card, _ in rec.read_image(grey(img, keep))]
            assert set(got) <= {c}, (c, keep, got)
            read += len(got)
        coloured += bool(rec.read_image(img))
    # colour still reads (every photo but one: the real webcam's last, a Kd on the white table,
    # outlined at its printed frame and refused); grey not all
    assert coloured >= len(reds) - 2 and read < 2 * len(reds)


def test_label_files_in_a_technicians_spelling():
    """'10', words, symbols and any case name the same cards; anything else is refused."""
    from calibration.camera_tools import label_card
    assert [label_card(r, s) for r, s in [("10", "Hearts"), ("t", "H"), (" q ", "\u2660"), ("ace", "clubs"),
                                          ("K", "d")]] == ["Th", "Th", "Qs", "Ac", "Kd"]
    assert label_card("11", "s") is None and label_card("A", "x") is None and label_card("", "") is None


def test_a_photo_with_a_second_smaller_white_thing_still_gives_its_card(tmp_path):
    """A reference photo with a sheet of paper or a reflection beside the card: the card is the
    clearly largest outline; two alike outlines are refused (which one is the card?)."""
    from calibration.camera_tools import one_card
    a, b = cm.card_quad((200, 200), 150, 5), cm.card_quad((500, 200), 60, 0)
    assert one_card([b, a]) is a and one_card([a]) is a
    assert one_card([a, cm.card_quad((500, 200), 140, 0)]) is None and one_card([]) is None


def test_a_card_under_a_gloss_or_a_shadow_on_a_light_table_is_found_where_it_lies():
    """A lamp's gloss across a white or light-grey table joins the card to a bright streak
    reaching the photo's edge, and a shadow band cuts a corner off the card or hides one side's
    edge: the outline was not found, or found 6 pixels and more off (Responsive, the index at the
    card's edge: refused). Found within 3 pixels of where the card lies in 12 of these 12 photos
    (2, then 8 before the card's filled sharp outline); the rest are refused, never misread
    (bench/bench_webcam.py)."""
    from drivers.camera.find import find_cards
    from drivers.camera.outline import _order
    rng = np.random.default_rng(2)
    found = 0
    for i in range(12):
        table, cond = ("white", "light_grey")[i % 2], ("gloss", "shadow")[(i // 2) % 2]
        img, true = cm.webcam_photo("responsive", "5s", table, rng, cond)
        tq = _order(np.float32(true))
        size = (float(np.linalg.norm(tq[0] - tq[1])), float(np.linalg.norm(tq[0] - tq[3])))
        quads = find_cards(img, size)
        found += len(quads) == 1 and float(np.abs(quads[0] - tq).max()) < 3
    assert found >= 11, found


def test_a_court_card_under_a_shadow_band_or_a_gloss_or_on_a_noisy_white_table_is_found():
    """A court card's picture cuts the paper inside its sharp outline apart, a shadow band's or
    a streak's edge joins that outline to the photo's edge, and a noisy sensor's edges cover a
    white table: the outline's inside filled (from the whiteness smoothed too) finds it. Before,
    1 of these 12 photos was found (bench_webcam.py --per-cell 4, seed 0: 20 of the 39 refusals
    of cardsJS, svg-cards and Kennard had no outline or one 16 pixels and more off; 3 now)."""
    from drivers.camera.find import find_cards
    from drivers.camera.outline import _order
    rng = np.random.default_rng(5)
    found = 0
    for i in range(12):
        table, cond = (("white", "noise"), ("grey", "shadow"), ("light_grey", "gloss"))[i % 3]
        img, true = cm.webcam_photo("cardsjs", "Qc", table, rng, cond)
        tq = _order(np.float32(true))
        size = (float(np.linalg.norm(tq[0] - tq[1])), float(np.linalg.norm(tq[0] - tq[3])))
        quads = find_cards(img, size)
        found += len(quads) == 1 and float(np.abs(quads[0] - tq).max()) < 3
    assert found >= 11, found


def _washed(img, quad, box, strength):
    """The photo with its far index corner (the quad's br) under a lamp's bright spot: the index
    washed out towards white (`strength` 1: clipped, as an overexposed or glossy corner)."""
    from drivers.camera.hands import both_corners
    from drivers.camera.index import CH, CW
    m = cv2.getPerspectiveTransform(np.float32([[0, 0], [CW, 0], [CW, CH], [0, CH]]),
                                    both_corners(np.float32(quad))[1])
    x0, y0, x1, y1 = box
    c = cv2.perspectiveTransform(np.float32([[[(x0 + x1) / 2, (y0 + y1) / 2]]]), m)[0, 0]
    yy, xx = np.mgrid[0:img.shape[0], 0:img.shape[1]].astype(np.float32)
    a = strength * np.exp(-((xx - c[0]) ** 2 + (yy - c[1]) ** 2) / (2 * 30.0 ** 2))[..., None]
    return np.clip(img * (1 - a) + 255 * a, 0, 255).astype(np.uint8)


def test_a_photo_whose_far_index_a_glare_washes_out_reads_at_the_other_corner(cardsjs_templates, monkeypatch):
    """A gloss's streak, a glare or overexposure washes one index corner out of a technician's
    photo while the other reads clearly: 6 of Kennard's and Responsive's 14 refusals in 448
    photos (bench_webcam.py, seed 0) were such, and the card was refused for want of its second
    corner. One corner at the covered card's score, the other saying no other card, the face and
    the deck check passed: the card. Its far corner showing another card's index (a doctored
    card), faint enough not to read, still refuses it; so does a card with both corners washed."""
    from drivers.camera.find import find_cards
    from drivers.camera.templates import Templates
    rec = VisualRecognizer(Templates.load(cardsjs_templates))
    rng = np.random.default_rng(31)
    for card, table in (("7d", "green_felt"), ("Ks", "wood"), ("3c", "grey")):
        img, _ = cm.webcam_photo("cardsjs", card, table, rng, "clean")
        q, = find_cards(img, rec.t.card_size)
        washed = _washed(img, q, rec.t.box, 1.0)
        assert rec.read_corner(washed, q[[2, 3, 0, 1]])[0] is None, card      # the far index unread
        assert rec.read_quad(washed, q)[0] == card, card
        assert rec.read_quad(_washed(washed, q[[2, 3, 0, 1]], rec.t.box, 1.0), q)[0] is None, card
    faces = cm.load_deck("cardsjs")
    three = faces["3c"].copy()
    h, w = three.shape[:2]
    three[int(0.72 * h):, int(0.83 * w):] = faces["8c"][int(0.72 * h):, int(0.83 * w):]
    monkeypatch.setitem(cm._cache, "doctored", {**faces, "3c": three})
    img, _ = cm.webcam_photo("doctored", "3c", "grey", np.random.default_rng(32), "clean")
    q, = find_cards(img, rec.t.card_size)
    assert rec.read_quad(img, q)[0] is None                       # 3c at one corner, 8c at the other
    assert rec.read_quad(_washed(img, q, rec.t.box, 0.8), q)[0] is None    # 8c too faint to read
    # the far corner another colour's index, washed till its colour is unclear: still an 8 and a
    # diamond by shape (a review read such a 3c as a 3c at strengths 0.8-0.95, seeds 32 and 33)
    for other, card in (("8d", "3c"), ("Ad", "5c")):
        doctored = faces[card].copy()
        doctored[int(0.72 * h):, int(0.83 * w):] = faces[other][int(0.72 * h):, int(0.83 * w):]
        monkeypatch.setitem(cm._cache, "doctored", {**faces, card: doctored})
        for seed in (32, 33):
            img, _ = cm.webcam_photo("doctored", card, "grey", np.random.default_rng(seed), "clean")
            q, = find_cards(img, rec.t.card_size)
            for strength in (0.8, 0.85, 0.9, 0.95):
                assert rec.read_quad(_washed(img, q, rec.t.box, strength), q)[0] is None, (card, seed, strength)
