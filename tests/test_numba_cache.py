"""Where numba's cache goes when the package folder is read-only, and the
engine run by an unprivileged user with no writable home; the set-up's
compile progress."""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from sayuri_async import numba_cache, precompile

ROOT = Path(__file__).resolve().parents[1]
SETPRIV = shutil.which("setpriv")


@pytest.fixture
def read_only_package(monkeypatch, tmp_path):
    """numba_cache as a read-only install sees it: no NUMBA_CACHE_DIR, no
    XDG_CACHE_HOME, a home that does not exist, a temp folder of the test's."""
    monkeypatch.setattr(numba_cache, "in_tree", lambda: False)
    monkeypatch.setitem(numba_cache._state, "location", None)
    for var in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "no-such-home"))
    (tmp_path / "no-such-home").touch()  # a file: nothing can be created under it
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return tmp_path


def test_a_read_only_install_caches_in_a_private_temp_folder(read_only_package):
    where = numba_cache.location()
    uid = os.getuid()
    assert where == read_only_package / "tmp" / f"sayuri-async-{uid}" / "numba"
    assert (where.parent.stat().st_mode & 0o077) == 0  # this user's alone
    assert "read-only" in numba_cache.where_text()
    board = numba_cache.cache_folder(numba_cache.PACKAGE / "go")
    assert board.parent == where and board.name.startswith("go_")


def test_xdg_cache_home_comes_before_the_temp_folder(read_only_package, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(read_only_package / "xdg"))
    assert numba_cache.location() == read_only_package / "xdg" / "sayuri-async" / "numba"


def test_bounds_checked_code_is_cached_apart_and_never_seeded(monkeypatch, tmp_path):
    """numba's cache index does not record NUMBA_BOUNDSCHECK: checked code
    gets a folder of its own, not the in-tree cache nor a copy of it."""
    seeded = []
    monkeypatch.setattr(numba_cache, "_seed_from_tree", seeded.append)
    monkeypatch.setattr(numba_cache, "_tell_numba", lambda folder: None)
    monkeypatch.setattr(numba_cache, "in_tree", lambda: True)
    monkeypatch.setitem(numba_cache._state, "location", None)
    monkeypatch.setenv("NUMBA_BOUNDSCHECK", "1")
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert numba_cache.location() == tmp_path / "xdg" / "sayuri-async" / "numba" / "boundscheck"
    assert "bounds-checked" in numba_cache.where_text()
    for flag, want in (("1", tmp_path / "user" / "boundscheck"), ("0", tmp_path / "user")):
        monkeypatch.setenv("NUMBA_BOUNDSCHECK", flag)
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "user"))
        numba_cache._state["location"] = None
        numba_cache.refresh()
        assert numba_cache.location() == want
    assert len(seeded) == 1  # the unchecked folder only
    monkeypatch.setenv("NUMBA_BOUNDSCHECK", "1")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "user" / "boundscheck"))  # as a child process inherits it
    numba_cache._state["location"] = None
    assert numba_cache.location() == tmp_path / "user" / "boundscheck"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a folder away needs root")
def test_a_temp_folder_another_user_made_is_not_used(read_only_package):
    theirs = read_only_package / "tmp" / f"sayuri-async-{os.getuid()}"
    theirs.mkdir(mode=0o777)
    os.chmod(theirs, 0o777)
    os.chown(theirs, 65534, 65534)
    assert numba_cache.location() == numba_cache.CACHE_OFF  # code from it would run as this user
    assert "every start compiles" in numba_cache.where_text()


def test_the_notice_names_the_cache_folder(read_only_package):
    stream = io.StringIO()
    if numba_cache.compile_notice(stream):
        assert str(numba_cache.location()) in stream.getvalue()
    assert numba_cache.uncompiled_modules()  # a new folder holds nothing yet


