"""Where numba caches the compiled code, and keeping that cache honest across modules.

numba checks a cached function against its own source file only: when a
compiled function calls one from another module (the search calls the
board's ``play``, the encoders call board helpers), editing the callee leaves
the caller's cached machine code stale, and running it can crash. This module
fingerprints every source file with compiled code; when the fingerprint
changes it deletes the package's cache files (``*.nbi``, ``*.nbc``) before
anything is compiled, so the next start recompiles from the current sources.

Vocabulary
----------
stamp       ``numba-sources.sha256`` in the cache's root, holding the
            fingerprint of the sources the cache was built from.
location    where the cache lives (``location()``), chosen at import before
            numba is loaded: ``in-tree`` (``__pycache__`` beside each source,
            numba's own choice) when every folder with compiled code can
            hold a writable ``__pycache__`` (``in_tree``: numba's own test,
            made and written to, not the permission bits, which root
            ignores and a read-only mount overrides) and the user set no
            ``NUMBA_CACHE_DIR`` (numba prefers that one);
            else the first writable of ``NUMBA_CACHE_DIR``,
            ``$XDG_CACHE_HOME/sayuri-async/numba``,
            ``~/.cache/sayuri-async/numba`` and
            ``<temp>/sayuri-async-<uid>/numba`` (a folder of this user's
            only, mode 0700), handed to numba through ``NUMBA_CACHE_DIR``.
            Such a folder starts as a copy of the in-tree cache when that
            one is fresh (a read-only install compiled during set-up loads
            at once). With none writable, caching is off: every start
            compiles (``CACHE_OFF``), and says so.
checked     bounds-checked code (``NUMBA_BOUNDSCHECK`` set to a non-zero
            number, ``bounds_checked()``) is cached apart, in a
            ``boundscheck`` folder of the first writable candidate, never
            in-tree and never seeded: numba's cache index does not record
            the flag, so one cache would hand bounds-checked machine code to
            normal runs and unchecked code to checked ones.
uncompiled  modules with compiled code but no cached machine code yet (a
            fresh install or cache folder, or sources edited since): the
            first command to call a function of theirs compiles it, and
            ``compile_notice`` names them in one line beforehand, with the
            cache's folder when it is not the package's. A module whose
            functions a command never calls stays uncompiled, so the notice
            names it again at the next start: it says it compiles what the
            command uses of them, which may be nothing.
``sayuri_async.precompile`` fills the cache during set-up.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SOURCE_ROOT = Path(os.path.abspath(__file__)).parent  # as numba names the files: not resolved
STAMP_NAME = "numba-sources.sha256"
CHECKED_FOLDER = "boundscheck"
STAMP = PACKAGE / "__pycache__" / STAMP_NAME
CACHE_PATTERNS = ("*.nbi", "*.nbc")
CACHE_OFF = "off"
_state: dict[str, object] = {"location": None}


COMPILED = re.compile(r"^\s*@(?:numba\.)?njit\b|=\s*(?:numba\.)?njit\(", re.M)  # a decorator or a call


def _sources() -> list[Path]:
    """The package's source files with compiled code (``COMPILED``: files
    that only name numba's decorator in their text are left out)."""
    return sorted(p for p in PACKAGE.rglob("*.py") if COMPILED.search(p.read_text(encoding="utf-8", errors="ignore")))


