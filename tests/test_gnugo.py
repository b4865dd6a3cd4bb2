"""Differential test against GNU Go (``gnugo --mode gtp --chinese-rules``).

Random games on 9x9 (to the end: random legal moves that do not fill the
mover's own eyes, two passes end the game), 13x13 and 19x19 (60-150 moves);
every other game prefers moves next to groups short of liberties, for more
captures and kos.
Each game is worked out on our side first, with the GTP commands that check
it; the whole command stream then goes to GNU Go through one pipe and the
answers are compared:

* ``is_legal`` of the chosen move, of random vertices and of the ko point
  (GNU Go checks simple ko only: where our answer is "superko" GNU Go must
  say legal, and our simple-ko check must agree);
* the whole board after each move (``list_stones black`` / ``white``);
* at the end, the stones each side captured (``captures``) and our
  Tromp-Taylor score against sgfmill's ``Board.area_score()`` minus komi on
  GNU Go's final board.

Also: ``fixed_handicap`` vertex lists for board sizes 7..19. The module is
skipped when GNU Go is missing (``$GNUGO`` names another binary).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field

import numpy as np
import pytest
from sgfmill import boards

from sayuri_async.go import board as B
from sayuri_async.go.coords import action_to_vertex, vertex_to_action
from sayuri_async.go.game import Game, handicap_actions

GNUGO = os.environ.get("GNUGO") or shutil.which("gnugo") or "/usr/games/gnugo"
if not os.access(GNUGO, os.X_OK):
    pytest.skip("GNU Go is not installed (apt-get install gnugo)", allow_module_level=True)

pytestmark = [pytest.mark.gnugo, pytest.mark.slow]

COLOR_NAME = {B.BLACK: "black", B.WHITE: "white"}


class Gtp:
    """One GNU Go process; ``batch`` sends many commands at once."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [GNUGO, "--mode", "gtp", "--chinese-rules"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def batch(self, commands: list[str]) -> list[tuple[bool, str]]:
        """(success, text) per command, in order."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        data = "".join(c + "\n" for c in commands)

        def write() -> None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

        writer = threading.Thread(target=write)  # avoids a full-pipe deadlock
        writer.start()
        answers = []
        for _ in commands:
            lines = []
            while True:
                line = self.proc.stdout.readline()
                if line == "":
                    raise RuntimeError("GNU Go closed its output")
                line = line.rstrip("\n")
                if line == "" and lines:
                    break
                if line:
                    lines.append(line)
            head = lines[0]
            answers.append((head.startswith("="), " ".join([head[1:].strip()] + lines[1:]).strip()))
        writer.join()
        return answers

    def close(self) -> None:
        try:
            self.batch(["quit"])
        except (RuntimeError, BrokenPipeError):
            pass
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def gtp():
    engine = Gtp()
    yield engine
    engine.close()


# ---------------------------------------------------------------- our side


@dataclass
class Script:
    """GTP commands for one game and what each answer must be."""

    n: int
    commands: list[str] = field(default_factory=list)
    # per command: ("ok", None) | ("legal", bool, note) | ("stones", set, note)
    expect: list[tuple] = field(default_factory=list)

    def add(self, command: str, kind: str, value=None, note: str = "") -> None:
        self.commands.append(command)
        self.expect.append((kind, value, note))


def is_own_eye(stones: np.ndarray, n: int, a: int, c: int) -> bool:
    """Empty point whose neighbours are all ``c`` and whose diagonals hold
    few enough opponent stones (at most one inside, none on the edge)."""
    x, y = a % n, a // n
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        u, v = x + dx, y + dy
        if 0 <= u < n and 0 <= v < n and stones[v, u] != c:
            return False
    bad = off = 0
    for dx, dy in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        u, v = x + dx, y + dy
        if 0 <= u < n and 0 <= v < n:
            bad += stones[v, u] == 3 - c
        else:
            off = 1
    return bad < (1 if off else 2)


def stone_sets(game: Game) -> tuple[set[str], set[str]]:
    n = game.size
    st = game.stones().reshape(-1)
    black = {action_to_vertex(int(a), n) for a in np.flatnonzero(st == B.BLACK)}
    white = {action_to_vertex(int(a), n) for a in np.flatnonzero(st == B.WHITE)}
    return black, white


def fighting_points(game: Game) -> set[int]:
    """Empty points next to a group with at most two liberties (to steer
    random play into captures and kos on the larger boards)."""
    n, w = game.size, game.size + 2
    rec = game.rec
    color = rec["color"][: w * w]
    libs = rec["libs"][rec["parent"][: w * w]]
    weak = ((color == B.BLACK) | (color == B.WHITE)) & (libs <= 2)
    out = set()
    for p in np.flatnonzero(weak):
        for q in (p - 1, p + 1, p - w, p + w):
            if color[q] == B.EMPTY:
                out.add(B.point_to_action(n, int(q)))
    return out


def random_game(
    n: int, rng: np.random.Generator, max_moves: int, avoid_eyes: bool, komi: float, fight: bool = False
) -> tuple[Game, Script]:
    game = Game(n, komi=komi)
    s = Script(n)
    s.add(f"boardsize {n}", "ok")
    s.add("clear_board", "ok")
    s.add(f"komi {komi}", "ok")
    for move_no in range(max_moves):
        if game.is_over():
            break
        c = game.to_move
        cname = COLOR_NAME[c]
        legal = list(np.flatnonzero(game.legal_actions()[:-1]))
        stones = game.stones()
        choice = n * n
        if fight and rng.random() < 0.6:
            points = fighting_points(game)
            hot = [a for a in legal if a in points]
            if hot:
                legal = hot
        if rng.random() > 0.01:
            while legal:
                a = int(legal.pop(int(rng.integers(len(legal)))))
                if not (avoid_eyes and is_own_eye(stones, n, a, c)):
                    choice = a
                    break
        probes = [choice]
        probes += [int(a) for a in rng.integers(0, n * n, size=2)]
        empty = np.flatnonzero(stones.reshape(-1) == B.EMPTY)
        if len(empty):
            probes += [int(a) for a in rng.choice(empty, size=min(2, len(empty)), replace=False)]
        ko = int(game.rec["ko"])
        if ko != B.NO_KO:
            probes.append(B.point_to_action(n, ko))
        for a in probes:
            if a == n * n:
                continue
            v = action_to_vertex(a, n)
            why = game.why_illegal(a)
            note = f"move {move_no} {cname} {v}: ours {why or 'legal'}"
            if why == "superko":
                # GNU Go knows simple ko only: legal there, and for our
                # simple-ko check too
                assert B.is_simple_legal(game.rec, B.action_to_point(n, a)), note
                s.add(f"is_legal {cname} {v}", "legal", True, note)
            else:
                s.add(f"is_legal {cname} {v}", "legal", why is None, note)
        v = action_to_vertex(choice, n)
        game.play(choice)
        s.add(f"play {cname} {v}", "ok", note=f"move {move_no} {cname} {v}")
        black, white = stone_sets(game)
        s.add("list_stones black", "stones", black, f"black stones after move {move_no} {cname} {v}")
        s.add("list_stones white", "stones", white, f"white stones after move {move_no} {cname} {v}")
    caps = game.rec["captures"]
    s.add("captures black", "int", int(caps[B.BLACK]), "stones captured by black")
    s.add("captures white", "int", int(caps[B.WHITE]), "stones captured by white")
    return game, s


def check(gtp: Gtp, game: Game, s: Script) -> tuple[set[str], set[str]]:
    """Run the script through GNU Go; returns GNU Go's final stones."""
    answers = gtp.batch(s.commands)
    final_black: set[str] = set()
    final_white: set[str] = set()
    for cmd, (kind, value, note), (ok, text) in zip(s.commands, s.expect, answers):
        assert ok, f"GNU Go refused {cmd!r} ({note}): {text}"
        if kind == "legal":
            assert text in ("0", "1"), f"{cmd}: {text}"
            assert (text == "1") == value, f"{cmd}: GNU Go says {text} ({note})\n{game}"
        elif kind == "stones":
            got = set(text.split())
            assert got == value, f"{note}: GNU Go {sorted(got ^ value)} differ\n{game}"
            if cmd.endswith("black"):
                final_black = got
            else:
                final_white = got
        elif kind == "int":
            assert int(text) == value, f"{note}: GNU Go {text}, ours {value}"
    return final_black, final_white


