#!/usr/bin/env python3
"""GTP on a busy machine: how long a 9x9 ``genmove`` takes at default
settings while other programs keep every core busy.

Starts ``--busy`` processes that spin (``while True: pass``; default: one
per core, as a browser and a compiler would), then ``python -m gtp`` as a
GUI would (a pipe, the default config: the shipped 9x9 network, 400
playouts, the torch threads the engine chooses), waits until it answers
``name`` (start-up done), sends ``boardsize 9`` and ``--moves`` times
``genmove`` (black and white in turn) and times each answer. ``--threads
N`` sets ``[net] threads`` to compare with another thread count. The
spinning processes are stopped at the end, whatever happens. The engine's
start line (stderr) names the threads it chose. The last line is a JSON
object: the seconds of each genmove and the largest, the start-up seconds,
the engine's thread line, the number of busy processes and cores, and the
load average before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPIN = "while True:\n    pass\n"


def start_busy(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


def read_answer(proc: subprocess.Popen, deadline: float) -> str:
    """The next GTP answer's first line (the rest up to the empty line is
    read and dropped); raises TimeoutError past ``deadline``."""
    assert proc.stdout is not None
    first = ""
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError
        line = proc.stdout.readline()
        if not line:
            raise EOFError("the engine closed its output")
        if not first:
            first = line.strip()
        elif not line.strip():
            return first


def send(proc: subprocess.Popen, command: str, timeout: float) -> tuple[str, float]:
    assert proc.stdin is not None
    t0 = time.perf_counter()
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    answer = read_answer(proc, time.monotonic() + timeout)
    return answer, time.perf_counter() - t0


def engine_command(threads: int | None, folder: str) -> list[str]:
    cmd = [sys.executable, "-m", "gtp"]
    if threads is not None:
        conf = os.path.join(folder, "gtp.toml")
        Path(conf).write_text(f"[net]\nthreads = {threads}\n")
        cmd += ["--config", conf]
    return cmd


def thread_line(stderr_path: str) -> str:
    text = Path(stderr_path).read_text(errors="replace")
    return next((ln for ln in text.splitlines() if "torch threads" in ln), "")


def run(a: argparse.Namespace) -> dict:
    load0 = os.getloadavg()
    busy = start_busy(a.busy)
    times: list[float] = []
    answers: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        err_path = os.path.join(tmp, "stderr.txt")
        with open(err_path, "w") as err:
            proc = subprocess.Popen(engine_command(a.threads, tmp), cwd=ROOT, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)
        try:
            _, startup = send(proc, "name", a.timeout)
            send(proc, "boardsize 9", a.timeout)
            for k in range(a.moves):
                answer, seconds = send(proc, f"genmove {'bw'[k % 2]}", a.timeout)
                answers.append(answer)
                times.append(round(seconds, 3))
            send(proc, "quit", a.timeout)
        finally:
            stop(busy)
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        line = thread_line(err_path)
    return {"genmove_s": times, "max_s": max(times), "answers": answers, "startup_s": round(startup, 2),
            "engine": line, "busy_procs": a.busy, "cores": os.cpu_count(),
            "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="spinning processes (default: one per core)")
    ap.add_argument("--moves", type=int, default=2, help="genmoves to time (default 2)")
    ap.add_argument("--threads", type=int, help="[net] threads for the engine (default: the engine's choice)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for any one answer")
    a = ap.parse_args()
    try:
        result = run(a)
    except (TimeoutError, EOFError) as e:
        print(f"bench_gtp_busy: no answer: {e or 'timed out'}", file=sys.stderr)
        return 1
    for t in result["genmove_s"]:
        print(f"genmove: {t:.2f} s")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
