"""Sayuri's rules on the engine path, plane by plane against the importer.

For territory games and handicap games the ``sayuri-v3`` encoder must write
what Sayuri writes. The expected planes are built here the way Sayuri
builds them, without the code under test: Sayuri's 37 stored planes as a
version-2 training record (the area planes left empty under territory
scoring; a handicap game's history taken from the same game with the last
handicap stone played as a move, which is how Sayuri places it), its komi
line (``GetKomiWithPenalty``: the moves each side played counted from the
move list, or the handicap stones under area scoring) and its rule line;
the importer (``sayuri/data.py``) reads that record back, and its 43
planes must equal the encoder's bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

from helpers_sayuri_ref import encode_reference
from sayuri_async.go import board as B
from sayuri_async.go.game import Game, Rules
from sayuri_async.sayuri.data import BINARY_PLANES, parse_record, sample_planes
from sayuri_async.encoders import get_encoder
from sayuri_async.encoders.sayuri_v3 import P_AREA, P_LIBS, P_RULE, PLANES, encoded_komi

ENCODER = get_encoder("sayuri-v3")


def hex_plane(bits: np.ndarray) -> str:
    nn = len(bits)
    s = "".join("%x" % (bits[i] | bits[i + 1] << 1 | bits[i + 2] << 2 | bits[i + 3] << 3)
                for i in range(0, nn - 3, 4))
    return s + (str(int(bits[-1])) if nn % 4 else "")


def sayuri_record(n: int, planes37: np.ndarray, black: bool, komi: float, rule: int) -> list[bytes]:
    """A version-2 record as Sayuri writes it, with fixed targets (policy on
    pass, zero values and ownership): the test compares input planes only."""
    a = n * n + 1
    lines = ["2", "0", str(n), f"{komi:g}", str(rule), "0"]
    lines += [hex_plane(p.reshape(-1)) for p in planes37]
    lines += ["1" if black else "0", " ".join(["0"] * (a - 1) + ["1"]), " ".join(["0"] * (a - 1) + ["1"]),
              "0" * (n * n), "0", "0 0 0 0", "0", "0 0 0 0", "0 0", "0"]
    assert len(lines) == 53
    return [line.encode() + b"\n" for line in lines]


def imported(n: int, planes37: np.ndarray, black: bool, komi: float, rule: int) -> np.ndarray:
    """The importer's 43 planes (unpacked) of that record."""
    packed = sample_planes(parse_record(sayuri_record(n, planes37, black, komi, rule)))
    return np.unpackbits(packed, axis=1)[:, :n * n].reshape(PLANES, n, n)


def random_moves(game: Game, count: int, rng: np.random.Generator) -> None:
    for _ in range(count):
        legal = np.flatnonzero(game.legal_actions())
        if rng.random() < 0.05:
            game.play(game.pass_action)
        else:
            game.play(int(rng.choice(legal[:-1] if len(legal) > 1 else legal)))


def sayuri_komi(game: Game, komi: float) -> float:
    """GetKomiWithPenalty, from the move list: territory adds the stones
    black played (handicap included) minus those white played; area adds
    the handicap stones."""
    if game.rules.scoring == "territory":
        played = {B.BLACK: len(game.handicap), B.WHITE: 0}
        for color, action in game.moves:
            if action != game.pass_action:
                played[color] += 1
        return komi + played[B.BLACK] - played[B.WHITE]
    return komi + len(game.handicap)


def sayuri_history_game(game: Game) -> Game:
    """The same game as Sayuri holds it: the handicap stones but the last
    set up, then the last one played by black as a move, then the moves."""
    g = Game(game.size, game.komi, game.rules)
    n = game.size
    for a in game.handicap[:-1]:
        B.place_stone(g.rec, B.action_to_point(n, a), B.BLACK)
    if game.handicap:
        g.play(game.handicap[-1], B.BLACK)
    for color, action in game.moves:
        g.play(action, color)
    return g


@pytest.mark.parametrize("scoring,handicap,n", [("territory", 0, 9), ("territory", 0, 19), ("area", 2, 9),
                                                ("area", 4, 19), ("territory", 3, 9), ("area", 9, 19)])
def test_planes_equal_the_import_of_sayuri_records(scoring, handicap, n):
    rng = np.random.default_rng(hash((scoring, handicap, n)) % 2**32)
    komi = 6.5
    game = Game(n, komi, Rules(scoring=scoring))
    if handicap:
        game.set_fixed_handicap(handicap)
    checked = 0
    for _ in range(12):
        ours = ENCODER(game.arr)
        sayuri_view = sayuri_history_game(game)
        expect = np.empty((PLANES, n, n), np.uint8)
        encode_reference(sayuri_view.arr[0], expect)  # history as Sayuri holds it
        area = np.empty((PLANES, n, n), np.uint8)
        encode_reference(game.arr[0], area)  # the board features of the position itself
        expect[P_AREA:BINARY_PLANES] = area[P_AREA:BINARY_PLANES]
        territory = scoring == "territory"
        if territory:
            expect[P_AREA:P_LIBS] = 0  # Sayuri leaves the area planes empty under territory scoring
        want = imported(n, expect[:BINARY_PLANES], game.to_move == B.BLACK, sayuri_komi(game, komi), int(territory))
        for c in range(PLANES):
            np.testing.assert_array_equal(ours[c], want[c], err_msg=f"plane {c} after {len(game.moves)} moves")
        assert encoded_komi(game.rec) == sayuri_komi(game, komi)
        assert ours[P_RULE].all() == territory and ours[P_RULE].any() == territory
        checked += 1
        random_moves(game, int(rng.integers(1, 6)), rng)
    assert checked == 12


def test_handicap_history_marks_the_last_stone_and_the_step_before():
    game = Game(9, 0.5)
    game.place_handicap([20, 60, 24])  # C3, G7, G3: the last one is "played"
    x = ENCODER(game.arr)  # white to move: black stones are the opponent's
    assert x[2].sum() == 1 and x[2, 2, 6] == 1  # step 0's move: G3
    assert x[3 + 1].sum() == 2 and x[3 + 1, 2, 6] == 0  # step 1: the start without G3
    assert not x[6:24].any()
    game.play(40)
    x = ENCODER(game.arr)  # black to move: step 1 is the start, step 2 the start without G3
    assert x[3 + 2, 2, 6] == 1 and x[3 + 0].sum() == 3 and x[6 + 0].sum() == 2 and x[6 + 0, 2, 6] == 0


def test_rules_follow_set_rules_and_undo():
    game = Game(9, 7.5)
    random_moves(game, 10, np.random.default_rng(1))
    assert not ENCODER(game.arr)[P_RULE].any()
    game.set_rules(Rules(scoring="territory"))
    assert ENCODER(game.arr)[P_RULE].all()
    game.undo()
    assert ENCODER(game.arr)[P_RULE].all() and int(game.rec["scoring"]) == 1
