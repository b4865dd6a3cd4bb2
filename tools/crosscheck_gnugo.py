#!/usr/bin/env python3
"""Cross-check rating games' results with GNU Go's own count of the final position.

For every SGF file given (or found in the folders given), GNU Go (``--mode
gtp --chinese-rules``) loads the game (``loadsgf``) and answers
``final_score``, its own judgement of the final position, dead stones
included; the tool compares that with the game's recorded result (``RE``,
our referee's count, docs/rating.md).

Vocabulary
----------
same_winner   games where GNU Go names the recorded winner.
same_result   games where it gives the recorded result exactly (winner and
              margin).
differ        the files where the winners differ, for a look.

The last line is a JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sayuri_async.rating.gtpclient import GtpProcess  # noqa: E402

GNUGO = os.environ.get("GNUGO") or shutil.which("gnugo") or "/usr/games/gnugo"


def recorded_result(path: Path) -> str:
    from sgfmill import sgf

    return sgf.Sgf_game.from_bytes(path.read_bytes()).get_root().get("RE")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="SGF files or folders of them")
    ap.add_argument("--gnugo", default=GNUGO)
    a = ap.parse_args(argv)
    if not os.access(a.gnugo, os.X_OK):
        print(f"crosscheck_gnugo: GNU Go not found at {a.gnugo!r}", file=sys.stderr)
        return 2
    files = sorted(f for p in map(Path, a.paths) for f in ([p] if p.is_file() else p.glob("*.sgf")))
    if not files:
        print(f"crosscheck_gnugo: no SGF files in {' '.join(a.paths)}", file=sys.stderr)
        return 2
    gnugo = GtpProcess([a.gnugo, "--mode", "gtp", "--chinese-rules"], name="gnugo")
    same_winner = same_result = 0
    differ = []
    try:
        for f in files:
            ours = recorded_result(f)
            gnugo.send(f"loadsgf {f.resolve()}", timeout=60)
            theirs = gnugo.send("final_score", timeout=120)
            same_winner += theirs[:1] == ours[:1]
            same_result += theirs == ours
            if theirs[:1] != ours[:1]:
                differ.append(f"{f.name}: {ours} (ours) vs {theirs} (GNU Go)")
    finally:
        gnugo.close()
    for line in differ:
        print(line)
    print(json.dumps({"games": len(files), "same_winner": same_winner, "same_result": same_result,
                      "differ": differ}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