def fingerprint() -> str:
    h = hashlib.sha256()
    for p in _sources():
        h.update(str(p.relative_to(PACKAGE)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def in_tree() -> bool:
    """May numba cache beside the sources? numba caches a source file's code
    in the ``__pycache__`` beside it when it can make that folder and a
    file in it, else elsewhere: every folder with compiled code is tried so
    (the top folder's permission alone says nothing about the others)."""
    return all(_writable(src / "__pycache__") for src in _source_dirs())


def _writable(folder: Path) -> bool:
    """Whether ``folder`` exists or can be made, and a file made in it."""
    try:
        folder.mkdir(exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
        return True
    except OSError:
        return False


def _usable(folder: Path, private: bool) -> bool:
    """Create ``folder`` if needed; True when this user can write there (and,
    for a ``private`` one under a shared temp folder, owns it alone)."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if private:
            st = folder.stat()
            if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return False
        with tempfile.TemporaryFile(dir=folder):
            pass
        return True
    except (OSError, AttributeError):
        return False


def bounds_checked() -> bool:
    """Does numba compile with bounds checks (``NUMBA_BOUNDSCHECK`` a
    non-zero number)?"""
    try:
        return int(os.environ.get("NUMBA_BOUNDSCHECK") or 0) != 0
    except ValueError:
        return False  # numba ignores a value that is not a number too


def candidates() -> list[tuple[Path, bool]]:
    """Folders to cache in when the package's is read-only (or the code is
    bounds-checked: their ``boundscheck`` folders), in order: (path,
    private: under the shared temp folder, so it must be this user's own)."""
    shared: list[Path] = []
    if os.environ.get("NUMBA_CACHE_DIR"):
        shared.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    if os.environ.get("XDG_CACHE_HOME"):
        shared.append(Path(os.environ["XDG_CACHE_HOME"]) / "sayuri-async" / "numba")
    home = os.path.expanduser("~")
    if home and home != "~":
        shared.append(Path(home) / ".cache" / "sayuri-async" / "numba")
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    base = Path(tempfile.gettempdir()) / f"sayuri-async-{uid}"
    if not bounds_checked():
        return [(folder, False) for folder in shared] + [(base / "numba", True)]
    # a folder already named so is one a parent process chose (_tell_numba)
    out = [(folder if folder.name == CHECKED_FOLDER else folder / CHECKED_FOLDER, False) for folder in shared]
    return out + [(base / CHECKED_FOLDER, True)]


def _choose() -> Path | str:
    """The cache's location (see the vocabulary): PACKAGE, a folder, or CACHE_OFF."""
    _state["user_dir"] = bool(os.environ.get("NUMBA_CACHE_DIR"))
    if in_tree() and not _state["user_dir"] and not bounds_checked():
        return PACKAGE
    for folder, private in candidates():
        if _usable(folder.parent if private else folder, private) and _usable(folder, private):
            return folder
    return CACHE_OFF


def location() -> Path | str:
    """Where the cache lives: PACKAGE (in-tree), a folder, or CACHE_OFF."""
    if _state["location"] is None:
        _state["location"] = _choose()
    return _state["location"]  # type: ignore[return-value]


def cache_folder(src_dir: Path) -> Path | None:
    """The folder holding the cache files of the sources in ``src_dir`` (a
    folder of the package); None with caching off."""
    where = location()
    if where == CACHE_OFF:
        return None
    if where == PACKAGE:
        return src_dir / "__pycache__"
    imported = SOURCE_ROOT / src_dir.relative_to(PACKAGE)
    return Path(where) / f"{imported.name}_{hashlib.sha1(str(imported).encode()).hexdigest()}"  # numba's subpath


def _cache_files(folder: Path) -> list[Path]:
    return [f for pattern in CACHE_PATTERNS for f in folder.glob(pattern)] if folder.is_dir() else []


def _source_dirs() -> list[Path]:
    return sorted({p.parent for p in _sources()})


def refresh() -> bool:
    """Choose the cache's location, hand it to numba, and drop stale cache
    files; True when it dropped or seeded them. Safe to call at every start."""
    where = location()
    if where == CACHE_OFF:
        _caching_off()
        return False
    if where != PACKAGE:
        _tell_numba(Path(where))
    try:
        fp = fingerprint()
        stamp = STAMP if where == PACKAGE else Path(where) / STAMP_NAME
        if stamp.is_file() and stamp.read_text().strip() == fp:
            return False
        for src in _source_dirs():
            folder = cache_folder(src)
            for f in _cache_files(folder) if folder is not None else []:
                f.unlink(missing_ok=True)
        if where != PACKAGE and not bounds_checked():
            _seed_from_tree(fp)
        stamp.parent.mkdir(exist_ok=True)
        tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}.tmp")
        tmp.write_text(fp)
        os.replace(tmp, stamp)
        return True
    except OSError:
        return False  # a cache that cannot be cleaned keeps numba's own per-file checks


def _tell_numba(folder: Path) -> None:
    """numba reads ``NUMBA_CACHE_DIR`` when it is imported; where it already
    is, its config takes the folder too."""
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    config = sys.modules.get("numba.core.config")
    if config is not None:
        config.CACHE_DIR = str(folder)


def _seed_from_tree(fp: str) -> None:
    """Copy the in-tree cache (built during set-up) into the folder, when its
    stamp says it matches the current sources."""
    try:
        if STAMP.read_text().strip() != fp:
            return
    except OSError:
        return
    for src in _source_dirs():
        target = cache_folder(src)
        files = _cache_files(src / "__pycache__")
        if target is None or not files:
            continue
        target.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copyfile(f, target / f.name)


def _caching_off() -> None:
    """No folder is writable: numba compiles without a cache (``cache=True``
    would otherwise fail at import: "no locator available")."""
    from numba.core.dispatcher import Dispatcher

    Dispatcher.enable_caching = lambda self: None  # every start compiles; compile_notice says so


def uncompiled_modules() -> list[str]:
    """Modules with compiled code (``@njit``) and no cached machine code yet
    (all of them with caching off)."""
    missing = []
    for p in _sources():
        folder = cache_folder(p.parent)
        if folder is None or not any(folder.glob(f"{p.stem}.*.nbi")):
            missing.append(str(p.relative_to(PACKAGE).with_suffix("")).replace(os.sep, "."))
    return missing


def where_text() -> str:
    """The cache's location in words, for messages."""
    where = location()
    if where == PACKAGE:
        return f"beside the sources (the __pycache__ folders under {PACKAGE})"
    if where == CACHE_OFF:
        tried = ", ".join(str(f) for f, _ in candidates())
        return f"nowhere: no writable folder ({tried}), so every start compiles"
    if bounds_checked():
        return f"in {where} (bounds-checked code, NUMBA_BOUNDSCHECK, kept apart)"
    if os.environ.get("NUMBA_CACHE_DIR") == str(where) and _state.get("user_dir"):
        return f"in {where} (NUMBA_CACHE_DIR)"
    return f"in {where} (the package's folders are read-only)"


def compile_notice(stream=None) -> bool:
    """Say in one line that this start compiles (and that it happens once);
    True when it did."""
    try:
        missing = uncompiled_modules()
    except OSError:
        return False
    if not missing:
        return False
    if location() == CACHE_OFF:
        print(f"compiling {len(missing)} module(s) of compiled code with numba (several minutes): the cache is "
              f"{where_text()}", file=stream or sys.stderr, flush=True)
        return True
    print(f"compiling with numba what this command uses of {len(missing)} module(s) with no cached machine code "
          f"({', '.join(missing)}), up to several minutes: each function compiles once, later starts load the "
          f"cache, kept {where_text()} (`python -m sayuri_async.precompile` compiles them all ahead of time)",
          file=stream or sys.stderr, flush=True)
    return True
