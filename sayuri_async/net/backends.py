"""Backends: what the batcher calls to evaluate a batch of encoded positions.

Vocabulary
----------
batch       ``uint8 [B, C, N, N]`` planes from the encoder named by
            ``Backend.encoder`` (``encoders/``); one board size per batch.
NetOutput   numpy results for a batch: ``policy [B, A]`` probabilities over
            all ``A = N*N + 1`` actions (pass last; softmax over every action
            on the device, not masked: the search masks illegal moves and
            renormalises), ``wdl [B, 3]`` probabilities (win, draw, loss for
            the side to move), ``score [B]`` lead in points for the side to
            move, ``ownership [B, N*N]`` in [-1, 1] (+1 = side to move).
run         ``Backend.run(batch) -> NetOutput``; blocking; call it from ONE
            worker thread (``infer/worker.py``) while the loop runs. The
            returned arrays are fresh (not reused by the next call).
launch      ``Backend.launch(batch) -> collect``: the same in two steps, so
            the worker can queue batch k+1 on the device before it waits for
            batch k; ``collect()`` returns the NetOutput. By default the
            batch runs inside ``launch``.
alloc_input ``Backend.alloc_input(max_batch, n)``: a uint8 buffer
            ``[max_batch, C, n, n]`` (page-locked on CUDA) the batcher
            encodes requests into; pass ``buf[:B]`` to ``run``.
bucket      on CUDA a batch is padded up to the next bucket size (powers of
            two up to ``max_batch``, and ``max_batch``; a larger batch adds
            the next power of two), and each (board size, bucket) gets its
            own CUDA graph, captured on first use (or ahead of time with
            ``warmup``). ``max_batch`` is a sizing hint, not a limit.
rates       ``Backend.measure_rates(n, batch_size) -> {bucket: evals/s}``:
            the device's curve: its *sustained* speed on full buckets of
            board ``n``, every bucket from 1 up to ``max_batch`` (and
            ``batch_size``'s), each the median of several timed passes after
            untimed ones, within a start-up budget: a bucket whose pass would
            take too long, or would overrun the budget, is left out with every
            larger one (CUDA: each captured graph's replays, timed with CUDA
            events; the CPU: wall time of each pass; the device model: its
            table; the random network: nothing, it has no ceiling). The
            engine measures it on every board size it plays; the best rate
            on it is the denominator of the device efficiency, and the
            verdict, the live view, ``tune`` and ``batch_size = "auto"``
            read the same curve.
device_s    ``NetOutput.device_s``: the device's own busy time for the batch
            where the backend knows it (CUDA events, the device model's
            clock), so the busy figure does not count the worker thread's
            waits for the GIL.

RandomBackend has no weights and does no torch work: a uniform policy with
small noise (so ties break randomly), a neutral value, zero score and
ownership. It exists to measure the CPU cost of search.
"""
from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..encoders import DEFAULT_ENCODER, get_encoder

if TYPE_CHECKING:
    from .model import Net

# the curve (``measure_curve``): per bucket RATE_WARM_PASSES untimed passes,
# then the median of RATE_TIMED_PASSES timed ones, in sweeps over the
# buckets; buckets grow until a pass would take over RATE_PASS_MAX_S or the
# whole curve would overrun RATE_BUDGET_S (per board size)
RATE_WARM_PASSES = 2
RATE_TIMED_PASSES = 5
RATE_PASS_MAX_S = 0.5
RATE_BUDGET_S = 8.0


def median_rate(batch: int, seconds: list[float]) -> float:
    """evals/s of ``batch`` from the median of its timed passes: a
    sustained figure, where the fastest pass would be a burst."""
    times = sorted(seconds)
    mid = len(times) // 2
    t = times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2
    return batch / max(t, 1e-12)


