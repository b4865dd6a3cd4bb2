"""Atomic file writes: write to a temporary name in the target's folder,
fsync, then rename, so a killed run never leaves a half-written file.

Vocabulary
----------
atomic_path(path, replace=True)
            a context manager yielding the temporary path to write; on
            success the temporary becomes ``path`` (and the folder is
            synced), on error it is removed. ``replace=True`` renames it over
            whatever ``path`` held; ``replace=False`` never replaces a file:
            it links the temporary to the name, and raises ``NameTaken``
            when the name exists (the temporary is removed, the old file
            stays as it was).
temporary name  ``.<name>.<pid>-<host>-<random>.tmp`` in the target's
            folder: a leading ``.`` and a trailing ``.tmp`` so readers skip
            it; ``<pid>`` and ``<host>`` (8 hex digits of a hash of the host
            name) say who is writing it.
mode        files are created as a plain ``open()`` creates them: 0666 less
            the umask (``tempfile.mkstemp`` would make them 0600). A writer
            that puts its own file at the temporary name (safetensors'
            ``save_file`` does, with mode 0600) gets that mode set back
            before the rename.
append      ``append_whole(path, data)``: appends ``data`` in full or not
            at all; on a failed write (a full disk) the file is cut back to
            its old length, so a log never ends in half a row.
stale       a temporary of this program's pattern whose writer is gone:
            written on this host by a process no longer alive, or (any
            host, and the ``mkstemp`` names of earlier versions) untouched
            for ``STALE_AGE_S``. ``clean_stale_temps(folder)`` removes them;
            every writer of a folder calls it when it starts.
run stamp   ``run_stamp()``: ``<UTC time>-<host name>-<pid>``
            (``20250131T235959Z-box2-4242``), part of file names that must
            differ from every earlier run's, on this machine and on every
            other machine that writes into the same (shared) folder.
host name   ``host_name()``: the machine's name up to its first dot, in lower
            case, with every character outside ``a-z0-9`` made ``x`` (at most
            ``HOST_NAME_CHARS``; ``host`` when the machine has no name), so
            it never adds a ``-`` or a ``.`` to a file name.

errors      a write that fails (a full disk) raises an OSError naming the
            file asked for, not the temporary: ``<path>: No space left on
            device``. ``write_safetensors`` turns safetensors' own error
            for a failed write into that OSError too.

Every writer of chunks, SGF, checkpoints, weights and loop state goes
through here.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import socket
import time
from pathlib import Path
from typing import Iterator

from .killpoint import kill_point

STALE_AGE_S = 3600.0
HOST = hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]
_TEMP = re.compile(r"^\..+\.(?P<pid>\d+)-(?P<host>[0-9a-f]{8})-[0-9a-f]{8}\.tmp$")
_LEGACY_TEMP = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")  # tempfile.mkstemp(prefix=".<name>.", suffix=".tmp")


class NameTaken(FileExistsError):
    """``atomic_path(..., replace=False)`` found its target name taken."""


def temp_name(target: Path) -> Path:
    """A fresh temporary name for ``target`` (see the module's vocabulary)."""
    return target.with_name(f".{target.name}.{os.getpid()}-{HOST}-{secrets.token_hex(4)}.tmp")


def _create_temp(target: Path) -> tuple[Path, int]:
    """A new empty temporary for ``target`` and its mode (0666 less the umask)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    while True:
        tmp = temp_name(target)
        try:
            fd = os.open(tmp, flags, 0o666)  # the umask applies, as for open()
        except FileExistsError:
            continue
        try:
            mode = os.fstat(fd).st_mode & 0o777
        finally:
            os.close(fd)
        return tmp, mode


def _keep_mode(tmp: Path, mode: int) -> None:
    """Give ``tmp`` the mode it was created with, should its writer have
    replaced the file with one of another mode (see "mode")."""
    if os.name == "posix" and os.stat(tmp).st_mode & 0o777 != mode:
        os.chmod(tmp, mode)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY if os.name == "posix" else os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _commit_new(tmp: Path, target: Path) -> None:
    """Give ``tmp`` the name ``target`` unless that name exists."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise NameTaken(f"{target}: exists; not replaced") from None
    except (OSError, NotImplementedError, AttributeError):
        # a file system without hard links: create the name exclusively (so an
        # existing file is never replaced), then move the written file onto it
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            raise NameTaken(f"{target}: exists; not replaced") from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, replace: bool = True) -> Iterator[Path]:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp, mode = _create_temp(target)
    except OSError as e:
        raise _naming(e, target, None) from e
    try:
        yield tmp
        _keep_mode(tmp, mode)
        _fsync_file(tmp)
        kill_point(f"rename:{target.name}")  # written and synced, not yet renamed
        if replace:
            os.replace(tmp, target)
        else:
            _commit_new(tmp, target)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.errno is not None and e.filename in (None, str(tmp), tmp):
            raise _naming(e, target, tmp) from e
        raise
    _fsync_dir(target.parent)


