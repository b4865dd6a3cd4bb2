"""Fuzzing the GTP engine with random and mutated command lines.

In-process (fast, thousands of lines): every line goes through the real line
parser and dispatcher; the test checks that each line gets exactly one
well-formed response (or none, for a line that is empty once comments and
control characters are gone), with the line's id, and that the engine still
answers afterwards. A smaller run drives the real program over pipes.
"""
from __future__ import annotations

import asyncio
import random
import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtp.commands import Dispatcher
from gtp.config import GtpConfig
from gtp.engine import Engine
from gtp.match import GtpProcess
from gtp.protocol import parse_line
from sayuri_async.net.backends import make_backend

NAMES = """protocol_version name version known_command list_commands boardsize clear_board komi play genmove
undo showboard final_score final_status_list fixed_handicap place_free_handicap set_free_handicap loadsgf
printsgf time_settings time_left kgs-time_settings is_legal list_stones analyze lz-analyze kata-analyze
genmove_analyze lz-genmove_analyze kata-genmove_analyze reg_genmove foo PLAY GenMove""".split()
TOKENS = """b w B W black white BLACK x pass PASS A1 a1 D4 E5 J9 T19 Z25 Z26 I5 A0 A-1 J10 44 D4,E5 D4,,pass
0 1 2 3 -1 -7 4 9 19 25 26 100 0.5 -0.5 7.5 1e9 1e308 -1e308 nan inf -inf 999999999999999999999 0x10 1_0
true false ownership rootInfo minmoves maxmoves avoid allow interval none absolute byoyomi canadian
alive dead seki missing.sgf out.sgf # ; = ? info play""".split()
RESPONSE = re.compile(r"\A([=?])(\d*)(?:[ \n][^\n]*)?(?:\n[^\n]+)*\n\n\Z")
CONTROL_CHARS = [chr(i) for i in range(32) if i != 10] + ["\x7f", "é", "\u3000", "\u200b", "#"]


def token() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(TOKENS), st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=6))


@st.composite
def command_line(draw) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append(str(draw(st.integers(0, 10**12))))
    parts.append(draw(st.sampled_from(NAMES)))
    parts += draw(st.lists(token(), max_size=5))
    line = " ".join(parts)
    for _ in range(draw(st.integers(0, 3))):  # mutations
        if not line:
            break
        i = draw(st.integers(0, len(line) - 1))
        op = draw(st.sampled_from(["insert", "delete", "dup"]))
        if op == "insert":
            line = line[:i] + draw(st.sampled_from(CONTROL_CHARS + list("0123456789 ,.-"))) + line[i:]
        elif op == "delete":
            line = line[:i] + line[i + 1:]
        else:
            line = line[:i] + line[i:] + line[i:]
    return line


def kept_text(line: str) -> str:
    """GTP's rule, restated: drop ASCII control characters (tab is a space)
    and everything from '#'."""
    kept = "".join(" " if ch == "\t" else ch for ch in line if ch == "\t" or ord(ch) >= 32 and ord(ch) != 127)
    return kept.split("#", 1)[0]


def words(line: str) -> list[str]:
    """The tokens: separated by ASCII spaces only (non-ASCII whitespace is
    part of a word)."""
    return [w for w in kept_text(line).split(" ") if w]


def expects_answer(line: str) -> bool:
    """A line with no word left after ``kept_text`` gets no response."""
    return bool(words(line))


class AlwaysPending:
    """An inbox whose next line is always waiting: analysis stops at once."""

    def pending(self) -> bool:
        return True

    async def wait(self, timeout: float) -> None:
        return None


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    cfg = GtpConfig()
    cfg.game.board_size = 9
    cfg.search.playouts = 4
    cfg.search.node_capacity = 100_000
    cfg.search.seed = 3
    loop = asyncio.new_event_loop()
    engine = Engine(cfg, make_backend(None, seed=3))
    out: list[str] = []
    disp = Dispatcher(engine, out.append, cfg)
    yield loop, disp, out, tmp_path_factory.mktemp("fuzz")
    engine.close()
    loop.close()


def run_line(harness, line: str) -> str:
    loop, disp, out, _ = harness
    out.clear()
    cmd = parse_line(line)
    if cmd is not None:
        loop.run_until_complete(asyncio.wait_for(disp.execute(cmd, AlwaysPending()), 30))
    disp.quit_requested = False
    return "".join(out)


def check_answer(line: str, text: str) -> None:
    if not expects_answer(line):
        assert text == "", (line, text)
        return
    m = RESPONSE.match(text)
    assert m, (line, text[:300])
    first_tok = words(line)[0]
    # the id comes back exactly when the first token is a number of at most
    # 18 digits (leading zeros aside); a longer one is refused without an id
    if re.fullmatch(r"[0-9]+", first_tok) and len(first_tok.lstrip("0")) <= 18:
        assert m.group(2) == (first_tok.lstrip("0") or "0"), (line, text[:80])
    else:
        assert m.group(2) == "", (line, text[:80])


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=st.lists(command_line(), min_size=1, max_size=8))
def test_fuzz_mutated_commands_in_process(harness, lines, monkeypatch):
    monkeypatch.chdir(harness[3])
    for line in lines:
        check_answer(line, run_line(harness, line))
    assert run_line(harness, "99 name") == "=99 sayuri-async\n\n"


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(line=st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=40))
def test_fuzz_random_text_in_process(harness, line, monkeypatch):
    monkeypatch.chdir(harness[3])
    check_answer(line, run_line(harness, line))


def test_fuzz_over_pipes(tmp_path):
    """Random numbered lines written all at once to the real program; every
    id is answered in order and the program is still alive at the end."""
    rng = random.Random(20261130)
    lines = []
    for i in range(1, 301):
        name = rng.choice([n for n in NAMES])
        args = [rng.choice(TOKENS) for _ in range(rng.randint(0, 4))]
        text = " ".join([name, *args])
        if rng.random() < 0.3:
            k = rng.randrange(len(text) + 1)
            text = text[:k] + rng.choice(CONTROL_CHARS) + text[k:]
        lines.append((i, f"{i} {text}"))
    err = open(tmp_path / "stderr.txt", "wb")
    p = GtpProcess([sys.executable, "-m", "gtp", "--playouts", "8", "--seed", "5"], stderr=err, cwd=str(tmp_path))
    try:
        p.send("boardsize 9")
        for _, line in lines:
            p.write_line(line)
        for i, line in lines:
            ok, rid, _ = p.read_response(60)
            assert rid == i, (line, rid)
        assert p.send("name") == "sayuri-async"
        assert p.proc.poll() is None
    finally:
        p.close()
        err.close()
    bad = [ln for ln in (tmp_path / "stderr.txt").read_text().splitlines()
           if ln.lstrip().startswith(("=", "?", "info", "play"))]
    assert not bad
    assert p.proc.returncode == 0
