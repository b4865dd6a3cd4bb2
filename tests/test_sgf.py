"""SGF: loading (size, komi, handicap and set-up stones, moves, passes,
comments, result, encodings), saving (checked by parsing the text with
sgfmill directly), round trips, atomic file writes, and SgfError for
malformed or unsupported records. SGF coordinates are converted by hand:
column letter a.. = A.. (skipping I in GTP), row letter a = top row."""
from __future__ import annotations

import os

import numpy as np
import pytest
from sgfmill import sgf as sgfmill_sgf

from conftest import build_game
from test_board_props import check_groups, check_hash

from sayuri_async.go import board as B
from sayuri_async.go.coords import vertex_to_action
from sayuri_async.go.game import Game, Rules
from sayuri_async.go.sgf import (
    SgfError,
    SgfInfo,
    dump_sgf,
    load_sgf,
    load_sgf_file,
    save_sgf_file,
    set_up_position,
    write_text_atomic,
)


def va(vertex: str, n: int) -> int:
    return vertex_to_action(vertex, n)


# ---------------------------------------------------------------- loading

HANDICAP_19 = (
    "(;GM[1]FF[4]SZ[19]KM[0.5]HA[2]AB[dp][pd]PB[Black Player]PW[White Player]"
    "RE[W+12.5]DT[2024-05-01]C[game comment]"
    ";W[dd]C[white's first move];B[pp];W[];B[tt]C[both passed])"
)


def test_load_handicap_game() -> None:
    g, info = load_sgf(HANDICAP_19)
    assert g.size == 19 and g.komi == 0.5
    # dp = column D, row p (16th from the top) = row 4 -> D4; pd -> Q16
    assert set(g.handicap) == {va("D4", 19), va("Q16", 19)}
    st = g.stones()
    assert st[3, 3] == B.BLACK and st[15, 15] == B.BLACK
    assert g.moves == [
        (B.WHITE, va("D16", 19)),
        (B.BLACK, va("Q4", 19)),
        (B.WHITE, 361),
        (B.BLACK, 361),
    ]
    assert g.comments == ["white's first move", "", "", "both passed"]
    assert g.is_over()
    assert info == SgfInfo(
        black="Black Player",
        white="White Player",
        result="W+12.5",
        comment="game comment",
        date="2024-05-01",
        rules="",
        handicap=2,
    )
    assert g.rules.scoring == "area"
    d4, q16 = (B.action_to_point(19, va(v, 19)) for v in ("D4", "Q16"))
    assert g.history_hashes()[0] == B.ZOBRIST[B.BLACK, d4] ^ B.ZOBRIST[B.BLACK, q16]


def test_load_setup_with_white_stones_and_player_to_move() -> None:
    g, info = load_sgf("(;SZ[9]KM[7]AB[cc][cd]AW[dc][dd]PL[W];W[ee];B[ff])")
    st = g.stones()
    # cc = C7, cd = C6, dc = D7, dd = D6 on 9x9
    assert st[6, 2] == st[5, 2] == B.BLACK
    assert st[6, 3] == st[5, 3] == B.WHITE
    assert g.handicap == [] and info.handicap == 0
    assert g.moves == [(B.WHITE, va("E5", 9)), (B.BLACK, va("F4", 9))]
    check_groups(g)
    check_hash(g)


def test_player_to_move_without_moves() -> None:
    g, _ = load_sgf("(;SZ[9]AB[ee]PL[W])")
    assert g.to_move == B.WHITE
    g, _ = load_sgf("(;SZ[9]HA[2]AB[cc][gg])")
    assert g.to_move == B.WHITE and len(g.handicap) == 2
    g, _ = load_sgf("(;SZ[9]AB[ee])")
    assert g.to_move == B.BLACK  # set-up without HA: black starts


