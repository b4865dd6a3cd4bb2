"""The live self-play view (rich) with interactive tuning keys.

Vocabulary
----------
TuiReporter the reporter ``run_selfplay`` drives: ``update(statuses)`` every
            ~0.5 s redraws the view and returns the control dicts of the keys
            pressed since the last call; ``close(statuses)`` restores the
            terminal and prints the run's summary.
view        ``reporter.view()``: one renderable, top to bottom: header
            (devices, network, boards, processes, elapsed), verdict,
            throughput (now = last 5 s, run = since start, a sparkline of the
            last minute), utilization (GPU busy from our inference worker,
            the driver's utilization and memory through NVML when
            nvidia-ml-py is installed, event-loop busy per process, queue
            depth and wait), batches (size histogram, flush reasons, settings
            against the rule of thumb), the keys, games in progress.
GpuProbe    optional NVML reader: driver utilization and memory per CUDA
            device; ``available`` is False (and the view says why) without
            nvidia-ml-py, without a driver, or on the CPU.
pending     settings the keys changed that the engines have not reported back
            yet (several processes answer a little later); shown and
            compounded on until the status agrees or 3 s pass.
"""
from __future__ import annotations

import atexit
import os
import sys
import time
from pathlib import Path

from rich.console import Console, Group
from rich.panel import Panel
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from .config import SelfplayConfig
from .keys import FIELDS, HELP, KeyHandler, KeyReader
from .report import GAMES_PER_BATCH, History, Window, aggregate, diagnose, summary_lines

SPARK = "▁▂▃▄▅▆▇█"
PENDING_S = 3.0
VERDICT_STYLE = {
    "warming up": "dim", "paused": "yellow", "CPU-bound": "bold red", "starved": "bold yellow",
    "batch too small": "bold yellow", "GPU-bound": "bold green", "timeouts": "yellow", "contended": "bold red",
    "latency-bound": "yellow", "balanced": "green",
}
NARROW = 120  # below this many columns the panels stack


def sparkline(values: list[float], width: int = 24) -> str:
    """``values`` squeezed into ``width`` block characters, scaled to their max."""
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        values = [sum(values[int(i * step):max(int((i + 1) * step), int(i * step) + 1)])
                  / max(int((i + 1) * step) - int(i * step), 1) for i in range(width)]
    top = max(values)
    if top <= 0:
        return SPARK[0] * len(values)
    return "".join(SPARK[min(int(v / top * (len(SPARK) - 1) + 0.5), len(SPARK) - 1)] for v in values)


def bar(frac: float, width: int = 20) -> str:
    frac = min(max(frac, 0.0), 1.0)
    full = int(frac * width + 0.5)
    return "█" * full + "·" * (width - full)


def histogram_bins(hist, batch_size: int, bins: int = 8) -> list[tuple[str, int]]:
    """Batch counts in ``bins`` equal ranges of sizes 1..max(batch_size, largest seen)."""
    counts = [int(x) for x in hist]
    seen = max((i for i, c in enumerate(counts) if c), default=0)
    top = max(batch_size, seen, 1)
    bins = min(bins, top)
    out = []
    for k in range(bins):
        lo = k * top // bins + 1
        hi = (k + 1) * top // bins
        n = sum(counts[lo:hi + 1])
        out.append((f"{lo}" if lo == hi else f"{lo}-{hi}", n))
    return out


def fmt_rate(x: float) -> str:
    if x >= 1e5:
        return f"{x / 1e3:.0f}k"
    if x >= 1e4:
        return f"{x / 1e3:.1f}k"
    if x >= 100:
        return f"{x:.0f}"
    return f"{x:.2f}"