def measure_curve(buckets: list[int], timed_pass: "Callable[[int], float]",
                  budget_s: float = RATE_BUDGET_S, pass_max_s: float = RATE_PASS_MAX_S,
                  warm: int = RATE_WARM_PASSES, timed: int = RATE_TIMED_PASSES) -> dict[int, float]:
    """The curve ``{bucket: evals/s}`` over ``buckets`` (ascending):
    ``timed_pass(b)`` runs one full batch of ``b`` and returns its seconds.

    A first sweep runs the ``warm`` untimed passes of each bucket, ascending,
    while the next one's projected pass (from the last bucket's fastest warm
    pass) stays within ``pass_max_s`` and all the passes of the buckets taken
    within ``budget_s``. The timed passes then go round the buckets taken,
    sweep after sweep, so that a machine whose load changes meanwhile slows
    every bucket alike; each bucket's rate is the median of its ``timed``
    timed passes."""
    taken: list[int] = []
    est: dict[int, float] = {}  # a bucket's fastest warm pass: the projection's base
    for b in buckets:
        if taken:
            last = taken[-1]
            per_pass = est[last] * b / last
            if per_pass > pass_max_s or (warm + timed) * (sum(est.values()) + per_pass) > budget_s:
                break
        est[b] = min(timed_pass(b) for _ in range(max(warm, 1)))
        taken.append(b)
    times: dict[int, list[float]] = {b: [] for b in taken}
    for _ in range(timed):
        for b in taken:
            times[b].append(timed_pass(b))
    return {b: median_rate(b, times[b]) for b in taken}


@dataclass
class NetOutput:
    policy: np.ndarray  # [B, A] float32 probabilities, unmasked, pass last
    wdl: np.ndarray  # [B, 3] float32 probabilities: win, draw, loss
    score: np.ndarray  # [B] float32 points, side to move
    ownership: np.ndarray  # [B, N*N] float32 in [-1, 1], side to move
    # seconds the device itself was busy with this batch (CUDA events, the
    # device model's clock); None where only the caller's wall time is known
    device_s: float | None = None

    def __len__(self) -> int:
        return int(self.policy.shape[0])

    @property
    def value(self) -> np.ndarray:
        """Expected result for the side to move in [-1, 1]: win - loss. ``[B]``"""
        return self.wdl[:, 0] - self.wdl[:, 2]


class Backend(ABC):
    """Base class: ``encoder``, ``planes``, ``name``, ``device``; ``run``."""

    encoder: str = DEFAULT_ENCODER
    planes: int = 0
    name: str = "backend"
    device: str = "cpu"
    max_batch: int = 1024
    # True when a batch costs microseconds of CPU (the random network): the
    # batcher may then answer it on the event loop instead of handing it to
    # the worker thread, whose handoff costs more than the work itself
    cheap: bool = False

    @abstractmethod
    def run(self, batch: np.ndarray) -> NetOutput:  # [B, C, N, N] uint8
        """Evaluate a batch (every backend defines this)."""

    def launch(self, batch: np.ndarray) -> "NetOutput | Callable[[], NetOutput]":
        """Start evaluating ``batch``. A device that queues work (a CUDA
        stream, the device model) returns at once a ``collect()`` that
        waits for and returns the NetOutput, so the worker can launch the
        next batch behind it; a backend that cannot queue (this default,
        the CPU) runs the batch now and returns its NetOutput itself, which
        spares the worker a thread hop and the batch a closure. Calls are
        serial, and ``collect``s are called in launch order."""
        return self.run(batch)

    def alloc_input(self, max_batch: int, n: int) -> np.ndarray:
        """uint8 ``[max_batch, C, n, n]`` for the batcher to fill."""
        return np.zeros((max_batch, self.planes, n, n), dtype=np.uint8)

    def warmup(self, sizes: list[int], batches: list[int] | None = None) -> None:
        """Compile or capture whatever the first real call would (no-op here)."""

    def measure_rates(self, n: int, batch_size: int) -> dict[int, float]:
        """evals/s of full batches per bucket on board ``n`` (none here: no
        device whose speed bounds the engine)."""
        return {}

    def close(self) -> None:
        """Release device resources (no-op here)."""

    def _check(self, batch: np.ndarray) -> tuple[int, int]:
        if batch.ndim != 4 or batch.shape[1] != self.planes or batch.shape[2] != batch.shape[3]:
            raise ValueError(
                f"{self.name}: batch shape {batch.shape} is not [B, {self.planes}, N, N] "
                f"(encoder {self.encoder})"
            )
        return int(batch.shape[0]), int(batch.shape[2])


# --------------------------------------------------------------------------
# random


