"""`shoe-calibrate camera accuracy`: labelled photos read with the templates, counted per deck and
condition, with the confusion (what was refused, what was ever read wrongly)."""
import os
import sys

from controller.cards import CARDS

from .camera_read import recognize
from .camera_tools import label_card
from .shoe_tools import ToolError


def labelled(path, rows):
    """[(photo, card, (deck, condition))] from the labels CSV's rows, every row checked first: a
    card named, a photo listed once (twice it was counted twice, and another card not at all)."""
    base = os.path.dirname(os.path.abspath(path))
    out, photos = [], {}
    for n, r in enumerate(rows, 2):
        if not (r.get("image") or "").strip():
            raise ToolError(f"{path}:{n}: expected image,rank,suit naming a card")
        card = label_card(r.get("rank") or "", r.get("suit") or "")
        if card is None:
            raise ToolError(f"{path}:{n}: {(r.get('rank') or '').strip() + (r.get('suit') or '').strip()!r} "
                            f"is not a card (rank A 2-9 T or 10 J Q K, suit s h d c)")
        photo = os.path.normpath(r["image"].strip())
        if photo in photos:
            raise ToolError(f"{path}:{n}: {r['image']} is listed twice (lines {photos[photo]} and {n})")
        photos[photo] = n
        # optional columns deck and condition group the report
        out.append((os.path.join(base, r["image"]), card, (r.get("deck") or "-", r.get("condition") or "-")))
    return out


def never_read(r, least=2):
    """The cards checked in at least `least` photos and refused in every one: a card the templates
    cannot read (two templates swapped pass the share of photos read)."""
    return [c for c in CARDS if r["checked"].get(c, 0) >= least and r["refused"].get(c, 0) == r["checked"][c]]


def size_warning(card_size, names, of):
    """The line said when the photos `names` (of `of`) were read only at another card size than
    the templates': named, so the technician knows which to take again (trial31)."""
    w, h = card_size
    shown = ", ".join(names[:6]) + (" ..." if len(names) > 6 else "")
    return (f"warning: {len(names)} of {of} photo(s) show no card of the templates' size ({w:.0f} x "
            f"{h:.0f} pixels): {shown}: read here at any size, which the daemon does not do (it "
            f"would read nothing in them); capture the templates with the table camera at its height")


def accuracy(labelled, templates_dir):
    """labelled: [(image path, card, group)], group a (deck, condition) pair. Counts in total and
    per group, and the confusion: per true card, how often it was refused and what (if ever) it
    was wrongly read as. A photo counts as correct only when its card, and no other, is read."""
    res = dict(recognize([p for p, _, _ in labelled], templates_dir, keep_going=True))
    # a photo that cannot be read is named and the others still read (it fails the check)
    unreadable = [(p, e) for p, e in res.items() if isinstance(e, ToolError)]
    # `daemon`: photos the daemon's reader reads right (a card of the templates' size); `fallback`:
    # photos with no card of that size, read here at any size
    total = {"photos": 0, "correct": 0, "unknown": 0, "wrong": 0, "daemon": 0, "fallback": 0}
    groups, refused, wrong_as, checked, other_size = {}, {}, {}, {}, []
    for path, card, group in labelled:
        if isinstance(res[str(path)], ToolError):
            continue
        checked[card] = checked.get(card, 0) + 1
        cards = [f["card"] for f in res[str(path)] if f["card"] != "unknown"]
        outcome = "correct" if cards == [card] else "unknown" if not cards else "wrong"
        fallback = any(f["fallback"] for f in res[str(path)])
        total["fallback"] += fallback
        if fallback:
            other_size.append(str(path))
        total["daemon"] += outcome == "correct" and not fallback
        g = groups.setdefault("/".join(group), {"photos": 0, "correct": 0, "unknown": 0, "wrong": 0,
                                                 "daemon": 0, "fallback": 0})
        g["fallback"] += fallback
        g["daemon"] += outcome == "correct" and not fallback
        for d in (total, g):
            d["photos"] += 1
            d[outcome] += 1
        if outcome == "unknown":
            refused[card] = refused.get(card, 0) + 1
        elif outcome == "wrong":
            # several cards found: all of them, so that a second card in the photo shows as such
            wrong_as.setdefault(card, []).append(
                f"{'+'.join(cards)} ({len(cards)} cards found)" if len(cards) > 1 else cards[0])
    missing = [c for c in CARDS if c not in checked]
    return {**total, "groups": groups, "refused": refused, "wrong_as": wrong_as, "checked": checked,
            "missing": missing, "not_read": [p for p, _ in unreadable], "unreadable": unreadable,
            "fallback_photos": other_size}


