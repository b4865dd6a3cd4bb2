#!/usr/bin/env python3
"""Write a network with another network's batch-norm running statistics.

``swap_norm_stats.py WEIGHTS STATS OUT``: OUT holds every tensor of WEIGHTS
except the batch norms' running statistics (``running_mean``,
``running_var``, ``num_batches_tracked``), which come from STATS (the same
architecture, e.g. a later generation of a loop). It separates what training
changed in the weights from what it changed in the statistics the network
normalises with when it plays (docs/strength.md, "Why the generations got
weaker"). The header (architecture, metadata) is WEIGHTS'.

Last line: a JSON object {"out", "swapped"} (the count of tensors taken from
STATS). Unreadable files or different architectures: one line, exit 2.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STAT_SUFFIXES = ("running_mean", "running_var", "num_batches_tracked")


def main(argv: list[str] | None = None) -> int:
    import argparse

    from safetensors import SafetensorError
    from safetensors.numpy import load_file, save_file

    from sayuri_async.fileio import atomic_path
    from sayuri_async.net.weights import WeightsError, read_header

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("weights", help="the network whose weights are kept")
    ap.add_argument("stats", help="the network whose batch-norm running statistics are taken")
    ap.add_argument("out", help="the file to write")
    a = ap.parse_args(argv)
    try:
        header = read_header(a.weights)
        read_header(a.stats)
        kept, stats = load_file(a.weights), load_file(a.stats)
    except (WeightsError, SafetensorError, OSError) as e:
        print(f"swap_norm_stats: {e}", file=sys.stderr)
        return 2
    if set(kept) != set(stats) or any(kept[k].shape != stats[k].shape for k in kept):
        print(f"swap_norm_stats: {a.weights} and {a.stats} are different architectures", file=sys.stderr)
        return 2
    names = [k for k in kept if k.endswith(STAT_SUFFIXES)]
    out = {k: (stats[k] if k in names else kept[k]) for k in kept}
    with atomic_path(Path(a.out)) as tmp:
        save_file(out, str(tmp), metadata=header)
    print(json.dumps({"out": a.out, "swapped": len(names)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