def test_defaults_rules_and_variations() -> None:
    g, info = load_sgf("(;SZ[13];B[aa](;W[bb];B[cc])(;W[mm]))")
    assert g.size == 13 and g.komi == 7.5
    assert [a for _, a in g.moves] == [va("A13", 13), va("B12", 13), va("C11", 13)]
    g, _ = load_sgf("(;SZ[9])", default_komi=6.5)
    assert g.komi == 6.5
    g, _ = load_sgf("(;FF[4])")
    assert g.size == 19
    g, info = load_sgf("(;SZ[9]RU[Japanese]KM[6.5])")
    assert g.rules.scoring == "territory" and info.rules == "Japanese"
    g, _ = load_sgf("(;SZ[9]RU[Chinese])")
    assert g.rules.scoring == "area"


def test_comments_on_nodes_without_moves() -> None:
    g, info = load_sgf("(;SZ[9]C[root];C[before any move];B[ee]C[one];C[after])")
    assert info.comment == "root\n\nbefore any move"
    assert g.comments == ["one\n\nafter"]


def test_consecutive_moves_of_one_colour() -> None:
    g, _ = load_sgf("(;SZ[9];B[aa];B[bb];W[cc])")
    assert [c for c, _ in g.moves] == [B.BLACK, B.BLACK, B.WHITE]


def test_captures_in_record() -> None:
    # black captures white A1 with B1 and A2
    g, _ = load_sgf("(;SZ[9];W[ai];B[bi];W[ee];B[ah])")
    assert g.stones()[0, 0] == B.EMPTY
    assert int(g.rec["captures"][B.BLACK]) == 1


def test_encodings() -> None:
    name = "李昌镐 Müller"
    g, info = load_sgf(f"(;SZ[9]PB[{name}])".encode("utf-8"))  # no CA: UTF-8 guessed
    assert info.black == name
    g, info = load_sgf("(;CA[ISO-8859-1]SZ[9]PW[Müller])".encode("latin-1"))
    assert info.white == "Müller"
    g, info = load_sgf(f"(;SZ[9]PB[{name}])")  # text
    assert info.black == name


def test_escaped_comment_text() -> None:
    g, info = load_sgf(r"(;SZ[9]C[a \] bracket];B[ee]C[back\\slash])")
    assert info.comment == "a ] bracket"
    assert g.comments == ["back\\slash"]


# ---------------------------------------------------------------- errors

TRIPLE_KO_SGF = (
    "(;SZ[9]"
    "AB[ba][ab][bc][bd][ae][ce][bf][bg][ah][bi]"
    "AW[ca][bb][db][cc][cd][de][cf][cg][bh][dh][ci]"
    ";B[cb];W[be];B[ch];W[bb];B[ce];W[bh])"
)


@pytest.mark.parametrize(
    "text,words",
    [
        ("(;SZ[9]", "syntax"),
        ("hello", "syntax"),
        ("", "syntax"),
        ("(;SZ[9:13])", "non-square"),
        ("(;SZ[5])", "7..19"),
        ("(;SZ[21])", "7..19"),
        ("(;SZ[abc])", "SZ[abc]"),
        ("(;GM[2]SZ[9])", "GM[2]"),
        ("(;SZ[9]KM[abc])", "KM[abc]"),
        ("(;SZ[9]HA[x])", "HA[x]"),
        ("(;SZ[9];B[ee];W[ee])", "occupied"),
        ("(;SZ[9]AB[ee];B[ee])", "occupied"),
        ("(;SZ[9]AB[ee]AW[ee])", "occupied"),
        ("(;SZ[9]AB[bi][ah];W[ai])", "suicide"),
        ("(;SZ[9]AB[ba][ab][bc]AW[bb][ca][cc][db];B[cb];W[bb])", ": ko"),
        (TRIPLE_KO_SGF, "superko"),
        ("(;SZ[9];B[zz])", "not a point"),
        ("(;SZ[9];B[ee];AB[aa])", "after the root"),
        ("(;SZ[9]AE[aa])", "AE"),
        ("(;SZ[9];B[ee]W[dd])", "both B and W"),
        ("(;SZ[9]AB[ai]AW[bi][ah])", "no liberties"),
        ("(;SZ[9]AB[zz])", "AB"),
    ],
)
def test_malformed_records_raise_sgf_error(text: str, words: str) -> None:
    with pytest.raises(SgfError) as err:
        load_sgf(text, source="games/x.sgf")
    msg = str(err.value)
    assert msg.startswith("games/x.sgf: "), msg
    assert words in msg, msg
    assert isinstance(err.value, ValueError)