class RandomBackend(Backend):
    """No weights, no torch: policy = softmax(noise of std ``noise``) over all
    actions (near uniform; rows are drawn from a per-size pool of ``pool``
    precomputed rows so a call costs a gather), wdl ``[0.5, 0, 0.5]``,
    score 0, ownership 0. A batch costs about 10 us: ``cheap``."""

    cheap = True

    def __init__(
        self,
        encoder: str = DEFAULT_ENCODER,
        seed: int | None = None,
        noise: float = 0.05,
        pool: int = 1024,
        max_batch: int = 1 << 16,
    ) -> None:
        enc = get_encoder(encoder)
        self.encoder = enc.name
        self.planes = enc.planes
        self.name = "random"
        self.device = "cpu"
        self.max_batch = max_batch
        self.noise = noise
        self.pool = pool
        self._rng = np.random.default_rng(seed)
        self._pools: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def _policy_pool(self, n: int) -> np.ndarray:
        rows = self._pools.get(n)
        if rows is None:
            logits = self._rng.normal(0.0, self.noise, size=(self.pool, n * n + 1))
            e = np.exp(logits - logits.max(axis=1, keepdims=True))
            rows = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)  # [pool, A]
            self._pools[n] = rows
        return rows

    def run(self, batch: np.ndarray) -> NetOutput:
        b, n = self._check(batch)
        with self._lock:
            rows = self._policy_pool(n)
            idx = self._rng.integers(0, self.pool, size=b)
        wdl = np.empty((b, 3), dtype=np.float32)
        wdl[:] = (0.5, 0.0, 0.5)
        return NetOutput(
            policy=rows[idx],  # fancy indexing copies: [B, A]
            wdl=wdl,
            score=np.zeros(b, dtype=np.float32),
            ownership=np.zeros((b, n * n), dtype=np.float32),
        )


# --------------------------------------------------------------------------
# torch


def pad_to_bucket(buckets: list[int], b: int) -> int:
    """The smallest of the sorted ``buckets`` that holds ``b``; past the
    largest, the next power of two."""
    for s in buckets:
        if s >= b:
            return s
    return 1 << (int(b) - 1).bit_length()


def default_buckets(max_batch: int) -> list[int]:
    out, b = [], 1
    while b < max_batch:
        out.append(b)
        b *= 2
    out.append(max_batch)
    return out


