"""`shoe-calibrate camera ...`: zones, exposure/focus sweep, templates and recognition."""
import argparse
import contextlib
import json
import os
import re
import sys

from .shoe_tools import ToolError


def _load_codebook(path):
    from .cli import load_codebook
    return load_codebook(path)


def _zones(path):
    """The [zones] of a calibration file, checked (three points a polygon at least), or a
    ToolError saying what is wrong: the file missing, the table missing or empty, a bad polygon."""
    from drivers.camera.driver import Zones
    from .files import load
    if not os.path.isfile(path):
        raise ToolError(f"{path}: no such calibration file (write the zones in it first: "
                        f"docs/calibration.md step 6)")
    zones = load(path).get("zones")
    if not zones:
        raise ToolError(f"{path}: no [zones] table, or it is empty (docs/camera.md)")
    try:
        Zones(zones)
    except (ValueError, TypeError) as e:
        raise ToolError(f"{path}: {e}") from None
    return zones


def _labels(path):
    """The rows of a labels CSV: the file there, its columns, at least one photo."""
    from .camera_tools import label_rows
    return label_rows(path)


def _order(path, words):
    """The --order file's cards, checked: every deck card once (a technician's spelling of a
    card, 'Td' or '10d', any case)."""
    from controller.cards import CARDS
    from .camera_tools import label_card
    cards, seen = [], set()
    for w in words:
        card = label_card(w[:-1], w[-1:]) if len(w) >= 2 else None
        if card is None:
            raise ToolError(f"--order {path}: {w[:20]!r} is not a card (rank A 2-10 or T J Q K, suit s h d c)")
        if card in seen:
            raise ToolError(f"--order {path}: {card} is listed twice")
        seen.add(card)
        cards.append(card)
    missing = [c for c in CARDS if c not in seen]
    if missing:
        raise ToolError(f"--order {path}: {len(missing)} card(s) missing ({', '.join(missing[:6])}"
                        f"{' ...' if len(missing) > 6 else ''}): the templates need every card once")
    return cards


@contextlib.contextmanager
def _refused_leaves_nothing(out):
    """The templates' --out made before the photos are read, and taken away again (when this
    made it and it is still empty) if the capture is refused."""
    from . import camera_tools as ct
    made = ct.out_folder(out)
    try:
        yield
    except BaseException:
        if made and os.path.isdir(out) and not os.listdir(out):
            os.rmdir(out)
        raise


