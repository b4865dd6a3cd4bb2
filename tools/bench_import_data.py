"""import-data speed and memory on synthetic Sayuri data.

    python tools/bench_import_data.py [--records 100000] [--board 19] [--data DIR] [--keep DIR]
                                      [--chunk-positions 8192] [--jobs 1] [--max-files 0]

Vocabulary:
  data set   ``--records`` synthetic record-version-2 records written by
             ``tools/gen_sayuri_data.py`` (in ``--data`` when given and
             already filled: then it is reused, and ``--records`` is what it
             holds), 20,000 records a file, games of 200 plies.
  import     ``sayuri-async import-data`` run as its own process on every
             file, writing chunks to a temporary folder (or ``--keep``).
  figures    positions/s over the import's wall time (start-up included),
             peak RSS of the import process (its own ``ru_maxrss``; with
             ``--jobs`` the parsing processes come on top), the
             input and output sizes, and the machine's load average when the
             import started and ended (others share these cores).

Prints readable lines, then one JSON line (the last line) with the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the import in its own process, which reports its own peak RSS when it ends
_CHILD = ("import resource, sys\nfrom sayuri_async.cli import main\nrc = main(sys.argv[1:])\n"
          "print('peak-rss-kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(rc)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Measure import-data on synthetic Sayuri data.")
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--board", type=int, default=19)
    p.add_argument("--data", type=Path, help="folder of the synthetic data (made when empty or absent)")
    p.add_argument("--keep", type=Path, help="folder for the chunks (default: a temporary one, removed)")
    p.add_argument("--chunk-positions", type=int, default=8192)
    p.add_argument("--jobs", type=int, default=1, help="import-data --jobs")
    p.add_argument("--max-files", type=int, default=0, help="import only the first K files of --data (0: all)")
    args = p.parse_args(argv)
    if args.records < 1 or args.chunk_positions < 1:
        print("bench_import_data: --records and --chunk-positions must be at least 1", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="bench-import-"))
    data = args.data or scratch / "raw"
    out = args.keep or scratch / "chunks"
    try:
        files = sorted(data.glob("data-*.txt.gz")) if data.is_dir() else []
        if not files:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, str(HERE / "gen_sayuri_data.py"), str(data), "--records",
                            str(args.records), "--board", str(args.board)], check=True, stdout=subprocess.DEVNULL)
            print(f"generated {args.records} records in {time.perf_counter() - t0:.0f} s")
            files = sorted(data.glob("data-*.txt.gz"))
        if args.max_files > 0:
            files = files[:args.max_files]
        in_bytes = sum(f.stat().st_size for f in files)
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _CHILD, "import-data", *map(str, files), "-o",
                               str(out), "--chunk-positions", str(args.chunk_positions), "--jobs", str(args.jobs)],
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        load1 = os.getloadavg()[0]
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        rss_kib = int(proc.stdout.split("peak-rss-kib ")[1].split()[0])
        words = proc.stdout.split()
        positions = int(words[words.index("positions") - 1])
        chunks = sorted(out.glob("*.npz"))
        figures = {
            "positions": positions, "files": len(files), "board": args.board, "wall_s": round(wall, 1),
            "positions_per_s": round(positions / wall, 1), "peak_rss_mib": round(rss_kib / 1024, 1),
            "input_mb": round(in_bytes / 1e6, 1), "chunks": len(chunks),
            "output_mb": round(sum(c.stat().st_size for c in chunks) / 1e6, 1),
            "chunk_positions": args.chunk_positions, "jobs": args.jobs, "load_start": round(load0, 2), "load_end": round(load1, 2),
            "cpus": os.cpu_count(),
        }
        print(f"import-data: {positions} positions from {len(files)} files ({figures['input_mb']} MB) in "
              f"{wall:.1f} s = {figures['positions_per_s']} positions/s, peak RSS {figures['peak_rss_mib']} MiB, "
              f"{len(chunks)} chunks ({figures['output_mb']} MB); load {load0:.1f} -> {load1:.1f}")
        print(json.dumps(figures))
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