class TorchBackend(Backend):
    """Runs a ``Net`` (or a module like it: ``sayuri.model.SayuriNet``)
    with torch; ``name`` and ``meta`` are those of its weights file
    (``backend_factory.make_backend`` loads it).

    CPU: float32 eval, ``threads`` sets ``torch.set_num_threads``.
    CUDA: ``dtype`` (bf16 by default) compute, channels_last, its own CUDA
    stream, the uint8 batch copied (non-blocking from pinned memory) into a
    static device buffer and converted to the compute dtype on the GPU,
    softmax on the device, one CUDA graph per (board size, bucket) unless
    ``use_cuda_graphs`` is False. BatchNorm is folded in both cases.
    """

    def __init__(
        self,
        net: "Net",
        device: str = "cpu",
        dtype: "torch.dtype | str | None" = None,
        max_batch: int = 256,
        use_cuda_graphs: bool = True,
        threads: int | None = None,
        buckets: list[int] | None = None,
        name: str = "",
        meta: dict | None = None,
    ) -> None:
        import torch

        self.name = name or f"net-{net.config.short_name}"
        self.meta = dict(meta or {})
        cfg = net.config
        enc = get_encoder(cfg.encoder)
        if enc.planes != cfg.input_planes:
            raise ValueError(f"{self.name}: encoder {enc.name} has {enc.planes} planes, net expects {cfg.input_planes}")
        self.encoder = enc.name
        self.planes = enc.planes
        self.config = cfg
        self.device = device
        self.max_batch = int(max_batch)
        self.torch_device = torch.device(device)
        self.is_cuda = self.torch_device.type == "cuda"
        if self.is_cuda and not torch.cuda.is_available():
            raise RuntimeError(f"device {device} requested but CUDA is not available")
        if threads is not None and not self.is_cuda:
            torch.set_num_threads(int(threads))
        if isinstance(dtype, str):
            names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
                     "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
            if dtype not in names:
                raise ValueError(f"unknown dtype {dtype!r}; one of {sorted(names)}")
            dtype = names[dtype]
        self.dtype = dtype or (torch.bfloat16 if self.is_cuda else torch.float32)
        self.use_cuda_graphs = bool(use_cuda_graphs and self.is_cuda)
        self.buckets = sorted(set(buckets or default_buckets(self.max_batch)))
        if self.buckets[-1] < self.max_batch:
            self.buckets.append(self.max_batch)
        net = net.fold_batchnorm().eval()
        for p in net.parameters():
            p.requires_grad_(False)
        if self.is_cuda:
            torch.backends.cudnn.benchmark = True  # fixed shapes per bucket: autotune during graph warm-up
            net = net.to(self.torch_device, dtype=self.dtype, memory_format=torch.channels_last)
            with torch.cuda.device(self.torch_device):
                self.stream = torch.cuda.Stream(self.torch_device)
                self._pool = torch.cuda.graph_pool_handle()
        self.net = net
        self._graphs: dict[tuple[int, int], "_Graph"] = {}
        self._pinned: list = []  # keeps pinned host tensors alive
        self._lock = threading.Lock()

    # ---- buffers --------------------------------------------------------
    def alloc_input(self, max_batch: int, n: int) -> np.ndarray:
        import torch

        if not self.is_cuda:
            return super().alloc_input(max_batch, n)
        t = torch.zeros((max_batch, self.planes, n, n), dtype=torch.uint8, pin_memory=True)
        self._pinned.append(t)
        return t.numpy()

    def bucket(self, b: int) -> int:
        """The bucket a batch of ``b`` is padded to. A batch above the largest
        bucket (the batcher grew past ``max_batch``) gets a new bucket, the
        next power of two, captured on first use."""
        s = pad_to_bucket(self.buckets, b)
        if s > self.buckets[-1]:
            self.buckets.append(s)
        return s

    # ---- running --------------------------------------------------------
    def _forward(self, x_u8: "torch.Tensor") -> tuple:
        """uint8 device tensor -> (policy probs, wdl probs, score, ownership), float32."""
        import torch

        x = x_u8.to(self.dtype)
        if self.is_cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        out = self.net(x)
        policy = torch.softmax(out["policy"].float(), dim=1)
        wdl = torch.softmax(out["wdl"].float(), dim=1)
        return policy, wdl, out["score"].float(), out["ownership"].float()

    def run(self, batch: np.ndarray) -> NetOutput:
        started = self.launch(batch)
        return started() if callable(started) else started

    def launch(self, batch: np.ndarray) -> "NetOutput | Callable[[], NetOutput]":
        """CPU: runs the batch now. CUDA: queues the input copy, the forward
        (a graph replay or eager kernels) and the output copies on the
        backend's stream, between two timing events, and returns at once;
        ``collect`` waits for the end event and reads the outputs."""
        import torch

        b, n = self._check(batch)
        with self._lock, torch.inference_mode():
            if not self.is_cuda:
                p, w, s, o = self._forward(torch.from_numpy(np.ascontiguousarray(batch)))
                return NetOutput(p.numpy(), w.numpy(), s.numpy(), o.numpy())
            if self.use_cuda_graphs:
                return self._graph(n, self.bucket(b)).launch(batch)
            return self._eager_cuda(batch)

    def _eager_cuda(self, batch: np.ndarray) -> Callable[[], NetOutput]:
        import torch

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(self.stream):
            start.record(self.stream)
            src = torch.from_numpy(np.ascontiguousarray(batch))
            x = src.to(self.torch_device, non_blocking=True)
            outs = self._forward(x)
            host = [t.to("cpu", non_blocking=True) for t in outs]
            end.record(self.stream)

        def collect() -> NetOutput:
            end.synchronize()
            return NetOutput(*[t.numpy() for t in host], device_s=start.elapsed_time(end) / 1000.0)

        return collect

    def _graph(self, n: int, bucket: int) -> "_Graph":
        g = self._graphs.get((n, bucket))
        if g is None:
            g = _Graph(self, n, bucket)
            self._graphs[(n, bucket)] = g
        return g

    def warmup(self, sizes: list[int], batches: list[int] | None = None) -> None:
        """Capture the CUDA graphs for these board sizes and batch buckets now
        (default: every bucket), instead of on first use."""
        import torch

        if not self.is_cuda:
            with torch.inference_mode():
                for n in sizes:
                    self._forward(torch.zeros((1, self.planes, n, n), dtype=torch.uint8))
            return
        with self._lock, torch.inference_mode():
            for n in sizes:
                for b in sorted({self.bucket(x) for x in (batches or self.buckets)}):
                    if self.use_cuda_graphs:
                        self._graph(n, b)
                    else:
                        self._eager_cuda(np.zeros((b, self.planes, n, n), dtype=np.uint8))()

    def measure_rates(self, n: int, batch_size: int) -> dict[int, float]:
        """The curve on board ``n`` (``measure_curve``): every bucket up to
        ``max_batch`` (and ``batch_size``'s). CUDA: a pass is one replay of
        the bucket's graph (captured here, so a later raise of the batch
        size finds it ready), timed with CUDA events. CPU: a pass is the
        wall time of one batch, which on a loaded machine includes its
        waits for the cores, as the engine's own batches do."""
        import torch

        buckets = default_buckets(max(self.max_batch, self.bucket(batch_size)))

        def timed_pass(b: int) -> float:
            x = np.zeros((b, self.planes, n, n), dtype=np.uint8)
            if self.is_cuda:
                return self.run(x).device_s or 0.0
            t0 = time.perf_counter()
            self.run(x)
            return time.perf_counter() - t0

        with torch.inference_mode():
            return measure_curve(buckets, timed_pass)

    def close(self) -> None:
        """Drop the CUDA graphs (pinned input buffers stay valid: callers may
        still hold them)."""
        self._graphs.clear()