def cmd_camera(a):
    import cv2
    from . import camera_accuracy as ca, camera_read as cr, camera_tools as ct
    from .files import load, save
    # OpenCV's own [ WARN ...] lines (a file it cannot open) would come before the tool's error
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_ERROR)
    if a.action == "zones":
        zones = _zones(a.calibration)
        img = ct.read_image(a.image)
        cam = load(a.calibration).get("camera") or {}
        size = (cam.get("width"), cam.get("height"))
        if all(isinstance(v, int) for v in size) and (img.shape[1], img.shape[0]) != size:
            # zones and [card] are in the table camera's pixels: another size misplaces both
            # (cold trial: a 1000 x 750 photo's [card] passed here, check-config then blamed the
            # templates)
            raise ToolError(f"{a.image}: {img.shape[1]} x {img.shape[0]} pixels, but the camera is "
                            f"set to {size[0]} x {size[1]} ([camera] of {a.calibration}): take "
                            f"the picture with the table camera at its settings")
        if ct.too_dark(img):
            print("warning: the image is very dark; recognition needs more light")
        print(ct.draw_zones(img, zones, a.out, a.calibration))
        if a.card:      # the card's size at the table: check-config holds the templates to it
            w, h, n = ct.measure_card(img, zones, a.image)
            save(a.calibration, {"card": {"width": w, "height": h}}, "camera zones --card")
            print(f"card {w} x {h} pixels ({n} card(s) in the zones), written to [card] of "
                  f"{a.calibration}")
        return 0
    if a.action == "templates":
        if a.source and a.labels:
            raise ToolError("give --labels FILE.csv (still photos) or --source (live frames), "
                            "not both")
        if a.source:
            from controller.cards import CARDS
            from drivers.camera.video import VideoError, open_source
            zones = _zones(a.calibration)
            if a.zone not in zones:
                raise ToolError(f"{a.calibration}: no zone {a.zone!r} to capture in (its zones: "
                                f"{', '.join(zones)}; --zone names one)")
            try:
                # spaces, lines, or a spreadsheet's commas and semicolons between the cards
                order = [w for w in re.split(r"[\s,;]+", open(a.order, encoding="utf-8-sig").read()) if w] if a.order else list(CARDS)
            except OSError as e:
                raise ToolError(f"--order {a.order}: {e.strerror}") from None
            except UnicodeDecodeError:
                raise ToolError(f"--order {a.order}: not UTF-8 text") from None
            order = _order(a.order, order)
            try:
                src = open_source(int(a.source) if a.source.isascii() and a.source.isdigit() else a.source)
            except VideoError as e:
                raise ToolError(f"no camera: {e}") from None
            with _refused_leaves_nothing(a.out):
                from .camera_live import templates_from_frames
                t = templates_from_frames(src, zones[a.zone], order, a.out)
        elif a.labels:
            _labels(a.labels)
            with _refused_leaves_nothing(a.out):
                t = ct.templates_from_labels(a.labels, a.out)
        else:
            raise ToolError("give --labels FILE.csv (still photos) or --source (live frames)")
        for line in getattr(t, "warning_lines", []):
            print(f"warning: {line}", file=sys.stderr)
        w, h = t.card_size
        print(f"{a.out}: templates for {len(t.patches)} cards; card {w:.0f} x {h:.0f} px, index at "
              f"{t.box} of a {ct.CANON[0]} x {ct.CANON[1]} card")
        return 0
    if a.action in ("recognize", "accuracy") and not os.path.isfile(
            os.path.join(a.templates, "deck.json")):
        raise ToolError(f"{a.templates}: no templates there (capture them first: "
                        f"`shoe-calibrate camera templates`)")
    rows = _labels(a.labels) if a.action == "accuracy" else None
    if a.action == "recognize":
        # a photo that cannot be read is said and the batch goes on (exit 1 at the end)
        res = cr.recognize(a.images, a.templates, keep_going=True)
        other = [p for p, found in res if isinstance(found, list) and any(f["fallback"] for f in found)]
        if other:
            print(ca.size_warning(ct.load_templates(a.templates).card_size, other, len(res)),
                  file=sys.stderr)
        failed = 0
        for path, found in res:
            if isinstance(found, ToolError):
                print(f"shoe-calibrate: {found}", file=sys.stderr)
                failed += 1
            elif a.json:
                print(json.dumps({"image": path, "cards": found}))
            else:
                # a covered card of a hand, read from its index corner alone, is said as such
                print(f"{path}: " + (", ".join(f"{f['card']} ({f['confidence']:.2f}"
                                               f"{', covered' if f['covered'] else ''})" for f in found)
                                     or "no card found"))
        if failed == len(res):
            return 2
        return 1 if failed else 0
    if a.action == "accuracy":
        r = ca.accuracy(ca.labelled(a.labels, rows), a.templates)
        for path, e in r.pop("unreadable"):
            print(f"shoe-calibrate: {e}", file=sys.stderr)
        print(json.dumps(r) if a.json else ca.accuracy_table(r))
        if r["fallback"]:
            print(ca.size_warning(ct.load_templates(a.templates).card_size, r["fallback_photos"],
                                  r["photos"]), file=sys.stderr)
        return ca.verdict(r, a)
    if a.action == "sweep":
        from drivers.camera.driver import Zones
        from drivers.camera.recognize import ZxingDecoder, read_codes
        from drivers.camera.video import VideoError, open_source
        zones = Zones(_zones(a.calibration))
        cal = load(a.calibration)
        book = _load_codebook(a.calibration)
        import getpass
        operator = a.operator or getpass.getuser()   # $USER, or else the account's name
        dec = ZxingDecoder()
        try:
            src = open_source(int(a.source) if a.source.isascii() and a.source.isdigit() else a.source)
        except VideoError as e:
            raise ToolError(f"no camera: {e}") from None
        if not hasattr(src, "set"):
            raise ToolError(f"{a.source}: a folder of images has no exposure or focus to set: "
                            f"the sweep needs the camera (--source /dev/videoN)")
        import cv2
        settings = [{"exposure": e, "focus": f} for e in a.exposures for f in a.focus]
        best, results = ct.sweep(src, zones, lambda crop, inside: read_codes(
            dec, cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY), book, inside)[0], settings)
        for r in results:
            print(f"exposure {r['exposure']} focus {r['focus']}: decode rate {100 * r['decode_rate']:.0f}%")
        if best["decode_rate"] == 0:
            raise ToolError("no setting decoded any card: too dark, out of focus, or no cards in the zones")
        # the report first: a report folder that cannot be written leaves the calibration as it was
        from .files import report, report_base
        base = report_base(a.report_dir, "camera-sweep")
        png = ct.bar_chart([round(100 * r["decode_rate"]) for r in results],
                           [f"{r['exposure']:g}/{r['focus']:g}" for r in results],
                           "Decode rate by camera setting", base + "-decode-rate.png",
                           xlabel="exposure/focus", ylabel="% of zones decoded")
        summary = {"ok": True, "best": best, "results": results}
        path = report(base, f"Camera sweep ({a.source})", operator, summary,
                      [("Settings", [f"- exposure {r['exposure']:g} focus {r['focus']:g}: "
                                     f"{100 * r['decode_rate']:.0f}%" for r in results])], [png])
        save(a.calibration, {"camera": {**cal.get("camera", {}), "exposure": best["exposure"],
                                        "focus": best["focus"]}}, "camera sweep")
        print(f"best: exposure {best['exposure']} focus {best['focus']}, written to {a.calibration}; "
              f"report {path}")
        return 0
    raise ToolError(f"unknown camera action {a.action}")


