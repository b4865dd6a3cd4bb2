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
mismatch    Ray refuses a node whose Ray or Python version (to the patch)
            differs from the head's; its multi-line traceback becomes one
            line (``mismatch_line``) and exit status 2.
"""
from __future__ import annotations

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


def run_ray_start(command: list[str]) -> int:
    """Run ``ray start``, passing its output through; a version mismatch
    becomes a UserError (one line, exit 2)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
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
