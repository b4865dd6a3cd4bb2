"""The training loop: one process per device, DistributedDataParallel across them.

Vocabulary:
  rank / world  this process's index and the process count (``torchrun`` sets
                ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``); without them the
                trainer runs alone. Rank 0 chooses the data window, writes the
                log, checkpoints and exports (the process group's helpers:
                ``distributed.py``).
  step          one optimizer update on the global batch (``optim.batch_size``
                positions over all ranks; each rank takes its share).
  samples       positions consumed so far, all ranks together: the schedule's
                clock (``schedule.py``).
  averaged weights  EMA or SWA of the weights (``averaging.py``); exports use
                them.
  run folder    ``run.out``: a fresh start refuses one that holds an earlier
                run; stale temporaries go at the start (``runfolder.py``).
  resumed from  the checkpoint a resumed run loaded: the retention rule
                (``[run] keep_checkpoints``) never deletes it during the run,
                so a newer one that turns out unreadable always leaves it.
  stops         a step whose loss or gradients go NaN or infinite is not
                taken (``step.py``, "finite"): the run ends with one line
                naming the step and the checkpoint that stands, and writes
                no checkpoint or export from that state. A data-loader worker
                that dies (the out-of-memory killer) ends it the same way
                (``dataset.worker_failure``) instead of torch's traceback.
  at the target  a resumed run already at its step count does no step but
                still hands back that step's export (the one on disk, or one
                made now from the checkpoint): the RL loop killed between its
                last checkpoint and its state file needs it.

  window        the chunks this run trains on, chosen once by rank 0 at a
                fresh start (or a refreshed window): ``dataset.py``.
  checkpoint state  what ``save_checkpoint`` hands to ``checkpoint.py`` and
                ``--resume`` restores: model, optimizer, schedule, averages,
                step, samples, every rank's RNG state and reader positions,
                the window.

One update is ``step.train_step`` (the losses on the output dict, outside the
DDP-wrapped module); messages, warnings, the progress bar and the log rows
are ``progress.py``'s; errors are ``errors.py``'s.

A Sayuri network (``--init`` with a Sayuri weights file, our import of one, or
a trained export of one) trains with all its heads (``losses.loss_names``);
its norms take ``[optim] norms`` (as our own networks' do: ``Net.set_norm_mode``).
In "batch" mode a Sayuri network's norms are calibrated on the
first batch before the first step (``SayuriNet.calibrate_norms``: the
function stays the file's), on rank 0, and every rank gets rank 0's weights.
"""
from __future__ import annotations

import gc
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from sayuri_async.killpoint import kill_point
from sayuri_async.net.model import Net, NetConfig, init_weights
from sayuri_async.train import checkpoint as ckpt
from sayuri_async.train.averaging import Averager
from sayuri_async.train.config import TrainConfig
from sayuri_async.train.dataset import (ChunkError, ChunkStream, StreamSpec, dead_worker, list_chunks, make_loader,
                                        pick_rehearsal, rehearsal_positions, select_window, window_size,
                                        worker_failure)
from sayuri_async.train.distributed import (broadcast, gather, pick_device, rng_state, set_rng_state,
                                            setup_distributed)
from sayuri_async.train.errors import BadInitWeights, NoTrainingData, NothingToResume, TrainError
from sayuri_async.train.losses import loss_names
from sayuri_async.train.progress import Bar, Reporter, RunMessages
from sayuri_async.train.runfolder import check_fresh_folder, clean_stale
from sayuri_async.train.schedule import resolve, to_samples
from sayuri_async.train.step import NonFiniteLoss, build_optimizer, finite_weights, train_step


@dataclass
class TrainResult:
    steps: int
    samples: int
    losses: dict[str, float] = field(default_factory=dict)
    lr: float = 0.0
    samples_per_s: float = 0.0
    data_wait: float = 0.0
    checkpoint: str | None = None
    export: str | None = None


