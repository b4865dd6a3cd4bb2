"""The end of a game as the engine judges it: which stones are dead, which
live in seki, and the score with the dead stones removed (``final_score``,
``final_status_list``).

Vocabulary
----------
string      stones of one colour connected along the lines (the board
            record's own strings: ``parent`` heads).
safe area   a colour's Benson area (``encoders/benson.pass_alive_area``): its
            pass-alive strings, their vital regions, and the regions where
            the other colour cannot make two eyes. Exact where it speaks: a
            string in its own colour's safe area is alive, a string in the
            other colour's safe area is dead, whatever the network says.
surroundings  a string's points and the empty regions it touches (its
            liberties' regions): what a dead string stands in.
ownership   the network's ownership at the position (one evaluation,
            ``Engine.root_eval``), +1 black, -1 white. A string no safe area
            decides is dead when the other colour owns its surroundings on
            average by more than DEAD_OWNERSHIP. The surroundings, not the
            stones alone: a small network may hesitate on a lone stone (the
            shipped 9x9 one gives a white stone inside black's 36-point
            area -0.5, white's) while it reads the area around it plainly
            (+0.6 on average, black's). The random network's ownership is 0
            everywhere, so with it only the safe areas remove stones.
seki        an alive string whose liberties all lie in small neutral
            regions (empty points, once the dead stones are off, that touch
            both colours; at most SEKI_REGION_POINTS of them each): it has
            no eye or territory and shares its few liberties, so it lives
            only because neither side can approach. Stones on an open board
            share one large region and are not in seki; a string with only
            single dame points beside it, its group's eyes being next to
            another string, reads as seki.
judgement   ``StoneStatus``: per action, the colour, dead and seki; the
            score is ``scoring.score_with_dead`` of its dead stones, so
            ``final_score`` and ``final_status_list`` always agree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sayuri_async.go.board import BLACK, EMPTY, WHITE
from sayuri_async.go.scoring import area_map, score_with_dead, without_stones
from sayuri_async.encoders.benson import pass_alive_area

SEKI_REGION_POINTS = 4  # the largest shared region a string in seki may have its liberties in
DEAD_OWNERSHIP = 0.3  # a string is dead when the other colour owns its surroundings by more than this on average


@dataclass
class StoneStatus:
    colour: np.ndarray  # [N*N] int8: EMPTY, BLACK, WHITE
    dead: np.ndarray  # [N*N] bool
    seki: np.ndarray  # [N*N] bool

    def points(self, status: str) -> np.ndarray:
        """The actions of the stones that are ``alive`` (outside seki),
        ``dead`` or in ``seki``: each stone in exactly one list."""
        if status == "dead":
            return np.flatnonzero(self.dead)
        if status == "seki":
            return np.flatnonzero(self.seki)
        return np.flatnonzero((self.colour != EMPTY) & ~self.dead & ~self.seki)


def board_colours(rec) -> np.ndarray:
    """``[N*N]`` colours of the on-board points, row 0 = GTP row 1."""
    n = int(rec["n"])
    w = n + 2
    return rec["color"][: w * w].reshape(w, w)[1:-1, 1:-1].reshape(-1).copy()


def strings(rec) -> list[np.ndarray]:
    """The actions of each string on the board."""
    n = int(rec["n"])
    w = n + 2
    acts = np.arange(n * n)
    points = (acts // n + 1) * w + acts % n + 1
    occupied = rec["color"][points] != EMPTY
    if not occupied.any():
        return []
    heads = rec["parent"][points[occupied]]
    order = np.argsort(heads, kind="stable")
    cuts = np.flatnonzero(np.diff(heads[order])) + 1
    return np.split(acts[occupied][order], cuts)


def safe_areas(rec) -> dict[int, np.ndarray]:
    """Each colour's safe area, ``[N*N]`` bool."""
    n = int(rec["n"])
    out = {}
    for c in (BLACK, WHITE):
        area = np.zeros(n * n, np.uint8)
        pass_alive_area(rec, c, area)
        out[c] = area.astype(bool)
    return out


def empty_regions(colour: np.ndarray, n: int) -> np.ndarray:
    """``[N*N]`` int32: 1, 2, ... on the points of each empty region (the
    connected empty points), 0 on stones."""
    label = np.zeros(n * n, np.int32)
    count = 0
    for start in np.flatnonzero(colour == EMPTY):
        if label[start]:
            continue
        count += 1
        label[start] = count
        todo = [int(start)]
        while todo:
            a = todo.pop()
            for b in neighbours(a, n):
                if colour[b] == EMPTY and not label[b]:
                    label[b] = count
                    todo.append(b)
    return label


def neighbours(a: int, n: int) -> list[int]:
    x, y = a % n, a // n
    return [b for b, ok in ((a - 1, x > 0), (a + 1, x < n - 1), (a - n, y > 0), (a + n, y < n - 1)) if ok]


def surroundings(string: np.ndarray, n: int, colour: np.ndarray, regions: np.ndarray) -> np.ndarray:
    """The string's points and the empty regions its liberties are in."""
    touched = np.unique(regions[liberties(string, n, colour)])
    return np.concatenate([string, np.flatnonzero(np.isin(regions, touched))])


def dead_stones(rec, ownership: np.ndarray | None) -> np.ndarray:
    """``[N*N]`` bool: the stones judged dead (module docstring: the safe
    areas first, then the network's ``ownership``, +1 black, over each
    string's surroundings)."""
    n = int(rec["n"])
    colour = board_colours(rec)
    safe = safe_areas(rec)
    regions = empty_regions(colour, n)
    dead = np.zeros(colour.shape[0], bool)
    for s in strings(rec):
        c = int(colour[s[0]])
        if safe[c][s].any():
            continue
        if safe[3 - c][s].any():
            dead[s] = True
        elif ownership is not None:
            around = ownership[surroundings(s, n, colour, regions)]
            mine = around if c == BLACK else -around
            dead[s] = float(mine.mean()) < -DEAD_OWNERSHIP
    return dead


def seki_stones(rec, dead: np.ndarray) -> np.ndarray:
    """``[N*N]`` bool: the alive stones in seki (module docstring)."""
    n = int(rec["n"])
    clean = without_stones(rec, dead)[0]
    owner = np.empty(n * n, np.int8)
    area_map(clean, owner)
    colour = board_colours(clean)
    regions = empty_regions(colour, n)
    sizes = np.bincount(regions, minlength=1)
    seki = np.zeros(n * n, bool)
    for s in strings(clean):
        libs = liberties(s, n, colour)
        shared = (owner[libs] == EMPTY) & (sizes[regions[libs]] <= SEKI_REGION_POINTS)
        seki[s] = libs.size > 0 and bool(shared.all())
    return seki


def liberties(string: np.ndarray, n: int, colour: np.ndarray) -> np.ndarray:
    """The empty points next to ``string`` (actions)."""
    x, y = string % n, string // n
    near = np.concatenate([string[x > 0] - 1, string[x < n - 1] + 1, string[y > 0] - n, string[y < n - 1] + n])
    near = np.unique(near)
    return near[colour[near] == EMPTY]


def judge(rec, ownership: np.ndarray | None) -> StoneStatus:
    """The stones' status at ``rec`` (``ownership``: the network's, +1
    black; None: the safe areas alone)."""
    dead = dead_stones(rec, ownership)
    return StoneStatus(board_colours(rec), dead, seki_stones(rec, dead))


def final_score(rec, status: StoneStatus, komi: float, territory: bool) -> float:
    """Black minus white minus komi with ``status``'s dead stones removed."""
    return score_with_dead(rec, status.dead, komi, territory)
