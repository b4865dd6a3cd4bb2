"""``cluster head`` and ``cluster join``: ``ray start`` with the project's defaults.

Vocabulary
----------
defaults    no dashboard, an object store of ``OBJECT_STORE_BYTES`` (chunks
            and networks are small; Ray's default takes 30% of the RAM), no
            usage statistics, and the node's address named by the user
            (``--bind``): Ray has no authentication, so a node listens only
            where it is told, on one trusted network.
join        ``ray start --address HEAD --block``: it runs until the node
            leaves. When the head dies every node leaves about 60 s later;
            a supervisor that runs ``cluster join`` again in a loop brings
            the node back once the head is up.
stop        SIGTERM or Ctrl-C of ``cluster head --block`` / ``cluster join``
            goes on to ``ray start``, which drains the node for a few
            seconds and ends its processes; the command waits for it (at
            most ``STOP_WAIT_S``), so a supervisor's stop leaves nothing.
niceness    Ray starts its worker processes, the engine actors among them,
            at niceness 15 (its ``worker_niceness``): beside any other
            program they would get a small share of the CPU (engines at 15
            against a loop at 19 ran at about half speed). ``ray_env``
            starts the node with ``RAY_worker_niceness`` set to the
            niceness of the command itself (0 unless it runs under
            ``nice``), unless the user sets it.
auth        Ray's token authentication is on for a head started where a
            token file (``~/.ray/auth_token``) exists, one that any local
            ``ray.init()`` leaves behind, and off for a node that joins by
            address: the join is then refused ("InvalidAuthToken"). Every
            node and the driver use one mode: ``RAY_AUTH_MODE`` as the user
            sets it, ``disabled`` when unset (``ray_env``).
mismatch    Ray refuses a node whose Ray or Python version (to the patch)
            differs from the head's; its multi-line traceback becomes one
            line (``mismatch_line``) and exit status 2.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

from ..usererror import Terminated, UserError

OBJECT_STORE_BYTES = 1_000_000_000
STOP_WAIT_S = 60.0
DEFAULT_PORT = 6379
_VERSIONS = re.compile(r"Ray:\s*(\S+)\s*Python:\s*(\S+)", re.S)


def mismatch_line(output: str) -> str | None:
    """One line for Ray's version-mismatch error in ``output``, or None."""
    at = output.find("Version mismatch")
    if at < 0:
        return None
    found = _VERSIONS.findall(output[at:])
    if len(found) >= 2:
        (head_ray, head_py), (mine_ray, mine_py) = found[0], found[1]
        versions = (f"the head runs Ray {head_ray} on Python {head_py}, this node Ray {mine_ray} on "
                    f"Python {mine_py}")
    else:
        versions = "this node's Ray or Python version differs from the head's"
    return (f"{versions}: every node needs the same Ray and Python patch version "
            "(or set RAY_DEFAULT_PYTHON_VERSION_MATCH_LEVEL=minor on every node)")


def ray_start(args: list[str]) -> list[str]:
    """The ``ray start`` command line with the defaults (see the vocabulary)."""
    return [sys.executable, "-m", "ray.scripts.scripts", "start", "--object-store-memory", str(OBJECT_STORE_BYTES),
            "--disable-usage-stats", *args]


WORKER_NICENESS = "RAY_worker_niceness"
AUTH_MODE = "RAY_AUTH_MODE"
AUTH_MODE_UNSET = "disabled"  # the mode of every node and driver when the user sets none


def use_one_auth_mode() -> None:
    """Give this process (a driver about to ``ray.init(address=...)``) the
    mode ``ray_env`` gives the nodes."""
    os.environ.setdefault(AUTH_MODE, AUTH_MODE_UNSET)


def ray_env() -> dict[str, str]:
    """The environment for ``ray start``: this one, with the worker
    processes at this command's niceness and one authentication mode for
    every node (see the vocabulary); what the user sets is kept."""
    env = dict(os.environ)
    env.setdefault(WORKER_NICENESS, str(os.nice(0)))
    env.setdefault(AUTH_MODE, AUTH_MODE_UNSET)
    return env


def run_ray_start(command: list[str]) -> int:
    """Run ``ray start``, passing its output through; a version mismatch
    becomes a UserError (one line, exit 2)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", env=ray_env())
    seen: list[str] = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            seen.append(line)
            del seen[:-200]
            if mismatch_line("".join(seen)) is None:
                sys.stdout.write(line)
                sys.stdout.flush()
    except (KeyboardInterrupt, Terminated):
        # ``ray start --block`` ends its node's processes on SIGTERM (draining
        # first): hand the signal on and wait, so nothing is left behind
        proc.terminate()
        try:
            proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    code = proc.wait()
    why = mismatch_line("".join(seen))
    if why is not None:
        raise UserError(why)
    return code


def head_command(bind: str, port: int, num_cpus: int | None, num_gpus: int | None, block: bool) -> list[str]:
    args = ["--head", "--include-dashboard", "false", "--node-ip-address", bind, "--port", str(port)]
    if num_cpus is not None:
        args += ["--num-cpus", str(num_cpus)]
    if num_gpus is not None:
        args += ["--num-gpus", str(num_gpus)]
    return ray_start(args + (["--block"] if block else []))


def join_command(address: str, bind: str, num_cpus: int | None, num_gpus: int | None) -> list[str]:
    args = ["--address", address, "--node-ip-address", bind, "--block"]
    if num_cpus is not None:
        args += ["--num-cpus", str(num_cpus)]
    if num_gpus is not None:
        args += ["--num-gpus", str(num_gpus)]
    return ray_start(args)
