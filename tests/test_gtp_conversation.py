"""A GTP conversation with the real program (``python -m gtp``) as a
subprocess: every command, its errors, the ``=id`` form, and the analysis
streams parsed with a parser written here from the format description in
DESIGN.md / docs/gtp.md (not the producer's code).

Expected positions, scores and handicap points are worked out by hand in the
comments."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sgfmill import sgf

from gtp.match import GtpFailure, GtpProcess

from helpers_gtp import answers_on_stderr, start_gtp, stderr_lines

pytestmark = pytest.mark.slow  # engine subprocesses (``eng``, conftest.py)
GTP_ARGS = ("--playouts", "16", "--seed", "7")
REQUIRED = """protocol_version name version known_command list_commands quit boardsize clear_board komi play
genmove undo showboard final_score final_status_list fixed_handicap place_free_handicap set_free_handicap
loadsgf printsgf time_settings time_left kgs-time_settings is_legal list_stones lz-analyze kata-analyze analyze
lz-genmove_analyze kata-genmove_analyze genmove_analyze""".split()
VERTEX = re.compile(r"^(pass|[A-HJ-Z](?:[1-9]|1[0-9]|2[0-5]))$", re.IGNORECASE)



def fails(p: GtpProcess, cmd: str) -> str:
    with pytest.raises(GtpFailure) as e:
        p.send(cmd)
    return str(e.value)


def stones(p: GtpProcess, color: str) -> set[str]:
    return set(p.send(f"list_stones {color}").split())


# ---- administrative ---------------------------------------------------------------


def test_identity_and_command_list(eng):
    assert eng.send("protocol_version") == "2"
    assert eng.send("name") == "sayuri-async"
    assert re.fullmatch(r"\d+\.\d+\.\d+", eng.send("version"))
    listed = eng.send("list_commands").split("\n")
    assert set(REQUIRED) <= set(listed)
    assert eng.send("known_command genmove") == "true"
    assert eng.send("known_command frobnicate") == "false"
    assert "unknown command" in fails(eng, "frobnicate")
    fails(eng, "known_command")
    lines = stderr_lines(eng)  # the start lines: the program and its network
    assert lines and lines[0].startswith("sayuri-async:"), lines[:3]
    assert any("random network" in ln for ln in lines)


def test_ids_on_success_and_failure_and_ignored_lines(eng):
    eng.send("boardsize 9")
    eng.write_line("12 genmove b")
    ok, rid, text = eng.read_response(30)
    assert ok and rid == 12 and VERTEX.match(text)
    eng.write_line("13 frobnicate")
    assert eng.read_response(10)[:2] == (False, 13)
    eng.write_line("14")  # an id without a command
    assert eng.read_response(10)[:2] == (False, 14)
    # empty lines and comments get no answer; tabs are spaces
    eng.write_line("")
    eng.write_line("   # just a comment")
    eng.write_line("15\tname # trailing comment")
    assert eng.read_response(10) == (True, 15, "sayuri-async")
    eng.write_line("name")
    assert eng.read_response(10) == (True, None, "sayuri-async")


# ---- setup -----------------------------------------------------------------------


def test_boardsize_clear_board_komi(eng):
    for bad in ("boardsize 1", "boardsize 26", "boardsize nine", "boardsize 9.5", "boardsize", "boardsize 9 9"):
        fails(eng, bad)
    eng.send("boardsize 9")
    eng.send("play b E5")
    eng.send("boardsize 9")  # a boardsize clears the board
    assert stones(eng, "black") == set()
    eng.send("play b E5")
    eng.send("clear_board")
    assert stones(eng, "black") == set()
    for bad in ("komi abc", "komi nan", "komi inf", "komi", "komi 1 2"):
        fails(eng, bad)
    eng.send("komi 0.5")
    # empty 9x9 board, komi 0.5: nobody owns anything, so W+0.5
    assert eng.send("final_score") == "W+0.5"
    eng.send("komi 7.5")


def test_play_errors_ko_suicide_and_undo(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    for bad in ("play b Z9", "play b J10", "play b I5", "play b 44", "play x D4", "play b", "play b D4 E5"):
        assert "syntax error" in fails(eng, bad) or "invalid" in fails(eng, bad)
    # A ko, drawn with X black and O white (rows 5..3, columns B..E):
    #   5  . X O .
    #   4  X O . O
    #   3  . X O .
    for mv in ("b C5", "w D5", "b B4", "w C4", "b C3", "w D3", "w E4"):
        eng.send(f"play {mv}")
    eng.send("play b D4")  # captures C4
    assert "C4" not in stones(eng, "white")
    assert eng.send("is_legal w C4") == "0"
    assert "ko" in fails(eng, "play w C4")
    assert "occupied" in fails(eng, "play w D4")
    assert eng.send("is_legal b E5") == "1"
    # suicide: black in the corner A1 with white on A2 and B1
    eng.send("play w A2")
    eng.send("play w B1")
    assert eng.send("is_legal b A1") == "0"
    assert "suicide" in fails(eng, "play b A1")
    # undo takes back B1; then A1 is legal for black
    eng.send("undo")
    assert eng.send("is_legal b A1") == "1"
    eng.send("clear_board")
    assert "cannot undo" in fails(eng, "undo")
    for bad in ("is_legal b", "is_legal q D4", "is_legal b Q99"):
        fails(eng, bad)


def test_genmove_plays_a_legal_move_and_pass_is_accepted(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    eng.send("play B pass")
    v = eng.send("genmove w")
    assert VERTEX.match(v)
    if v.lower() != "pass":
        assert stones(eng, "white") == {v.upper()}
    v2 = eng.send("genmove white")  # the same colour twice is allowed
    assert VERTEX.match(v2)
    fails(eng, "genmove")
    fails(eng, "genmove purple")


def test_showboard_and_listing(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    eng.send("play b D4")
    eng.send("play w E5")
    board = eng.send("showboard")
    rows = {ln.split()[0]: ln.split()[1:10] for ln in board.split("\n") if ln.split() and ln.split()[0].isdigit()}
    # column D is the 4th, E the 5th
    assert rows["4"][3] == "X" and rows["5"][4] == "O"
    assert stones(eng, "black") == {"D4"} and stones(eng, "white") == {"E5"}
    fails(eng, "list_stones")
    fails(eng, "list_stones green")
    assert set(eng.send("final_status_list alive").split()) == {"D4", "E5"}
    assert eng.send("final_status_list dead") == ""
    fails(eng, "final_status_list sleepy")


def test_final_score_counts_area(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    eng.send("komi 7.5")
    eng.send("play b E5")
    # one black stone owns the whole board: 81 - 7.5
    assert eng.send("final_score") == "B+73.5"
    eng.send("play w E6")
    # both colours touch the one empty region: 1 - 1 - 7.5
    assert eng.send("final_score") == "W+7.5"


def test_handicap_commands(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    # GTP's fixed placement on 9x9 with 4 stones: the 3-3 points
    assert set(eng.send("fixed_handicap 4").split()) == {"C3", "G3", "C7", "G7"}
    assert stones(eng, "black") == {"C3", "G3", "C7", "G7"}
    assert "not empty" in fails(eng, "fixed_handicap 2")
    eng.send("boardsize 19")
    assert set(eng.send("fixed_handicap 9").split()) == {"D4", "K4", "Q4", "D10", "K10", "Q10", "D16", "K16", "Q16"}
    eng.send("boardsize 9")
    for bad in ("fixed_handicap 10", "fixed_handicap 1", "fixed_handicap x", "fixed_handicap"):
        fails(eng, bad)
    pts = eng.send("place_free_handicap 3").split()
    assert len(set(pts)) == 3 and stones(eng, "black") == set(pts)
    eng.send("clear_board")
    for bad in ("place_free_handicap 1", "place_free_handicap 81", "place_free_handicap z"):
        fails(eng, bad)
    for bad in ("set_free_handicap C3", "set_free_handicap C3 C3", "set_free_handicap C3 pass", "set_free_handicap C3 Z3"):
        fails(eng, bad)
    eng.send("set_free_handicap C3 G7")
    assert stones(eng, "black") == {"C3", "G7"}
    assert VERTEX.match(eng.send("genmove w"))  # white moves after handicap
    eng.send("clear_board")


def test_loadsgf_and_printsgf(eng):
    d: Path = eng.dir  # type: ignore[attr-defined]
    f = d / "game.sgf"
    # moves: B D4 (dd? no: sgf columns a.., rows from the top): B[cg] = C3 on 9x9, W[gc] = G7, B[ee] = E5
    f.write_text("(;FF[4]GM[1]SZ[9]KM[6.5];B[cg];W[gc];B[ee])")
    eng.send(f"loadsgf {f}")
    assert stones(eng, "black") == {"C3", "E5"} and stones(eng, "white") == {"G7"}
    # komi from the file: empty-ish board scores... check via printsgf instead
    text = eng.send("printsgf")
    g = sgf.Sgf_game.from_string(text)
    assert g.get_size() == 9 and g.get_komi() == 6.5
    moves = [n.get_move() for n in g.get_main_sequence()[1:]]
    assert moves == [("b", (2, 2)), ("w", (6, 6)), ("b", (4, 4))]
    eng.send(f"loadsgf {f} 2")  # the position before move 2
    assert stones(eng, "black") == {"C3"} and stones(eng, "white") == set()
    out = d / "out.sgf"
    eng.send(f"printsgf {out}")
    assert sgf.Sgf_game.from_bytes(out.read_bytes()).get_size() == 9
    assert "cannot load" in fails(eng, f"loadsgf {d / 'missing.sgf'}")
    bad = d / "bad.sgf"
    bad.write_text("(;FF[4]GM[1]SZ[9];B[cg];W[cg])")  # W on an occupied point
    assert "cannot load" in fails(eng, f"loadsgf {bad}")


def test_loadsgf_takes_the_board_sizes_play_takes(eng):
    """loadsgf, boardsize and printsgf agree on sizes: 5x5 and 25x25 records
    load (the importer's 7..19 does not apply), 26x26 is refused."""
    d: Path = eng.dir  # type: ignore[attr-defined]
    for n, move in ((5, "cc"), (25, "yy")):
        f = d / f"size{n}.sgf"
        f.write_text(f"(;FF[4]GM[1]SZ[{n}]KM[7.5];B[{move}])")
        eng.send(f"loadsgf {f}")
        assert sgf.Sgf_game.from_string(eng.send("printsgf")).get_size() == n
        assert len(stones(eng, "black")) == 1
    big = d / "size26.sgf"
    big.write_text("(;FF[4]GM[1]SZ[26];B[aa])")
    assert "outside 2..25" in fails(eng, f"loadsgf {big}")
    eng.send("boardsize 9")
    eng.send("clear_board")
    fails(eng, f"loadsgf {f} zero")
    fails(eng, "loadsgf")
    eng.send("komi 7.5")


def test_time_commands(eng):
    eng.send("time_settings 10 0 0")
    eng.send("time_settings 0 2 1")
    for bad in ("time_settings a b c", "time_settings 10 0", "time_settings -1 0 0", "time_settings 1 1 x"):
        fails(eng, bad)
    eng.send("time_left b 5 0")
    eng.send("time_left white 30 5")
    for bad in ("time_left x 5 0", "time_left b five 0", "time_left b 5", "time_left b -5 0"):
        fails(eng, bad)
    for good in ("none", "absolute 60", "byoyomi 10 5 3", "canadian 10 30 5"):
        eng.send(f"kgs-time_settings {good}")
    for bad in ("", "absolute", "canadian 10 0 5", "byoyomi 10 5", "fischer 10 5", "absolute ten"):
        fails(eng, f"kgs-time_settings {bad}")
    eng.send("kgs-time_settings none")


# ---- analysis ---------------------------------------------------------------------------


def parse_info_line(line: str) -> tuple[list[dict[str, object]], dict[str, object]]:
    """Blocks ``info k v k v ... pv V V ...`` joined on one line; kata lines may
    end with ``rootInfo k v ...`` and ``ownership f f ...``. Returns (blocks,
    extras). Written from the format description."""
    tokens = line.split()
    blocks: list[dict[str, object]] = []
    extras: dict[str, object] = {}
    i = 0
    assert tokens and tokens[0] == "info", line[:80]
    while i < len(tokens):
        t = tokens[i]
        if t == "info":
            block: dict[str, object] = {"_keys": []}
            i += 1
            while tokens[i] != "pv":
                block[tokens[i]] = tokens[i + 1]
                block["_keys"].append(tokens[i])  # type: ignore[union-attr]
                i += 2
            i += 1
            pv = []
            while i < len(tokens) and tokens[i] not in ("info", "rootInfo", "ownership"):
                pv.append(tokens[i])
                i += 1
            block["pv"] = pv
            blocks.append(block)
        elif t == "rootInfo":
            i += 1
            root = {}
            while i < len(tokens) and tokens[i] not in ("ownership", "info"):
                root[tokens[i]] = tokens[i + 1]
                i += 2
            extras["rootInfo"] = root
        elif t == "ownership":
            extras["ownership"] = [float(x) for x in tokens[i + 1:]]
            break
        else:
            raise AssertionError(f"unexpected token {t!r}")
    return blocks, extras


def check_blocks(blocks, integer: bool, n: int = 9) -> None:
    assert blocks
    last_visits = None
    for k, b in enumerate(blocks):
        for key in ("move", "visits", "winrate", "prior", "lcb", "order"):
            assert key in b, (key, b)
        assert VERTEX.match(b["move"])
        assert b["pv"] and b["pv"][0] == b["move"] and all(VERTEX.match(v) for v in b["pv"])
        assert int(b["order"]) == k
        v = int(b["visits"])
        assert last_visits is None or v <= last_visits
        last_visits = v
        for key in ("winrate", "prior", "lcb"):
            s = b[key]
            if integer:
                assert re.fullmatch(r"\d+", s), (key, s)
                assert 0 <= int(s) <= 10000
            else:
                assert "." in s and 0.0 <= float(s) <= 1.0
        assert float(b["lcb"]) <= float(b["winrate"])


def read_stream(p: GtpProcess, want_lines: int, timeout: float = 30.0) -> tuple[str, list[str]]:
    head = p.read_line(timeout)
    lines = []
    while len(lines) < want_lines:
        lines.append(p.read_line(timeout))
    return head, lines


def finish_stream(p: GtpProcess, timeout: float = 10.0) -> list[str]:
    """After the stop signal: the rest of the stream up to its empty line."""
    rest = []
    t0 = time.monotonic()
    while True:
        line = p.read_line(timeout)
        if not line.strip():
            break
        rest.append(line)
    assert time.monotonic() - t0 < timeout
    return rest


def test_lz_analyze_streams_until_a_newline(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    eng.send("play b E5")
    eng.write_line("21 lz-analyze b 10")
    head, lines = read_stream(eng, 2)
    assert head == "=21"
    for ln in lines:
        check_blocks(parse_info_line(ln)[0], integer=True)
    eng.write_line("")
    for ln in finish_stream(eng):
        check_blocks(parse_info_line(ln)[0], integer=True)
    assert eng.send("name") == "sayuri-async"  # the engine carries on


def test_kata_analyze_with_ownership_and_root_info(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    eng.write_line("22 kata-analyze 10 ownership true rootInfo true")
    head, lines = read_stream(eng, 2)
    assert head == "=22"
    for ln in lines:
        blocks, extras = parse_info_line(ln)
        check_blocks(blocks, integer=False)
        assert all("scoreLead" in b and "scoreMean" in b for b in blocks)
        own = extras["ownership"]
        assert len(own) == 81 and all(-1.0 <= x <= 1.0 for x in own)
        assert int(extras["rootInfo"]["visits"]) >= 1
    eng.write_line("protocol_version")  # how Sabaki stops analysis
    finish_stream(eng)
    assert eng.read_response(10) == (True, None, "2")


def test_sabaki_analyze_and_minmoves(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    eng.write_line("analyze w 5 minmoves 30 maxmoves 30")
    head, lines = read_stream(eng, 1)
    assert head == "="
    blocks, _ = parse_info_line(lines[0])
    check_blocks(blocks, integer=False)
    assert len(blocks) == 30 and all("scoreLead" in b for b in blocks)
    eng.write_line("")
    finish_stream(eng)


def test_analysis_avoid_keeps_moves_out(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    eng.write_line("lz-analyze b 5 allow b E5,D4 1")
    _, lines = read_stream(eng, 2)
    for ln in lines:
        assert {b["move"] for b in parse_info_line(ln)[0]} <= {"E5", "D4"}
    eng.write_line("")
    finish_stream(eng)
    for bad in ("lz-analyze b 10 bogus 3", "lz-analyze b -1", "lz-analyze b 10 ownership true", "kata-analyze maxmoves x"):
        fails(eng, bad)


def test_genmove_analyze_variants_end_with_play(eng):
    for cmd, integer in (("lz-genmove_analyze", True), ("kata-genmove_analyze", False), ("genmove_analyze", False)):
        eng.send("boardsize 9")
        eng.send("clear_board")
        eng.write_line(f"31 {cmd} b 1")
        assert eng.read_line(30) == "=31"
        body = finish_stream(eng, timeout=30)
        assert body and body[-1].startswith("play ")
        move = body[-1].split()[1]
        assert VERTEX.match(move)
        for ln in body[:-1]:
            check_blocks(parse_info_line(ln)[0], integer=integer)
        if move.lower() != "pass":
            assert stones(eng, "black") == {move.upper()}
        # no colour: the side to move (white now), as KataGo does
        eng.write_line(f"32 {cmd} 10")
        assert eng.read_line(30) == "=32"
        reply = finish_stream(eng, timeout=30)[-1].split()[1]
        if reply.lower() != "pass":
            assert stones(eng, "white") == {reply.upper()}
        fails(eng, f"{cmd} 10 bogus")


def test_quit_ends_the_program(tmp_path):
    p = start_gtp(tmp_path, *GTP_ARGS)
    p.write_line("5 quit")
    assert p.read_response(60) == (True, 5, "")  # the first answer waits for the start (as Lizzie's below)
    assert p.proc.wait(timeout=10) == 0
    p.close()


def test_lizzie_start_sequence(tmp_path):
    """What Lizzie 0.7.4 sends at start, all at once, with the --lizzie flag."""
    p = start_gtp(tmp_path, *GTP_ARGS, "--lizzie")
    for line in ("1 name", "2 version", "3 boardsize 19", "4 komi 7.5", "5 clear_board", "6 komi 7.5",
                 "7 lz-analyze 10"):
        p.write_line(line)
    answers = [p.read_response(60) for _ in range(6)]
    assert [a[1] for a in answers] == [1, 2, 3, 4, 5, 6] and all(a[0] for a in answers)
    assert answers[0][2] == "sayuri-async"
    major, minor = answers[1][2].split(".")
    assert major.isdigit() and minor.isdigit() and int(minor) >= 15
    head, lines = read_stream(p, 2)
    assert head == "=7"
    for ln in lines:
        check_blocks(parse_info_line(ln)[0], integer=True, n=19)
    p.write_line("8 play B T19")
    finish_stream(p)
    assert p.read_response(10)[:2] == (True, 8)
    p.write_line("9 time_settings 0 2 1")
    assert p.read_response(10)[:2] == (True, 9)
    p.write_line("10 genmove W")
    ok, rid, move = p.read_response(30)
    assert ok and rid == 10 and VERTEX.match(move)
    p.write_line("11 undo")
    assert p.read_response(10)[:2] == (True, 11)
    p.proc.kill()  # Lizzie never sends quit
    p.close()
    assert not answers_on_stderr(p)


def test_the_sayuri_async_command_dispatches_gtp(tmp_path):
    exe = Path(sys.executable).with_name("sayuri-async")
    if not exe.exists():
        pytest.skip("the sayuri-async script is not installed next to this Python")
    r = subprocess.run([str(exe), "gtp", "--playouts", "8"], input=b"1 name\n2 version\nquit\n",
                       capture_output=True, timeout=120, cwd=str(tmp_path))
    assert r.returncode == 0
    assert r.stdout.decode().startswith("=1 sayuri-async\n\n=2 ")
    r = subprocess.run([str(exe), "gtp", "--config", str(tmp_path / "none.toml")], input=b"",
                       capture_output=True, timeout=120)
    assert r.returncode == 2 and b"none.toml" in r.stderr and r.stdout == b""