@pytest.mark.slow
def test_with_no_writable_folder_numba_compiles_without_a_cache(tmp_path):
    """``cache=True`` without any locator fails at decoration ("no locator
    available"); with caching off the function still compiles and runs."""
    code = ("import sayuri_async.numba_cache as c\n"
            "c.in_tree = lambda: False\nc.candidates = lambda: []\nc._state['location'] = None\n"
            "c.refresh()\nassert c.location() == c.CACHE_OFF\n"
            "from numba import njit\n"
            "exec(compile('def f(x):\\n    return x + 1\\n', '<no file>', 'exec'))\n"
            "print(njit(cache=True)(f)(41))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "42"


def test_progress_counts_each_function_once():
    stream = io.StringIO()
    clock = iter(range(0, 1000, 10))
    p = precompile.Progress(3, stream, clock=lambda: float(next(clock)))
    for name in ("a.f", "a.g", "a.f", "b.h"):
        p.compiling(name)
    p.end_line()
    assert stream.getvalue().splitlines() == ["  [1/3] a.f", "  [2/3] a.g", "  [3/3] b.h"]
    assert p.seen == ["a.f", "a.g", "b.h"]


def test_pending_lists_the_functions_without_cached_code(monkeypatch, tmp_path):
    functions = precompile.compiled_functions()
    assert "sayuri_async.go.board.play" in functions
    assert len(functions) > 50
    cached = {name for name, d in functions.items() if type(d._cache).__name__ != "NullCache"}
    todo = precompile.pending(functions)
    assert set(todo) <= cached
    some = next(iter(cached))
    index = Path(functions[some]._cache._cache_file._index_path)
    assert (some in todo) == (not index.exists())


# what the engine needs of an interpreter: its packages, and spawned children (the writer process) that start
PROBE = ("import multiprocessing as mp, numba, torch, sayuri_async\n"
         "if __name__ == '__main__':\n"
         "    p = mp.get_context('spawn').Process(target=print)\n"
         "    p.start()\n"
         "    p.join()\n"
         "    raise SystemExit(p.exitcode)\n")


def _unprivileged_python() -> tuple[list[str], dict[str, str]] | str:
    """A Python command that the user ``nobody`` can run with this checkout
    and its packages, or the reason there is none."""
    if SETPRIV is None or not hasattr(os, "getuid") or os.getuid() != 0:
        return "needs root and setpriv to run as nobody"
    site = sysconfig.get_paths()["purelib"]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": f"{ROOT}{os.pathsep}{site}",
           "LANG": "C.UTF-8"}
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for exe in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        cmd = [SETPRIV, "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", exe]
        try:
            ok = subprocess.run([*cmd, "-c", PROBE], env=env, capture_output=True, timeout=120).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return cmd, env
    return f"no {version} that the user nobody can run with this checkout's packages"


@pytest.mark.slow
def test_gtp_and_selfplay_run_as_a_user_without_a_writable_home(tmp_path):
    found = _unprivileged_python()
    if isinstance(found, str):
        pytest.skip(found)
    cmd, env = found
    shared = Path(tempfile.mkdtemp(prefix="sayuri-nobody-", dir="/tmp"))
    try:
        os.chmod(shared, 0o1777)
        env = {**env, "TMPDIR": str(shared)}
        gtp = subprocess.run([*cmd, "-m", "sayuri_async.cli", "gtp"], input="boardsize 9\nplay b e5\nfinal_score\n"
                             "quit\n", env=env, capture_output=True, text=True, timeout=3600, cwd=shared)
        assert gtp.returncode == 0, gtp.stderr
        assert "Traceback" not in gtp.stderr and "no locator" not in gtp.stderr
        assert "= B+" in gtp.stdout or "= W+" in gtp.stdout
        sp = subprocess.run([*cmd, "-m", "sayuri_async.cli", "selfplay", "--config", str(ROOT / "configs" /
                             "selfplay-9x9.toml"), "--board-size", "7", "--num-games", "1", "--parallel-games", "1",
                             "--batch-size", "1", "--playouts", "4", "--out", str(shared / "run"), "--no-tui"],
                            env=env, capture_output=True, text=True, timeout=3600, cwd=shared)
        assert sp.returncode == 0, sp.stderr
        assert "Traceback" not in sp.stderr
        assert list((shared / "run" / "data").glob("*.npz"))
        import pwd

        cache = shared / f"sayuri-async-{pwd.getpwnam('nobody').pw_uid}" / "numba"
        assert list(cache.rglob("*.nbi"))  # compiled once, kept for the next start
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_the_listener_names_the_package_functions_numba_compiles():
    from numba import njit

    heard: list[str] = []
    listener = precompile._listener(heard.append)
    try:
        scope = {"__name__": "sayuri_async.fake_module"}
        exec("def add_one(x):\n    return x + 1\n", scope)
        assert njit(scope["add_one"])(1) == 2
        outside = {"__name__": "elsewhere"}
        exec("def add_two(x):\n    return x + 2\n", outside)
        assert njit(outside["add_two"])(1) == 3
    finally:
        from numba.core import event

        event.unregister("numba:compile", listener)
    assert heard == ["sayuri_async.fake_module.add_one"]  # numba's own helpers and other code are not counted