def sgfmill_score(n: int, black: set[str], white: set[str], komi: float) -> float:
    board = boards.Board(n)
    for vertices, colour in ((black, "b"), (white, "w")):
        for v in vertices:
            a = vertex_to_action(v, n)
            board.play(a // n, a % n, colour)
    return board.area_score() - komi


# ---------------------------------------------------------------- tests

GAMES = [(9, 90, 400, True), (13, 60, 150, False), (19, 60, 150, False)]


@pytest.mark.parametrize("n,count,max_moves,avoid_eyes", GAMES)
def test_random_games_match_gnugo(gtp: Gtp, n: int, count: int, max_moves: int, avoid_eyes: bool) -> None:
    rng = np.random.default_rng(1000 + n)
    finished = 0
    for i in range(count):
        moves = max_moves if avoid_eyes else int(rng.integers(60, max_moves + 1))
        komi = float(rng.choice([0.0, 5.5, 6.5, 7.5]))
        game, script = random_game(n, rng, moves, avoid_eyes, komi, fight=i % 2 == 1)
        black, white = check(gtp, game, script)
        finished += game.is_over()
        expected = sgfmill_score(n, black, white, komi)
        assert game.score() == pytest.approx(expected), f"game {i}: score {game.score()} vs sgfmill {expected}\n{game}"
    if avoid_eyes:
        assert finished >= count * 0.9  # the 9x9 games really end


@pytest.mark.parametrize("n", [n for n in range(7, 20) if n != 12])
def test_fixed_handicap_matches_gnugo(gtp: Gtp, n: int) -> None:
    # 12x12 is left out: GNU Go moves the stones to the 4th line from 12x12
    # on, the GTP tables (and we) only from 13x13 on.
    stones = range(2, 10)
    commands = [f"boardsize {n}"]
    for k in stones:
        commands += ["clear_board", f"fixed_handicap {k}"]
    answers = gtp.batch(commands)
    for k, (ok, text) in zip(stones, answers[2::2]):
        try:
            ours = {action_to_vertex(a, n) for a in handicap_actions(n, k)}
        except ValueError:
            assert not ok, f"{n}x{n} {k} stones: GNU Go allows {text}"
            continue
        assert ok, f"{n}x{n} {k} stones: GNU Go refuses ({text})"
        assert set(text.split()) == ours