def _fraction(v):
    try:
        x = float(v)
    except ValueError:
        x = None
    if x is None or not 0 < x <= 1:     # 0 would pass a check that read nothing
        raise argparse.ArgumentTypeError(f"{v!r}: a fraction more than 0, at most 1 (0.9: 90%)")
    return x


def add_parser(sub):
    s = sub.add_parser("camera", help="zones, exposure/focus sweep, templates, recognition")
    cs = s.add_subparsers(dest="action", required=True)
    c = cs.add_parser("zones")
    c.add_argument("--image", required=True)
    c.add_argument("--calibration", default="calibration.toml")
    c.add_argument("--out", default="zones.png")
    c.add_argument("--card", action="store_true",
                   help="the image shows cards laid in zones: measure their size, write it to [card]")
    c = cs.add_parser("templates")
    c.add_argument("--labels", help="a CSV with the header image,rank,suit, one still photo a row "
                   "(rank A 2-10 or T J Q K, suit s h d c or its name; paths from the CSV's folder)")
    c.add_argument("--source", help="live frames: a camera, a video file or a folder of frames")
    c.add_argument("--zone", default="seat_4", help="the zone the cards are laid in (live frames)")
    c.add_argument("--order", help="a text file: the 52 cards in the order they are laid, separated "
                   "by spaces or lines, e.g. As 2s ... Ks Ah ... (default: spades, hearts, diamonds, "
                   "clubs, each A to K)")
    c.add_argument("--calibration", default="calibration.toml")
    c.add_argument("--out", required=True)
    c = cs.add_parser("recognize")
    c.add_argument("--templates", required=True)
    c.add_argument("--json", action="store_true")
    c.add_argument("images", nargs="+")
    c = cs.add_parser("accuracy")
    c.add_argument("--templates", required=True)
    c.add_argument("--labels", required=True, help="a CSV image,rank,suit as for templates, with "
                   "optional deck and condition columns that group the report")
    c.add_argument("--json", action="store_true")
    c.add_argument("--min-read", type=_fraction, default=0.9,
                   help="the least share of photos read as the daemon reads them for a pass (default 0.9)")
    c.add_argument("--another-deck", action="store_true",
                   help="the photos show another deck design: a pass when every one is refused")
    c = cs.add_parser("sweep")
    c.add_argument("--source", required=True, help="camera device or index")
    c.add_argument("--calibration", default="calibration.toml")
    c.add_argument("--exposures", type=lambda s: [float(x) for x in s.split(",")], default=[50, 100, 200, 400])
    c.add_argument("--focus", type=lambda s: [float(x) for x in s.split(",")], default=[0, 20, 40])
    c.add_argument("--report-dir", default="calibration-reports")
    c.add_argument("--operator", help="who ran the sweep (kept in the report; default: the login name)")
    s.set_defaults(func=cmd_camera)
