"""KataGo's GTP extensions against the real program over pipes: the extra
kata-analyze keys, the optional colour and avoid/allow of genmove_analyze,
``printsgf -``, ``stop``, ``clear_cache``, ``get_komi``, the rules commands
and ``rectangular_boardsize``. The lines are parsed here from KataGo's
documented format, not with the producer's code."""
from __future__ import annotations

import json

import pytest
from sgfmill import sgf

from gtp.match import GtpFailure, GtpProcess

EXTENSIONS = ["stop", "clear_cache", "get_komi", "kata-get-rules", "kata-set-rules", "rectangular_boardsize"]
SECTION_KEYS = ("pvVisits", "pvEdgeVisits", "movesOwnership")
pytestmark = pytest.mark.slow  # one engine subprocess (``eng``, conftest.py)
GTP_ARGS = ("--playouts", "60", "--seed", "13")


def fails(p: GtpProcess, cmd: str) -> str:
    with pytest.raises(GtpFailure) as e:
        p.send(cmd)
    return str(e.value)


def kata_line(line: str) -> tuple[list[dict[str, list[str]]], dict[str, list[str]]]:
    """Blocks ``info key value ... pv V.. [pvVisits n..] [pvEdgeVisits n..]
    [movesOwnership f..]`` and the trailing sections (rootInfo, ownership,
    ownershipStdev): every key maps to the tokens up to the next key."""
    keys = {"info", "pv", "rootInfo", "ownership", "ownershipStdev", *SECTION_KEYS}
    blocks: list[dict[str, list[str]]] = []
    sections: dict[str, list[str]] = {}
    current: dict[str, list[str]] | None = None
    key = ""
    for tok in line.split(" "):
        if tok == "info":
            current = {}
            blocks.append(current)
            key = ""
        elif tok in ("rootInfo", "ownership", "ownershipStdev"):
            current = sections
            key = tok
            sections[key] = []
        elif tok in keys:
            key = tok
            assert current is not None
            current[key] = []
        elif current is sections or key in ("pv", *SECTION_KEYS):
            current[key].append(tok)  # type: ignore[index]
        else:  # a plain key-value pair of a block
            if key and len(current[key]) == 0:  # type: ignore[index]
                current[key].append(tok)  # type: ignore[index]
            else:
                key = tok
                current[key] = []  # type: ignore[index]
    return blocks, sections


def analysis_lines(p: GtpProcess, command: str, want: int) -> list[str]:
    p.write_line(command)
    assert p.read_line(30).startswith("=")
    lines = [p.read_line(30) for _ in range(want)]
    p.write_line("stop")  # stops the analysis, then answers as a command
    while p.read_line(30).strip():
        pass
    assert p.read_response(30)[:2] == (True, None)
    return lines


def test_kata_analyze_pv_visits_and_ownership_sections(eng):
    eng.send("boardsize 9")
    eng.send("clear_board")
    eng.send("play b E5")
    cmd = "kata-analyze w interval 5 pvVisits true pvEdgeVisits true ownershipStdev true movesOwnership true"
    for line in analysis_lines(eng, cmd, 3):
        blocks, sections = kata_line(line)
        assert blocks
        for b in blocks:
            counts = [int(x) for x in b["pvVisits"]]
            assert len(counts) == len(b["pv"]) and counts[0] == int(b["visits"][0])
            assert counts == sorted(counts, reverse=True)  # each position is reached through the one before
            assert b["pvEdgeVisits"] == b["pvVisits"]  # a tree: one way into each position
            own = [float(x) for x in b["movesOwnership"]]
            assert len(own) == 81 and all(-1 <= x <= 1 for x in own)
        assert sections["ownershipStdev"] == ["0.0000"] * 81
        assert "ownership" not in sections  # not asked for
    # lz-analyze keeps pv last and refuses kata-only keys
    assert "kata-analyze option" in fails(eng, "lz-analyze w pvVisits true")


def test_genmove_analyze_takes_avoid_and_allow(eng):
    eng.send("boardsize 9")
    for cmd in ("lz-genmove_analyze 5 allow b C3,G7 1", "kata-genmove_analyze b 5 avoid b E5,D4,F6 1"):
        eng.send("clear_board")
        eng.write_line(cmd)
        assert eng.read_line(30) == "="
        body = []
        while (line := eng.read_line(30)).strip():
            body.append(line)
        move = body[-1].split()[1].upper()
        assert move in ("C3", "G7") if "allow" in cmd else move not in ("E5", "D4", "F6")
        for line in body[:-1]:
            shown = {t for i, t in enumerate(line.split()) if i > 0 and line.split()[i - 1] == "move"}
            assert shown <= {"C3", "G7"} if "allow" in cmd else not shown & {"E5", "D4", "F6"}


def test_printsgf_dash_writes_to_the_answer(eng):
    d = eng.dir  # type: ignore[attr-defined]
    eng.send("boardsize 9")
    eng.send("clear_board")
    eng.send("play b C3")
    text = eng.send("printsgf -")
    assert sgf.Sgf_game.from_string(text).get_size() == 9
    assert not (d / "-").exists()


def test_extension_commands(eng):
    listed = eng.send("list_commands").split("\n")
    for name in EXTENSIONS:
        assert name in listed and eng.send(f"known_command {name}") == "true"
    assert eng.send("stop") == ""  # nothing to stop: a no-op
    eng.send("komi 6.5")
    assert eng.send("get_komi") == "6.5"
    eng.send("komi -3")
    assert eng.send("get_komi") == "-3"
    eng.send("komi 7.5")
    assert json.loads(eng.send("kata-get-rules")) == {
        "hasButton": False, "ko": "POSITIONAL", "scoring": "AREA", "suicide": False, "tax": "NONE",
        "whiteHandicapBonus": "N"}
    eng.send('kata-set-rules {"ko": "SIMPLE", "scoring": "TERRITORY"}')
    assert json.loads(eng.send("kata-get-rules"))["ko"] == "SIMPLE"
    assert json.loads(eng.send("kata-get-rules"))["scoring"] == "TERRITORY"
    assert json.loads(eng.send("kata-get-rules"))["whiteHandicapBonus"] == "0"
    assert "ko 'SITUATIONAL'" in fails(eng, "kata-set-rules aga")
    eng.send("kata-set-rules chinese")
    assert json.loads(eng.send("kata-get-rules")) == {
        "hasButton": False, "ko": "SIMPLE", "scoring": "AREA", "suicide": False, "tax": "NONE",
        "whiteHandicapBonus": "N"}
    assert "suicide" in fails(eng, "kata-set-rules tromp-taylor")
    eng.send('kata-set-rules {"ko":"POSITIONAL","scoring":"AREA"}')
    eng.send("rectangular_boardsize 7 7")
    assert eng.send("showboard").split("\n")[0].split() == list("ABCDEFG")
    assert "square boards only" in fails(eng, "rectangular_boardsize 9 13")
    assert "unacceptable size" in fails(eng, "rectangular_boardsize 30 30")
    eng.send("boardsize 9")
    eng.send("play b E5")
    eng.send("genmove w")
    eng.send("clear_cache")
    assert len(eng.send("list_stones black").split()) == 1  # the game stays
