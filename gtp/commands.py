"""The GTP command set: the dispatcher and the standard commands.

Vocabulary
----------
Dispatcher  maps a Command to its handler, writes exactly one response per
            command (``=id ...`` or ``?id ...`` and the closing empty line),
            and turns every exception into a ``?`` answer: no input line can
            crash the engine or leave a response unfinished. The one
            exception passed on is ``OutputClosed`` (the controller left):
            the program ends quietly. Its table joins
            the standard commands here, the analysis commands
            (``analyze_cmds.py``) and KataGo's extensions (``kata_cmds.py``).
Context     what a handler gets (``context.py``); a handler returns its
            success text or STREAMED, and raises GtpError to fail.
ranges      numbers are checked before use (``args.py``): sizes and
            handicap stones by the board, move numbers 1..10^6, times
            0..10^9 seconds, stone and period counts 0..10^6.

Colours are GTP colours (``b``, ``w``, ``black``, ``white``, any case);
vertices are GTP vertices (``D4``, ``d4``, ``pass``). The game rules are the
config's (area scoring, positional superko by default); ``final_score``
counts the board with the engine's dead stones removed, and
``final_status_list`` lists the same judgement (``final_status.py``).
"""
from __future__ import annotations

import os
import time

import numpy as np

from . import __version__ as package_version
from sayuri_async.go.coords import action_to_vertex
from sayuri_async.go.game import Game, IllegalMove, handicap_actions
from sayuri_async.go.scoring import result_string
from sayuri_async.go.sgf import SgfError, dump_sgf, load_sgf_file, write_text_atomic

from .analyze_cmds import AnalysisCommands
from .args import OutOfRange, parse_float, parse_gtp_color, parse_gtp_vertex, parse_int, want_args
from .config import GtpConfig
from .context import STREAMED, Context, Handler, OutputClosed, Writer, log, log_search, move_text
from .engine import Engine, Inbox
from .final_status import final_score as judged_score
from .kata_cmds import KataCommands
from .protocol import Command, GtpError, failure, shown, success

