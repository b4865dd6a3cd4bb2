"""Synthetic Sayuri training data: record version 2 files, as Sayuri writes them.

    python tools/gen_sayuri_data.py OUT_DIR [--records N] [--board 19] [--per-file 20000]
                                    [--game-length 200] [--seed 1] [--level 1]

Vocabulary:
  record    53 lines (``sayuri_async/sayuri/data.py`` describes them): the
            version 2 layout Sayuri's ``TrainingData::StreamOut`` prints,
            numbers in C++ stream form (6 significant digits, zeros as ``0``).
  game      ``--game-length`` consecutive records of one game: each ply puts a
            stone of the side to move on a random empty point (no captures),
            so the history planes are consistent and the importer links every
            record to the next one (its ``action``). The policy has 5-40
            non-zero moves, the auxiliary policy is the next record's policy
            (pass for the last record), as in Sayuri. Q, score, stddev and
            KLD are random but in range; the short/middle/long averages are
            Sayuri's discounted sums of the per-ply values.
  file      ``--per-file`` records, gzip (``--level``, 1 by default: speed) named
            ``data-<serial>.txt.gz``; a game may run on into the next file.

The numbers are random: the data set is for timing and memory figures and
format tests, not for learning anything. Prints one JSON line (the last
line): records, files, bytes, seconds.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sayuri_async.sayuri.targets import term_averages  # noqa: E402

HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
OWN_CHARS = np.frombuffer(b"130", np.uint8)  # own, opponent, neither
HISTORY = 8


def hex_lines(planes: np.ndarray) -> list[bytes]:
    """Sayuri's binary plane lines of ``planes`` ``[P, N*N]`` (0/1)."""
    p, nn = planes.shape
    q = nn // 4
    codes = planes[:, :4 * q].reshape(p, q, 4).astype(np.uint8) @ np.array([1, 2, 4, 8], np.uint8)
    text = HEX[codes]
    if nn % 4:
        text = np.concatenate([text, (planes[:, nn - 1:] + ord("0")).astype(np.uint8)], axis=1)
    return [row.tobytes() for row in text]


def numbers(v: np.ndarray) -> bytes:
    """Space-separated, C++ stream style: ``%g`` and ``0`` for zeros."""
    words = ["0"] * len(v)
    for i in np.nonzero(v)[0]:
        words[i] = f"{v[i]:g}"
    return " ".join(words).encode()


def game_records(rng: np.random.Generator, n: int, length: int, komi: float = 7.5) -> list[bytes]:
    """The records of one synthetic game, each as its 53 lines joined."""
    nn = n * n
    a = nn + 1
    board = np.zeros(nn, np.int8)  # 1 black, 2 white
    states, moves = [], []
    colour = 1
    for _ in range(length):
        states.append(board.copy())
        empty = np.nonzero(board == 0)[0]
        move = int(rng.choice(empty)) if len(empty) > nn // 3 else nn  # pass once the board fills up
        if move < nn:
            board[move] = colour
        moves.append(move)
        colour = 3 - colour
    to_move = np.array([1 if i % 2 == 0 else 2 for i in range(length)])
    policies = []
    for i in range(length):
        p = np.zeros(a)
        k = int(rng.integers(5, 41))
        legal = np.nonzero(states[i] == 0)[0]
        pick = rng.choice(legal, size=min(k, len(legal)), replace=False) if len(legal) else np.array([], int)
        p[pick] = rng.random(len(pick))
        p[moves[i]] += 1.0
        policies.append(np.round(p / p.sum(), 6))
    q = np.tanh(rng.normal(0, 0.5, length))
    s = rng.normal(0, 10, length)
    q_terms, s_terms = term_averages(q, to_move, n), term_averages(s, to_move, n)
    result = int(rng.choice([-1, 1]))  # black's
    final = abs(rng.normal(0, 15)) * result
    owner = rng.choice([1, 2, 0], size=nn, p=[0.45, 0.45, 0.1])  # black, white, neither
    out = []
    for i in range(length):
        me, other = to_move[i], 3 - to_move[i]
        planes = np.zeros((37, nn), np.uint8)
        for h in range(HISTORY):
            j = i - h
            if j < 0:
                break
            planes[3 * h] = states[j] == me
            planes[3 * h + 1] = states[j] == other
            if j >= 1 and moves[j - 1] < nn:
                planes[3 * h + 2, moves[j - 1]] = 1
        planes[29 + rng.integers(0, 4), rng.integers(0, nn, 8)] = 1  # a few liberty-plane cells
        aux = policies[i + 1] if i + 1 < length else np.eye(a)[nn]
        sign = 1 if me == 1 else -1
        own = np.where(owner == me, 0, np.where(owner == other, 1, 2))
        lines = [b"2", b"0", str(n).encode(), f"{komi:g}".encode(), b"0", b"0"]
        lines += hex_lines(planes)
        lines += [b"1" if me == 1 else b"0", numbers(policies[i]), numbers(aux), OWN_CHARS[own].tobytes(),
                  str(result * sign).encode(),
                  f"{q[i]:g} {q_terms[i, 0]:g} {q_terms[i, 1]:g} {q_terms[i, 2]:g}".encode(),
                  f"{final * sign:g}".encode(),
                  f"{s[i]:g} {s_terms[i, 0]:g} {s_terms[i, 1]:g} {s_terms[i, 2]:g}".encode(),
                  f"{abs(rng.normal(0, 0.1)):g} {abs(rng.normal(0, 5)):g}".encode(),
                  f"{abs(rng.normal(0, 0.3)):g}".encode()]
        out.append(b"\n".join(lines) + b"\n")
    return out


def generate(out_dir: Path, records: int, board: int, per_file: int, game_length: int, seed: int,
             level: int) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    written = files = size = 0
    f = None
    in_file = 0
    try:
        while written < records:
            for rec in game_records(rng, board, min(game_length, records - written)):
                if f is None or in_file >= per_file:
                    if f is not None:
                        f.close()
                        size += path.stat().st_size
                    path = out_dir / f"data-{files:06d}.txt.gz"
                    f = gzip.open(path, "wb", compresslevel=level)
                    files += 1
                    in_file = 0
                f.write(rec)
                in_file += 1
                written += 1
    finally:
        if f is not None:
            f.close()
            size += path.stat().st_size
    return {"records": written, "files": files, "bytes": size, "board": board,
            "seconds": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write synthetic Sayuri training data (record version 2).")
    p.add_argument("out", type=Path, help="folder for the data-*.txt.gz files")
    p.add_argument("--records", type=int, default=10_000)
    p.add_argument("--board", type=int, default=19)
    p.add_argument("--per-file", type=int, default=20_000, help="records per file")
    p.add_argument("--game-length", type=int, default=200, help="records per game")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--level", type=int, default=1, help="gzip level")
    args = p.parse_args(argv)
    for name in ("records", "per_file", "game_length"):
        if getattr(args, name) < 1:
            print(f"gen_sayuri_data: --{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if not 2 <= args.board <= 25:
        print("gen_sayuri_data: --board must be 2..25", file=sys.stderr)
        return 2
    figures = generate(args.out, args.records, args.board, args.per_file, args.game_length, args.seed,
                       args.level)
    print(f"wrote {figures['records']} records in {figures['files']} files ({figures['bytes'] / 1e6:.1f} MB) "
          f"in {figures['seconds']} s")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
