"""A training job in several processes under torchrun, run from one process (the RL loop).

Vocabulary:
  launcher    the calling process: ``train(cfg, steps, ...)``. With
              ``[run] processes`` K = 1, or when it is itself a rank already
              (``WORLD_SIZE`` set), it runs ``trainer.train`` in itself, as
              before. With K > 1 it writes a job folder, starts the agent,
              waits for it and returns rank 0's ``TrainResult``, or raises what
              a rank raised (``TrainError`` and its user-error kinds).
  job folder  a temporary folder: ``spec.json`` (the whole ``TrainConfig``
              as it is in memory, with the call's arguments), ``pid-<rank>``
              (each worker's process id), ``result.json`` (rank 0's result),
              ``error-<rank>.json`` (what stopped a rank: kind, one-line
              message, exit status), ``agent.json`` (the exit codes of the
              ranks that failed, as torchrun saw them).
  agent       ``python -m sayuri_async.train.launch agent JOB K``: torchrun
              itself (``torch.distributed.run``'s ``run`` with
              ``--standalone --nproc_per_node K --max-restarts 0``), in a
              process of its own so that its signal handlers and rendezvous
              store stay out of the caller, and so that a failing rank reaches
              the launcher as agent.json instead of torch's traceback.
  worker      ``python -m sayuri_async.train.launch worker JOB``: one rank,
              started by torchrun in its own process session. It rebuilds the
              config and calls ``trainer.train`` with the same arguments: the
              run, its checkpoints and its resume are exactly those of
              ``sayuri-async train --nproc K`` (``--resume``,
              ``--auto-resume``, ``--refresh-window``), the same losses step by
              step.
  lifetime    the workers end with the launcher however it ends. Interrupted
              (Ctrl-C, SIGTERM as ``Terminated``, any exception while it
              waits), the launcher sends the agent SIGTERM (torchrun then
              stops its workers with SIGTERM, and SIGKILL after 30 s), waits
              up to ``STOP_WAIT_S``, kills what is left, and re-raises. Killed
              outright (SIGKILL), it cannot act: the agent has asked the kernel
              for SIGTERM at its parent's death and watches it
              (``lifetime.die_with_parent``), and every worker does the same
              with the agent. A worker ends on SIGTERM as ``train`` does: the
              step in progress is lost, the last checkpoint stands.
  threads     without ``OMP_NUM_THREADS`` in the environment each rank gets
              the machine's cores divided by K (torchrun would set 1).
  nodes       several machines in one job (``Nodes``): every machine runs the
              same launcher with the same ``Nodes``; the agents meet at the
              c10d rendezvous (``endpoint``, ``job_id``) and the job has
              ``count`` x K ranks. The job is static (``--nnodes N``, torchrun
              never restarts it: its elastic restarts failed when tried). When
              it fails for any reason but the user's own error or a signal (a
              machine died, a peer's connection dropped, the rendezvous broke),
              each launcher starts it again whole, at most ``restarts`` times,
              resuming from the last checkpoint (``resume="auto"``); the
              machines meet again once every one of them is back. Only the
              machine that holds rank 0 has a result (the others return None).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from sayuri_async.configfile import ConfigError
from sayuri_async.train import errors
from sayuri_async.train.config import SECTIONS, TrainConfig
from sayuri_async.train.errors import TrainError
from sayuri_async.train.progress import Reporter
from sayuri_async.train.trainer import TrainResult

STOP_WAIT_S = 60.0  # after SIGTERM, how long the launcher waits for the agent (torchrun's own grace is 30 s)
LEFTOVER_WAIT_S = 10.0  # after SIGTERM, how long a worker left behind gets before SIGKILL
ORPHAN_GRACE_S = 45.0  # a worker (or agent) whose parent died: SIGTERM, then this long before it exits hard
RESTART_PAUSE_S = 5.0  # between a failed job of several machines and its restart (the peers' agents end meanwhile)
LAUNCHER_ENV = "SAYURI_TRAIN_LAUNCHER_PID"
AGENT_ENV = "SAYURI_TRAIN_AGENT_PID"
USER_ERRORS = {cls.__name__: cls for cls in (errors.NoTrainingData, errors.BadInitWeights,
                                             errors.NothingToResume, errors.RunFolderInUse)}
SIGNAL_KINDS = ("KeyboardInterrupt", "Terminated")
FINAL_KINDS = (*USER_ERRORS, *SIGNAL_KINDS, "TrainError")  # a rank's error that a restart would only repeat


@dataclasses.dataclass(frozen=True)
class Nodes:
    """One training job over several machines (torchrun's static c10d rendezvous)."""
    count: int  # machines in the job (--nnodes); each runs [run] processes ranks
    endpoint: str  # host:port where the agents meet: one machine's address, reachable from all
    job_id: str  # the rendezvous id, the same on every machine of one job
    restarts: int = 3  # whole-job restarts after a failure, each from the last checkpoint

    def torchrun_args(self, processes: int) -> list[str]:
        return [f"--nnodes={self.count}", f"--nproc_per_node={processes}", "--rdzv_backend=c10d",
                f"--rdzv_endpoint={self.endpoint}", f"--rdzv_id={self.job_id}"]


def train(cfg: TrainConfig, steps: int | None = None, init: str | None = None, resume: bool | str = False,
          say: Reporter | None = None, progress: bool | None = None,
          refresh_window: bool = False, nodes: Nodes | None = None) -> TrainResult | None:
    """``trainer.train``'s job in ``cfg.run.processes`` processes (see the
    module's vocabulary); the arguments and the result are ``trainer.train``'s.
    ``say`` takes the launcher's own line here; the ranks print theirs (rank
    0's messages, every rank's warnings) on the inherited stderr. With
    ``nodes``, this machine's share of a job over several machines: the
    result on the machine of rank 0, None on the others."""
    from sayuri_async.train import trainer

    processes = cfg.run.processes
    if (processes <= 1 and nodes is None) or "WORLD_SIZE" in os.environ:
        return trainer.train(cfg, steps=steps, init=init, resume=resume, say=say, progress=progress,
                             refresh_window=refresh_window)
    world = processes * (nodes.count if nodes else 1)
    _check_layout(cfg, world)
    tell = say or (lambda text: print(text, file=sys.stderr, flush=True))
    where = f"on this machine, {world} on {nodes.count} machines" if nodes else "under torchrun"
    tell(f"training in {processes} processes {where} (device {cfg.run.device}, "
         f"{cfg.optim.batch_size // world} positions of the batch each)")
    restarts = 0
    while True:
        job = Path(tempfile.mkdtemp(prefix="sayuri-train-"))
        try:
            spec = {"config": cfg.to_dict(), "source": cfg.source, "steps": steps, "init": init, "resume": resume,
                    "progress": progress, "refresh_window": refresh_window}
            (job / "spec.json").write_text(json.dumps(spec))
            status = _run_agent(job, processes, nodes)
            if nodes is None or restarts >= nodes.restarts or not _restartable(job, status):
                return _outcome(job, status, rank0_here=nodes is None)
            restarts += 1
            tell(f"the job over {nodes.count} machines failed ({_failure(job, status)}); starting it again "
                 f"from the last checkpoint in {RESTART_PAUSE_S:g} s (restart {restarts} of {nodes.restarts})")
        finally:
            shutil.rmtree(job, ignore_errors=True)
        time.sleep(RESTART_PAUSE_S)
        resume = "auto"


def _run_agent(job: Path, processes: int, nodes: Nodes | None) -> int:
    """Start torchrun's agent for ``job`` and wait for it; stop it (and every
    worker left) however the wait ends."""
    env = {**os.environ, LAUNCHER_ENV: str(os.getpid())}
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // processes)))
    layout = nodes.torchrun_args(processes) if nodes else ["--standalone", f"--nproc_per_node={processes}"]
    agent = subprocess.Popen([sys.executable, "-m", "sayuri_async.train.launch", "agent", str(job),
                              json.dumps(layout)], env=env)
    try:
        return agent.wait()
    except BaseException:
        _stop(agent)
        raise
    finally:
        _end_leftovers(job)


def _restartable(job: Path, status: int) -> bool:
    """Whether a failed job of several machines should start again: not
    when it ended well, nor for an error of the user's or the trainer's own
    (a restart would repeat it), nor when a signal stopped it."""
    if status == 0 or status > 128:
        return False
    reports = [r for r in map(_read_json, job.glob("error-*.json")) if isinstance(r, dict)]
    return not any(r.get("kind") in FINAL_KINDS for r in reports)


def _failure(job: Path, status: int) -> str:
    """The failure of a job, in a few words, for the restart's line."""
    try:
        _outcome(job, status)
    except TrainError as e:
        return str(e)
    return f"status {status}"


def _check_layout(cfg: TrainConfig, world: int) -> None:
    """What torchrun would only find out in every rank: the batch split, the GPUs."""
    processes, batch = cfg.run.processes, cfg.optim.batch_size
    if batch % world:
        what = f"[run] processes {processes}" if world == processes else f"the job's {world} processes"
        raise ConfigError(f"{cfg.source}: [optim] batch_size {batch} is not divisible by {what} "
                          f"(the batch is global: every process takes an equal share)")
    device = cfg.run.device
    if device in ("auto", "cuda"):
        import torch

        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if device == "cuda" and gpus < processes or device == "auto" and 0 < gpus < processes:
            raise ConfigError(f"{cfg.source}: [run] processes {processes} needs {processes} GPUs (one a process) "
                              f"but torch sees {gpus}; lower processes, or use device = \"cpu\"")


def _stop(agent: subprocess.Popen) -> None:
    """SIGTERM to the agent (which stops its workers), then SIGKILL after
    ``STOP_WAIT_S``; a second interrupt meanwhile kills it at once."""
    try:
        if agent.poll() is None:
            agent.terminate()
        agent.wait(timeout=STOP_WAIT_S)
    except BaseException:  # the wait ran out, or the user insisted
        agent.kill()
        agent.wait()


def _worker_pids(job: Path) -> list[int]:
    """The workers of this job that still run (their command line names the job folder)."""
    from sayuri_async.lifetime import pid_running

    out = []
    for f in job.glob("pid-*"):
        try:
            pid = int(f.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if str(job).encode() in cmdline and pid_running(pid):
            out.append(pid)
    return out


def _end_leftovers(job: Path) -> None:
    """Workers still running after the agent ended: SIGTERM, then SIGKILL."""
    pids = _worker_pids(job)
    for sig, wait in ((signal.SIGTERM, LEFTOVER_WAIT_S), (signal.SIGKILL, 5.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.1)
            pids = _worker_pids(job)
        if not pids:
            return


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _outcome(job: Path, status: int, rank0_here: bool = True) -> TrainResult | None:
    """Rank 0's result, or the exception that says why there is none (None
    when the job ended well and rank 0 ran on another machine)."""
    result = _read_json(job / "result.json")
    if status == 0 and isinstance(result, dict):
        fields = {f.name for f in dataclasses.fields(TrainResult)}
        return TrainResult(**{k: v for k, v in result.items() if k in fields})
    if status == 0 and not rank0_here:
        return None
    reports = sorted((r for r in map(_read_json, job.glob("error-*.json")) if isinstance(r, dict)),
                     key=lambda r: r["rank"])
    causes = [r for r in reports if r["kind"] not in SIGNAL_KINDS] or reports
    if causes:
        first = causes[0]
        where = "" if first["rank"] == 0 else f"rank {first['rank']}: "
        if first["kind"] in SIGNAL_KINDS:
            raise TrainError(f"training rank {first['rank']} was stopped by a signal ({first['message']}); "
                             "the last checkpoint stands")
        if first.get("bug"):
            raise TrainError(f"{where}internal error: {first['message']} (its traceback is above)")
        raise USER_ERRORS.get(first["kind"], TrainError)(where + first["message"])
    agent = _read_json(job / "agent.json") or {}
    failed = agent.get("failures", {})
    if agent.get("error"):
        raise TrainError(f"torchrun's agent failed: {agent['error']}; the last checkpoint stands")
    if failed:
        codes = sorted((int(r), int(c)) for r, c in failed.items())
        # torchrun ends the other ranks with SIGTERM when one fails: the rank that failed first is the one
        # that was not stopped that way
        rank, code = next(((r, c) for r, c in codes if c != -signal.SIGTERM), codes[0])
        how = f"was killed by {_signal_name(-code)}" if code < 0 else f"ended with exit status {code}"
        raise TrainError(f"training rank {rank} {how} without a word (the out-of-memory killer?); "
                         "the last checkpoint stands")
    raise TrainError(f"training under torchrun ended with status {status} and no result "
                     "(see the lines above); the last checkpoint stands")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def config_from_spec(raw: dict[str, Any], source: str) -> TrainConfig:
    """The ``TrainConfig`` a launcher wrote (``TrainConfig.to_dict``), every section checked again."""
    cfg = TrainConfig(model=raw["model"], source=source)
    for name, cls in SECTIONS.items():
        setattr(cfg, name, cls(**raw[name]))
    return cfg


# ------------------------------------------------------------------ the agent

def _agent(job: Path, layout: list[str]) -> int:
    from sayuri_async.lifetime import die_with_parent

    die_with_parent(int(os.environ.get(LAUNCHER_ENV, os.getppid())), signal.SIGTERM, ORPHAN_GRACE_S)
    os.environ[AGENT_ENV] = str(os.getpid())
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous.api import RendezvousError
    from torch.distributed.run import parse_args, run

    for name in list(logging.Logger.manager.loggerDict):  # torchrun's lines: the launcher reports instead
        if name.startswith("torch.distributed"):
            logging.getLogger(name).setLevel(logging.CRITICAL)

    args = parse_args([*layout, "--max-restarts=0", "-m", "sayuri_async.train.launch", "worker", str(job)])
    try:
        run(args)
    except ChildFailedError as e:
        failures = {str(rank): int(f.exitcode) for rank, f in e.failures.items()}
        _write(job / "agent.json", {"failures": failures})
        return 1
    except SignalException as e:
        return 128 + int(e.sigval)
    except (RendezvousError, RuntimeError, OSError) as e:  # the rendezvous or its store: a peer or the network
        _write(job / "agent.json", {"error": " ".join(f"{type(e).__name__}: {e}".split())[:500]})
        return 1
    return 0


# ----------------------------------------------------------------- a worker

def _worker(job: Path) -> int:
    from sayuri_async.lifetime import die_with_parent
    from sayuri_async.train import trainer
    from sayuri_async.usererror import Terminated, exit_status, message

    rank = int(os.environ.get("RANK", "0"))
    me = os.getpid()
    (job / f"pid-{rank}").write_text(str(me))

    def terminated(signum: int, _frame: Any) -> None:
        if os.getpid() != me:  # a forked data-loader worker: end as by default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Terminated()

    signal.signal(signal.SIGTERM, terminated)
    die_with_parent(int(os.environ.get(AGENT_ENV, os.getppid())), signal.SIGTERM, ORPHAN_GRACE_S)
    spec = json.loads((job / "spec.json").read_text())
    try:
        cfg = config_from_spec(spec["config"], spec["source"])
        result = trainer.train(cfg, steps=spec["steps"], init=spec["init"], resume=spec["resume"],
                               progress=spec["progress"], refresh_window=spec["refresh_window"])
    except (Exception, KeyboardInterrupt, Terminated) as e:
        status = exit_status(e)
        if status is None:  # a bug keeps its traceback
            traceback.print_exc()
        report = {"rank": rank, "kind": type(e).__name__, "bug": status is None,
                  "message": f"{type(e).__name__}: {message(e)}" if status is None else message(e),
                  "status": status or 1}
        _write(job / f"error-{rank}.json", report)
        return report["status"]
    if rank == 0:
        _write(job / "result.json", dataclasses.asdict(result))
    return 0


def _write(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "agent":
        return _agent(Path(argv[1]), json.loads(argv[2]))
    if len(argv) == 2 and argv[0] == "worker":
        return _worker(Path(argv[1]))
    print("sayuri_async.train.launch: started by train.launch.train, not by hand "
          "(use sayuri-async train --nproc K)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
