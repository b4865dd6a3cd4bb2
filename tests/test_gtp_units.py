"""Unit tests of the GTP frontend's pure parts: wire format, config, time
budgets, analysis numbers and lines, stderr filtering. Expected values are
worked out by hand in the comments, not taken from the code under test."""
from __future__ import annotations

import io
import tomllib
from pathlib import Path

import numpy as np
import pytest

from gtp.analysis import MoveInfo, Report, format_kata, format_lz, rank_moves, wilson_lcb
from gtp.analyze_args import AnalyzeRequest, parse_analyze_args
from gtp.commands import free_handicap_points
from gtp.config import ConfigError, GtpConfig, TimeSection, config_from_dict, load_config
from gtp.main import SafeStderr
from gtp.protocol import GtpError, failure, parse_line, success
from gtp.timecontrol import TimeControl

ROOT = Path(__file__).resolve().parents[1]


# ---- wire format ---------------------------------------------------------------


def test_parse_line_ids_comments_and_control_characters():
    c = parse_line("12 genmove b")
    assert (c.id, c.name, c.args) == (12, "genmove", ["b"])
    c = parse_line("\tPLAY\tB  T19   # a comment")
    assert (c.id, c.name, c.args) == (None, "play", ["B", "T19"])
    c = parse_line("na\x01me")  # control characters are dropped
    assert (c.id, c.name) == (None, "name")
    assert parse_line("") is None
    assert parse_line("   # only a comment") is None
    c = parse_line("7")
    assert (c.id, c.name) == (7, "")


def test_responses_end_with_one_empty_line_and_carry_the_id():
    assert success(None, "D4") == "= D4\n\n"
    assert success(5, "") == "=5\n\n"
    assert failure(5, "illegal move") == "?5 illegal move\n\n"
    # a text starting on the next line, with an empty line inside it
    assert success(3, "\nA\n\nB") == "=3\nA\n \nB\n\n"


# ---- config ------------------------------------------------------------------------


def test_shipped_config_equals_the_documented_defaults():
    with open(ROOT / "configs" / "gtp.toml", "rb") as f:
        data = tomllib.load(f)
    assert config_from_dict(data, "gtp.toml") == GtpConfig()
    assert load_config(ROOT / "configs" / "gtp.toml") == GtpConfig()


