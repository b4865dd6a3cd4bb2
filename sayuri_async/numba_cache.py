"""Keeping numba's on-disk cache honest across modules.

numba checks a cached function against its own source file only: when a
compiled function calls one from another module (the search calls the
board's ``play``, the encoders call board helpers), editing the callee leaves
the caller's cached machine code stale, and running it can crash. This module
fingerprints every source file with compiled code; when the fingerprint
changes it deletes the package's cache files (``*.nbi``, ``*.nbc``) before
anything is compiled, so the next start recompiles from the current sources.

Vocabulary: *stamp* is ``__pycache__/numba-sources.sha256`` in the package
folder, holding the fingerprint of the sources the cache was built from.
*Uncompiled* modules have compiled code but no cached machine code yet (a
fresh install, or sources edited since): the first command to use them
compiles them, and ``compile_notice`` says so in one line beforehand.
``sayuri_async.precompile`` fills the cache during set-up.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
STAMP = PACKAGE / "__pycache__" / "numba-sources.sha256"


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "njit" in p.read_text(encoding="utf-8", errors="ignore"))


def fingerprint() -> str:
    h = hashlib.sha256()
    for p in _sources():
        h.update(str(p.relative_to(PACKAGE)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def refresh() -> bool:
    """Drop stale cache files; True when it did. Safe to call at every start."""
    try:
        fp = fingerprint()
        if STAMP.is_file() and STAMP.read_text().strip() == fp:
            return False
        for f in list(PACKAGE.rglob("__pycache__/*.nbi")) + list(PACKAGE.rglob("__pycache__/*.nbc")):
            try:
                f.unlink()
            except FileNotFoundError:
                pass
        STAMP.parent.mkdir(exist_ok=True)
        tmp = STAMP.with_name(f".{STAMP.name}.{os.getpid()}.tmp")
        tmp.write_text(fp)
        os.replace(tmp, STAMP)
        return True
    except OSError:
        return False  # a read-only install: numba keeps its cache elsewhere


def uncompiled_modules() -> list[str]:
    """Modules with compiled code (``@njit``) and no cached machine code yet
    (none known when the package folder is read-only: numba then caches
    elsewhere, out of sight)."""
    if not os.access(PACKAGE, os.W_OK):
        return []
    missing = []
    for p in _sources():
        if p.name == "numba_cache.py":
            continue
        if not any((p.parent / "__pycache__").glob(f"{p.stem}.*.nbi")):
            missing.append(str(p.relative_to(PACKAGE).with_suffix("")).replace(os.sep, "."))
    return missing


def compile_notice(stream=None) -> bool:
    """Say in one line that this start compiles (and that it happens once);
    True when it did."""
    try:
        missing = uncompiled_modules()
    except OSError:
        return False
    if not missing:
        return False
    print(f"compiling {len(missing)} module(s) of compiled code with numba ({', '.join(missing)}): this happens "
          f"once, later starts load the cache (`python -m sayuri_async.precompile` does it ahead of time)",
          file=stream or sys.stderr, flush=True)
    return True
