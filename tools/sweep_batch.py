#!/usr/bin/env python3
"""Sweep (parallel_games, batch_size, procs) and print evals/s per setting.

A thin wrapper around ``sayuri-async tune`` (sayuri_async/selfplay/tune.py);
it takes the same options, e.g.::

    python tools/sweep_batch.py --device cuda:0 --weights net.safetensors \
        --batch 32,64,128,256 --games 2x,4x --procs 1,2,4
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sayuri_async.selfplay.tune import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
