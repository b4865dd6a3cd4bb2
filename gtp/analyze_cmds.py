"""The analysis commands: ``analyze``, ``lz-analyze``, ``kata-analyze`` (a
stream of ``info`` lines until input arrives) and their ``*genmove_analyze``
forms (the lines while ``genmove`` searches, then ``play V``).

Vocabulary
----------
AnalysisCommands  the handlers, for the Dispatcher's table (``handlers()``).
style        from the command's prefix: ``lz-`` lz, ``kata-`` kata, none
             sabaki (see ``analysis.py``).
colour       optional in every form: the side to move when left out, as
             KataGo does (``lz-genmove_analyze 10`` moves for the side on
             turn).
reports      written by ``report()`` closures that never wait (the root's
             evaluation is made before the search): the engine's watchdog
             calls them while the search waits on the network
             (``engine.py``).
"""
from __future__ import annotations

import time

from sayuri_async.go.game import Game

from .analysis import format_report
from .analyze_args import AnalyzeRequest, parse_analyze_args
from .config import GtpConfig
from .context import STREAMED, Context, Handler, log_search, move_text
from .engine import Engine

ANALYZE = ("analyze", "lz-analyze", "kata-analyze")
GENMOVE_ANALYZE = ("genmove_analyze", "lz-genmove_analyze", "kata-genmove_analyze")


def style_of(name: str) -> str:
    return "lz" if name.startswith("lz-") else "kata" if name.startswith("kata-") else "sabaki"


class AnalysisCommands:
    def __init__(self, engine: Engine, config: GtpConfig) -> None:
        self.engine = engine
        self.cfg = config

    def handlers(self) -> dict[str, Handler]:
        table: dict[str, Handler] = {name: self.analyze for name in ANALYZE}
        table.update({name: self.genmove_analyze for name in GENMOVE_ANALYZE})
        return table

    def _request(self, name: str, args: list[str]) -> AnalyzeRequest:
        e = self.engine
        a = self.cfg.analysis
        return parse_analyze_args(args, e.size, style_of(name), a.interval_cs, a.max_moves, e.game.to_move)

    async def _report_line(self, pos: Game, req: AnalyzeRequest, score_own: tuple) -> str:
        score, own = score_own
        report = self.engine.report(pos, req, score, own if req.wants_ownership else None)
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
        req = self._request(ctx.name, args)
        e = self.engine
        color = req.color or e.game.to_move
        ctx.begin()
        root = await e.root_eval(e.position(color))  # before the search: a report never waits on the network

        async def report(pos: Game) -> None:
            ctx.emit(await self._report_line(pos, req, root))

        t0 = time.perf_counter()
        action = await e.genmove(color, interval_s=req.interval_cs / 100.0, on_report=report,
                                 avoid=req.avoid, allow=req.allow)
        if self.cfg.protocol.verbose:
            log_search(e, t0)
        ctx.emit(f"play {move_text(e, action)}")
        return STREAMED
