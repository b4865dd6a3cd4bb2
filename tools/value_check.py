#!/usr/bin/env python3
"""How well networks judge and predict a set of training chunks (self-play or imported).

For each network given, over the positions of the chunks under ``--data``
(optionally one loop generation's, ``--generation``), the tool prints the figures that ``sayuri_async/train/value_quality.py`` defines:
value_mse beside the answer-0 baseline, value_corr, sign_agree, policy_ce,
target_entropy, policy_kl, top1_played.

The last line is a JSON object: {"positions", "chunks", "nets": {path: figures}}.
A missing folder, no readable chunk or a bad weights file: one line, exit 2.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sayuri_async.chunkfile import ChunkError  # noqa: E402
from sayuri_async.train.value_quality import load_positions, net_figures  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    from sayuri_async.net.weights import WeightsError

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("weights", nargs="+", help="weights files to judge")
    ap.add_argument("--data", required=True, help="folder of chunks (searched recursively)")
    ap.add_argument("--generation", type=int, help="only chunks of this loop generation")
    ap.add_argument("--max-positions", type=int, default=5000, help="newest positions to use (default 5000)")
    a = ap.parse_args(argv)
    data = Path(a.data)
    if not data.is_dir():
        print(f"value_check: --data {a.data}: no such folder", file=sys.stderr)
        return 2
    if a.max_positions < 1:
        print(f"value_check: --max-positions {a.max_positions}: must be at least 1", file=sys.stderr)
        return 2
    try:
        pos, chunks = load_positions(data, a.generation, a.max_positions)
    except ChunkError as e:
        print(f"value_check: {e}", file=sys.stderr)
        return 2
    nets = {}
    for w in a.weights:
        try:
            nets[w] = net_figures(w, pos)
        except (WeightsError, OSError) as e:
            print(f"value_check: {w}: not a weights file ({e})", file=sys.stderr)
            return 2
        f = nets[w]
        print(f"{w}: value mse {f['value_mse']} (answering 0: {f['baseline_mse']}), corr {f['value_corr']}, "
              f"winner {f['sign_agree']:.1%}; policy ce {f['policy_ce']} (targets' entropy {f['target_entropy']}, "
              f"kl {f['policy_kl']}), played move first {f['top1_played']:.1%}")
    print(json.dumps({"positions": int(len(pos["z"])), "chunks": chunks, "nets": nets}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
