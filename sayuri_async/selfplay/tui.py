"""The live self-play view (rich) with interactive tuning keys.

Vocabulary
----------
TuiReporter the reporter ``run_selfplay`` drives: ``update(statuses)`` every
            ~0.5 s redraws the view and returns the control dicts of the keys
            pressed since the last call; ``close(statuses)`` restores the
            terminal and prints the run's summary.
view        ``reporter.view()``: one rich Text, top to bottom: header
            (devices, network, boards, processes, elapsed), verdict,
            throughput (now = last 5 s, run = since start, a sparkline of the
            last minute), utilization (GPU busy from our inference worker,
            the driver's utilization and memory through NVML when
            nvidia-ml-py is installed, event-loop busy per process, queue
            depth and wait), batches (size histogram, the device's curve of
            evals/s per batch with the current and the advised batch marked
            (``curve_view``; beside throughput when the panels stack, absent
            without measured rates), flush reasons, settings against the rule
            of thumb), games in progress, and the keys on the last lines (the
            rest is cropped to the terminal's height).
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
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.text import Text

from .config import SelfplayConfig
from .keys import FIELDS, HELP, KeyHandler, KeyReader
from .curve_view import curve_lines, fine_bar
from .report import (
    LOOP_SATURATED, Figures, History, Verdict, Window, aggregate, diagnose, games_needed, summary_lines,
)
from .status import EngineSettings, Status

SPARK = "▁▂▃▄▅▆▇█"
PENDING_S = 3.0
VERDICT_STYLE = {
    "warming up": "dim", "paused": "yellow", "finishing": "cyan", "CPU-bound": "bold red", "starved": "bold yellow",
    "batch too small": "bold yellow", "GPU-bound": "bold green", "timeouts": "yellow", "contended": "bold red",
    "latency-bound": "yellow", "balanced": "green",
}
NARROW = 120  # below this many columns the panels stack
CURVE_WIDTH = 34  # the device's curve beside throughput when the panels stack
THROUGHPUT_MIN = 45  # columns throughput needs for its figures and a short sparkline


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
                 probe: GpuProbe | None = None, note: str = "") -> None:
        self.cfg = cfg
        self.note = note  # what batch_size / procs = "auto" picked, shown under the header
        self.console = console or Console()
        self.interactive = interactive
        self.devices = [d.strip() for d in cfg.device.split(",") if d.strip()] or ["cpu"]
        self.on_gpu = any(d.startswith(("cuda", "model")) for d in self.devices)
        self.window = Window(5.0, devices=len(self.devices))
        self.history = History(60.0)
        self.probe = probe if probe is not None else GpuProbe(self.devices)
        cap = cfg.max_batch
        self.keys = KeyHandler(max_batch=cap, batch_cap_note=f"the backend is built for at most {cap} "
                                                             f"(restart with a larger --max-batch-size to go higher)")
        self.leaves = max(1, int(getattr(cfg.search, "leaves_per_await", 1)))
        self.reader: KeyReader | None = None
        self.live = None
        self.agg: Status | None = None
        self.recent: Figures | None = None
        self.overall: Figures | None = None
        self._typed: list[str] = []
        self._pending: dict[str, tuple[object, float]] = {}
        self._closed = False
        self._old_hook = None
        self._changed_at = -1e9

    # ---- reporter protocol -------------------------------------------
    def update(self, statuses: list[Status]) -> list[dict]:
        if self.interactive and self.live is None and not self._closed:
            self._start()
        agg = aggregate(statuses)
        if agg is not None:
            self.agg = agg
            self.window.push(agg)
            self.recent = self.window.recent()
            self.overall = self.window.overall()
            self.history.push(agg.elapsed, self.recent)
        chars = "".join(self._typed)
        self._typed.clear()
        if self.reader is not None:
            chars += self.reader.drain()
        controls = self.handle(chars) if chars else []
        if self.live is not None:
            self.live.update(self.view(), refresh=True)
        return controls

    def close(self, statuses: list[Status]) -> None:
        agg = aggregate(statuses)
        if agg is not None:
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

    def settings(self) -> EngineSettings:
        """The engines' settings with pending key changes laid over them."""
        s = replace(self.agg.settings) if self.agg is not None else EngineSettings(
            batch_size=self.cfg.batch_size, parallel_games=self.cfg.parallel_games,
            timeout_ms=self.cfg.timeout_ms, paused=False)
        now = time.monotonic()
        for k, (v, t) in list(self._pending.items()):
            if getattr(s, k) == v or now - t > PENDING_S:
                del self._pending[k]
            else:
                setattr(s, k, v)
        s.leaves_per_await = self.leaves
        return s

    def handle(self, chars: str) -> list[dict]:
        s = self.settings()
        controls = self.keys.feed(chars, s)
        now = time.monotonic()
        for c in controls:
            for k, v in c.items():
                if k != "stop":
                    self._pending["paused" if k == "pause" else k] = (v, now)
                    self._changed_at = now
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
    # Plain Text lines laid out by hand: rich Tables cost ~50 ms a frame, and
    # in a one-process run the frame is drawn on the engine's event loop.
    def view(self) -> Text:
        """Header, verdict, figures and games, cropped to the console's height
        so that the keys line stays visible at the bottom."""
        w = max(self.console.width, 40)
        verdict = diagnose(self.recent, self.settings())
        lines = [*self._header(w), *self._verdict(w, verdict), Text("")]
        if w < NARROW:
            curve = self._curve(CURVE_WIDTH, verdict, rows=7)  # beside throughput's 7 rows
            if curve and w - CURVE_WIDTH - 1 >= THROUGHPUT_MIN:
                tw = w - CURVE_WIDTH - 1
                lines += hjoin([self._throughput(tw), [], curve], [tw, 1, CURVE_WIDTH])
            else:
                lines += self._throughput(w) + ([Text(""), *curve] if curve else [])
            lines += [Text("")] + self._utilization(w) + [Text("")]
            lines += hjoin([self._flush(w // 2), self._settings(w - w // 2)], [w // 2, w - w // 2])
            lines.append(self._hist_line(w))
        else:
            half = w // 2
            lines += hjoin([self._throughput(half - 2), self._utilization(w - half)], [half, w - half])
            lines.append(Text(""))
            third = w // 3
            widths = [third, third, w - 2 * third]
            curve = self._curve(third - 2, verdict)
            if curve:  # the curve beside the histogram, flush reasons under the settings
                right = self._settings(widths[2]) + [Text("")] + self._flush(widths[2] - 2)
                lines += hjoin([self._hist(third - 2), curve, right], widths)
            else:
                lines += hjoin([self._hist(third - 2), self._flush(third - 2), self._settings(widths[2])], widths)
        footer = self._footer(w)
        avail = (self.console.height or 50) - len(footer)
        rows = avail - len(lines) - 3
        if rows > 0 and self.agg is not None and self.agg.games:
            lines.append(Text(""))
            lines += self._games(w, rows)
        out = lines[:max(avail, 0)] + footer
        for line in out:
            line.no_wrap = True
            line.overflow = "crop"
        view = Text("\n", no_wrap=True, overflow="crop").join(out)
        view.no_wrap, view.overflow = True, "crop"
        return view

    def _header(self, w: int) -> list[Text]:
        cfg, agg, r = self.cfg, self.agg, self.recent
        net = (agg.network if agg is not None else "") or (Path(cfg.weights).name if cfg.weights
                                                             else "random (no weights)")
        boards = ", ".join(f"{n}x{n}" for n in cfg.board_sizes)
        first = Text(" sayuri-async ", style="bold reverse")
        first.append(f"  device {', '.join(self.devices)}  net {net}  board {boards}  "
                     f"procs {cfg.procs * len(self.devices)}")
        second = Text("  ")
        second.append(f"elapsed {fmt_time(agg.elapsed if agg else 0.0)}", style="bold")
        load = r.host_load if r is not None else 0.0
        second.append(f"  load {load:.1f}/core", style="bold red" if load >= 1.0 else "")
        target = f"/{cfg.num_games}" if cfg.num_games else ""
        second.append(f"  games {agg.finished if agg else 0}{target} done, {len(agg.games) if agg else 0} live")
        if self.settings().paused:
            second.append("  PAUSED", style="bold yellow reverse")
        lines = [first + second] if first.cell_len + second.cell_len <= w else [first, second]
        if self.note:
            lines.append(Text(f"  {self.note}", style="dim"))
        return lines

    def _verdict(self, w: int, v: Verdict) -> list[Text]:
        style = VERDICT_STYLE.get(v.kind, "")
        words, out, cur = v.text.split(" "), [], ""
        for word in words:  # wrap by hand, the label only on the first line
            if cur and len(cur) + 1 + len(word) > w - 10:
                out.append(cur)
                cur = word
            else:
                cur = f"{cur} {word}" if cur else word
        out.append(cur)
        lines = []
        for i, text in enumerate(out):
            t = Text(" verdict " if i == 0 else "         ", style="bold reverse" if i == 0 else "")
            t.append(f" {text}", style=style)
            lines.append(t)
        return lines

    def _throughput(self, w: int) -> list[Text]:
        r, o = self.recent or Figures(), self.overall or Figures()
        b = self.settings().batch_size
        spark_w = max(w - 40, 4)
        tail = "last minute" if spark_w >= 11 else "1 min"
        lines = [Text(f"{'throughput':<16}{'now':>11}{'run':>9}   {tail}", style="bold")]

        def row(label: str, now: str, run: str, name: str | None) -> None:
            t = Text(f"{label:<16}{now:>11}{run:>9}   ")
            if name is None:
                t.append("cache_size = 0", style="dim")
            else:
                t.append(sparkline(self.history.series(name), spark_w), style="cyan")
            lines.append(t)

        for label, name in (("nnEvals/s", "nn_evals_s"), ("nnBatches/s", "nn_batches_s"), ("games/s", "games_s"),
                            ("moves/s", "moves_s"), ("playouts/s", "playouts_s")):
            row(label, fmt_rate(getattr(r, name)), fmt_rate(getattr(o, name)), name)
        row("avgBatchSize", f"{r.avg_batch_size:.1f} / {b}", f"{o.avg_batch_size:.1f}", "avg_batch_size")
        if self.cfg.cache_size:
            row("cache hit rate", f"{r.cache_hit_rate:.0%}", f"{o.cache_hit_rate:.0%}", "cache_hit_rate")
        else:
            row("cache hit rate", "off", "", None)
        return lines

    def _utilization(self, w: int) -> list[Text]:
        r = self.recent or Figures()
        bw = max(min(w - 30, 30), 5)
        lines = [Text("utilization", style="bold")]

        def row(label: str, frac: float | None, tail: str, style: str = "green") -> None:
            t = Text(f"{label:<22}")
            if frac is not None:
                t.append(fine_bar(frac, bw), style=style)
                t.append(f" {frac:4.0%}")
            t.append(tail)
            lines.append(t)

        eff = r.device_efficiency
        if eff is not None:
            row("device efficiency", min(eff, 1.0), f"  of the device's best {fmt_rate(r.device_best)} "
                                                    f"evals/s", "green" if eff >= 0.85 else "yellow")
        row("batch fill", min(r.batch_fill, 1.0), "  avgBatchSize / batch_size", "cyan")
        g = r.gpu_busy
        row("GPU busy" if self.on_gpu else "backend busy", g, "  the device's own clock" if self.on_gpu else "")
        if self.probe.available:
            for dev, util, used, total in self.probe.read():
                row(f"{dev} driver", util, f"  mem {used:.1f}/{total:.0f} GiB")
        else:
            lines.append(Text(f"{'driver (NVML)':<22}") + Text(self.probe.why or "n/a", style="dim"))
        loops = r.loop_busy_procs or [r.loop_busy]
        for i, x in enumerate(loops[:8]):
            row(f"loop busy p{i}", x, "", "red" if x >= LOOP_SATURATED else "yellow")
        if len(loops) > 8:
            lines.append(Text(f"{f'loop busy ({len(loops)} procs)':<22}max {max(loops):.0%}"))
        enc = r.encode_busy
        row("leaf encoding busy", enc, f"  {r.encode_us_per_request:.1f} us per request, "
                                       f"in the inference worker", "red" if enc >= LOOP_SATURATED else "yellow")
        lines.append(Text(f"{'queue depth':<22}{r.queue_depth} requests, "
                          f"{r.in_flight} batch(es) in flight"))
        lines.append(Text(f"{'queue wait':<22}{r.queue_wait_ms:.2f} ms per request"))
        us = r.loop_us_per_request
        if us > 0:
            lines.append(Text(f"{'loop CPU per request':<22}{us:.1f} us: at most {1e6 / us / 1000:.0f}k "
                              f"requests/s per process"))
        return lines

    def _bins(self) -> list[tuple[str, int]]:
        r = self.recent
        return histogram_bins(r.hist, self.settings().batch_size) if r is not None and not r.warming else []

    def _curve(self, w: int, verdict: Verdict, rows: int = 8) -> list[Text]:
        """The device's evals/s per bucket (``curve_view``), the current
        batch and the advised one marked; [] without measured rates."""
        rates = self.agg.device_rates if self.agg is not None else {}
        return curve_lines(rates, self.settings().batch_size, w, verdict.advice.get("batch_size"), rows)

    def _hist(self, w: int) -> list[Text]:
        bins = self._bins()
        total = sum(n for _, n in bins) or 1
        bw = max(min(w - 20, 24), 4)
        lines = [Text("batch sizes (last 5 s)", style="bold")]
        for label, n in bins:
            t = Text(f"{label:>9} ")
            t.append(fine_bar(n / total, bw), style="cyan")
            t.append(f" {n:>7}")
            lines.append(t)
        return lines

    def _hist_line(self, w: int) -> Text:
        bins = self._bins()
        total = sum(n for _, n in bins) or 1
        t = Text("batch sizes: ", style="bold")
        for label, n in bins:
            t.append(f"{label}:", style="dim")
            t.append(f"{n / total:.0%} ")
        return t

    def _flush(self, w: int) -> list[Text]:
        share = self.recent.flush_share if self.recent is not None else {}
        bw = max(min(w - 20, 24), 4)
        lines = [Text("flush reasons", style="bold")]
        for key, label in (("full", "full"), ("waiting", "all waiting"), ("timeout", "timeout")):
            x = share.get(key, 0.0)
            t = Text(f"{label:<12}")
            t.append(fine_bar(x, bw), style="magenta")
            t.append(f" {x:4.0%}")
            lines.append(t)
        return lines

    def _settings(self, w: int) -> list[Text]:
        s = self.settings()
        b, p = s.batch_size, s.parallel_games
        want = games_needed(b, self.leaves)
        warn = "" if p >= want else "yellow"
        return [
            Text("settings (per process)", style="bold"),
            Text(f"{'batch_size':<18}{b:>6}"),
            Text(f"{'parallel_games':<18}") + Text(f"{p:>6}", style=warn or "green"),
            Text(f"{'leaves_per_await':<18}{self.leaves:>6}"),
            Text(f"{'rule of thumb':<18}{want:>6}  = 2 x batch_size" + (" / leaves" if self.leaves > 1 else ""),
                 style=warn),
            Text(f"{'timeout_ms':<18}{float(s.timeout_ms or 0.0):>6g}"),
            Text(f"{'processes':<18}{self.cfg.procs * len(self.devices):>6}"),
        ]

    def _footer(self, w: int) -> list[Text]:
        lines, t = [], Text()
        for key, what in HELP:
            item = Text(f" {key} ", style="bold reverse") + Text(f" {what}  ")
            if t.cell_len + item.cell_len > w:
                lines.append(t)
                t = Text()
            t.append_text(item)
        lines.append(t)
        t = Text(" selected: ")
        for f in FIELDS:
            t.append(f" {f} ", style="bold reverse cyan" if f == self.keys.selected else "dim")
        if self.reader is not None and not self.reader.active:
            t.append("   keys off: stdin is not a terminal", style="italic")
        elif self.keys.message:
            t.append(f"   {self.keys.message}", style="italic")
            settle = self.window.seconds - (time.monotonic() - self._changed_at)
            if settle > 0:
                t.append(f"  (the 'now' figures mix old and new settings for {settle:.0f} s more)", style="dim")
        lines.append(t)
        return lines

    def _games(self, w: int, rows: int) -> list[Text]:
        games = sorted(self.agg.games if self.agg is not None else [], key=lambda g: -g.move)
        multi = len(self.cfg.board_sizes) > 1
        cell = 32 if multi else 26
        groups = max(1, min(4, w // cell))
        shown = games[:rows * groups]
        nrows = (len(shown) + groups - 1) // groups
        head = ("size " if multi else "") + " move playouts  value"
        lines = [Text(f"games in progress ({len(games)})"
                      + (f", the {len(shown)} longest shown" if len(shown) < len(games) else ""), style="bold"),
                 Text("".join(f"{head:<{cell}}" for _ in range(groups)), style="dim")]
        for i in range(nrows):
            t = Text()
            for gi in range(groups):
                k = gi * nrows + i
                if k >= len(shown):
                    break
                g = shown[k]
                v = float(g.value)
                size = f"{g.size:>4} " if multi else ""
                t.append(f"{size}{g.move:>5} {g.playouts:>8}  ")
                t.append(f"{v:5.2f}", style="green" if v > 0.6 else "red" if v < 0.4 else "")
                t.append(" " * (cell - (26 if multi else 21)))
            lines.append(t)
        return lines


def hjoin(blocks: list[list[Text]], widths: list[int]) -> list[Text]:
    """Blocks of lines side by side, each padded or cropped to its width."""
    out = []
    for i in range(max(len(b) for b in blocks)):
        line = Text()
        for block, w in zip(blocks, widths):
            part = block[i].copy() if i < len(block) else Text()
            part.truncate(w, overflow="crop", pad=True)
            line.append_text(part)
        out.append(line)
    return out