def test_only_files_with_compiled_code_count_as_sources():
    names = {p.name for p in numba_cache._sources()}
    assert {"board.py", "tree.py", "simple_v1.py", "leaf.py"} <= names
    assert not names & {"numba_cache.py", "precompile.py"}  # they only name the decorator


@pytest.mark.slow
def test_the_gtp_childs_compiles_reach_the_progress():
    code = ("import sys\n"
            f"print({precompile.MARK!r} + 'sayuri_async.go.board.play', file=sys.stderr)\n"
            "print('a start line of the engine', file=sys.stderr)\n"
            f"print({precompile.MARK!r} + 'sayuri_async.go.scoring.area_map', file=sys.stderr)\n"
            "print('= ' + sys.stdin.read().split()[0])\n")
    heard: list[str] = []
    precompile.warm_gtp(heard.append, code)
    assert heard == ["sayuri_async.go.board.play", "sayuri_async.go.scoring.area_map"]


SECOND_START = ("import io, numpy as np\n"
                "import sayuri_async.numba_cache as c\n"
                "notice = io.StringIO()\n"
                "c.compile_notice(notice)\n"
                "print('WHERE', c.location())\n"
                "print('NOTICE', notice.getvalue().strip())\n"
                "from sayuri_async.encoders import pointset\n"
                "assert pointset.is_empty(np.zeros(pointset.SET_WORDS, np.uint64))\n"
                "stats = pointset.is_empty.stats\n"
                "print('HITS', sum(stats.cache_hits.values()), 'MISSES', sum(stats.cache_misses.values()))\n")


@pytest.mark.slow
def test_a_package_with_a_folder_that_cannot_hold_a_cache_caches_elsewhere_and_says_where(tmp_path):
    """A copy of the package whose top folder is writable but whose go/
    cannot hold a ``__pycache__`` (numba would cache that folder's code
    elsewhere): the cache goes to the user's folder, the notice names it,
    and a second start loads what the first compiled."""
    install = tmp_path / "install"
    shutil.copytree(ROOT / "sayuri_async", install / "sayuri_async",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (install / "sayuri_async" / "go" / "__pycache__").write_text("")  # a file: no folder can be made there
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "NUMBA_BOUNDSCHECK")}
    env.update(PYTHONPATH=str(install), HOME=str(home))
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", SECOND_START], env=env, cwd=tmp_path, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        runs.append(dict(line.split(" ", 1) for line in out.stdout.splitlines()))
    cache = home / ".cache" / "sayuri-async" / "numba"
    first, second = runs
    assert first["WHERE"] == str(cache), first
    assert f"kept in {cache} (the package's folders are read-only)" in first["NOTICE"], first
    assert "beside the sources" not in first["NOTICE"]
    assert first["HITS"] == "0 MISSES 1" and second["HITS"] == "1 MISSES 0", runs  # compiled once, then loaded
    assert "encoders.pointset" in first["NOTICE"] and "encoders.pointset" not in second["NOTICE"]
    assert list(cache.rglob("pointset*.nbi"))
