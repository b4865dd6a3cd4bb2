"""The GTP command set: one handler per command, and the dispatcher.

Vocabulary
----------
Dispatcher  maps a Command to its handler, writes exactly one response per
            command (``=id ...`` or ``?id ...`` and the closing empty line),
            and turns every exception into a ``?`` answer: no input line can
            crash the engine or leave a response unfinished.
Context     what a handler gets: the command's id, the Engine, the Inbox (to
            stop analysis when input arrives) and ``begin``/``emit`` for
            streamed answers (analysis: ``=id`` first, then one line per
            interval, then the closing empty line that the dispatcher writes).
handler     ``async (ctx, args) -> str`` (the success text) or STREAMED when
            it wrote its answer through ``begin``/``emit``; failures raise
            GtpError.

Colours are GTP colours (``b``, ``w``, ``black``, ``white``, any case);
vertices are GTP vertices (``D4``, ``d4``, ``pass``). The game rules are the
config's (area scoring, positional superko by default); ``final_score`` and
``final_status_list`` count every stone on the board as alive (Tromp-Taylor).
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import __version__ as package_version
from sayuri_async.go.coords import VertexError, action_to_vertex, parse_color, vertex_to_action
from sayuri_async.go.game import Game, IllegalMove, handicap_actions
from sayuri_async.go.sgf import SgfError, dump_sgf, load_sgf_file, write_text_atomic

from .analysis import AnalyzeRequest, format_report, parse_analyze_args
from .config import GtpConfig
from .engine import RESIGN, Engine, Inbox
from .protocol import Command, GtpError, failure, parse_float, parse_int, success, want_args

LIZZIE_VERSION = "0.16"
STREAMED = object()  # a handler's return value: the answer was written already

Writer = Callable[[str], None]
Handler = Callable[["Context", list[str]], Awaitable[Any]]


@dataclass
class Context:
    id: int | None
    engine: Engine
    inbox: Inbox
    write: Writer
    name: str = ""
    started: bool = False

    def begin(self) -> None:
        self.write("=" if self.id is None else f"={self.id}")
        self.write("\n")
        self.started = True

    def emit(self, line: str) -> None:
        if line.strip():  # an empty line would end the response
            self.write(line + "\n")


def log(msg: str) -> None:
    """Diagnostics go to stderr, always prefixed (Lizzie merges stderr into
    stdout and must never mistake a log line for an answer)."""
    print(f"sayuri-async: {msg}", file=sys.stderr, flush=True)


def _color(tok: str) -> int:
    try:
        return parse_color(tok)
    except ValueError:
        raise GtpError(f"syntax error: invalid color {tok!r}") from None


def _vertex(tok: str, n: int) -> int:
    try:
        return vertex_to_action(tok, n)
    except VertexError as e:
        raise GtpError(f"syntax error: {e}") from None


class Dispatcher:
    def __init__(self, engine: Engine, write: Writer, config: GtpConfig) -> None:
        self.engine = engine
        self.write = write
        self.cfg = config
        self.quit_requested = False
        self.handlers: dict[str, Handler] = {
            "protocol_version": self.protocol_version,
            "name": self.name,
            "version": self.version,
            "known_command": self.known_command,
            "list_commands": self.list_commands,
            "quit": self.quit,
            "boardsize": self.boardsize,
            "clear_board": self.clear_board,
            "komi": self.komi,
            "play": self.play,
            "genmove": self.genmove,
            "undo": self.undo,
            "showboard": self.showboard,
            "final_score": self.final_score,
            "final_status_list": self.final_status_list,
            "fixed_handicap": self.fixed_handicap,
            "place_free_handicap": self.place_free_handicap,
            "set_free_handicap": self.set_free_handicap,
            "loadsgf": self.loadsgf,
            "printsgf": self.printsgf,
            "time_settings": self.time_settings,
            "time_left": self.time_left,
            "kgs-time_settings": self.kgs_time_settings,
            "is_legal": self.is_legal,
            "list_stones": self.list_stones,
            "analyze": self.analyze,
            "lz-analyze": self.analyze,
            "kata-analyze": self.analyze,
            "genmove_analyze": self.genmove_analyze,
            "lz-genmove_analyze": self.genmove_analyze,
            "kata-genmove_analyze": self.genmove_analyze,
        }

    # ---- dispatch ------------------------------------------------------------
    async def execute(self, cmd: Command, inbox: Inbox) -> None:
        """Run one command and write its complete response."""
        ctx = Context(cmd.id, self.engine, inbox, self.write, cmd.name)
        try:
            if not cmd.name:
                raise GtpError("syntax error: missing command after the id")
            handler = self.handlers.get(cmd.name)
            if handler is None:
                raise GtpError(f"unknown command {cmd.name!r}")
            result = await handler(ctx, cmd.args)
        except GtpError as e:
            self._fail(ctx, str(e))
            return
        except Exception as e:  # never crash on a command: answer and carry on
            log(f"internal error in {cmd.name!r}: {type(e).__name__}: {e}")
            self._fail(ctx, f"internal error: {type(e).__name__}: {e}")
            return
        if result is STREAMED or ctx.started:
            self.write("\n")
        else:
            self.write(success(cmd.id, str(result or "")))

    def _fail(self, ctx: Context, message: str) -> None:
        if ctx.started:  # the answer began as a success: end it cleanly
            log(f"error after the answer began: {message}")
            self.write("\n")
        else:
            self.write(failure(ctx.id, message))

    # ---- administrative ----------------------------------------------------------
    async def protocol_version(self, ctx: Context, args: list[str]) -> str:
        return "2"

    async def name(self, ctx: Context, args: list[str]) -> str:
        return self.cfg.protocol.name

    async def version(self, ctx: Context, args: list[str]) -> str:
        return LIZZIE_VERSION if self.cfg.protocol.lizzie_version else package_version

    async def known_command(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "known_command <command>")
        return "true" if args[0].lower() in self.handlers else "false"

    async def list_commands(self, ctx: Context, args: list[str]) -> str:
        return "\n".join(self.handlers)

    async def quit(self, ctx: Context, args: list[str]) -> str:
        self.quit_requested = True
        return ""

    # ---- setup ---------------------------------------------------------------------
    async def boardsize(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "boardsize <size>")
        n = parse_int(args[0], "board size")
        lo, hi = self.engine.size_range
        if not lo <= n <= hi:
            raise GtpError(f"unacceptable size {n} (this engine and network play {lo}..{hi})")
        self.engine.new_game(n)
        return ""

    async def clear_board(self, ctx: Context, args: list[str]) -> str:
        self.engine.new_game()
        return ""

    async def komi(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "komi <number>")
        k = parse_float(args[0], "komi")
        if abs(k) > 1000:
            raise GtpError(f"komi {k:g} is out of range (-1000..1000)")
        self.engine.set_komi(k)
        return ""

    def _require_empty(self) -> Game:
        g = self.engine.game
        if g.moves or g.handicap or np.any(g.stones()):
            raise GtpError("board not empty")
        return g

    async def fixed_handicap(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "fixed_handicap <stones>")
        k = parse_int(args[0], "number of stones")
        g = self._require_empty()
        try:
            acts = handicap_actions(g.size, k)
        except ValueError as e:
            raise GtpError(f"invalid number of stones: {e}") from None
        return self._place_handicap(acts)

    async def place_free_handicap(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "place_free_handicap <stones>")
        k = parse_int(args[0], "number of stones")
        g = self._require_empty()
        n = g.size
        if not 2 <= k <= n * n - 1:
            raise GtpError(f"invalid number of stones {k} (2..{n * n - 1} on {n}x{n})")
        return self._place_handicap(free_handicap_points(n, k))

    async def set_free_handicap(self, ctx: Context, args: list[str]) -> str:
        g = self._require_empty()
        n = g.size
        if not 2 <= len(args) <= n * n - 1:
            raise GtpError(f"syntax error: set_free_handicap needs 2..{n * n - 1} vertices")
        acts = [_vertex(v, n) for v in args]
        if n * n in acts:
            raise GtpError("syntax error: pass is not a handicap vertex")
        if len(set(acts)) != len(acts):
            raise GtpError("bad vertex list: a vertex is repeated")
        self._place_handicap(acts)
        return ""

    def _place_handicap(self, acts: list[int]) -> str:
        try:
            self.engine.game.place_handicap(acts)
        except IllegalMove as e:
            raise GtpError(str(e)) from None
        self.engine.drop_tree()
        return " ".join(action_to_vertex(a, self.engine.size) for a in acts)

    async def loadsgf(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 2, "loadsgf <file> [move_number]")
        move_number = parse_int(args[1], "move number") if len(args) == 2 else None
        if move_number is not None and move_number < 1:
            raise GtpError("syntax error: move number must be at least 1")
        if not os.path.isfile(args[0]):  # also keeps FIFOs and devices from blocking us
            raise GtpError(f"cannot load file: {args[0]!r} is not a readable file")
        try:
            game, _ = load_sgf_file(args[0], default_komi=self.engine.game.komi)
        except SgfError as e:
            raise GtpError(f"cannot load file: {e}") from None
        lo, hi = self.engine.size_range
        if not lo <= game.size <= hi:
            raise GtpError(f"cannot load file: board size {game.size} is outside {lo}..{hi}")
        if move_number is not None:
            while len(game.moves) >= move_number and game.undo():
                pass
        self.engine.replace_game(game)
        return ""

    async def printsgf(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 0, 1, "printsgf [file]")
        text = dump_sgf(self.engine.game)
        if args:
            try:
                write_text_atomic(args[0], text)
            except OSError as e:
                raise GtpError(f"cannot write {args[0]}: {e.strerror or e}") from None
            return ""
        return "\n" + text.strip()

    # ---- moves ------------------------------------------------------------------------
    async def play(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 2, 2, "play <color> <vertex>")
        color = _color(args[0])
        a = _vertex(args[1], self.engine.size)
        try:
            self.engine.game.play(a, color)
        except IllegalMove as e:
            raise GtpError(f"illegal move: {str(e).split(': ')[-1]}") from None
        return ""

    async def is_legal(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 2, 2, "is_legal <color> <vertex>")
        color = _color(args[0])
        a = _vertex(args[1], self.engine.size)
        return "1" if self.engine.game.why_illegal(a, color) is None else "0"

    async def undo(self, ctx: Context, args: list[str]) -> str:
        if not self.engine.game.undo():
            raise GtpError("cannot undo")
        return ""

    async def genmove(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "genmove <color>")
        color = _color(args[0])
        t0 = time.perf_counter()
        action = await self.engine.genmove(color)
        if self.cfg.protocol.verbose:
            self._log_search(t0)
        return self._move_text(action)

    def _move_text(self, action: int) -> str:
        return "resign" if action == RESIGN else action_to_vertex(action, self.engine.size)

    def _log_search(self, t0: float) -> None:
        s = self.engine.search
        log(f"searched {s.root_visits()} visits in {time.perf_counter() - t0:.2f} s, "
            f"root winrate {(s.root_value() + 1) / 2:.3f}, time: {self.engine.time.describe()}")

    # ---- scoring and listing --------------------------------------------------------
    async def final_score(self, ctx: Context, args: list[str]) -> str:
        return self.engine.game.result()

    async def final_status_list(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "final_status_list alive|dead|seki")
        status = args[0].lower()
        if status not in ("alive", "dead", "seki"):
            raise GtpError(f"syntax error: unknown status {args[0]!r} (alive, dead or seki)")
        if status != "alive":
            return ""
        g = self.engine.game
        return " ".join(action_to_vertex(int(a), g.size) for a in np.flatnonzero(g.stones().reshape(-1)))

    async def list_stones(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "list_stones <color>")
        color = _color(args[0])
        g = self.engine.game
        return " ".join(action_to_vertex(int(a), g.size) for a in np.flatnonzero(g.stones().reshape(-1) == color))

    async def showboard(self, ctx: Context, args: list[str]) -> str:
        g = self.engine.game
        caps = g.rec["captures"]
        who = "black" if g.to_move == 1 else "white"
        last = action_to_vertex(g.moves[-1][1], g.size) if g.moves else "none"
        return (f"\n{g}\nmove {len(g.moves)}, {who} to play, last move {last}, komi {g.komi:g}, "
                f"captures black {int(caps[1])} white {int(caps[2])}")

    # ---- time ---------------------------------------------------------------------------
    async def time_settings(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 3, 3, "time_settings <main_time> <byo_yomi_time> <byo_yomi_stones>")
        main = parse_float(args[0], "main time")
        byo = parse_float(args[1], "byo-yomi time")
        stones = parse_int(args[2], "byo-yomi stones")
        if main < 0 or byo < 0 or stones < 0:
            raise GtpError("syntax error: time settings must not be negative")
        self.engine.time.set_gtp(main, byo, stones)
        return ""

    async def kgs_time_settings(self, ctx: Context, args: list[str]) -> str:
        usage = "kgs-time_settings none | absolute <main> | byoyomi <main> <period> <periods> | canadian <main> <time> <stones>"
        if not args:
            raise GtpError(f"syntax error: usage: {usage}")
        kind = args[0].lower()
        want = {"none": 0, "absolute": 1, "byoyomi": 3, "canadian": 3}.get(kind)
        if want is None or len(args) != want + 1:
            raise GtpError(f"syntax error: usage: {usage}")
        main = parse_float(args[1], "main time") if want else 0.0
        try:
            if kind == "byoyomi":
                self.engine.time.set_kind(kind, main, parse_float(args[2], "period time"),
                                          periods=parse_int(args[3], "periods"))
            elif kind == "canadian":
                self.engine.time.set_kind(kind, main, parse_float(args[2], "byo-yomi time"),
                                          stones=parse_int(args[3], "stones"))
            else:
                self.engine.time.set_kind(kind, main)
        except ValueError as e:
            raise GtpError(f"syntax error: {e}") from None
        return ""

    async def time_left(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 3, 3, "time_left <color> <time> <stones>")
        color = _color(args[0])
        t = parse_float(args[1], "time")
        stones = parse_int(args[2], "stones")
        if t < 0 or stones < 0:
            raise GtpError("syntax error: time and stones must not be negative")
        self.engine.time.time_left(color, t, stones)
        return ""

    # ---- analysis -----------------------------------------------------------------------
    def _style(self, name: str) -> str:
        return "lz" if name.startswith("lz-") else "kata" if name.startswith("kata-") else "sabaki"

    def _request(self, name: str, args: list[str]) -> AnalyzeRequest:
        e = self.engine
        a = self.cfg.analysis
        return parse_analyze_args(args, e.size, self._style(name), a.interval_cs, a.max_moves, e.game.to_move)

    async def _report_line(self, pos: Game, req: AnalyzeRequest, score_own: tuple) -> str:
        score, own = score_own
        report = self.engine.report(pos, req, score, own if req.ownership else None)
        return format_report(report, pos.size, req) if report.moves else ""

    async def analyze(self, ctx: Context, args: list[str]) -> object:
        req = self._request(ctx.name, args)
        e = self.engine
        pos = e.position(req.color)
        ctx.begin()
        await e.begin_search(pos, req.avoid, req.allow)
        score_own = await e.root_eval(pos)

        async def report() -> None:
            ctx.emit(await self._report_line(pos, req, score_own))

        await e.think(max_playouts=None, deadline=None, inbox=ctx.inbox,
                      interval_s=req.interval_cs / 100.0, on_report=report)
        return STREAMED

    async def genmove_analyze(self, ctx: Context, args: list[str]) -> object:
        if not args or args[0].lower() not in ("b", "w", "black", "white"):
            raise GtpError("syntax error: usage: genmove_analyze <color> [interval] [keys...]")
        req = self._request(ctx.name, args)
        if req.avoid or req.allow is not None:
            raise GtpError("syntax error: avoid and allow are analysis-only arguments")
        e = self.engine
        assert req.color is not None
        ctx.begin()
        holder: dict[str, tuple] = {}

        async def report(pos: Game) -> None:
            if "root" not in holder:
                holder["root"] = await e.root_eval(pos)
            ctx.emit(await self._report_line(pos, req, holder["root"]))

        t0 = time.perf_counter()
        action = await e.genmove(req.color, interval_s=req.interval_cs / 100.0, on_report=report)
        if self.cfg.protocol.verbose:
            self._log_search(t0)
        ctx.emit(f"play {self._move_text(action)}")
        return STREAMED


def free_handicap_points(n: int, k: int) -> list[int]:
    """``k`` handicap points: the fixed pattern as far as it goes, then the
    empty points farthest from every stone so far (ties: lowest action)."""
    fixed_limit = 0 if n < 7 else 4 if (n == 7 or n % 2 == 0) else 9
    base = min(k, fixed_limit)
    acts = handicap_actions(n, base) if base >= 2 else []
    xs, ys = np.arange(n * n) % n, np.arange(n * n) // n
    if acts:
        dist = np.full(n * n, 1 << 30, dtype=np.int64)
        for a in acts:
            dist = np.minimum(dist, np.abs(xs - a % n) + np.abs(ys - a // n))
    else:  # no pattern on tiny boards: start from the centre
        dist = (2 * n - np.abs(xs - n // 2) - np.abs(ys - n // 2)).astype(np.int64)
    while len(acts) < k:
        dist[acts] = -1
        a = int(np.argmax(dist))
        acts.append(a)
        dist = np.minimum(dist, np.abs(xs - a % n) + np.abs(ys - a // n))
    return acts
