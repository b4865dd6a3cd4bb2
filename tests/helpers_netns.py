"""Loopback-only network namespaces for the tests that run Ray or torchrun across "machines".

Vocabulary
----------
namespace_problem  why this machine cannot run a command inside a network
            namespace that has only ``lo`` (``unshare -n``, as root), or
            None when it can. Ray turns 127.0.0.1 into the machine's main
            address and listens on every interface, and a multi-node torchrun
            would reach out the same way: such tests run inside the namespace
            or skip with this reason.
in_namespace  the argument list that runs a program there (``lo`` up first).
"""
from __future__ import annotations

import shutil
import subprocess
import sys


def namespace_problem() -> str | None:
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux's"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare and ip (util-linux, iproute2)"
    try:
        probe = subprocess.run(in_namespace("true"), capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unshare -n failed: {e}"
    if probe.returncode != 0:
        return f"cannot make a loopback-only network namespace (root needed): {probe.stderr.strip()[:120]}"
    return None


def in_namespace(*argv: str) -> list[str]:
    return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *argv]
