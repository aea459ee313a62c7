"""The files of the camera steps: label CSVs read, templates written all or nothing, and
libpng's own stderr lines kept from the tool's one-line errors."""
import contextlib
import csv
import os

from drivers.camera.recognize import Templates

from .shoe_tools import ToolError


def template_file(name):
    return name in ("deck.json", "contact.png", "manifest.sha256") or (name.startswith(("index_", "face_"))
                                                    and name.endswith(".png"))


@contextlib.contextmanager
def quiet_stderr():
    """libpng and libjpeg write their warnings and errors straight to the process's stderr (fd
    2), before and beside the tool's own one line: silenced while they run."""
    import sys
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def write_templates(t, out_dir):
    """Write the templates `t` to `out_dir` all or nothing: into a new folder beside it, read
    back (a disk that filled up cuts a PNG short, and the encoder may not say so), then swapped
    in. A failed write is a ToolError and the templates that were there stay as they were."""
    import shutil
    import stat
    import tempfile
    out_dir = os.path.abspath(out_dir)
    parent, name = os.path.split(out_dir)
    try:
        new = tempfile.mkdtemp(prefix=f".{name}.new-", dir=parent)
    except OSError as e:
        raise ToolError(f"--out {out_dir}: cannot write there: {e.strerror}") from None
    try:
        # the folder's own mode, or a new folder's (mkdtemp's 0700 would shut out the daemon's user)
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(new, stat.S_IMODE(os.stat(out_dir).st_mode) if os.path.isdir(out_dir)
                 else 0o777 & ~mask)
        with quiet_stderr():            # libpng's own "Write Error" line: the error below says it
            t.save(new)
        Templates.load(new)
    except (OSError, ValueError) as e:
        shutil.rmtree(new, ignore_errors=True)
        why = getattr(e, "strerror", None) or str(e).replace(new, out_dir)
        raise ToolError(f"--out {out_dir}: the templates could not be written ({why}): the disk "
                        f"full? Nothing was changed there") from None
    old = None
    if os.path.isdir(out_dir):
        old = tempfile.mkdtemp(prefix=f".{name}.old-", dir=parent)
        os.rename(out_dir, os.path.join(old, name))
    os.rename(new, out_dir)
    if old:
        shutil.rmtree(old, ignore_errors=True)
    return t


def label_rows(path, required=("image", "rank", "suit")):
    """The rows of a labels CSV: the file there, its columns (any case, spaces around them), at
    least one photo; or a ToolError saying what is wrong."""
    try:
        # utf-8-sig: a spreadsheet's "CSV UTF-8" starts with a byte-order mark
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            reader.fieldnames = [c.strip().lower() for c in header]
            rows = list(reader)
    except OSError as e:
        raise ToolError(f"{path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise ToolError(f"{path}: not UTF-8 text (save it as \"CSV UTF-8\")") from None
    missing = [c for c in required if c not in reader.fieldnames]
    if missing and len(header) == 1 and ";" in header[0]:
        raise ToolError(f"{path}: the columns are separated by semicolons; the separator is a comma "
                        f"(a spreadsheet set to another language: save as CSV with commas)")
    if missing:
        raise ToolError(f"{path}: no column {', '.join(missing)} (the columns are image,rank,suit; "
                        f"deck and condition are optional)")
    # a misspelt optional column ("conditon") was silently no column at all
    unknown = [c for c in reader.fieldnames if c not in (*required, "deck", "condition")]
    if unknown:
        raise ToolError(f"{path}: column {unknown[0]!r} is not known (the columns are image,rank,suit; "
                        f"deck and condition are optional)")
    for n, row in enumerate(rows, 2):
        if None in row:         # more fields than the header names (csv's None key)
            raise ToolError(f"{path}:{n}: {len(reader.fieldnames) + len(row[None])} fields, the "
                            f"header names {len(reader.fieldnames)}")
    if not rows:
        raise ToolError(f"{path}: no photos listed: a check of nothing cannot pass")
    return rows