def accuracy_table(r):
    """The accuracy report as text: per deck/condition, then the confusion."""
    # `daemon`: read right as the daemon reads (a card of the templates' size), not by the any-size
    # fallback: a group read only by the fallback would read nothing at the table
    lines = [f"{'deck/condition':<28} {'photos':>6} {'correct':>8} {'daemon':>7} {'refused':>8} {'wrong':>6}"]
    # labels without deck and condition columns: one group, "-/-", the same as "all" (trial31)
    groups = [] if set(r["groups"]) <= {"-/-"} else sorted(r["groups"].items())
    for name, g in groups + [("all", r)]:
        n = max(g['photos'], 1)
        lines.append(f"{name:<28} {g['photos']:>6} {100 * g['correct'] / n:>7.1f}% {100 * g['daemon'] / n:>6.1f}% "
                     f"{g['unknown']:>8} {g['wrong']:>6}")
    lines.append("refused (true card: times): " + (", ".join(
        f"{c}: {n}" for c, n in sorted(r["refused"].items())) or "none"))
    lines.append("read wrongly (true card -> read as): " + (", ".join(
        f"{c} -> {'/'.join(v)}" for c, v in sorted(r["wrong_as"].items())) or "never"))
    lines.append(f"read as the daemon reads (cards of the templates' size): {r['daemon']} of "
                 f"{r['photos']} correct")
    if r["missing"]:            # a check that leaves cards out says nothing about them
        lines.append(f"not checked ({len(r['missing'])} card(s) with no photo): "
                     f"{', '.join(r['missing'][:13])}{' ...' if len(r['missing']) > 13 else ''}")
    return "\n".join(lines)


def verdict(r, a):
    """accuracy's exit: 0 a pass, 1 a fail, said on stderr. Another design's photos pass when
    every one is refused; the studio deck's when none is read wrongly and at least --min-read of
    them are read as the daemon reads them (a set of templates that refuses a third of the deck
    is no pass)."""
    if r["not_read"]:
        print(f"fail: {len(r['not_read'])} photo(s) could not be read (named above)", file=sys.stderr)
        return 1
    if a.another_deck:
        read = r["correct"] + r["wrong"]
        if read:
            print(f"fail: {read} of {r['photos']} photo(s) of another deck read: these templates would "
                  f"read that design's cards", file=sys.stderr)
            return 1
        print(f"pass: all {r['photos']} photo(s) of another deck refused", file=sys.stderr)
        return 0
    rate = r["daemon"] / max(r["photos"], 1)
    never = never_read(r)
    if r["wrong"]:
        print(f"fail: {r['wrong']} photo(s) read wrongly", file=sys.stderr)
    elif never:
        print(f"fail: {', '.join(never)} refused in every one of its photos: on a table that deals "
              f"from the camera that card would stop the game each time (look at it on "
              f"contact.png: a swapped or spoiled template?)", file=sys.stderr)
    elif rate < a.min_read:
        print(f"fail: {r['daemon']} of {r['photos']} photo(s) ({100 * rate:.1f}%) read as the daemon reads "
              f"them, under --min-read {a.min_read:g}", file=sys.stderr)
    else:
        print(f"pass: {r['daemon']} of {r['photos']} photo(s) ({100 * rate:.1f}%) read as the daemon reads "
              f"them, none wrongly", file=sys.stderr)
        return 0
    return 1
