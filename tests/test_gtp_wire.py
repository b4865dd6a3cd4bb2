"""Unit tests of GTP input handling: line splitting, tokens, ids, numbers and
their ranges, analysis arguments, KataGo's rules and analysis sections.
Expected values are worked out by hand in the comments."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gtp.analysis import MoveInfo, Report, format_kata, format_lz
from gtp.analyze_args import AnalyzeRequest, parse_analyze_args
from gtp.args import OutOfRange, parse_float, parse_gtp_color, parse_gtp_vertex, parse_int
from gtp.kata_cmds import rules_from_text, rules_json
from gtp.protocol import MAX_LINE_BYTES, TRUNCATED, GtpError, LineSplitter, parse_line
from sayuri_async.go.game import Rules

# ---- lines and tokens ----------------------------------------------------------


def test_lines_split_at_lf_only():
    s = LineSplitter()
    # U+2028 and U+0085 (NEL) are characters inside a line; CR LF ends one
    assert s.feed("a\u2028b\u0085c\r\nname\n".encode()) == ["a\u2028b\u0085c", "name"]
    assert s.feed(b"par") == [] and s.feed(b"tial\nrest") == ["partial"]
    assert s.end() == "rest" and s.end() is None
    assert LineSplitter().feed(b"\xff\xfe ok\n") == ["\ufffd\ufffd ok"]  # bad UTF-8 is replaced


def test_a_long_line_is_cut_and_marked_and_the_next_one_is_whole():
    s = LineSplitter(max_bytes=10)
    out = s.feed(b"play b abcdef")
    out += s.feed(b"ghij\nname\n")
    assert out == ["play b abc" + TRUNCATED, "name"]
    cmd = parse_line(out[0])
    assert cmd.error.startswith("syntax error: line longer than") and cmd.id is None
    assert parse_line("12 genmove b xxx" + TRUNCATED).id == 12
    assert parse_line("# a long comment" + TRUNCATED) is None
    assert LineSplitter().max_bytes == MAX_LINE_BYTES


@pytest.mark.parametrize("space", ["\u00a0", "\u3000", "\u2028", "\u0085", "\u200b"])
def test_only_ascii_space_separates_tokens(space):
    cmd = parse_line(space)
    assert cmd is not None and cmd.name == space  # a word, not an empty line
    assert parse_line(f"genmove{space}b").name == f"genmove{space}b"
    assert parse_line(f"play b{space}D4").args == [f"b{space}D4"]
    assert parse_line(f"\t play  B\tD4 \t# {space}").args == ["B", "D4"]
    assert parse_line(" \t \x01 ") is None


def test_ids_are_short_digit_strings():
    assert parse_line("0012 name").id == 12
    assert parse_line("0" * 6000 + "5 name").id == 5
    assert parse_line("9" * 18 + " name").id == 10**18 - 1
    cmd = parse_line("1" * 19 + " name")
    assert cmd.id is None and "longer than 18 digits" in cmd.error
    cmd = parse_line("1" * 5000 + " name")  # past int()'s 4,300-digit limit
    assert cmd.id is None and len(cmd.error) < 150
    assert parse_line("\u0661\u0662 name").id is None  # Arabic-Indic digits are no id


# ---- numbers -------------------------------------------------------------------


def test_integers_are_counted_before_they_are_converted():
    assert parse_int("+007", "n") == 7 and parse_int("-3", "n") == -3
    assert parse_int("0" * 5000 + "42", "n") == 42
    for text in ("9" * 19, "9" * 5000, "-" + "9" * 400):
        with pytest.raises(OutOfRange, match=r"out of range \(at most 18 digits\)"):
            parse_int(text, "n")
    with pytest.raises(OutOfRange, match=r"n '361' is out of range \(2\.\.25\)"):
        parse_int("361", "n", 2, 25)
    for text in ("1.5", "\u0661", "1_0", "", "+", "0x10"):
        with pytest.raises(GtpError, match="must be an integer"):
            parse_int(text, "n")


def test_numbers_are_plain_ascii_decimals_in_range():
    assert parse_float("7.5", "komi") == 7.5 and parse_float("-.5", "komi") == -0.5
    assert parse_float("1e3", "komi") == 1000.0
    for text in ("inf", "nan", "1_0", "\u0667.5", " 7", "7.5\u3000", "0x1p3"):
        with pytest.raises(GtpError, match="must be a number"):
            parse_float(text, "komi")
    for text in ("1e999", "7" * 400):
        with pytest.raises(OutOfRange):
            parse_float(text, "komi", -1000, 1000)


def test_colours_and_vertices_take_ascii_only():
    assert parse_gtp_color("WHITE") == 2 and parse_gtp_vertex("t19", 19) == 18 * 19 + 18
    for bad in ("b\u00a0", "\u3000w", "bl"):
        with pytest.raises(GtpError, match="invalid color"):
            parse_gtp_color(bad)
    for bad in ("D4\u00a0", "\u00a0D4", "A" + "1" * 5000, "D-4"):
        with pytest.raises(GtpError, match="invalid vertex"):
            parse_gtp_vertex(bad, 19)


# ---- analysis arguments -------------------------------------------------------------


def parse(args: list[str], style: str = "kata") -> AnalyzeRequest:
    return parse_analyze_args(args, 9, style, 10, 20, to_move=1)


def test_analysis_numbers_have_ranges():
    assert parse(["b", "360000"]).interval_cs == 360000
    assert parse(["0"]).interval_cs == 10  # 0: the default
    for bad in (["b", "360001"], ["b", "7" * 400], ["interval", "-1"], ["maxmoves", "1001"],
                ["minmoves", "9" * 30], ["avoid", "b", "D4", "0"], ["allow", "b", "D4", "9" * 400]):
        with pytest.raises(OutOfRange, match="out of range"):
            parse(bad)


def test_kata_keys_in_any_case_and_only_for_kata():
    r = parse(["w", "pvVisits", "true", "PVEDGEVISITS", "1", "ownershipStdev", "true", "movesOwnership", "yes"])
    assert (r.color, r.pv_visits, r.pv_edge_visits, r.ownership_stdev, r.moves_ownership) == (2, True, True, True, True)
    assert r.wants_ownership and not r.ownership
    for style in ("lz", "sabaki"):
        with pytest.raises(GtpError, match="pvVisits is a kata-analyze option"):
            parse(["pvVisits", "true"], style)


# ---- kata lines ----------------------------------------------------------------------


def kata_report() -> Report:
    # C3 (action 20) then D4 (30) then pass (81): the child has 12 visits,
    # the position after D4 has 7 and the one after pass 2
    m = MoveInfo(20, 12, 0.5, 0.25, 0.4, 1.5, [20, 30, 81], 0, [12, 7, 2])
    return Report([m], 13, 0.52, 1.25, ownership=np.arange(81, dtype=np.float64) / 100.0)


def test_kata_pv_visits_and_sections():
    req = AnalyzeRequest("kata", pv_visits=True, pv_edge_visits=True, moves_ownership=True,
                         ownership=True, ownership_stdev=True)
    line = format_kata(kata_report(), 9, req)
    assert " pv C3 D4 pass pvVisits 12 7 2 pvEdgeVisits 12 7 2 movesOwnership 0.7200 " in line
    blocks = line.split(" ownership ")
    assert len(blocks) == 2
    own, stdev = blocks[1].split(" ownershipStdev ")
    # the top-left vertex A9 is action 72: 0.72 first; J1 (action 8) last
    assert own.split()[0] == "0.7200" and own.split()[-1] == "0.0800" and len(own.split()) == 81
    assert stdev.split() == ["0.0000"] * 81
    moves_own = line.split(" movesOwnership ")[1].split(" ownership ")[0].split()
    assert moves_own == own.split()  # the root's ownership for every move
    plain = format_kata(kata_report(), 9, AnalyzeRequest("kata"))
    assert plain.endswith("order 0 pv C3 D4 pass")
    assert format_lz(kata_report(), 9).endswith("pv C3 D4 pass")  # lz lines never have them


# ---- rules ----------------------------------------------------------------------------


def test_rules_json_and_the_supported_subset():
    assert rules_json(Rules()) == {"hasButton": False, "ko": "POSITIONAL", "scoring": "AREA", "suicide": False,
                                   "tax": "NONE", "whiteHandicapBonus": "N"}
    r = rules_from_text('{"ko":"simple","scoring":"TERRITORY"}', Rules())
    assert r == Rules(scoring="territory", superko=False)
    assert rules_json(r)["whiteHandicapBonus"] == "0"  # the bonus follows the scoring
    assert rules_from_text("chinese", r) == Rules(scoring="area", superko=False)
    assert rules_from_text("chinese-ogs", r) == Rules(scoring="area", superko=True)
    assert rules_from_text('{"scoring":"TERRITORY","whiteHandicapBonus":"0"}', Rules()) == Rules(scoring="territory")
    assert rules_from_text(json.dumps(rules_json(r)), Rules()) == r
    assert rules_from_text('{"scoring": "AREA"}', r) == Rules(scoring="area", superko=False)  # ko kept
    for text, why in (('{"whiteHandicapBonus":"0"}', "whiteHandicapBonus '0' is not supported with scoring AREA"),
                      ('{"scoring":"TERRITORY","whiteHandicapBonus":"N"}', "with scoring TERRITORY"),
                      ("tromp-taylor", "suicide 'true'"),
                      ("japanese", "tax 'SEKI'"), ("aga", "ko 'SITUATIONAL'"),
                      ('{"hasButton":true}', "hasButton 'true'"), ('{"friendlyPassOk":true}', "unknown rule"),
                      ("[1]", "JSON dictionary"), ("fancy", "unknown rules"), ("[" * 100_000, "longer than"),
                      ('{"whiteHandicapBonus":' + "9" * 900 + "}", "whiteHandicapBonus")):
        with pytest.raises(GtpError, match=why):
            rules_from_text(text, Rules())