def test_unknown_keys_and_bad_values_name_the_file_and_key(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[search]\nplayout = 10\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: \[search\] playout: unknown key"):
        load_config(p)
    p.write_text("[serach]\nplayouts = 10\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: unknown section \[serach\]"):
        load_config(p)
    p.write_text("[search]\nplayouts = \"many\"\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: \[search\] playouts: must be a whole number"):
        load_config(p)
    p.write_text("[game]\nboard_size = 40\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: \[game\] board_size: must be 2\.\.25"):
        load_config(p)
    with pytest.raises(ConfigError, match="missing.toml: no such file"):
        load_config(tmp_path / "missing.toml")


# ---- time control ------------------------------------------------------------------


def tc() -> TimeControl:
    return TimeControl(TimeSection(lag_margin_s=0.1, reserve_fraction=0.05, expected_length_factor=0.7,
                                   min_moves_left=10, max_move_fraction=0.25))


def test_absolute_budget_divides_main_time_over_expected_moves():
    t = tc()
    t.set_gtp(600, 0, 0)
    # 19x19, move 0: moves left = max(10, 0.7*361/2 = 126.35); 600*0.95/126.35 - 0.1
    assert t.budget(1, 0, 19) == pytest.approx(570 / 126.35 - 0.1)
    # deep into the game the floor of 10 moves applies: 100*0.95/10 - 0.1 = 9.4
    t.time_left(1, 100, 0)
    assert t.budget(1, 400, 19) == pytest.approx(9.4)
    # at most a quarter of what is left: 8 s left, 10 moves: min(0.76, 2) - 0.1
    t.time_left(1, 8, 0)
    assert t.budget(1, 400, 19) == pytest.approx(0.66)
    # nothing left: no time to think
    t.time_left(1, 0, 0)
    assert t.budget(1, 10, 9) == 0.0


def test_byo_yomi_budgets():
    t = tc()
    t.set_gtp(0, 30, 10)  # Canadian, no main time: 30 s for 10 stones
    assert t.budget(1, 0, 19) == pytest.approx(30 * 0.95 / 10 - 0.1)
    t.set_gtp(0, 2, 1)  # what Lizzie sends: 2 s per move
    assert t.budget(2, 0, 19) == pytest.approx(2 * 0.95 - 0.1)
    t.set_gtp(0, 5, 0)  # byo-yomi time with no stones: no limit (GTP)
    assert t.budget(1, 0, 19) is None
    t.set_kind("byoyomi", 0, 10, periods=3)
    assert t.budget(1, 0, 19) == pytest.approx(10 * 0.95 - 0.1)
    t.set_gtp(60, 30, 5)
    t.time_left(1, 30, 5)  # in byo-yomi: 30 s for 5 stones
    assert t.budget(1, 0, 9) == pytest.approx(30 * 0.95 / 5 - 0.1)


def test_own_clock_bookkeeping():
    t = tc()
    t.set_gtp(10, 0, 0)
    t.charge(1, 3.0)
    assert t.clocks[1].main_left == pytest.approx(7.0)
    assert t.clocks[2].main_left == pytest.approx(10.0)
    t.set_gtp(5, 10, 2)  # 5 s main, then 10 s per 2 stones
    t.charge(1, 6.0)  # 1 s spills into byo-yomi, the move counts as a stone
    c = t.clocks[1]
    assert c.in_byo and c.byo_left == pytest.approx(9.0) and c.stones_left == 1
    t.charge(1, 2.0)  # period done: fresh 10 s for 2 stones
    assert c.byo_left == pytest.approx(10.0) and c.stones_left == 2


# ---- analysis numbers and lines -------------------------------------------------------


def test_wilson_lower_bound_matches_the_textbook_value():
    # 5 wins in 10 at 95%: the Wilson interval is [0.2366, 0.7634]
    assert wilson_lcb(0.5, 10, 1.96) == pytest.approx(0.2366, abs=1e-4)
    # 90 of 100: [0.8256, 0.9448]
    assert wilson_lcb(0.9, 100, 1.96) == pytest.approx(0.8256, abs=1e-4)
    assert wilson_lcb(0.7, 0, 1.96) == 0.0


def test_rank_moves_orders_by_visits_and_pads_with_priors():
    ms = [MoveInfo(0, 5, 0.4, 0.1, 0, 0, []), MoveInfo(1, 9, 0.5, 0.2, 0, 0, []),
          MoveInfo(2, 5, 0.6, 0.1, 0, 0, []), MoveInfo(3, 0, 0.5, 0.5, 0, 0, []),
          MoveInfo(4, 0, 0.5, 0.05, 0, 0, [])]
    out = rank_moves(ms, min_moves=0, max_moves=10)
    assert [m.action for m in out] == [1, 2, 0]
    assert [m.order for m in out] == [0, 1, 2]
    out = rank_moves(ms, min_moves=4, max_moves=2)
    assert [m.action for m in out] == [1, 2, 0, 3]


def test_lz_and_kata_lines():
    n = 9
    # C3 is action 2*9+2 = 20; D4 is 30; pass is 81
    rep = Report([MoveInfo(20, 12, 0.53456, 0.25, 0.41, 1.5, [20, 30, 81], 0)], 13, 0.52, 1.25,
                 ownership=np.arange(81, dtype=np.float64) / 100.0)
    assert format_lz(rep, n) == "info move C3 visits 12 winrate 5346 prior 2500 lcb 4100 order 0 pv C3 D4 pass"
    line = format_kata(rep, n, AnalyzeRequest("kata", root_info=True, ownership=True))
    assert line.startswith("info move C3 visits 12 utility 0.069120 winrate 0.534560 scoreMean 1.500 "
                           "scoreLead 1.500 prior 0.250000 lcb 0.410000 order 0 pv C3 D4 pass rootInfo visits 13 ")
    own = line.split("ownership ")[1].split()
    assert len(own) == 81
    # the first value is A9 (top-left): action 8*9 = 72 -> 0.72; the last is J1: action 8 -> 0.08
    assert float(own[0]) == pytest.approx(0.72) and float(own[-1]) == pytest.approx(0.08)


def test_parse_analyze_args():
    r = parse_analyze_args(["B", "50", "minmoves", "3", "avoid", "b", "D4,pass", "1"], 9, "lz", 10, 20, to_move=1)
    assert (r.color, r.interval_cs, r.min_moves) == (1, 50, 3)
    assert r.avoid == {30, 81}
    r = parse_analyze_args(["interval", "20", "ownership", "true"], 9, "kata", 10, 20, to_move=2)
    assert (r.color, r.interval_cs, r.ownership) == (None, 20, True)
    for bad in (["b", "-5"], ["ownership", "true"], ["maxmoves"], ["avoid", "b", "Z99", "1"], ["wibble", "1"]):
        with pytest.raises(GtpError):
            parse_analyze_args(bad, 9, "lz", 10, 20, to_move=1)


# ---- misc -----------------------------------------------------------------------------


def test_free_handicap_uses_the_fixed_pattern_then_spreads_out():
    pts = free_handicap_points(9, 4)
    assert sorted(pts) == sorted([2 * 9 + 2, 2 * 9 + 6, 6 * 9 + 2, 6 * 9 + 6])  # C3 G3 C7 G7
    pts = free_handicap_points(9, 12)
    assert len(set(pts)) == 12 and all(0 <= a < 81 for a in pts)
    assert len(set(free_handicap_points(3, 8))) == 8


def test_safe_stderr_prefixes_lines_a_gui_could_misread():
    buf = io.StringIO()
    s = SafeStderr(buf)
    s.write("= looks like an answer\ninfo move D4\nordinary line\n  play D4\n? x")
    s.flush()
    lines = buf.getvalue().split("\n")
    assert lines[0] == "sayuri-async: = looks like an answer"
    assert lines[1] == "sayuri-async: info move D4"
    assert lines[2] == "ordinary line"
    assert lines[3] == "sayuri-async:   play D4"
    assert lines[4] == "sayuri-async: ? x"