def test_triple_ko_record_is_legal_without_the_last_move() -> None:
    g, _ = load_sgf(TRIPLE_KO_SGF.replace(";W[bh])", ")"))
    assert len(g.moves) == 5
    assert g.why_illegal(va("B2", 9)) == "superko"


def test_file_errors_name_the_file(tmp_path) -> None:
    bad = tmp_path / "broken.sgf"
    bad.write_text("(;SZ[9];B[ee];W[ee])")
    with pytest.raises(SgfError, match="broken.sgf: .*occupied"):
        load_sgf_file(bad)
    missing = tmp_path / "missing.sgf"
    with pytest.raises(SgfError, match="missing.sgf"):
        load_sgf_file(missing)
    garbage = tmp_path / "garbage.sgf"
    garbage.write_bytes(b"\x00\x01 no sgf here")
    with pytest.raises(SgfError, match="garbage.sgf: bad SGF syntax"):
        load_sgf_file(garbage)


# ---------------------------------------------------------------- set-up


def test_set_up_places_stones_without_captures() -> None:
    # the black chain A1-A2-A3 only breathes at A4; white B1-B4 and A5
    rows = ["........."] * 4 + ["O........", ".O.......", "XO.......", "XO.......", "XO......."]
    g = build_game("\n".join(rows))
    st = g.stones()
    assert st[0, 0] == st[1, 0] == st[2, 0] == B.BLACK
    assert st[0, 1] == st[1, 1] == st[2, 1] == st[3, 1] == B.WHITE
    assert st[4, 0] == B.WHITE
    rec = g.rec
    a1 = B.action_to_point(9, 0)
    assert int(rec["libs"][rec["parent"][a1]]) == 1  # A4
    check_groups(g)
    check_hash(g)
    assert g.history_hashes()[0] == rec["hash"]
    assert not g.moves


def test_set_up_errors() -> None:
    g = Game(9)
    with pytest.raises(ValueError):
        set_up_position(g, [0], [0])
    with pytest.raises(ValueError):
        set_up_position(g, [81], [])
    g.play(40)
    with pytest.raises(ValueError):
        set_up_position(g, [0], [])


# ---------------------------------------------------------------- saving


def parse(text: str) -> sgfmill_sgf.Sgf_game:
    return sgfmill_sgf.Sgf_game.from_string(text)


def test_dump_checked_with_sgfmill() -> None:
    g = Game(9, komi=6.5)
    g.set_fixed_handicap(2)  # C3 G7
    g.play_vertex("E5")  # white
    g.comments[-1] = "tengen"
    g.play_vertex("pass")
    g.play_vertex("pass")
    info = SgfInfo(black="B", white="W", comment="hello", date="2025-01-02")
    text = dump_sgf(g, info)
    sg = parse(text)
    root = sg.get_root()
    assert sg.get_size() == 9 and sg.get_komi() == 6.5 and sg.get_handicap() == 2
    ab, aw, _ = root.get_setup_stones()
    assert ab == {(2, 2), (6, 6)} and aw == set()
    assert root.get("PL") == "w"
    # game over: Tromp-Taylor, 2 black stones - 1 white stone - 6.5 - 2 (white's
    # point per handicap stone; the empty region touches both colours)
    assert root.get("RE") == "W+7.5"
    assert root.get("PB") == "B" and root.get("PW") == "W" and root.get("C") == "hello"
    assert root.get("RU") == "Chinese" and root.get("DT") == "2025-01-02"
    nodes = sg.get_main_sequence()[1:]
    assert [n.get_move() for n in nodes] == [("w", (4, 4)), ("b", None), ("w", None)]
    assert nodes[0].get("C") == "tengen"
    assert not nodes[1].has_property("C")


