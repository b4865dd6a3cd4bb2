"""Whether every file a run left is whole and readable: what the fault tests
and ``tools/kill_runs.py`` check after a kill.

Vocabulary
----------
file check  ``check_file(path)``: None when the file validates, else one line
            saying why. By kind:
              ``.npz``          a chunk, through the format's reader
                                (``chunkfile.read_chunk``): the schema of
                                ``docs/data-format.md`` (format, version,
                                arrays, dtypes, shapes, sizes, finite targets)
              ``.sgf``          loads and replays (``go.sgf.load_sgf_file``)
              ``.pt``           a checkpoint that loads
                                (``train.checkpoint.load_checkpoint``)
              ``.safetensors``  a network that loads (``net.weights.load_weights``)
              ``.json``, ``.toml``  parse (a config at most 1 MiB); ``.csv`` parses with every row as
                                wide as its header; ``.txt``, ``.log`` are UTF-8;
              ``.png``          a whole PNG (signature, IEND at the end)
            and two kinds of leftovers that are allowed: the temporary of a
            killed write (``fileio.is_stale_temp``: its writer is gone; a
            temporary whose writer still runs is reported) and a checkpoint
            set aside as unreadable (``ckpt-<step>.pt.unreadable``). ``STOP``
            may hold anything; any other file is reported as of no known kind.
run check   ``check_run(folder)``: ``(path, why)`` for every file below
            ``folder`` that fails its check, and how many files were checked.
unchanged   ``file_digests(folder)`` before, again after a restart:
            ``overwritten(before, after)`` lists the files changed or gone,
            apart from those a run rewrites (``MAY_CHANGE``) or rotates away
            (``MAY_GO``) by design.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from .configfile import read_toml
from .fileio import is_stale_temp

ALLOWED_NAMES = ("STOP",)


def _check_csv(p: Path) -> str | None:
    with open(p, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        return "an empty CSV file (no header)"
    width = len(rows[0])
    bad = [i for i, r in enumerate(rows[1:], start=2) if len(r) != width]
    return f"row {bad[0]} has not the header's {width} columns" if bad else None


def check_file(path: str | os.PathLike) -> str | None:
    """Why ``path`` does not validate (None: it does); see the vocabulary."""
    from .go.sgf import load_sgf_file
    from .net.weights import load_weights
    from .train.checkpoint import UNREADABLE_SUFFIX, load_checkpoint
    from .chunkfile import read_chunk

    p = Path(path)
    if p.name.startswith(".") and p.name.endswith(".tmp"):
        return None if is_stale_temp(p) else "a temporary whose writer is still running (or not of our names)"
    try:
        if p.suffix == ".npz":
            read_chunk(p)
        elif p.suffix == ".sgf":
            load_sgf_file(p)
        elif p.suffix == ".pt":
            load_checkpoint(p)
        elif p.name.endswith(".pt" + UNREADABLE_SUFFIX):
            return None
        elif p.suffix == ".safetensors":
            load_weights(p)
        elif p.suffix == ".json":
            json.loads(p.read_text(encoding="utf-8"))
        elif p.suffix == ".toml":
            read_toml(p)  # at most configfile.MAX_CONFIG_BYTES read
        elif p.suffix == ".csv":
            return _check_csv(p)
        elif p.suffix == ".png":  # a plot: whole when it opens with the signature and ends with IEND
            data = p.read_bytes()
            if not (data.startswith(b"\x89PNG\r\n\x1a\n") and data[-12:-4] == b"\x00\x00\x00\x00IEND"):
                return "not a whole PNG file"
        elif p.suffix in (".txt", ".log"):
            p.read_text(encoding="utf-8")
        elif p.name not in ALLOWED_NAMES:
            return "a file of no known kind"
    except Exception as e:  # every reader's failure is a verdict here, whatever its kind
        return f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
    return None


def check_run(folder: str | os.PathLike) -> tuple[list[tuple[Path, str]], int]:
    """``(failures, files checked)`` over every file below ``folder``."""
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file())
    bad = [(p, why) for p in files if (why := check_file(p)) is not None]
    return bad, len(files)


# ---- nothing earlier overwritten ---------------------------------------------
MAY_CHANGE = ("state.json", "generations.csv", "curves.png", "train_log.csv", "*-latest.safetensors")
"""Files a run rewrites by design (the loop's state, table and curves, the trainer's
log, the newest export's copy); every other file, once whole, stays as it is."""
MAY_GO = ("ckpt-*.pt",)
"""Files a run deletes by design (the checkpoint rotation)."""


def file_digests(folder: str | os.PathLike) -> dict[Path, str]:
    """SHA-256 of every whole file below ``folder`` (temporaries left out)."""
    import hashlib

    out = {}
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file() and not (p.name.startswith(".") and p.name.endswith(".tmp")):
            out[p] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def overwritten(before: dict[Path, str], after: dict[Path, str]) -> list[str]:
    """What became of files in ``before`` that should have stayed: one line
    each, for a file changed or gone (``MAY_CHANGE``, ``MAY_GO`` aside)."""
    from fnmatch import fnmatchcase

    out = []
    for p, digest in before.items():
        if any(fnmatchcase(p.name, pat) for pat in MAY_CHANGE):
            continue
        if p not in after:
            if not any(fnmatchcase(p.name, pat) for pat in MAY_GO):
                out.append(f"{p}: gone")
        elif after[p] != digest:
            out.append(f"{p}: changed")
    return out
