#!/usr/bin/env python3
"""The fast ``sayuri-v3`` encoder against the reference, on many positions.

Vocabulary
----------
reference   ``tests/helpers_sayuri_ref.py``: the encoder as it stood before
            it was made fast (every plane recomputed the straightforward
            way), whose planes were matched against Sayuri's own.
root        a random position: uniformly random moves, or random moves that
            keep their own one-point eyes (so pass-alive groups and safe
            areas appear), cut after 0 .. 2*N*N moves.
child       a position 1-8 random moves on from a root, or 1-2 moves on from
            the child before, encoded as the search encodes its leaves
            (``encode_sayuri_v3_reuse``, ladder read-outs taken from the
            root's entries, the parent's or the memo of one cache); its idle
            points are checked against ``benson.pass_alive_idle`` too.

Every root and every child must give the reference's planes byte for byte.
Prints one line per board size and, last, a JSON object with the counts
(``positions``, ``mismatches``, and the children's ladder strings
``reused`` from the root, ``inherited`` from the parent, ``remembered``
and ``read``). Exit
status 1 on any mismatch.
Usage: ``python tools/check_sayuri_planes.py [--positions 10000] [--sizes 9 13 19] [--seed 1]``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from helpers_sayuri_ref import compare_with_reference  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=10_000, help="positions in all (roots and children)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[7, 9, 13, 19])
    ap.add_argument("--children", type=int, default=4, help="children per root")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.positions < 1 or a.children < 0 or any(not 2 <= n <= 25 for n in a.sizes):
        print("check_sayuri_planes: --positions >= 1, --children >= 0, sizes 2..25", file=sys.stderr)
        return 2
    per_size = -(-a.positions // len(a.sizes))
    roots = max(1, -(-per_size // (1 + a.children)))
    total = {"positions": 0, "mismatches": 0, "reused": 0, "inherited": 0, "remembered": 0, "read": 0}
    for n in a.sizes:
        t = time.perf_counter()
        r = compare_with_reference(n, roots, a.children, a.seed + n)
        for k in total:
            total[k] += r[k]
        print(f"{n}x{n}: {r['positions']} positions, {r['mismatches']} mismatching; ladder strings at children: "
              f"{r['reused']} reused, {r['inherited']} inherited, {r['remembered']} remembered, {r['read']} read "
              f"({time.perf_counter() - t:.0f} s)", flush=True)
    print(json.dumps(total))
    return 1 if total["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
