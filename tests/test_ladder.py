"""The ladder reader (``encoders/ladder.py``) on random positions.

The expected ladder maps of ``EXPECTED`` were written by the reader as it
stood at commit 362c6b4, when it still played on its own int16 scratch
board with its own copy of the capture and liberty code; the reader now
plays with ``go/board.py``'s rules and must give the same maps. Each entry
is the CRC-32 of one position's ``ladder_map`` (int8 bytes); the positions
are random games from a seeded generator (``positions``). The other tests
check the maps against the rules directly: what each code claims about
liberties and captures, played out on the board.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from sayuri_async.go import board as B
from sayuri_async.encoders.ladder import LADDER_ATARI, LADDER_DEATH, LADDER_ESCAPABLE, LADDER_TAKE, ladder_map

COUNT = {9: 60, 13: 40, 19: 60}
EXPECTED = {
    9: (
        "23794cda beba4b38 4edd1fb7 dcdb38ed 8b790f60 d9012a8d 2910693e 61317eda "
        "4d6257fc 177ff5cc ae9e2200 579d1309 f614cb4f d330bfd8 990b04f6 bb1bd0df "
        "515ce038 9be58bd8 82874f27 3975d5fb e9c2107d adbca1ef e4ffad5e b7339403 "
        "239df29a b8189ae7 311d20ad da74e882 9ef1516c c7bcdc96 4907eb2e 3665d9bc "
        "5b6ab1a1 df901ef0 5763daf1 59d1f056 9dab750e 94721264 bb9e17cb a733739f "
        "032ed8f9 402139fd a06dec2c 9be58bd8 a6987351 f053f2e3 9e53e9fb bb5f8f77 "
        "7074732f c6c0198c 055c6a91 87562c2c abbc7a44 53f30c33 5a7bd93e 29f0ac37 "
        "e73f6f6b a7cace66 b26045f8 cefdfe74 "
    ),
    13: (
        "373d5dd6 2e3a1d8f 352d9824 7a4c3589 afcc8f40 256e51ec dd8a3eae f7f477f7 "
        "1ef04a42 4d7844ec dbebf594 3e2590c1 a36057d5 1e2920f1 6ca741e9 47068180 "
        "43255736 3300b6d4 d181fc7c 321b571e de2acd4b 9a29fb0e 5ef11dea b948432f "
        "c1df7b7a c3e0b005 ebb60474 57ca483d ac40d55b 6b7074a2 dedbf79e aeb0d665 "
        "9f358de6 f64822a8 7538fac2 af0aa0bd ab153a27 4bad6dfe 58dcf499 eeb49372 "
    ),
    19: (
        "9d490c39 038d9592 8204e522 23faa647 7e7c0d68 55cb4d4f e218ee42 36bcf8d7 "
        "239e7d52 eb3a7cf3 74b6219b 79b8b071 097d0b48 64a4977b d67bbdcb 08905ce0 "
        "8badd8be dd3c74ff 69a7154c 89df2820 0deaf79f 5945b095 ba9caa08 c38d97f1 "
        "955bd1b5 1c0d4085 49612c17 8ce2e3c2 23208152 d60a2d89 33f9cb6c 35115582 "
        "dc259516 924a43fe 1907ffde 38677675 ea999d84 3779f175 c036da03 387fc2a3 "
        "2bf3bfeb e3cb05d5 f04db458 803054c0 724204d9 d8bd0f91 46464026 21e0344c "
        "336c6eca 1236d8ba 15beda28 7cb941ce 705d8aa4 938d6d6d 7fd67950 f06c60e9 "
        "91ae402f 69cd5ff5 7aeee8f6 ea75cf55 "
    ),
}


def positions(n: int, count: int):
    """``count`` boards (arrays of shape (1,)) from random games, each cut
    after between ``n*n/4`` and ``n*n`` uniformly random legal moves."""
    rng = np.random.default_rng(2024 + n)
    for _ in range(count):
        yield B.random_board(n, int(rng.integers(n * n // 4, n * n)), rng)


def liberties(rec, p: int) -> set[int]:
    """The liberties of the string at point ``p``, by flood fill."""
    w = int(rec["w"])
    color = rec["color"]
    seen, todo, libs = {p}, [p], set()
    while todo:
        s = todo.pop()
        for q in (s - 1, s + 1, s - w, s + w):
            if color[q] == B.EMPTY:
                libs.add(q)
            elif color[q] == color[p] and q not in seen:
                seen.add(q)
                todo.append(q)
    return libs


@pytest.mark.parametrize("n", sorted(EXPECTED))
def test_maps_match_the_reader_before_it_used_board_py(n):
    want = EXPECTED[n].split()
    assert len(want) == COUNT[n]
    out = np.empty(n * n, np.int8)
    got = []
    for arr in positions(n, COUNT[n]):
        ladder_map(arr[0], out)
        got.append(f"{zlib.crc32(out.tobytes()):08x}")
    bad = [i for i in range(len(want)) if got[i] != want[i]]
    assert not bad, f"{n}x{n}: ladder maps differ at positions {bad}"


@pytest.mark.parametrize("n", [9, 19])
def test_codes_agree_with_the_rules_and_leave_the_board_alone(n):
    """A dead string has one liberty, and the hunter playing it captures the
    string; an escapable string has two, one of them marked as an atari;
    every take or atari point is a liberty of such a string. (A point that
    is vital for two strings shows the code of the later one, so the test
    accepts either code on it.) The read-out plays on scratch copies: the
    record is unchanged."""
    out = np.empty(n * n, np.int8)
    vital_codes = (LADDER_TAKE, LADDER_ATARI)
    marked = 0
    for arr in positions(n, 25):
        rec = arr[0]
        before = arr.tobytes()
        ladder_map(rec, out)
        assert arr.tobytes() == before
        vital = set()
        for a in np.flatnonzero(out):
            p = B.action_to_point(n, int(a))
            code = out[a]
            marked += 1
            if code in (LADDER_DEATH, LADDER_ESCAPABLE):
                libs = liberties(rec, p)
                assert len(libs) == (1 if code == LADDER_DEATH else 2)
                assert any(out[B.point_to_action(n, q)] in vital_codes for q in libs)
                vital |= libs
            else:
                assert code in vital_codes and rec["color"][p] == B.EMPTY
            if code == LADDER_DEATH:
                (q,) = libs
                trial = arr.copy()
                trial[0]["to_move"] = 3 - rec["color"][p]
                if B.is_simple_legal(trial[0], q):  # else the prey's liberty is a ko the hunter may not retake
                    B.play(trial[0], q)
                    assert trial[0]["color"][p] == B.EMPTY
        for a in np.flatnonzero(np.isin(out, vital_codes)):
            assert B.action_to_point(n, int(a)) in vital
    assert marked > 0
