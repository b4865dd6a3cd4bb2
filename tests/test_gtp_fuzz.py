"""Fuzzing the GTP engine with random and mutated command lines.

In-process (fast, thousands of lines): every line goes through the real line
parser and dispatcher; the test checks that each line gets exactly one
well-formed response (or none, for a line that has no word once comments and
control characters are gone), with the line's id, and that the engine still
answers afterwards. Over pipes, the real program gets random lines written
all at once, and a seeded conversation of a few thousand lines, one at a
time with a deadline for each answer: huge ids and numbers, non-ASCII
whitespace, the same colour moving again and again on 2x2 to 5x5 boards,
analyses interrupted after a random wait; its memory must stay bounded.
"""
from __future__ import annotations

import asyncio
import random
import re
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtp.commands import Dispatcher
from gtp.config import GtpConfig
from gtp.engine import Engine
from gtp.match import GtpProcess
from gtp.protocol import parse_line
from sayuri_async.backend_factory import make_backend

NAMES = """protocol_version name version known_command list_commands boardsize clear_board komi play genmove
undo showboard final_score final_status_list fixed_handicap place_free_handicap set_free_handicap loadsgf
printsgf time_settings time_left kgs-time_settings is_legal list_stones analyze lz-analyze kata-analyze
genmove_analyze lz-genmove_analyze kata-genmove_analyze reg_genmove foo PLAY GenMove stop clear_cache get_komi
kata-get-rules kata-set-rules rectangular_boardsize""".split()
TOKENS = """b w B W black white BLACK x pass PASS A1 a1 D4 E5 J9 T19 Z25 Z26 I5 A0 A-1 J10 44 D4,E5 D4,,pass
0 1 2 3 -1 -7 4 9 19 25 26 100 0.5 -0.5 7.5 1e9 1e308 -1e308 nan inf -inf 999999999999999999999 0x10 1_0
true false ownership rootInfo minmoves maxmoves avoid allow interval none absolute byoyomi canadian
alive dead seki missing.sgf out.sgf # ; = ? info play pvVisits pvEdgeVisits ownershipStdev movesOwnership
chinese tromp-taylor {"ko":"SIMPLE"} {"scoring":"TERRITORY","ko":"POSITIONAL"} - 360000 360001""".split()
SPACES = ["\u00a0", "\u3000", "\u2028", "\u0085", "\u2003", "\u200b", "\ufeff"]
RESPONSE = re.compile(r"\A([=?])(\d*)(?:[ \n][^\n]*)?(?:\n[^\n]+)*\n\n\Z")
CONTROL_CHARS = [chr(i) for i in range(32) if i != 10] + ["\x7f", "é", "#"] + SPACES


def digits(count: int) -> str:
    return "7" * count


def token() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(TOKENS), st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=6),
                     st.sampled_from([19, 400, 4301, 6000]).map(digits), st.sampled_from(SPACES))


@st.composite
def command_line(draw) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append(str(draw(st.integers(0, 10**12))))
    elif draw(st.integers(0, 9)) == 0:
        parts.append(digits(draw(st.sampled_from([18, 19, 4301, 6000]))))
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


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    cfg = GtpConfig()
    cfg.game.board_size = 9
    cfg.search.playouts = 4
    cfg.search.tree_memory_mb = 4
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


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=st.lists(command_line(), min_size=1, max_size=8))
def test_fuzz_mutated_commands_in_process(harness, lines, monkeypatch):
    monkeypatch.chdir(harness[3])
    for line in lines:
        check_answer(line, run_line(harness, line))
    assert run_line(harness, "99 name") == "=99 sayuri-async\n\n"


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(line=st.text(alphabet=st.characters(blacklist_characters="\n"), max_size=40))
def test_fuzz_random_text_in_process(harness, line, monkeypatch):
    monkeypatch.chdir(harness[3])
    check_answer(line, run_line(harness, line))


@pytest.mark.slow
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


# ---- a seeded conversation over pipes, one line at a time ----------------------------

DEADLINE = 20.0  # seconds for any one answer line (they take milliseconds)
ANALYZE = ("analyze", "lz-analyze", "kata-analyze")
HEAD = re.compile(r"\A([=?])(\d*)(?: .*)?\Z")


def command_words(line: str) -> tuple[str | None, str]:
    """(the id the answer must carry, the command name) by the rules above."""
    w = words(line)
    if re.fullmatch(r"[0-9]+", w[0]):
        if len(w[0].lstrip("0")) > 18:
            return None, ""
        return w[0].lstrip("0") or "0", (w[1].lower() if len(w) > 1 else "")
    return None, w[0].lower()