# ------------------------------------------------------------------- trainer

class Trainer:
    """Build everything from a :class:`TrainConfig`, then ``run()``.

    ``steps`` is the step count to reach (a resumed run counts from the
    checkpoint's step); ``None`` takes the schedule's ``total``. ``say`` prints
    rank 0's messages (default: to stderr through rich); ``progress`` turns the
    rich progress bar on or off (default from ``run.progress``).
    ``resume = "auto"`` resumes when the run folder holds a checkpoint (rank
    0 looks, every rank follows) and starts afresh otherwise.
    ``refresh_window`` (with ``resume``) keeps the checkpoint's model,
    optimizer, averages and step but picks a new replay window from the data
    now on disk: the RL loop's next generation.
    """

    def __init__(self, cfg: TrainConfig, steps: int | None = None, init: str | None = None,
                 resume: bool | str = False, say: Reporter | None = None, progress: bool | None = None,
                 refresh_window: bool = False) -> None:
        self.cfg = cfg
        self.device = pick_device(cfg.run.device, int(os.environ.get("LOCAL_RANK", "0")))
        self.info = setup_distributed(cfg.run.backend, self.device)
        self.messages = RunMessages(self.info, say, progress, cfg.run.progress)
        self.out = Path(cfg.run.out)
        batch = cfg.optim.batch_size
        if batch % self.info.world:
            raise TrainError(f"{cfg.source}: [optim] batch_size {batch} is not divisible by the "
                             f"{self.info.world} ranks")
        self.rank_batch = batch // self.info.world
        self.sched = resolve(cfg.schedule, batch)
        self.total_steps = steps if steps is not None else self.sched.total_steps()
        torch.manual_seed(cfg.run.seed)
        random.seed(cfg.run.seed)
        clean_stale(self.out, self.info, self.say)
        auto = resume == "auto"
        if auto:
            found = ckpt.latest_checkpoint(self.out) is not None if self.info.rank == 0 else None
            resume = bool(broadcast(found, self.info))
        if not resume:
            check_fresh_folder(self.out, cfg.run.name, auto, self.info, self.say)
        self.calibrate_pending = False
        self.net, self.net_config = self._build_net(init if not resume else None)
        lo, hi = self.net_config.board_size_min, self.net_config.board_size_max
        if not lo <= cfg.data.board_size <= hi:
            raise TrainError(f"the network plays boards {lo}..{hi}, not [data] board_size {cfg.data.board_size}")
        self.net.to(self.device)
        if cfg.run.channels_last and self.device.type == "cuda":
            self.net.to(memory_format=torch.channels_last)
        self.optimizer = build_optimizer(self.net, cfg.optim)
        self.averager = Averager(cfg.average, self.net, self.sched, to_samples(cfg.average.swa_start, cfg.schedule))
        self.step = 0
        self.samples = 0
        self.resumed = bool(resume)
        self.resumed_from: Path | None = None  # rank 0: the checkpoint resumed from, spared by retention
        self.batches = 0  # batches this rank consumed
        self.positions: dict[int, tuple[int, int, int]] = {}
        self.window: list[tuple[str, int]] = []
        self.data_seed = cfg.run.seed  # seeds the data order; a refreshed window gets a new one
        start: dict[int, tuple[int, int, int]] = {}
        if resume:
            start = self._resume(refresh_window)
        if not resume or refresh_window:  # refresh: the RL loop's next generation, same model, new data
            self.window = self._choose_window()
        workers = cfg.data.workers
        self.spec = StreamSpec(
            files=tuple(self.window), board_size=cfg.data.board_size, encoder=self.net_config.encoder,
            planes=self.net_config.input_planes, batch_size=self.rank_batch,
            shuffle_buffer=cfg.data.shuffle_buffer, seed=self.data_seed, world=self.info.world,
            workers=workers, symmetries=cfg.data.symmetries)
        self.positions = dict(start)
        rotation = self.batches % max(workers, 1)
        self.stream = ChunkStream(self.spec, self.info.rank, start, rotation)
        self.model: nn.Module = self.net
        if self.info.enabled:
            if cfg.optim.sync_norms:  # batch statistics over the global batch (syncnorm.py)
                from sayuri_async.train.syncnorm import synchronise_norms

                layers = synchronise_norms(self.net)
                self.say(f"synchronised batch norms: {layers} layers over {self.info.world} ranks")
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.model = nn.parallel.DistributedDataParallel(self.net, device_ids=ids)
        self.use_bf16 = cfg.run.precision == "bf16" or (
            cfg.run.precision == "auto" and self.device.type == "cuda" and torch.cuda.is_bf16_supported())
        if self.device.type == "cuda":
            torch.backends.cudnn.benchmark = True
        self.log = (ckpt.CsvLog(self.out, self.step if resume else None, ckpt.log_columns(self.sayuri))
                    if self.info.rank == 0 else None)

    # ----------------------------------------------------------- setup parts

    @property
    def loss_names(self) -> tuple[str, ...]:
        """The loss parts of this network (a Sayuri net has more heads)."""
        return loss_names(self.sayuri)

    @property
    def sayuri(self) -> bool:
        return getattr(self.net_config, "architecture", "") == "sayuri"

    def say(self, text: str) -> None:
        self.messages.say(text)

    def _build_net(self, init: str | None) -> tuple[Net, NetConfig]:
        if init:
            from sayuri_async.net.weights import WeightsError
            from sayuri_async.sayuri.model import SayuriNet
            from sayuri_async.sayuri.weights import load_any_weights

            try:
                net, _ = load_any_weights(init)  # ours, a Sayuri file, or our import of one
            except WeightsError as e:
                raise BadInitWeights(f"--init {e}") from None
            net.set_norm_mode(self.cfg.optim.norms)
            kind = f"norms {self.cfg.optim.norms}, "
            if isinstance(net, SayuriNet):
                self.calibrate_pending = self.cfg.optim.norms == "batch"
                kind = f"Sayuri v{net.config.version}, " + kind
            self.say(f"starting from {init} ({kind}{net.config.short_name}); [model] is not used")
            net.train()
            return net, net.config
        if self.cfg.model.get("architecture") == "sayuri":  # a new Sayuri network ([model], config.py)
            from sayuri_async.sayuri.weights import config_from_dict, new_net

            sayuri_config = config_from_dict(self.cfg.model)
            torch.manual_seed(self.cfg.run.seed)
            net = new_net(sayuri_config)
            net.set_norm_mode(self.cfg.optim.norms)
            net.train()
            return net, sayuri_config
        config = NetConfig.from_dict(self.cfg.model)
        net = init_weights(Net(config), seed=self.cfg.run.seed)
        net.set_norm_mode(self.cfg.optim.norms)
        return net, config

    def _choose_window(self) -> list[tuple[str, int]]:
        result: tuple[list[tuple[str, int]], list[str], str | None] = ([], [], None)
        if self.info.rank == 0:
            d = self.cfg.data
            chunks, warnings = list_chunks(d.dir, d.board_size)
            total = sum(c.positions for c in chunks)
            want = window_size(total, d.window_min_positions, d.window_max_positions,
                               d.window_expand_per_position, d.window_taper_exponent)
            picked = select_window(chunks, want)
            error = None
            if not picked:
                error = (f"no training chunks (*.npz) of board size {d.board_size} under {d.dir}"
                         + (f" ({'; '.join(warnings)})" if warnings else
                            "" if Path(d.dir).is_dir() else " (no such folder)"))
            rehearsed: list = []
            if picked and d.rehearsal_fraction > 0:
                older, old_warnings = list_chunks(d.rehearsal_dir, d.board_size)
                warnings += old_warnings
                rehearsed = pick_rehearsal(older, rehearsal_positions(sum(c.positions for c in picked),
                                                                    d.rehearsal_fraction), self.data_seed)
                if not rehearsed:
                    error = (f"[data] rehearsal_dir {d.rehearsal_dir}: no chunks (*.npz) of board size "
                             f"{d.board_size}" + ("" if Path(d.rehearsal_dir).is_dir() else " (no such folder)"))
            result = ([(c.path, c.positions) for c in picked + rehearsed], warnings, error)
            for w in warnings:
                self.say(f"warning: {w}")
            if picked:
                self.say(f"data window: {sum(c.positions for c in picked)} positions in {len(picked)} "
                         f"chunks (window rule: {want} of {total})")
            if rehearsed:
                old_n, new_n = sum(c.positions for c in rehearsed), sum(c.positions for c in picked)
                self.say(f"rehearsal: {old_n} positions in {len(rehearsed)} chunks of {d.rehearsal_dir} "
                         f"({old_n / (old_n + new_n):.0%} of the window; rehearsal_fraction "
                         f"{d.rehearsal_fraction:g})")
        window, _, error = broadcast(result, self.info)
        if error:
            raise NoTrainingData(error)
        return window

    def _resume(self, refresh_window: bool) -> dict[int, tuple[int, int, int]]:
        """Load the newest checkpoint; returns the readers' start positions.

        With ``refresh_window`` the data part is not restored: the caller picks
        a new window, read from its start in an order seeded by ``seed + step``.
        """
        found = None
        if self.info.rank == 0:
            try:
                found = ckpt.newest_readable(self.out, lambda text: self._warn(text))
            except OSError as e:
                raise TrainError(f"{ckpt.checkpoint_dir(self.out)}: cannot set an unreadable checkpoint "
                                 f"aside: {e}") from None
        path = broadcast(None if found is None else str(found[0]), self.info)
        if path is None:
            raise NothingToResume(f"--resume: no checkpoint in {ckpt.checkpoint_dir(self.out)} (unreadable ones "
                             f"are renamed *{ckpt.UNREADABLE_SUFFIX})")
        if found is not None:
            self.resumed_from, state = found
        else:
            try:
                state = ckpt.load_checkpoint(path)
            except ckpt.CheckpointError as e:
                raise TrainError(str(e)) from None
        saved_net = state["net_config"]
        if saved_net != self.net_config.to_dict():
            from sayuri_async.sayuri.weights import config_from_dict, new_net

            self.net_config = config_from_dict(saved_net)
            self.net = new_net(self.net_config)
            self.say("the checkpoint's network differs from [model]; continuing the checkpoint's")
        self.net.load_state_dict(state["model"])
        self.net.set_norm_mode(self.cfg.optim.norms)  # the config's norm mode applies from here on
        self.net.to(self.device)
        if self.cfg.run.channels_last and self.device.type == "cuda":
            self.net.to(memory_format=torch.channels_last)
        self.optimizer = build_optimizer(self.net, self.cfg.optim)
        self.optimizer.load_state_dict(state["optimizer"])
        self.averager = Averager(self.cfg.average, self.net, self.sched,
                                 to_samples(self.cfg.average.swa_start, self.cfg.schedule))
        self.averager.load_state_dict(state["average"])
        self.step, self.samples = int(state["step"]), int(state["samples"])
        if state["schedule"] != self.sched.to_dict():
            self.say("note: the schedule differs from the checkpoint's; the new one applies "
                     f"from step {self.step}")
        ranks = state["ranks"]
        data = state["data"]
        mine = ranks[self.info.rank] if self.info.rank < len(ranks) else None
        if mine is not None:
            set_rng_state(mine["rng"])
        self.say(f"resumed {path} at step {self.step} ({self.samples} samples)")
        if refresh_window:
            self.data_seed = self.cfg.run.seed + self.step
            return {}
        self.window = [(str(p), int(n)) for p, n in data["window"]]
        self.data_seed = int(data.get("seed", self.cfg.run.seed))
        same_layout = data["world"] == self.info.world and data["workers"] == self.cfg.data.workers
        if same_layout and mine is not None:
            self.batches = int(mine["batches"])
            start = {int(k): (int(v[0]), int(v[1]), int(v[2])) for k, v in mine["positions"].items()}
        else:
            later = 1 + max((int(v[0]) for r in ranks for v in r["positions"].values()), default=0)
            start = {s: (later, 0, 0) for s in range(self.info.world * max(self.cfg.data.workers, 1))}
            self.say("note: ranks or workers changed since the checkpoint; data restarts at "
                     f"pass {later}, so the run is no longer bit-for-bit the uninterrupted one")
        return start

    # ---------------------------------------------------------------- saving

    @torch.no_grad()
    def check_replicas(self) -> None:
        """Under DDP every rank must hold the same weights; stop loudly if they diverged."""
        if not self.info.enabled:
            return
        sums = torch.stack([torch.stack([p.double().sum(), p.double().abs().sum()])
                            for p in self.net.parameters()]).sum(0)
        seen = gather([float(v) for v in sums.cpu()], self.info)
        if any(s != seen[0] for s in seen):
            raise TrainError(f"rank weights diverged at step {self.step}: parameter sums {seen}")

    def refuse_non_finite(self) -> None:
        """NonFiniteLoss (the step taken) when a weight is NaN or infinite:
        nothing is saved from such a state."""
        if not finite_weights(self.net):
            raise NonFiniteLoss("the weights became NaN or infinite", {}, taken=True)

    def save_checkpoint(self) -> str | None:
        self.check_replicas()
        self.refuse_non_finite()
        mine = {"rng": rng_state(), "batches": self.batches,
                "positions": {int(k): list(v) for k, v in self.positions.items()}}
        ranks = gather(mine, self.info)
        if self.info.rank != 0:
            return None
        state = {
            "step": self.step, "samples": self.samples,
            "model": self.net.state_dict(), "net_config": self.net_config.to_dict(),
            "optimizer": self.optimizer.state_dict(), "schedule": self.sched.to_dict(),
            "average": self.averager.state_dict(), "ranks": ranks,
            "data": {"window": [list(w) for w in self.window], "world": self.info.world,
                     "workers": self.cfg.data.workers, "seed": self.data_seed},
            "config": self.cfg.to_dict(),
        }
        return str(ckpt.save_checkpoint(self.out, self.step, state, self.cfg.run.keep_checkpoints,
                                        spare=self.resumed_from))

    def export(self, losses: dict[str, float]) -> str | None:
        self.refuse_non_finite()
        if self.info.rank != 0:
            return None
        from sayuri_async.sayuri.weights import new_net

        net = new_net(self.net_config)
        net.load_state_dict({k: v.detach().float().cpu() for k, v in self.averager.weights(self.net).items()})
        net.eval()
        meta = {"samples": self.samples, "board_size": self.cfg.data.board_size,
                "averaging": self.averager.mode, "trainer": "sayuri-async train",
                "config_file": self.cfg.source, "losses": losses}
        return str(ckpt.export_weights(self.out, self.cfg.run.name, self.step, net, meta))

    def export_of_this_step(self) -> tuple[str | None, dict[str, float]]:
        """``(path, losses)`` of the current step's export (rank 0; None
        elsewhere): the whole one on disk, else one made now."""
        if self.info.rank != 0:
            return None, {}
        from sayuri_async.net.weights import WeightsError, read_header

        path = ckpt.export_path(self.out, self.cfg.run.name, self.step)
        if path.is_file():
            try:
                meta = json.loads(read_header(path)["meta"])
                if int(meta.get("step", -1)) == self.step:
                    return str(path), {k: float(v) for k, v in meta.get("losses", {}).items()}
            except (WeightsError, KeyError, ValueError, TypeError, AttributeError):
                pass  # not the export it should be: make it again
        self.say(f"exporting step {self.step} from its checkpoint")
        return self.export({}), {}

    # ------------------------------------------------------------------ loop

    def _train_step(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor], float]:
        lr = self.sched.lr_at_samples(self.samples)
        total, parts = train_step(self.model, self.net, self.optimizer, batch, lr, self.cfg, self.device,
                                  self.use_bf16)
        return total, parts, lr

    def run(self) -> TrainResult:
        """Train until ``total_steps``; returns the last logged figures.

        A step whose loss or gradients are not finite, and a data-loader
        worker that dies (see "stops"), end the run with a TrainError that
        says what happened and which checkpoint stands."""
        failure: TrainError
        try:
            return self._run()
        except NonFiniteLoss as e:
            step, taken = (self.step, "") if e.taken else (self.step + 1, "the step was not taken and ")
            failure = NonFiniteLoss(f"step {step}: {e}; {taken}nothing was saved from it: {self._standing()}; "
                                    "lower the learning rate or check the data", e.parts, e.taken)
        except RuntimeError as e:
            what = worker_failure(e)
            if what is None:
                raise
            failure = TrainError(f"{what}; training stopped at step {self.step}: {self._standing()}")
        raise failure  # outside the handler: torch's error and its frames (the loader) are let go

    def _standing(self) -> str:
        """Which checkpoint a stopped run leaves (rank 0 looks)."""
        path = ckpt.latest_checkpoint(self.out) if self.info.rank == 0 else None
        if path is None:
            return "no checkpoint was written yet" if self.info.rank == 0 else "the last checkpoint stands"
        return f"the last checkpoint stands ({path})"

    def _run(self) -> TrainResult:
        result = TrainResult(self.step, self.samples)
        self.say(f"training {self.net_config.short_name} on {self.device} x{self.info.world}, "
                 f"{'bf16' if self.use_bf16 else 'fp32'}, steps {self.step} -> {self.total_steps}\n"
                 + self.sched.describe())
        if self.step >= self.total_steps:
            self.say(f"already at step {self.step}; nothing to do")
            if self.resumed:
                result.export, result.losses = self.export_of_this_step()
            return result
        self.net.train()
        loader = make_loader(self.stream, pin_memory=self.device.type == "cuda",
                             prefetch_batches=self.cfg.data.prefetch_batches)
        it = iter(loader)
        sums = torch.zeros(len(self.loss_names) + 1, device=self.device)
        count = 0
        run = self.cfg.run
        t_start = t_mark = time.perf_counter()
        wait = 0.0
        mark_samples = self.samples
        first_log: tuple[float, int] | None = None
        last_log = (t_start, self.samples)
        bar = self._progress()
        try:
            while self.step < self.total_steps:
                t0 = time.perf_counter()
                try:
                    batch = next(it)
                except ChunkError as e:  # a reader found nothing readable at all
                    raise TrainError(str(e)) from None
                except (ConnectionError, EOFError, RuntimeError) as e:  # a worker that died (see "stops")
                    what = (worker_failure(e, getattr(it, "_workers", ())) if isinstance(e, RuntimeError)
                            else dead_worker())  # it died as it sent: torch's pipe broke first
                    if what is None:
                        raise
                    raise TrainError(f"{what}; training stopped at step {self.step}: {self._standing()}") from None
                wait += time.perf_counter() - t0
                self.batches += 1
                self.positions[int(batch["shard"])] = tuple(int(v) for v in batch["position"])
                for w in batch["warnings"]:
                    self._warn(w)
                if self.calibrate_pending:
                    self._calibrate(batch)
                total, parts, lr = self._train_step(batch)
                self.step += 1
                self.samples += self.sched.batch
                self.averager.update(self.net, self.step, self.samples)
                sums += torch.stack([total, *(parts[k] for k in self.loss_names)])
                count += 1
                last = self.step == self.total_steps
                if self.step % run.log_every == 0 or last:
                    now = time.perf_counter()
                    result = self._log(sums / count, lr, (self.samples - mark_samples) / max(now - t_mark, 1e-9),
                                       wait / max(now - t_mark, 1e-9), now - t_start, bar)
                    if first_log is None:
                        first_log = (now, self.samples)
                    last_log = (now, self.samples)
                    sums.zero_()
                    count, wait, t_mark, mark_samples = 0, 0.0, now, self.samples
                if bar is not None:
                    bar[0].update(bar[1], completed=self.step, lr=f"{lr:.3g}")
                # the checkpoint first: killed between the two, a resumed run re-exports this step
                if self.step % run.checkpoint_every == 0 or last:
                    result.checkpoint = self.save_checkpoint()
                    kill_point("train-checkpointed")  # the checkpoint is written, the export not yet
                if self.step % run.export_every == 0 or last:
                    result.export = self.export(result.losses)
        finally:
            if bar is not None:
                bar[0].stop()
            _shut_down(it)
            del it
        if first_log is not None and last_log[1] > first_log[1]:  # steady state: between logs
            result.samples_per_s = (last_log[1] - first_log[1]) / max(last_log[0] - first_log[0], 1e-9)
        result.steps, result.samples = self.step, self.samples
        return result

    @torch.no_grad()
    def _calibrate(self, batch: dict[str, Any]) -> None:
        """A Sayuri net's norms from rank 0's first batch; averages restart."""
        if self.info.rank == 0:
            self.net.calibrate_norms(batch["planes"].to(self.device).float())
        if self.info.enabled:
            for t in self.net.state_dict().values():
                dist.broadcast(t, 0)
        self.averager = Averager(self.cfg.average, self.net, self.sched,
                                 to_samples(self.cfg.average.swa_start, self.cfg.schedule))
        self.calibrate_pending = False
        self.say("calibrated the batch norms on the first batch (the network's function unchanged)")

    def _warn(self, text: str) -> None:
        self.messages.warn(text)

    def _progress(self) -> Bar | None:
        return self.messages.progress_bar(self.total_steps, self.step, self.sched.lr_at_samples(self.samples))

    def _log(self, means: torch.Tensor, lr: float, speed: float, wait: float, elapsed: float,
             bar: Bar | None) -> TrainResult:
        losses = self.messages.interval(means, self.loss_names, self.step, self.samples, lr, speed, wait, elapsed,
                                        bar, self.log)
        return TrainResult(self.step, self.samples, losses, lr, speed, wait)