def test_dump_result_choice() -> None:
    g = Game(9)
    g.play_vertex("E5")
    assert "RE[" not in dump_sgf(g)  # not over, no result given
    assert parse(dump_sgf(g, result="B+R")).get_root().get("RE") == "B+R"
    info = SgfInfo(result="W+T")
    assert parse(dump_sgf(g, info)).get_root().get("RE") == "W+T"
    assert parse(dump_sgf(g, info, result="0")).get_root().get("RE") == "0"
    g.play_vertex("pass")
    g.play_vertex("pass")
    # one black stone owns the board: 81 - 7.5
    assert parse(dump_sgf(g)).get_root().get("RE") == "B+73.5"
    t = Game(9, rules=Rules(scoring="territory"))
    assert parse(dump_sgf(t)).get_root().get("RU") == "Japanese"


def random_game(n: int, seed: int, moves: int) -> Game:
    rng = np.random.default_rng(seed)
    g = Game(n, komi=float(rng.choice([0.5, 6.5, 7.5])))
    for i in range(moves):
        legal = np.flatnonzero(g.legal_actions())
        g.play(int(rng.choice(legal)))
        if rng.random() < 0.2:
            g.comments[-1] = f"comment {i} [with] brackets\\ and: colons"
    return g


@pytest.mark.parametrize("n,seed", [(9, 1), (9, 2), (13, 3), (19, 4), (7, 5)])
def test_round_trip(n: int, seed: int) -> None:
    g = random_game(n, seed, 150)
    info = SgfInfo(black="a", white="b", result="B+R", comment="c")
    g2, info2 = load_sgf(dump_sgf(g, info))
    assert g2.size == g.size and g2.komi == g.komi
    assert g2.moves == g.moves and g2.comments == g.comments
    assert np.array_equal(g2.stones(), g.stones())
    assert np.array_equal(g2.history_hashes(), g.history_hashes())
    assert info2.result == "B+R" and info2.black == "a" and info2.comment == "c"


def test_round_trip_setup_position() -> None:
    g = build_game(
        "\n".join(["........."] * 6 + ["..XO.....", ".XO......", "........."]), to_move=B.WHITE
    )
    g.play_vertex("E5")
    g2, _ = load_sgf(dump_sgf(g))
    assert np.array_equal(g2.stones(), g.stones())
    assert g2.moves == g.moves and g2.handicap == []
    assert g2.history_hashes()[0] == g.history_hashes()[0]
    empty, _ = load_sgf(dump_sgf(Game(9)))
    assert not empty.stones().any() and empty.to_move == B.BLACK


# ---------------------------------------------------------------- files


def test_save_and_load_file(tmp_path) -> None:
    g = random_game(9, 7, 60)
    path = tmp_path / "game.sgf"
    save_sgf_file(path, g, SgfInfo(black="x"), result="W+3.5")
    g2, info = load_sgf_file(path)
    assert g2.moves == g.moves and info.result == "W+3.5" and info.black == "x"
    save_sgf_file(path, Game(9))  # overwrite in place
    g3, _ = load_sgf_file(path)
    assert g3.moves == []
    assert sorted(os.listdir(tmp_path)) == ["game.sgf"]  # no temporary left


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch) -> None:
    path = tmp_path / "game.sgf"
    write_text_atomic(path, "old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_text_atomic(path, "new")
    assert path.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["game.sgf"]


def test_atomic_write_uses_same_directory(tmp_path, monkeypatch) -> None:
    seen = []
    real = os.replace

    def spy(src, dst):
        seen.append((os.path.dirname(os.path.abspath(src)), os.path.abspath(dst)))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    path = tmp_path / "sub" / "g.sgf"
    path.parent.mkdir()
    write_text_atomic(path, "x")
    assert seen == [(str(path.parent), str(path))]
    assert path.read_text() == "x"
