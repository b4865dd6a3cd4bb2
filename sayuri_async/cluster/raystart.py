"""``ray start`` and ``ray.init`` with the node's address pinned.

Vocabulary
----------
pinned      Ray turns a loopback address (``127.0.0.1``, ``localhost``) into
            "the machine's address" by asking the kernel for the route to a
            public one (8.8.8.8, Google's DNS), and prints "Failed to determine
            local IP via external connectivity to: 8.8.8.8:53" where there is
            none. ``pin_node_address(addr)`` makes that answer the node's own
            address (``--bind``), so no public address is ever probed and a
            node bound to loopback stays there.
launcher    ``python -m sayuri_async.cluster.raystart ADDR start ...``: Ray's
            own command line (``ray start ...``) in a process whose address
            is pinned to ADDR; ``nodes.py`` runs it with its output going to
            the node's log (``noderecord``). It leads the node's process
            session; with ``--block`` it watches the command that started it
            (``cluster head --block``, ``cluster join``): killed outright
            (SIGKILL), that command can hand nothing on, so the launcher ends
            every process of the session at once, as when the machine dies.
driver      ``connect_driver(ray, address, log)``: ``ray.init`` for ``cluster
            run``, its address pinned to this machine's node (its record, else
            the head's address when it is one of this machine's), with Ray's
            own lines in the driver (its log records, and the lines it relays
            from the cluster, "(raylet) The node ... has been marked dead"
            among them) going to ``log`` instead of the screen and the live
            view.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path


def pin_node_address(address: str) -> None:
    """Ray's guess of this machine's address is ``address`` (see "pinned")."""
    from ray._private import services

    def pinned(_towards: str | None = None) -> str:
        return address

    services.node_ip_address_from_perspective = pinned
    try:
        from ray._common import network_utils
    except ImportError:
        return
    if hasattr(network_utils, "node_ip_address_from_perspective"):
        network_utils.node_ip_address_from_perspective = pinned


def local_address(head_host: str) -> str | None:
    """This machine's node address for a driver joining ``head_host``: the
    bind of a node ``cluster head``/``join`` started here, else the head's
    host when it is an address of this machine, else None (Ray guesses)."""
    from .addresses import check_bind
    from .noderecord import records, running
    from ..usererror import UserError

    for _, rec in records():
        if running(rec):
            return rec.bind
    try:
        return check_bind(head_host)
    except UserError:
        return None


def connect_driver(ray, address: str, namespace: str, log: Path) -> None:
    """``ray.init`` for the fleet's driver (see "driver"); Ray's errors rise as they are."""
    from .addresses import parse_head

    if address != "auto":
        mine = local_address(parse_head(address, "--address")[0])
        if mine is not None:
            pin_node_address(mine)
    log.parent.mkdir(parents=True, exist_ok=True)
    sink = open(log, "a", buffering=1, errors="replace")
    handler = logging.StreamHandler(sink)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ["ray", *[n for n in logging.Logger.manager.loggerDict if n.startswith("ray.")]]:
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        if name == "ray":
            logger.addHandler(handler)
            logger.propagate = False

    def relayed(data: dict, ignore_prefix: bool = False) -> None:  # Ray's print_to_stdstream
        who = data.get("pid", "")
        for line in data.get("lines", []):
            sink.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} ({who}) {line}\n")

    from ray._private import worker as ray_worker

    ray_worker.print_to_stdstream = relayed
    ray.init(address=address, namespace=namespace, log_to_driver=False, logging_level="WARNING")


def _end_with_parent(parent: int) -> None:
    """Once ``parent`` is gone, SIGKILL to every process of this setsid group (see "launcher")."""
    def watch() -> None:
        from .noderecord import session_pids

        while os.getppid() == parent:
            time.sleep(0.5)
        for pid in session_pids(os.getsid(0)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("sayuri_async.cluster.raystart: started by `sayuri-async cluster head|join`, not by hand",
              file=sys.stderr)
        return 2
    pin_node_address(argv[0])
    if "--block" in argv:
        _end_with_parent(os.getppid())
    from ray.scripts.scripts import main as ray_main

    sys.argv = ["ray", *argv[1:]]
    return ray_main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
