#!/usr/bin/env python3
"""Randomised kills: SIGKILL self-play and training at random moments and
check what survives (the long form of the fault-injection tests; Linux).

Each trial starts a tiny run as the user would (``sayuri-async selfplay``
with ``--procs`` 1 or 2, or ``sayuri-async train`` on chunks the self-play
trials wrote), waits a random time, and sends SIGKILL to the main process.
Then, for that trial:

- orphans    every process the run had started (engines, writers, data
             readers) must be gone within ``--grace`` seconds;
- files      every file in the run's folder must validate: chunks read back
             through the format's reader (``chunkfile.read_chunk``:
             sizes, shapes, dtypes), SGF files parse (sgfmill), weights and
             checkpoints load, and the only other files are temporaries of
             killed writes (``fileio.is_stale_temp``);
- restart    the same command again (self-play: a few games; training:
             ``--auto-resume``) must finish with exit status 0, and leave every
             file that existed before it unchanged (self-play) or the run
             at its target step (training).

Prints one line per trial and, last, a JSON summary: kills tried, files
checked, orphans, failed validations, failed restarts, overwritten files.

    nice -n 10 python tools/kill_runs.py --trials 20 --seed 1
"""
from __future__ import annotations

import argparse
import hashlib
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

from sayuri_async.fileio import is_stale_temp  # noqa: E402
from sayuri_async.lifetime import descendant_pids, pid_running  # noqa: E402
from sayuri_async.train.checkpoint import CheckpointError, load_checkpoint  # noqa: E402
from sayuri_async.chunkfile import ChunkError, read_chunk  # noqa: E402


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


def check_file(p: Path) -> str | None:
    """Why ``p`` does not validate (None: it does)."""
    if is_stale_temp(p, now=time.time() + 3600):  # a killed write's temporary: its writer is gone
        return None
    try:
        if p.suffix == ".npz":
            read_chunk(p)
        elif p.suffix == ".sgf":
            from sgfmill import sgf

            sgf.Sgf_game.from_bytes(p.read_bytes())
        elif p.suffix == ".pt":
            load_checkpoint(p)
        elif p.suffix == ".safetensors":
            from sayuri_async.net.weights import load_weights

            load_weights(p)
        elif p.suffix in (".csv", ".json", ".toml", ".txt", ".log"):
            p.read_text(encoding="utf-8")
        elif p.name != "STOP":
            return "a file of no known kind"
    except (ChunkError, CheckpointError, ValueError, OSError, UnicodeDecodeError) as e:
        return f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
    return None


def digests(folder: Path) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*")
            if p.is_file() and not is_stale_temp(p, now=time.time() + 3600)}


def kill_after(cmd: list[str], delay: float, grace: float) -> tuple[int, int]:
    """Start ``cmd``, SIGKILL it after ``delay`` s; (processes it had
    started, of them still alive after ``grace`` s)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0, family = time.time(), set()
    while time.time() - t0 < delay and proc.poll() is None:
        family |= set(descendant_pids(proc.pid))
        time.sleep(0.05)
    family |= set(descendant_pids(proc.pid))
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
    return len(family), len(orphans)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-delay", type=float, default=12.0, help="longest wait before the kill, seconds")
    ap.add_argument("--train-steps", type=int, default=300,
                    help="steps of a training trial (long enough for the kill to land mid-run)")
    ap.add_argument("--grace", type=float, default=10.0, help="seconds the run's processes have to end")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    totals = {"kills": 0, "files_checked": 0, "orphans": 0, "bad_files": 0, "failed_restarts": 0,
              "overwritten": 0, "trials": []}
    with tempfile.TemporaryDirectory(prefix="kill-runs-") as tmp:
        tmp = Path(tmp)
        data = tmp / "sp" / "data"
        for i in range(a.trials):
            kind = "train" if i % 3 == 2 and list(data.glob("*.npz")) else f"selfplay-p{rng.choice([1, 2])}"
            delay = rng.uniform(1.0, a.max_delay)
            if kind == "train":
                folder = tmp / f"train-{i}"
                cfg = train_config(tmp, data)
                started, orphans = kill_after(cli("train", "--config", str(cfg), "--out", str(folder), "--steps",
                                                  str(a.train_steps), "--no-progress"), delay, a.grace)
                restart = cli("train", "--config", str(cfg), "--out", str(folder), "--steps", str(a.train_steps),
                              "--no-progress", "--auto-resume")
            else:
                procs = int(kind[-1])
                folder = tmp / "sp"
                started, orphans = kill_after(cli("selfplay", "--config", str(selfplay_config(tmp, folder, procs, 0)),
                                                  "--no-tui"), delay, a.grace)
                restart = cli("selfplay", "--config", str(selfplay_config(tmp, folder, procs, 2)), "--no-tui")
            bad = [(p, why) for p in sorted(folder.rglob("*")) if p.is_file() and (why := check_file(p))]
            checked = sum(1 for p in folder.rglob("*") if p.is_file())
            before = digests(folder)
            r = subprocess.run(restart, cwd=ROOT, capture_output=True, text=True, timeout=600)
            after = digests(folder)
            changed = [p for p, d in before.items() if after.get(p) != d and kind != "train"]
            if kind == "train":  # the trainer rotates its checkpoints and rewrites its log: check the end state
                changed = []
            trial = {"trial": i, "kind": kind, "kill_after_s": round(delay, 2), "processes": started,
                     "orphans": orphans, "files": checked, "bad": [f"{p.name}: {w}" for p, w in bad],
                     "restart_status": r.returncode, "overwritten": len(changed)}
            totals["kills"] += 1
            totals["files_checked"] += checked
            totals["orphans"] += orphans
            totals["bad_files"] += len(bad)
            totals["failed_restarts"] += r.returncode != 0
            totals["overwritten"] += len(changed)
            totals["trials"].append(trial)
            print(f"trial {i} {kind}: killed after {delay:.1f} s, {started} processes started, {orphans} orphans, "
                  f"{checked} files, {len(bad)} bad, restart exit {r.returncode}, {len(changed)} overwritten"
                  + (f"\n  {r.stderr.strip().splitlines()[-1]}" if r.returncode and r.stderr.strip() else ""),
                  flush=True)
            for p, why in bad:
                print(f"  bad file {p}: {why}", flush=True)
    summary = {k: v for k, v in totals.items() if k != "trials"}
    summary["failures"] = summary["orphans"] + summary["bad_files"] + summary["failed_restarts"] + summary["overwritten"]
    print(json.dumps(summary))
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