def _naming(e: OSError, target: Path, tmp: Path | None) -> OSError:
    """``e`` naming ``target``, the file the user asked for, where it named
    no file (a write to a full disk) or the temporary (see "errors")."""
    if e.filename not in (None, str(tmp) if tmp else None, tmp):
        return e
    return OSError(e.errno, e.strerror or str(e), str(target))


def write_safetensors(path: str | os.PathLike, tensors: dict, metadata: dict[str, str]) -> None:
    """safetensors' ``save_file`` through ``atomic_path``; its own error for
    a failed write (a ``SafetensorError``, not an OSError) becomes the
    OSError it reports (``os error 28``: ENOSPC), naming ``path``."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    with atomic_path(path) as tmp:
        try:
            save_file(tensors, str(tmp), metadata=metadata)
        except SafetensorError as e:
            text = " ".join(str(e).split())
            code = re.search(r"os error (\d+)", text)
            number = int(code.group(1)) if code else errno.EIO
            raise OSError(number, os.strerror(number) if code else text, str(path)) from e


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every OS allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_atomic(path: str | os.PathLike, data: bytes, replace: bool = True) -> None:
    with atomic_path(path, replace=replace) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(path: str | os.PathLike, text: str, replace: bool = True) -> None:
    """UTF-8 text, written as is (no newline translation)."""
    write_bytes_atomic(path, text.encode("utf-8"), replace=replace)


def append_whole(path: str | os.PathLike, data: bytes) -> None:
    """Append ``data`` to ``path`` (created when absent) whole or not at
    all: a failed write cuts the file back to its old length (see "append")."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except BaseException:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if os.name != "posix":  # os.kill(pid, 0) would end the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def is_stale_temp(path: Path, now: float | None = None) -> bool:
    """True for a temporary of this program's names whose writer is gone."""
    m = _TEMP.match(path.name)
    if m is None and not _LEGACY_TEMP.match(path.name):
        return False
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except OSError:
        return False
    if age >= STALE_AGE_S:
        return True
    return m is not None and m.group("host") == HOST and not _pid_alive(int(m.group("pid")))


def clean_stale_temps(folder: str | os.PathLike) -> list[Path]:
    """Remove the stale temporaries in ``folder`` (not below it); returns them."""
    d = Path(folder)
    if not d.is_dir():
        return []
    now = time.time()
    removed = []
    for f in d.glob(".*.tmp"):
        if f.is_file() and is_stale_temp(f, now):
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
                removed.append(f)
    return removed


HOST_NAME_CHARS = 24


def host_name(full: str | None = None) -> str:
    """This machine's name as file names carry it (see the vocabulary);
    ``full`` stands in for ``socket.gethostname()``."""
    short = (socket.gethostname() if full is None else full).split(".")[0].lower()
    return re.sub(r"[^a-z0-9]", "x", short)[:HOST_NAME_CHARS] or "host"


def run_stamp() -> str:
    """``<UTC time>-<host name>-<pid>``: differs from every other run's,
    here and on other machines (see the vocabulary)."""
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{host_name()}-{os.getpid()}"
