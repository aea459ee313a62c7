"""The calibration file the daemon reads (TOML), and the tool's reports."""
import datetime
import json
import os
import re
import tomllib

from dealer_station import __version__
from drivers.camera.driver import Zones
from drivers.codebook import codebook_from_mapping

from .shoe_tools import ToolError


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def load(path):
    if not path or not os.path.exists(path):
        return {}
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ToolError(f"{path}: not valid TOML: {e}") from None


def writable(path):
    """Raise a ToolError now when the calibration file at `path` could not be written later (its
    folder missing or read-only) or what it holds is not valid TOML: before the technician scans
    a deck, not after."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ToolError(f"{path}: no such folder {folder}: the calibration file cannot be written")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ToolError(f"{path}: not writable (permission denied)")
    return check(path)


def make_folder(folder, name, what, written=""):
    """Make `folder` now, or raise a ToolError saying so under `name` (`what` it is for, what is
    `written` there): before the work whose output it holds, not after. True when it made it."""
    made = not os.path.isdir(folder)
    if os.path.exists(folder) and made:
        raise ToolError(f"{name}: a file, not a folder")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise ToolError(f"{name}: cannot make {what}: {e.strerror}") from None
    if not os.access(folder, os.W_OK):
        raise ToolError(f"{name}: cannot write {written}there (permission denied)")
    return made


def report_folder(folder):
    """Make the report folder now, or raise a ToolError: a check whose report cannot be written
    must not start. True when it made the folder."""
    return make_folder(folder, folder, "the report folder", "reports ")


def _value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(v)


HEADER = "# written by shoe-calibrate "


KEY = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)\s*=')
TABLE = re.compile(r'\[\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_.-]+)\s*\]$')


def split_comment(line):
    """(the line's TOML, its trailing comment or ""): the first # outside a string (TOML's rule;
    the tool writes no multi-line strings)."""
    quote = None
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i], line[i:].strip()
        i += 1
    return line, ""


def _name(token):
    """A key or table name as TOML reads it (a quoted one's escapes, \\U00000031 too; a literal
    'one' as written)."""
    try:
        return next(iter(tomllib.loads(f"{token} = 0"))) if token[:1] in "\"'" else token
    except (tomllib.TOMLDecodeError, StopIteration):
        return token


def comments(path):
    """The technician's comments in the file at `path`, by the place they stand: whole-line ones
    {(table, key): lines} before a key, (table, None) before a table's header, (table, "") at its
    end, (None, None) at the top; and those at a line's end {(table, key): text}, key None for
    the header's. The tool rewrites the file; what a person wrote in it must stay."""
    try:
        with open(path) as f:
            # TOML's lines end at \n only (splitlines also cut a comment at U+2028)
            text = [ln.rstrip("\r") for ln in f.read().split("\n")]
    except OSError:
        return {}, {}
    notes, inline, pending, table = {}, {}, [], None
    for line in text:
        code, note = split_comment(line)
        bare = code.strip()
        if not bare:
            if note and not note.startswith(HEADER.strip()):
                pending.append(note)
            continue
        header, key = TABLE.match(bare), KEY.match(bare)
        if header:
            table = _name(header.group(1))
            notes.setdefault((table, None), []).extend(pending)
            pending, key = [], None
        elif key:
            key = _name(key.group(1))
            notes.setdefault((table, key), []).extend(pending)
            pending = []
        else:                       # a line inside a multi-line value: its note goes before the next key
            pending += [note] if note else []
            continue
        if note:
            inline[(table, key)] = note
    if pending:
        notes.setdefault((table, ""), []).extend(pending)
    return notes, inline


def save(path, data, step):
    """Write the calibration file: the given tables merged over what it held, stamped with the
    date and the tool's version, then read back and validated."""
    merged = load(path)
    merged.update({k: v for k, v in data.items() if v is not None})
    merged["calibration"] = {**merged.get("calibration", {}), "tool": f"shoe-calibrate {__version__}",
                             "date": now(), "last_step": step}
    notes, inline = comments(path)
    lines = [HEADER + f"{__version__} on {now()} ({step})"] + notes.pop((None, None), [])
    end = lambda table, key: f"  {inline.pop((table, key))}" if (table, key) in inline else ""
    for table, values in merged.items():
        lines.append("")
        lines += notes.pop((table, None), [])
        lines.append(f"[{table}]" + end(table, None))
        ends = notes.pop((table, ""), [])
        for k, v in values.items():
            key = k if k.replace("_", "").isalnum() else json.dumps(k)
            lines += notes.pop((table, k), [])
            lines.append(f"{key} = {_value(v)}" + end(table, k))
        # a key no longer written takes its comments to the end of its table
        lines += [c for (t, _), cs in list(notes.items()) if t == table for c in cs] + ends
        lines += [inline.pop(tk) for tk in [tk for tk in inline if tk[0] == table]]
        notes = {tk: cs for tk, cs in notes.items() if tk[0] != table}
    lines += [c for cs in notes.values() for c in cs] + list(inline.values())
    tmp = f"{path}.new"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    check(tmp)
    os.replace(tmp, path)
    return path


def check(path):
    data = load(path)
    if "codebook" in data:
        try:
            codebook_from_mapping(data["codebook"])
        except ValueError as e:
            raise ToolError(f"{path}: {e}") from None
    if "zones" in data:
        try:
            Zones(data["zones"])
        except ValueError as e:
            raise ToolError(f"{path}: {e}") from None
    if "card" in data:
        from drivers.camera.driver import measured_card
        try:
            cam = data.get("camera") if isinstance(data.get("camera"), dict) else {}
            frame = (cam.get("width"), cam.get("height"))
            measured_card(data["card"], frame=frame if all(isinstance(v, int) and v > 0
                                                            for v in frame) else None)
        except ValueError as e:
            raise ToolError(f"{path}: {e}") from None
    return data


def report_base(folder, name):
    """`folder/YYYYmmdd-HHMMSS-name` (then -2, -3 ... within one second), never a name an earlier
    report uses: the report's Markdown, JSON and charts all start with it, so none overwrites
    another report's."""
    report_folder(folder)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base, n = os.path.join(folder, f"{stamp}-{name}"), 1
    while any(f.startswith(os.path.basename(base) + ".") or f.startswith(os.path.basename(base) + "-")
              for f in os.listdir(folder)):
        n += 1
        base = os.path.join(folder, f"{stamp}-{name}-{n}")
    with open(base + ".md", "x"):       # claimed now, written below
        pass
    return base


def report(base, title, operator, summary, sections, images=()):
    """A Markdown report (and its JSON) at `base` (from report_base), with the operator's name."""
    md = [f"# {title}", "", f"- date: {now()}", f"- operator: {operator}",
          f"- tool: shoe-calibrate {__version__}", f"- result: {'PASS' if summary.get('ok') else 'FAIL'}", ""]
    for heading, lines in sections:
        md += [f"## {heading}", ""] + list(lines) + [""]
    for img in images:
        md.append(f"![{os.path.basename(img)}]({os.path.basename(img)})")
    with open(base + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    with open(base + ".json", "w") as f:
        json.dump({"date": now(), "operator": operator, "title": title, **summary}, f, indent=1,
                  default=str)
    return base + ".md"