LIZZIE_VERSION = "0.16"
MAX_MOVE_NUMBER = 1_000_000
MAX_SECONDS = 1e9  # about 31 years: any real clock
MAX_COUNT = 1_000_000  # byo-yomi stones or periods


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
        }
        self.handlers.update(AnalysisCommands(engine, config).handlers())
        self.handlers.update(KataCommands(engine, self.boardsize).handlers())

    # ---- dispatch ------------------------------------------------------------
    async def execute(self, cmd: Command, inbox: Inbox) -> None:
        """Run one command and write its complete response."""
        ctx = Context(cmd.id, self.engine, inbox, self.write, cmd.name)
        try:
            if cmd.error:
                raise GtpError(cmd.error)
            if not cmd.name:
                raise GtpError("syntax error: missing command after the id")
            handler = self.handlers.get(cmd.name)
            if handler is None:
                raise GtpError(f"unknown command {shown(cmd.name)}")
            result = await handler(ctx, cmd.args)
        except GtpError as e:
            self._fail(ctx, str(e))
            return
        except OutputClosed:  # the controller left: no one to answer, nothing went wrong
            raise
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
        lo, hi = self.engine.size_range
        try:
            n = parse_int(args[0], "board size", lo, hi)
        except OutOfRange:
            raise GtpError(f"unacceptable size {shown(args[0])} (this engine and network play {lo}..{hi})") from None
        self.engine.new_game(n)
        return ""

    async def clear_board(self, ctx: Context, args: list[str]) -> str:
        self.engine.new_game()
        return ""

    async def komi(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "komi <number>")
        k = parse_float(args[0], "komi", -1000, 1000)
        self.engine.set_komi(k)
        return ""

    def _require_empty(self) -> Game:
        g = self.engine.game
        if g.moves or g.handicap or np.any(g.stones()):
            raise GtpError("board not empty")
        return g

    async def fixed_handicap(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "fixed_handicap <stones>")
        k = parse_int(args[0], "number of stones", 2, 9)
        g = self._require_empty()
        try:
            acts = handicap_actions(g.size, k)
        except ValueError as e:
            raise GtpError(f"invalid number of stones: {e}") from None
        return self._place_handicap(acts)

    async def place_free_handicap(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "place_free_handicap <stones>")
        n = self.engine.size
        k = parse_int(args[0], f"number of stones on {n}x{n}", 2, n * n - 1)
        self._require_empty()
        return self._place_handicap(free_handicap_points(n, k))

    async def set_free_handicap(self, ctx: Context, args: list[str]) -> str:
        g = self._require_empty()
        n = g.size
        if not 2 <= len(args) <= n * n - 1:
            raise GtpError(f"syntax error: set_free_handicap needs 2..{n * n - 1} vertices")
        acts = [parse_gtp_vertex(v, n) for v in args]
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
        move_number = parse_int(args[1], "move number", 1, MAX_MOVE_NUMBER) if len(args) == 2 else None
        if not os.path.isfile(args[0]):  # also keeps FIFOs and devices from blocking us
            raise GtpError(f"cannot load file: {args[0]!r} is not a readable file")
        lo, hi = self.engine.size_range
        try:  # the sizes the engine plays (boardsize takes the same ones)
            game, _ = load_sgf_file(args[0], default_komi=self.engine.game.komi, sizes=(lo, hi))
        except SgfError as e:
            raise GtpError(f"cannot load file: {e}") from None
        if move_number is not None:
            while len(game.moves) >= move_number and game.undo():
                pass
        self.engine.replace_game(game)
        return ""

    async def printsgf(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 0, 1, "printsgf [file | -]")
        text = dump_sgf(self.engine.game)
        if args and args[0] != "-":  # "-": the answer, as with no file
            try:
                write_text_atomic(args[0], text)
            except OSError as e:
                raise GtpError(f"cannot write {args[0]}: {e.strerror or e}") from None
            return ""
        return "\n" + text.strip()

    # ---- moves ------------------------------------------------------------------------
    async def play(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 2, 2, "play <color> <vertex>")
        color = parse_gtp_color(args[0])
        a = parse_gtp_vertex(args[1], self.engine.size)
        try:
            self.engine.game.play(a, color)
        except IllegalMove as e:
            raise GtpError(f"illegal move: {str(e).split(': ')[-1]}") from None
        return ""

    async def is_legal(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 2, 2, "is_legal <color> <vertex>")
        color = parse_gtp_color(args[0])
        a = parse_gtp_vertex(args[1], self.engine.size)
        return "1" if self.engine.game.why_illegal(a, color) is None else "0"

    async def undo(self, ctx: Context, args: list[str]) -> str:
        if not self.engine.game.undo():
            raise GtpError("cannot undo")
        return ""

    async def genmove(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "genmove <color>")
        color = parse_gtp_color(args[0])
        t0 = time.perf_counter()
        action = await self.engine.genmove(color)
        if self.cfg.protocol.verbose:
            log_search(self.engine, t0)
        return move_text(self.engine, action)

    # ---- scoring and listing --------------------------------------------------------
    async def final_score(self, ctx: Context, args: list[str]) -> str:
        g = self.engine.game
        status = await self.engine.stone_status()
        return result_string(judged_score(g.rec, status, g.komi, g.rules.scoring == "territory"))

    async def final_status_list(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "final_status_list alive|dead|seki")
        which = args[0].lower()
        if which not in ("alive", "dead", "seki"):
            raise GtpError(f"syntax error: unknown status {shown(args[0])} (alive, dead or seki)")
        status = await self.engine.stone_status()
        return " ".join(action_to_vertex(int(a), self.engine.size) for a in status.points(which))

    async def list_stones(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 1, 1, "list_stones <color>")
        color = parse_gtp_color(args[0])
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
        main = parse_float(args[0], "main time", 0, MAX_SECONDS)
        byo = parse_float(args[1], "byo-yomi time", 0, MAX_SECONDS)
        stones = parse_int(args[2], "byo-yomi stones", 0, MAX_COUNT)
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
        main = parse_float(args[1], "main time", 0, MAX_SECONDS) if want else 0.0
        try:
            if kind == "byoyomi":
                self.engine.time.set_kind(kind, main, parse_float(args[2], "period time", 0, MAX_SECONDS),
                                          periods=parse_int(args[3], "periods", 0, MAX_COUNT))
            elif kind == "canadian":
                self.engine.time.set_kind(kind, main, parse_float(args[2], "byo-yomi time", 0, MAX_SECONDS),
                                          stones=parse_int(args[3], "stones", 0, MAX_COUNT))
            else:
                self.engine.time.set_kind(kind, main)
        except ValueError as e:
            raise GtpError(f"syntax error: {e}") from None
        return ""

    async def time_left(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 3, 3, "time_left <color> <time> <stones>")
        color = parse_gtp_color(args[0])
        t = parse_float(args[1], "time", 0, MAX_SECONDS)
        stones = parse_int(args[2], "stones", 0, MAX_COUNT)
        self.engine.time.time_left(color, t, stones)
        return ""


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
