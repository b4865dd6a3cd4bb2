#!/usr/bin/env python3
"""Randomised kills: SIGKILL self-play, training and the RL loop at random
moments and check what survives (the long form of tests/test_faults*.py; Linux).

Each trial starts a tiny run as the user would (``sayuri-async selfplay``
with ``--procs`` 1 or 2, ``sayuri-async train`` on chunks the self-play
trials wrote, or ``sayuri-async loop`` one generation further on a workspace
that grows over the trials), waits until it writes its first file, then a
random time more, and sends SIGKILL to the main process. Then, for that trial:

- orphans    every process the run had started (engines, writers, data
             readers) must be gone within ``--grace`` seconds
             (``lifetime.descendant_pids``, ``lifetime.pid_running``);
- files      every file in the run's folder must validate
             (``sayuri_async.validate.check_run``: chunks against
             docs/data-format.md through chunkfile.read_chunk, SGF, weights,
             checkpoints, state and logs; temporaries only of killed writes);
- resume     the same command again (self-play: a few games; training:
             ``--auto-resume``; the loop: the same generations) must finish
             with exit status 0 (training at its target step, the loop one
             generation on), and every file that existed before it must be
             unchanged (``validate.overwritten``: the state, logs and
             checkpoint rotation aside).

Prints one line per trial and, last, a JSON summary: kills tried, files
checked, orphans, failed validations, failed resumes, overwritten files.

    nice -n 10 python tools/kill_runs.py --trials 20 --seed 1
    nice -n 10 python tools/kill_runs.py --trials 8 --kinds loop
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sayuri_async.lifetime import descendant_pids, pid_running  # noqa: E402
from sayuri_async.validate import check_run, file_digests, overwritten  # noqa: E402

KINDS = ("selfplay", "train", "loop")


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "sayuri_async.cli", *args]


def selfplay_config(folder: Path, out: Path, procs: int, num_games: int) -> Path:
    cfg = folder / f"sp-{procs}-{num_games}.toml"
    cfg.write_text(f"[selfplay]\nboard_sizes = [7]\nnum_games = {num_games}\nparallel_games = 4\nbatch_size = 4\n"
                   f"playouts = 8\nchunk_games = 1\nprocs = {procs}\nout = '{out}'\n")
    return cfg


def train_config(folder: Path, data: Path) -> Path:
    cfg = folder / "train.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\nboard_size = 7\nworkers = 0\n[model]\nblocks = 1\nchannels = 8\n'
                   '[optim]\nbatch_size = 16\n[run]\ndevice = "cpu"\nlog_every = 1\ncheckpoint_every = 2\n'
                   'export_every = 2\nkeep_checkpoints = 2\n')
    return cfg


def loop_config(folder: Path, procs: int) -> Path:
    """A loop small enough for a generation in seconds: 4 games, 20 steps, 2
    evaluation games."""
    cfg = folder / f"loop-{procs}.toml"
    cfg.write_text("[loop]\ngenerations = 1\ngames_per_generation = 4\nsteps_per_generation = 20\neval_games = 2\n"
                   "eval_playouts = 4\n[selfplay]\nboard_sizes = [7]\nparallel_games = 2\nbatch_size = 2\n"
                   f"playouts = 6\nreduce_playouts = 0\nchunk_games = 1\nprocs = {procs}\n"
                   "[search]\nedge_capacity = 20000\n"
                   "[data]\nboard_size = 7\nwindow_min_positions = 100\nwindow_max_positions = 1000\n"
                   "shuffle_buffer = 100\nworkers = 0\n[model]\nblocks = 1\nchannels = 8\n"
                   "[optim]\nbatch_size = 16\n[run]\ndevice = \"cpu\"\nlog_every = 2\ncheckpoint_every = 4\n"
                   "keep_checkpoints = 2\n")
    return cfg


def loop_generation(ws: Path) -> int:
    """The generation the loop in ``ws`` is at (1 before its first state)."""
    try:
        return int(json.loads((ws / "state.json").read_text())["generation"])
    except (OSError, ValueError, KeyError):
        return 1


def names(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()


def kill_after(cmd: list[str], folder: Path, delay: float, grace: float,
               start_limit: float = 180.0) -> tuple[int, int, bool]:
    """Start ``cmd``; once it has written its first file into ``folder`` (or
    after ``start_limit`` s: a loaded machine takes long to start), wait
    ``delay`` s more and SIGKILL it. Returns (processes it had started, of
    them still alive after ``grace`` s, whether it had ended by itself)."""
    before = names(folder)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0, family, working = time.time(), set(), None
    while proc.poll() is None:
        family |= set(descendant_pids(proc.pid))
        now = time.time()
        if working is None and (names(folder) != before or now - t0 > start_limit):
            working = now
        if working is not None and now - working >= delay:
            break
        time.sleep(0.05)
    family |= set(descendant_pids(proc.pid))
    ended = proc.poll() is not None
    proc.kill()
    proc.wait()
    t1 = time.time()
    while any(pid_running(p) for p in family) and time.time() - t1 < grace:
        time.sleep(0.1)
    orphans = [p for p in family if pid_running(p)]
    for p in orphans:  # leave the machine clean for the next trial
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    return len(family), len(orphans), ended


def pick_kind(i: int, kinds: list[str], rng: random.Random, have_data: bool) -> str:
    """Trial ``i``'s kind, in turn over ``kinds`` (training needs self-play's chunks)."""
    kind = kinds[i % len(kinds)]
    if kind == "train" and not have_data:
        kind = "selfplay" if "selfplay" in kinds else "loop"
    return f"{kind}-p{rng.choice([1, 2])}" if kind in ("selfplay", "loop") else kind


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    ap.add_argument("--max-delay", type=float, default=8.0,
                    help="longest wait before the kill, seconds after the run's first file")
    ap.add_argument("--loop-max-delay", type=float, default=30.0,
                    help="the same for a loop trial (a generation is longer)")
    ap.add_argument("--train-steps", type=int, default=300,
                    help="steps of a training trial (long enough for the kill to land mid-run)")
    ap.add_argument("--grace", type=float, default=10.0, help="seconds the run's processes have to end")
    a = ap.parse_args()
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    if not kinds or set(kinds) - set(KINDS):
        ap.error(f"--kinds: expected names among {', '.join(KINDS)}, got {a.kinds!r}")
    rng = random.Random(a.seed)
    totals = {"kills": 0, "ended_before_kill": 0, "processes": 0, "files_checked": 0, "orphans": 0,
              "bad_files": 0, "failed_resumes": 0, "overwritten": 0}
    with tempfile.TemporaryDirectory(prefix="kill-runs-") as tmp:
        tmp = Path(tmp)
        data = tmp / "sp" / "data"
        ws = tmp / "loop"
        for i in range(a.trials):
            kind = pick_kind(i, kinds, rng, bool(list(data.glob("*.npz"))))
            delay = rng.uniform(0.0, a.loop_max_delay if kind.startswith("loop") else a.max_delay)
            expect_generation = None
            if kind == "train":
                folder = tmp / f"train-{i}"
                cfg = train_config(tmp, data)
                run = cli("train", "--config", str(cfg), "--out", str(folder), "--steps", str(a.train_steps),
                          "--no-progress")
                restart = run + ["--auto-resume"]
            elif kind.startswith("loop"):
                folder = ws
                gens = loop_generation(ws)  # one generation further than the workspace is
                expect_generation = gens + 1
                run = restart = cli("loop", "--config", str(loop_config(tmp, int(kind[-1]))), "--workspace",
                                    str(ws), "--generations", str(gens))
            else:
                procs = int(kind[-1])
                folder = tmp / "sp"
                run = cli("selfplay", "--config", str(selfplay_config(tmp, folder, procs, 0)), "--no-tui")
                restart = cli("selfplay", "--config", str(selfplay_config(tmp, folder, procs, 2)), "--no-tui")
            started, orphans, ended = kill_after(run, folder, delay, a.grace)
            bad, checked = check_run(folder)
            before = file_digests(folder)
            r = subprocess.run(restart, cwd=ROOT, capture_output=True, text=True, timeout=900)
            changed = overwritten(before, file_digests(folder))
            resumed = r.returncode == 0 and (expect_generation is None or loop_generation(ws) == expect_generation)
            totals["kills"] += 1
            totals["ended_before_kill"] += ended
            totals["processes"] += started
            totals["files_checked"] += checked
            totals["orphans"] += orphans
            totals["bad_files"] += len(bad)
            totals["failed_resumes"] += not resumed
            totals["overwritten"] += len(changed)
            print(f"trial {i} {kind}: killed {delay:.1f} s after its first file{' (it had ended)' if ended else ''}, "
                  f"{started} processes started, {orphans} orphans, {checked} files, {len(bad)} bad, "
                  f"resume exit {r.returncode}{'' if resumed else ' FAILED'}, {len(changed)} overwritten"
                  + (f"\n  {r.stderr.strip().splitlines()[-1]}" if r.returncode and r.stderr.strip() else ""),
                  flush=True)
            for p, why in bad:
                print(f"  bad file {p}: {why}", flush=True)
            for line in changed:
                print(f"  overwritten {line}", flush=True)
    totals["failures"] = totals["orphans"] + totals["bad_files"] + totals["failed_resumes"] + totals["overwritten"]
    print(json.dumps(totals))
    return 1 if totals["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