class _Graph:
    """One captured CUDA graph for a (board size, bucket): static uint8 input
    on the device, static float32 outputs (allocated outside the graph, so
    the graphs can share one memory pool), pinned host copies of them."""

    def __init__(self, be: TorchBackend, n: int, bucket: int) -> None:
        import torch

        self.be, self.n, self.bucket = be, n, bucket
        dev = be.torch_device
        a = n * n + 1
        with torch.cuda.device(dev):
            self.x = torch.zeros((bucket, be.planes, n, n), dtype=torch.uint8, device=dev)
            self.out = [
                torch.zeros((bucket, a), dtype=torch.float32, device=dev),
                torch.zeros((bucket, 3), dtype=torch.float32, device=dev),
                torch.zeros((bucket,), dtype=torch.float32, device=dev),
                torch.zeros((bucket, n * n), dtype=torch.float32, device=dev),
            ]
            self.sets: list[_HostSet] = []
            self._sets_lock = threading.Lock()
            self.graph = torch.cuda.CUDAGraph()
            stream = be.stream
            stream.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.stream(stream):
                for _ in range(3):  # warm up kernels (cudnn autotune, lazy init) before capture
                    self._compute()
            stream.synchronize()
            with torch.cuda.graph(self.graph, pool=be._pool, stream=stream, capture_error_mode="thread_local"):
                self._compute()
            stream.synchronize()

    def _compute(self) -> None:
        for dst, src in zip(self.out, self.be._forward(self.x)):
            dst.copy_(src)

    def _host_set(self) -> "_HostSet":
        """A free set of pinned output buffers and timing events (a new one
        when every set holds a launched batch not yet collected)."""
        with self._sets_lock:
            for h in self.sets:
                if not h.busy:
                    h.busy = True
                    return h
            h = _HostSet(self.out)
            h.busy = True
            self.sets.append(h)
            return h

    def launch(self, batch: np.ndarray) -> Callable[[], NetOutput]:
        import torch

        b = batch.shape[0]
        stream = self.be.stream
        h = self._host_set()
        with torch.cuda.stream(stream):
            h.start.record(stream)
            src = torch.from_numpy(np.ascontiguousarray(batch))
            self.x[:b].copy_(src, non_blocking=True)  # rows b.. keep stale data: padding
            self.graph.replay()
            for dst, d in zip(h.host, self.out):
                dst[:b].copy_(d[:b], non_blocking=True)
            h.end.record(stream)

        def collect() -> NetOutput:
            h.end.synchronize()
            out = NetOutput(*[t[:b].numpy().copy() for t in h.host], device_s=h.start.elapsed_time(h.end) / 1000.0)
            h.busy = False
            return out

        return collect


class _HostSet:
    """Pinned host copies of a graph's outputs and the timing events of one
    launched batch: a graph has as many as it has batches launched at once
    (the stream runs them in order, so the device-side outputs can be shared,
    the host copies cannot)."""

    def __init__(self, outs: list) -> None:
        import torch

        self.host = [torch.zeros(t.shape, dtype=torch.float32, pin_memory=True) for t in outs]
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        self.busy = False