def fmt_time(s: float) -> str:
    s = int(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class GpuProbe:
    """Driver utilization and memory through NVML (nvidia-ml-py, optional).
    CUDA index i is read as NVML index i, mapped through a numeric
    CUDA_VISIBLE_DEVICES when set."""

    def __init__(self, devices: list[str]) -> None:
        self.handles: list = []
        self.nvml = None
        self.why = ""
        cuda = [d for d in devices if d.startswith("cuda")]
        if not cuda:
            self.why = "no CUDA device in use"
            return
        try:
            import pynvml

            pynvml.nvmlInit()
        except ImportError:
            self.why = "nvidia-ml-py not installed"
            return
        except Exception as e:  # NVMLError: no driver, no permission
            self.why = f"NVML unavailable ({e})"
            return
        visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
        for d in cuda:
            idx = int(d.split(":")[1]) if ":" in d else 0
            if visible and all(v.isdigit() for v in visible) and idx < len(visible):
                idx = int(visible[idx])
            try:
                self.handles.append((d, pynvml.nvmlDeviceGetHandleByIndex(idx)))
            except Exception as e:
                self.why = f"NVML: {d}: {e}"
        self.nvml = pynvml

    @property
    def available(self) -> bool:
        return bool(self.handles)

    def read(self) -> list[tuple[str, float, float, float]]:
        """(device, utilization 0..1, memory used GiB, memory total GiB) each."""
        out = []
        for d, h in self.handles:
            try:
                u = self.nvml.nvmlDeviceGetUtilizationRates(h)
                m = self.nvml.nvmlDeviceGetMemoryInfo(h)
                out.append((d, u.gpu / 100.0, m.used / 2**30, m.total / 2**30))
            except Exception:
                continue
        return out


class TuiReporter:
    """The live view and tuning keys. ``interactive=False`` (tests) draws
    nothing and reads no terminal: call ``view()`` and ``press()``."""

    def __init__(self, cfg: SelfplayConfig, console: Console | None = None, interactive: bool = True,
                 probe: GpuProbe | None = None) -> None:
        self.cfg = cfg
        self.console = console or Console()
        self.interactive = interactive
        self.devices = [d.strip() for d in cfg.device.split(",") if d.strip()] or ["cpu"]
        self.on_gpu = any(d.startswith("cuda") for d in self.devices)
        self.window = Window(5.0, devices=len(self.devices))
        self.history = History(60.0)
        self.probe = probe if probe is not None else GpuProbe(self.devices)
        cap = cfg.batch_size if cfg.weights else 1024
        note = (f"a network's backend is built for at most {cap} (restart with a larger --batch-size to go higher)"
                if cfg.weights else "")
        self.keys = KeyHandler(max_batch=cap, batch_cap_note=note)
        self.reader: KeyReader | None = None
        self.live = None
        self.agg: dict = {}
        self.recent: dict = {}
        self.overall: dict = {}
        self._typed: list[str] = []
        self._pending: dict[str, tuple[object, float]] = {}
        self._closed = False
        self._old_hook = None

    # ---- reporter protocol -------------------------------------------
    def update(self, statuses: list[dict]) -> list[dict]:
        if self.interactive and self.live is None and not self._closed:
            self._start()
        agg = aggregate(statuses)
        if agg:
            self.agg = agg
            self.window.push(agg)
            self.recent = self.window.recent()
            self.overall = self.window.overall()
            self.history.push(agg["elapsed"], self.recent)
        chars = "".join(self._typed)
        self._typed.clear()
        if self.reader is not None:
            chars += self.reader.drain()
        controls = self.handle(chars) if chars else []
        if self.live is not None:
            self.live.update(self.view(), refresh=True)
        return controls

    def close(self, statuses: list[dict]) -> None:
        agg = aggregate(statuses)
        if agg:
            self.agg = agg
            self.window.push(agg)
            self.overall = self.window.overall()
        self._stop_terminal()
        if self.interactive:
            for line in summary_lines(self.agg, self.overall):
                self.console.print(line, highlight=False)

    # ---- keys ------------------------------------------------------------
    def press(self, chars: str) -> None:
        """Queue key characters as if typed (handled at the next update)."""
        self._typed.append(chars)

    def settings(self) -> dict:
        """The engines' settings with pending key changes laid over them."""
        s = dict(self.agg.get("settings", {})) if self.agg else {
            "batch_size": self.cfg.batch_size, "parallel_games": self.cfg.parallel_games,
            "timeout_ms": self.cfg.timeout_ms, "paused": False}
        now = time.monotonic()
        for k, (v, t) in list(self._pending.items()):
            if s.get(k) == v or now - t > PENDING_S:
                del self._pending[k]
            else:
                s[k] = v
        return s

    def handle(self, chars: str) -> list[dict]:
        s = self.settings()
        controls = self.keys.feed(chars, s)
        now = time.monotonic()
        for c in controls:
            for k, v in c.items():
                if k != "stop":
                    self._pending["paused" if k == "pause" else k] = (v, now)
        return controls

    # ---- terminal ----------------------------------------------------------
    def _start(self) -> None:
        from rich.live import Live

        self.reader = KeyReader()
        self.reader.start()
        self.live = Live(self.view(), console=self.console, screen=True, auto_refresh=False,
                         redirect_stdout=False, redirect_stderr=False)
        self.live.start()
        atexit.register(self._stop_terminal)
        # an uncaught error must reach the normal screen, not the alternate one
        old = self._old_hook = sys.excepthook

        def hook(*exc) -> None:
            self._stop_terminal()
            old(*exc)

        sys.excepthook = hook

    def _stop_terminal(self) -> None:
        self._closed = True
        if self._old_hook is not None:
            sys.excepthook, self._old_hook = self._old_hook, None
        if self.live is not None:
            try:
                self.live.stop()
            finally:
                self.live = None
        if self.reader is not None:
            self.reader.stop()
            self.reader = None

    # ---- view ----------------------------------------------------------------
    def view(self):
        """Header, verdict, figures and games, cropped to the console's height
        so that the keys line stays visible at the bottom."""
        con = self.console
        opts = con.options.update(height=None)
        body = Group(self._header(), self._verdict(), self._middle(), self._batches())
        footer = self._footer()
        lines = con.render_lines(body, opts, pad=False)
        height = con.height or 50
        avail = height - len(con.render_lines(footer, opts, pad=False)) - 1
        rows = avail - len(lines) - 4  # games title, header row, caption, spacing
        if rows > 0 and self.agg.get("games"):
            lines += con.render_lines(self._games(rows), opts, pad=False)
        segs: list[Segment] = []
        for line in lines[:max(avail, 0)]:
            segs.extend(line)
            segs.append(Segment.line())
        return Group(Segments(segs), footer)

    @property
    def narrow(self) -> bool:
        return self.console.width < NARROW

    def _header(self) -> Text:
        cfg, agg = self.cfg, self.agg
        net = Path(cfg.weights).name if cfg.weights else "random (no weights)"
        boards = ", ".join(f"{n}x{n}" for n in cfg.board_sizes)
        t = Text()
        t.append(" sayuri-async ", style="bold reverse")
        t.append(f"  device {', '.join(self.devices)}  net {net}  board {boards}  "
                 f"procs {cfg.procs * len(self.devices)}  ")
        t.append(f"elapsed {fmt_time(agg.get('elapsed', 0.0))}", style="bold")
        done = agg.get("finished", 0)
        target = f"/{cfg.num_games}" if cfg.num_games else ""
        load = self.recent.get("host_load", 0.0)
        t.append(f"  load {load:.1f}/core", style="bold red" if load >= 1.0 else "")
        t.append(f"  games {done}{target} done, {len(agg.get('games', []))} live")
        if self.settings().get("paused"):
            t.append("  PAUSED", style="bold yellow reverse")
        return t

    def _verdict(self) -> Panel:
        v = diagnose(self.recent, self.settings())
        return Panel(Text(v.text, style=VERDICT_STYLE.get(v.kind, "")), title="verdict", title_align="left",
                     border_style=VERDICT_STYLE.get(v.kind, ""), padding=(0, 1))

    def _throughput(self) -> Table:
        r, o = self.recent, self.overall
        b = self.settings().get("batch_size", self.cfg.batch_size)
        tb = Table(title="throughput", title_justify="left", expand=True, box=None, padding=(0, 1))
        tb.add_column("figure")
        tb.add_column("now", justify="right")
        tb.add_column("run", justify="right")
        tb.add_column("last minute", no_wrap=True)
        rows = [("nnEvals/s", "nnEvals/s"), ("nnBatches/s", "nnBatches/s"), ("games/s", "games/s"),
                ("moves/s", "moves/s"), ("playouts/s", "playouts/s")]
        for label, key in rows:
            tb.add_row(label, fmt_rate(r.get(key, 0.0)), fmt_rate(o.get(key, 0.0)),
                       Text(sparkline(self.history.series(key)), style="cyan"))
        tb.add_row("avgBatchSize", f"{r.get('avgBatchSize', 0.0):.1f} / {b}", f"{o.get('avgBatchSize', 0.0):.1f}",
                   Text(sparkline(self.history.series("avgBatchSize")), style="cyan"))
        if self.cfg.cache_size:
            tb.add_row("cache hit rate", f"{r.get('cache_hit_rate', 0.0):.0%}", f"{o.get('cache_hit_rate', 0.0):.0%}",
                       Text(sparkline(self.history.series("cache_hit_rate")), style="cyan"))
        else:
            tb.add_row("cache hit rate", "off", "", Text("cache_size = 0", style="dim"))
        return tb

    def _utilization(self) -> Table:
        r = self.recent
        tb = Table(title="utilization", title_justify="left", expand=True, box=None, padding=(0, 1))
        tb.add_column("figure")
        tb.add_column("", no_wrap=True)
        tb.add_column("", justify="right")
        who = "GPU busy (ours)" if self.on_gpu else "backend busy (ours)"
        g = r.get("gpu_busy", 0.0)
        tb.add_row(who, Text(bar(g), style="green"), f"{g:.0%}")
        if self.probe.available:
            for dev, util, used, total in self.probe.read():
                tb.add_row(f"{dev} driver", Text(bar(util), style="green"), f"{util:.0%}  mem {used:.1f}/{total:.0f} GiB")
        else:
            tb.add_row("driver (NVML)", Text(self.probe.why or "n/a", style="dim"), "")
        loops = r.get("loop_busy_procs") or [r.get("loop_busy", 0.0)]
        for i, x in enumerate(loops[:8]):
            tb.add_row(f"loop busy p{i}", Text(bar(x), style="red" if x >= 0.9 else "yellow"), f"{x:.0%}")
        if len(loops) > 8:
            tb.add_row(f"loop busy ({len(loops)} procs)", "", f"max {max(loops):.0%}")
        tb.add_row("queue depth", f"{r.get('queue_depth', 0)} requests, {r.get('in_flight', 0)} batch(es) in flight", "")
        tb.add_row("queue wait", f"{r.get('queue_wait_ms', 0.0):.2f} ms per request", "")
        return tb

    def _middle(self):
        if self.narrow:
            return Group(self._throughput(), self._utilization())
        grid = Table.grid(expand=True, padding=(0, 2))
        grid.add_column(ratio=1)
        grid.add_column(ratio=1)
        grid.add_row(self._throughput(), self._utilization())
        return grid

    def _batches(self) -> Table:
        r, s = self.recent, self.settings()
        b, p = int(s.get("batch_size", 1)), int(s.get("parallel_games", 1))
        hist = Table(title="batch sizes (last 5 s)", title_justify="left", box=None, padding=(0, 1), expand=True)
        hist.add_column("size", justify="right")
        hist.add_column("", no_wrap=True)
        hist.add_column("batches", justify="right")
        bins = histogram_bins(r.get("hist", []), b) if "hist" in r else []
        total = sum(n for _, n in bins) or 1
        for label, n in bins:
            hist.add_row(label, Text(bar(n / total, 12), style="cyan"), str(n))
        fl = Table(title="flush reasons", title_justify="left", box=None, padding=(0, 1), expand=True)
        fl.add_column("reason")
        fl.add_column("", no_wrap=True)
        fl.add_column("share", justify="right")
        share = r.get("flush_share", {})
        for key, label in (("full", "full"), ("waiting", "all waiting"), ("timeout", "timeout")):
            x = share.get(key, 0.0)
            fl.add_row(label, Text(bar(x, 12), style="magenta"), f"{x:.0%}")
        st = Table(title="settings", title_justify="left", box=None, padding=(0, 1), expand=True)
        st.add_column("")
        st.add_column("", justify="right")
        want = GAMES_PER_BATCH * b
        ok = p >= want
        st.add_row("batch_size", str(b))
        st.add_row("parallel_games", Text(str(p), style="green" if ok else "yellow"))
        st.add_row("rule of thumb", Text(f"{GAMES_PER_BATCH} x batch_size = {want}", style="" if ok else "yellow"))
        st.add_row("timeout_ms", f"{float(s.get('timeout_ms', 0.0)):g}")
        st.add_row("per process", f"{self.cfg.procs * len(self.devices)} process(es)")
        grid = Table.grid(expand=True, padding=(0, 2))
        if self.narrow:
            line = Text("batch sizes: ")
            for label, n in bins:
                line.append(f"{label}:", style="dim")
                line.append(f"{n / total:.0%} ")
            grid.add_column(ratio=1)
            grid.add_column(ratio=1)
            grid.add_row(fl, st)
            return Group(grid, line)
        for _ in range(3):
            grid.add_column(ratio=1)
        grid.add_row(hist, fl, st)
        return grid

    def _footer(self) -> Text:
        t = Text()
        for key, what in HELP:
            t.append(f" {key} ", style="bold reverse")
            t.append(f" {what}  ")
        t.append("\n selected: ")
        for f in FIELDS:
            t.append(f" {f} ", style="bold reverse cyan" if f == self.keys.selected else "dim")
        if self.keys.message:
            t.append(f"   {self.keys.message}", style="italic")
        return t

    def _games(self, rows: int) -> Table:
        games = sorted(self.agg.get("games", []), key=lambda g: -g.get("move", 0))
        groups = max(1, min(4, self.console.width // 38))
        shown = games[:rows * groups]
        tb = Table(title=f"games in progress ({len(games)})", title_justify="left", box=None, padding=(0, 1))
        multi = len(self.cfg.board_sizes) > 1
        for _ in range(groups):
            if multi:
                tb.add_column("size", justify="right", style="dim")
            tb.add_column("move", justify="right")
            tb.add_column("playouts", justify="right")
            tb.add_column("value", justify="right")
            tb.add_column(" ")
        nrows = (len(shown) + groups - 1) // groups
        for i in range(nrows):
            cells: list = []
            for gi in range(groups):
                k = gi * nrows + i
                if k < len(shown):
                    g = shown[k]
                    v = float(g.get("value", 0.0))
                    if multi:
                        cells.append(f"{g.get('size', 0)}")
                    cells += [str(g.get("move", 0)), str(g.get("playouts", 0)),
                              Text(f"{v:.2f}", style="green" if v > 0.6 else "red" if v < 0.4 else ""), ""]
                else:
                    cells += [""] * (5 if multi else 4)
            tb.add_row(*cells)
        if len(games) > len(shown):
            tb.caption = f"and {len(games) - len(shown)} more"
        return tb
