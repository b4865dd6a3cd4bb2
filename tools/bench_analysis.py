#!/usr/bin/env python3
"""Long GTP analysis: the visits reached and the memory used over time.

Starts ``python -m gtp`` as a client would (a pipe, one process), sets the
board, sends ``kata-analyze b 100 rootInfo true`` (the search of
``lz-analyze``; ``rootInfo`` gives the root's visits) and reads the lines for
``--seconds``, sampling the process's resident memory (``VmRSS`` in
``/proc/PID/status``, Linux) once a second. ``--net 6b96c`` analyses with a
network of that shape and random weights (written to a temporary file);
without it, the random network. The last line is a JSON object: the visits
at the end, the visits per second over the last tenth of the run, the
largest RSS, the tree's budget and the load average before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VISITS = re.compile(r"rootInfo visits (\d+)")


def random_net(shape: str, folder: str) -> str:
    """A ``NbMc`` network of random weights saved under ``folder``."""
    from sayuri_async.net.model import Net, NetConfig
    from sayuri_async.net.weights import save_weights

    m = re.fullmatch(r"(\d+)b(\d+)c", shape)
    if m is None:
        raise SystemExit(f"bench_analysis: --net must look like 6b96c, not {shape!r}")
    net = Net(NetConfig(blocks=int(m.group(1)), channels=int(m.group(2))))
    path = os.path.join(folder, f"random-{shape}.safetensors")
    save_weights(path, net, {"name": f"random-{shape}"})
    return path


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--board", type=int, default=19)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--net", help="a random-weights network of this shape (e.g. 6b96c); default: the random network")
    ap.add_argument("--tree-memory-mb", type=float, help="[search] tree_memory_mb (default: the config's)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "gtp"]
        if a.net:
            cmd += ["--weights", random_net(a.net, tmp)]
        if a.tree_memory_mb is not None:
            cmd += ["--tree-memory-mb", str(a.tree_memory_mb)]
        if a.threads:
            conf = os.path.join(tmp, "gtp.toml")
            Path(conf).write_text(f"[net]\nthreads = {a.threads}\n")
            cmd += ["--config", conf]
        load0 = os.getloadavg()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, bufsize=1)
        assert proc.stdin is not None and proc.stdout is not None
        samples: list[tuple[float, int]] = []
        t0 = [0.0]

        def read() -> None:
            for line in proc.stdout:
                m = VISITS.search(line)
                if m and t0[0]:
                    samples.append((time.perf_counter() - t0[0], int(m.group(1))))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        proc.stdin.write(f"boardsize {a.board}\nclear_board\nname\n")
        proc.stdin.flush()
        time.sleep(5.0)  # start-up: the compiled search loads
        t0[0] = time.perf_counter()
        proc.stdin.write("kata-analyze b 100 rootInfo true\n")
        proc.stdin.flush()
        peak = 0.0
        table = []
        while time.perf_counter() - t0[0] < a.seconds:
            time.sleep(1.0)
            mem = rss_mb(proc.pid)
            peak = max(peak, mem)
            visits = samples[-1][1] if samples else 0
            table.append((round(time.perf_counter() - t0[0], 1), visits, round(mem, 1)))
            print(f"{table[-1][0]:6.1f} s  {visits:10d} visits  {mem:8.1f} MB RSS", flush=True)
        proc.stdin.write("\nquit\n")
        proc.stdin.flush()
        proc.wait(timeout=60)
        load1 = os.getloadavg()
    last = samples[-1] if samples else (0.0, 0)
    tenth = [s for s in samples if s[0] >= last[0] * 0.9]
    rate = (tenth[-1][1] - tenth[0][1]) / max(tenth[-1][0] - tenth[0][0], 1e-9) if len(tenth) > 1 else 0.0
    print(json.dumps({"board": a.board, "net": a.net or "random", "seconds": a.seconds, "visits": last[1],
                      "visits_per_s_end": round(rate, 1), "rss_mb_max": round(peak, 1),
                      "tree_memory_mb": a.tree_memory_mb, "load_before": load0, "load_after": load1}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