def seeded_lines(rng: random.Random, count: int) -> list[str]:
    """Random command lines, and runs of them that once hung the program."""
    out: list[str] = []
    next_id = 1

    def numbered(text: str) -> str:
        nonlocal next_id
        r = rng.random()
        if r < 0.6:
            next_id += 1
            return f"{next_id} {text}"
        if r < 0.65:
            return f"{digits(rng.choice([19, 400, 4301, 6000]))} {text}"
        return text

    while len(out) < count:
        kind = rng.random()
        if kind < 0.3:  # the same colour to move again and again on a tiny board
            colour = rng.choice("bw")
            out += [numbered(f"boardsize {rng.randint(2, 5)}"), numbered("clear_board")]
            for _ in range(rng.randint(2, 6)):
                c = colour if rng.random() < 0.8 else rng.choice("bw")
                out.append(numbered(rng.choice([f"genmove {c}", f"genmove {c}", f"play {c} pass",
                                                f"lz-analyze {c} 1", f"kata-genmove_analyze {c} 1 pvVisits true"])))
        elif kind < 0.45:  # an analysis, interrupted by whatever line comes next
            name = rng.choice(ANALYZE)
            keys = rng.sample(["interval 1", "minmoves 5", "maxmoves 3", "avoid b A1,B2 1", "allow w A1,B1,pass 1",
                               "ownership true", "pvVisits true", "movesOwnership true", "ownershipStdev true",
                               "rootInfo true", f"interval {digits(400)}"], rng.randint(0, 3))
            out.append(numbered(" ".join([name, rng.choice(["", "b", "w"]), *keys])))
        elif kind < 0.55:  # non-ASCII whitespace: alone, as a separator, around words
            sp = rng.choice(SPACES)
            out.append(rng.choice([sp, sp * 3, numbered(f"genmove{sp}b"), numbered(f"play b{sp}A1"),
                                   numbered(f"{sp}name"), numbered(f"komi 7.5{sp}")]))
        else:  # random words, long numbers, control characters
            args = [rng.choice(TOKENS) if rng.random() < 0.85 else digits(rng.choice([19, 400, 4301]))
                    for _ in range(rng.randint(0, 4))]
            text = " ".join([rng.choice(NAMES), *args])
            if rng.random() < 0.3:
                k = rng.randrange(len(text) + 1)
                text = text[:k] + rng.choice(CONTROL_CHARS) + text[k:]
            out.append(numbered(text))
    return out[:count]


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmRSS:"):
                return int(row.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class Conversation:
    """Writes one line at a time and reads its whole answer, each answer
    line within DEADLINE; an analysis stays open until the next line."""

    def __init__(self, p: GtpProcess, rng: random.Random) -> None:
        self.p = p
        self.rng = rng
        self.streaming = False
        self.answers = 0

    def _rest(self) -> list[str]:
        out = []
        while (line := self.p.read_line(DEADLINE)).strip():
            out.append(line)
        return out

    def send(self, line: str) -> None:
        try:
            self._send(line)
        except TimeoutError:
            raise AssertionError(f"no answer to {line[:80]!r} within {DEADLINE:g} s") from None

    def _send(self, line: str) -> None:
        self.p.write_line(line)
        if self.streaming:  # any line ends a running analysis
            assert all(ln.startswith("info ") for ln in self._rest()), line[:80]
            self.streaming = False
        if not expects_answer(line):
            return
        head = self.p.read_line(DEADLINE)
        self.answers += 1
        m = HEAD.match(head)
        assert m, (line[:80], head[:80])
        cid, name = command_words(line)
        assert m.group(2) == (cid or ""), (line[:80], head[:80])
        if m.group(1) == "=" and name in ANALYZE and len(words(line)) < 40:
            self.streaming = True
            time.sleep(self.rng.random() * 0.02)  # let it search and report a little, or not
            return
        body = self._rest()
        if m.group(1) == "?":
            assert not body and len(head) < 400, (line[:80], head[:120])


@pytest.mark.slow
def test_seeded_conversation_over_pipes_never_hangs(tmp_path):
    rng = random.Random(20260517)
    lines = seeded_lines(rng, 4000)
    err = open(tmp_path / "stderr.txt", "wb")
    p = GtpProcess([sys.executable, "-m", "gtp", "--playouts", "40", "--seed", "9"], stderr=err, cwd=str(tmp_path))
    try:
        talk = Conversation(p, rng)
        talk.send("1 boardsize 9")
        talk.send("2 genmove b")
        start = rss_bytes(p.proc.pid)
        for line in lines:
            talk.send(line)
        talk.send("")  # ends an analysis still open
        assert p.send("name") == "sayuri-async"
        assert talk.answers > 3500
        grown = rss_bytes(p.proc.pid) - start
        assert grown < 150 << 20, f"the program grew by {grown >> 20} MiB"
    finally:
        p.close()
        err.close()
    bad = [ln for ln in (tmp_path / "stderr.txt").read_text().split("\n")
           if ln.lstrip().startswith(("=", "?", "info", "play"))]
    assert not bad
    assert p.proc.returncode == 0
