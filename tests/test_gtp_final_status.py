"""The end of a game as GTP reports it: dead stones come off before the
count (``final_score``), and ``final_status_list alive|dead|seki`` list the
same judgement, each stone in exactly one list.

Positions (9x9 unless said):

* EYE: black holds columns A-D as one pass-alive string with eyes at B9
  (beside a white stone at A9), A5 and A1; white holds the wall on E. The
  white stone at A9 stands in black's vital region: dead by Benson, with
  any network. Area: black 36, white 9 + 36 = 45, komi 7.5: W+16.5 (with
  A9 counted alive, B9 is neutral and A9 white's: W+19.5).
* LONE: black wall on E, white wall on F, and a lone white stone at B5 in
  black's 35 empty points: GNU Go's B+1.5. Counting B5 alive makes black's
  area neutral: W+35.5. The shipped 9x9 network sees B5 dead.
* SEKI (3x3): black A1-A3 and B2, white C1-C3, sharing B1 and B3: whoever
  plays there is captured.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from gtp.final_status import final_score, judge
from gtp.match import GtpProcess
from sayuri_async.go.coords import action_to_vertex
from sayuri_async.go.scoring import result_string

EYE = "\n".join(["O.XXO...."] + ["XXXXO...."] * 3 + [".XXXO...."] + ["XXXXO...."] * 3 + [".XXXO...."])
LONE = "\n".join(["....XO..."] * 4 + [".O..XO..."] + ["....XO..."] * 4)
SEKI = "X.O\nXXO\nX.O"
DEADLINE = 120.0
STARTUP = 600.0  # the first answer waits for the start-up (minutes on a loaded machine)


def vertices(actions: np.ndarray, n: int) -> list[str]:
    return sorted(action_to_vertex(int(a), n) for a in actions)


def lists_partition_the_stones(status, game) -> None:
    stones = np.flatnonzero(game.stones().reshape(-1))
    lists = [status.points(k) for k in ("alive", "dead", "seki")]
    assert sorted(np.concatenate(lists).tolist()) == sorted(stones.tolist())


def test_a_stone_in_a_pass_alive_eye_is_dead_whatever_the_network(diagram):
    g = diagram(EYE, komi=7.5)
    for ownership in (None, np.zeros(81), np.full(81, -1.0)):
        status = judge(g.rec, ownership)
        assert vertices(status.points("dead"), 9) == ["A9"]
        assert status.points("seki").size == 0
        lists_partition_the_stones(status, g)
        assert result_string(final_score(g.rec, status, g.komi, territory=False)) == "W+16.5"
    assert g.result() == "W+19.5"  # every stone counted alive
    # territory: black B9, A9, A5, A1 and the prisoner at A9 (5), white F-J (36)
    assert final_score(g.rec, judge(g.rec, None), g.komi, territory=True) == pytest.approx(5 - 36 - 7.5)


def test_ownership_of_the_surroundings_kills_a_lone_stone(diagram):
    g = diagram(LONE, komi=7.5)
    own = np.where(np.arange(81) % 9 <= 4, 0.6, -0.9)  # black's side A-E, white's F-J
    own[4 * 9 + 1] = -0.5  # the network hesitating on B5 itself
    status = judge(g.rec, own)
    assert vertices(status.points("dead"), 9) == ["B5"]
    assert result_string(final_score(g.rec, status, g.komi, territory=False)) == "B+1.5"
    lists_partition_the_stones(status, g)
    for unsure in (None, np.zeros(81)):  # no opinion: nothing comes off, the count is Tromp-Taylor's
        status = judge(g.rec, unsure)
        assert status.points("dead").size == 0
        assert result_string(final_score(g.rec, status, g.komi, territory=False)) == "W+35.5"


def test_shared_liberties_without_eyes_are_seki(diagram):
    g = diagram(SEKI, komi=0.0)
    status = judge(g.rec, None)
    assert vertices(status.points("seki"), 3) == ["A1", "A2", "A3", "B2", "C1", "C2", "C3"]
    assert status.points("alive").size == 0 and status.points("dead").size == 0
    assert result_string(final_score(g.rec, status, 0.0, territory=False)) == "B+1"


def play_diagram(eng: GtpProcess, text: str) -> None:
    rows = text.split("\n")
    n = len(rows)
    eng.send(f"boardsize {n}", timeout=STARTUP)
    eng.send("komi 7.5")
    for r, row in enumerate(rows):
        for x, ch in enumerate(row):
            if ch in "XO":
                eng.send(f"play {'b' if ch == 'X' else 'w'} {action_to_vertex((n - 1 - r) * n + x, n)}")


def status_lists(eng: GtpProcess) -> dict[str, list[str]]:
    return {k: sorted(eng.send(f"final_status_list {k}").split()) for k in ("alive", "dead", "seki")}


@pytest.fixture
def shipped(tmp_path):
    from sayuri_async.net.shipped import shipped_weights

    if shipped_weights(9) is None:
        pytest.skip("no shipped network in this checkout")
    p = GtpProcess([sys.executable, "-m", "gtp", "--seed", "5"], cwd=str(tmp_path))
    yield p
    p.close()


@pytest.mark.slow
def test_gtp_removes_gnugos_dead_stone_with_the_shipped_network(shipped):
    play_diagram(shipped, LONE)
    assert shipped.send("final_score", timeout=DEADLINE) == "B+1.5"
    lists = status_lists(shipped)
    assert lists["dead"] == ["B5"] and lists["seki"] == []
    assert len(lists["alive"]) == 18
    shipped.send("play b G5")  # another position, judged afresh: a black stone in white's area
    dead = status_lists(shipped)["dead"]
    assert "G5" in dead and set(dead) <= {"B5", "G5"}
    # white to move now: whether B5 can still live there is the network's call; the count follows the lists
    assert shipped.send("final_score", timeout=DEADLINE) == ("B+1.5" if "B5" in dead else "W+35.5")


@pytest.mark.slow
def test_gtp_removes_a_stone_in_an_eye_with_the_random_network(tmp_path):
    eng = GtpProcess([sys.executable, "-m", "gtp", "--weights", "random", "--seed", "5"], cwd=str(tmp_path))
    try:
        play_diagram(eng, EYE)
        assert eng.send("final_score", timeout=DEADLINE) == "W+16.5"
        lists = status_lists(eng)
        assert lists["dead"] == ["A9"] and lists["seki"] == []
        assert len(lists["alive"]) == 32 + 9  # every black stone and the wall
    finally:
        eng.close()


def test_stones_on_an_open_board_are_alive_and_an_empty_board_has_none(diagram):
    g = diagram("\n".join(["........."] * 3 + ["....O...."] + ["...X....."] + ["........."] * 4))
    status = judge(g.rec, np.zeros(81))
    assert vertices(status.points("alive"), 9) == ["D5", "E6"]
    assert status.points("dead").size == 0 and status.points("seki").size == 0
    empty = diagram("\n".join(["........."] * 9), komi=0.5)
    status = judge(empty.rec, None)
    assert all(status.points(k).size == 0 for k in ("alive", "dead", "seki"))
    assert result_string(final_score(empty.rec, status, 0.5, territory=False)) == "W+0.5"