def _shut_down(it: object) -> None:
    """End a data-loader iterator's workers now, not when its last reference
    goes (a traceback may hold one)."""
    shutdown = getattr(it, "_shutdown_workers", None)
    if callable(shutdown):
        shutdown()


def train(cfg: TrainConfig, steps: int | None = None, init: str | None = None, resume: bool | str = False,
          say: Reporter | None = None, progress: bool | None = None,
          refresh_window: bool = False) -> TrainResult:
    """Build a :class:`Trainer`, run it, and leave the process group if it joined one."""
    joined_before = dist.is_available() and dist.is_initialized()
    trainer: Trainer | None = None
    try:
        trainer = Trainer(cfg, steps=steps, init=init, resume=resume, say=say, progress=progress,
                          refresh_window=refresh_window)
        result = trainer.run()
        if not joined_before and dist.is_available() and dist.is_initialized():
            dist.barrier()  # every rank is done before any leaves: a rank that left early broke a peer's
            # gloo connection as it was torn down ("terminate called without an active exception")
        return result
    finally:
        if not joined_before and dist.is_available() and dist.is_initialized():
            # DistributedDataParallel holds the process group: the trainer goes first, so that the
            # group's gloo threads end in destroy_process_group and not at interpreter exit, where a
            # thread touching a Python object aborts the process (the same message as above)
            del trainer
            gc.collect()
            dist.destroy_process_group()
