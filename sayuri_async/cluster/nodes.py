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
start       ``ray start`` runs as the leader of a setsid group of its own,
            through ``raystart`` (the node's address pinned: no probe of a
            public address), with everything it and Ray's C++ code print
            going to the node's ``ray.log`` (``noderecord``); the command
            prints one line that names that file, then its own lines only.
            It must say "Ray runtime started" within ``START_WAIT_S``, or the
            node's processes are ended and the command says so in one line.
            A ``ray start`` that fails says why in one line (its last error
            line), naming the log.
stop        SIGTERM or Ctrl-C of ``cluster head --block`` / ``cluster join``
            goes on to ``ray start``, which drains the node for a few
            seconds and ends its processes; the command waits for it (at
            most ``STOP_WAIT_S``; ``CONNECTING_STOP_S`` for one still
            connecting, which may not heed SIGTERM for half a minute), then ends
            whatever of the node's setsid group is left, so a supervisor's stop
            leaves nothing. ``cluster stop`` ends a node started without
            ``--block`` the same way (``noderecord``).
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
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..usererror import RunFailure, Terminated, UserError
from .addresses import check_bind, check_head, parse_head, port_taken
from .noderecord import (LOG_NAME, NodeRecord, forget, node_folder, read_record, records, running, stop_session,
                         write_record)

OBJECT_STORE_BYTES = 1_000_000_000
STOP_WAIT_S = 60.0
START_WAIT_S = 120.0
CONNECTING_STOP_S = 5.0
STARTED = "Ray runtime started"
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


def ray_start(bind: str, args: list[str]) -> list[str]:
    """The ``ray start`` command line with the defaults (see the vocabulary)."""
    return [sys.executable, "-m", "sayuri_async.cluster.raystart", bind, "start", "--object-store-memory",
            str(OBJECT_STORE_BYTES), "--disable-usage-stats", *args]


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


def last_error(text: str) -> str | None:
    """The line of Ray's output that says why it failed, folded to one line
    (None when no line says so)."""
    for line in reversed([line.strip() for line in text.splitlines() if line.strip()]):
        if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", line) or " ERROR " in line or "Error:" in line:
            return " ".join(line.split())[:300]
    return None


def _ended(code: int, text: str) -> str:
    """How ``ray start`` ended, in a few words."""
    how = f"was killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() \
        else f"ended with status {code}"
    why = last_error(text)
    return f"ray start {how}" + (f": {why}" if why else "")


def run_ray_start(command: list[str], folder: Path, record: NodeRecord, block: bool,
                  started_line: str) -> int:
    """Run ``ray start`` as the node's setsid group leader, its output into
    ``folder``'s log (see "start" and "stop"); ``started_line`` is printed
    once Ray says it runs. A version mismatch is a UserError."""
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / LOG_NAME
    print(f"Ray's own lines go to {log_path}", flush=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=ray_env(), start_new_session=True)
    record.session = proc.pid
    write_record(folder, record)
    started = False
    deadline = time.monotonic() + START_WAIT_S
    try:
        while not started and proc.poll() is None:  # until Ray says the node runs
            text = log_path.read_text(errors="replace")
            why = mismatch_line(text)
            if why is not None:
                _end(proc, started)
                raise UserError(why)
            started = STARTED in text
            if not started and time.monotonic() > deadline:
                _end(proc, started)
                raise RunFailure(f"ray start said nothing of a running node within {START_WAIT_S:g} s "
                                 f"({last_error(text) or 'no error'}); its processes are ended; Ray's lines are "
                                 f"in {log_path}")
            time.sleep(0.2)
        text = log_path.read_text(errors="replace")
        started = STARTED in text
        if started:
            print(started_line, flush=True)
        code = proc.wait()  # at once without --block; with it, until the node stops
    except (KeyboardInterrupt, Terminated):
        _end(proc, started)
        forget(folder)
        raise
    text = log_path.read_text(errors="replace")
    why = mismatch_line(text)
    if started and read_record(folder) is None:  # `cluster stop` ended the node
        print(f"the node was stopped (`sayuri-async cluster stop`); Ray's lines are in {log_path}", flush=True)
        return 0
    if not started or why is not None or code != 0 or block:
        stop_session(record.session, wait_s=10.0)  # what is left of the node
        forget(folder)
    if why is not None:
        raise UserError(why)
    if not started:
        raise RunFailure(f"the node did not start ({_ended(code, text)}); Ray's lines are in {log_path}")
    if code != 0:
        raise RunFailure(f"the node stopped ({_ended(code, text)}); Ray's lines are in {log_path}")
    if block:
        print(f"the node has stopped; Ray's lines are in {log_path}", flush=True)
    return code


def _end(proc: subprocess.Popen, started: bool) -> None:
    """SIGTERM to ``ray start``: a running node drains and ends its processes
    (at most ``STOP_WAIT_S``), one still connecting gets ``CONNECTING_STOP_S``
    (it may not heed SIGTERM for half a minute); then the rest of its setsid group."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=STOP_WAIT_S if started else CONNECTING_STOP_S)
        except subprocess.TimeoutExpired:
            pass
        except BaseException:  # the user insisted: on to the setsid group
            pass
    stop_session(proc.pid, wait_s=10.0)
    proc.poll()


def head_command(bind: str, port: int, num_cpus: int | None, num_gpus: int | None, block: bool) -> list[str]:
    args = ["--head", "--include-dashboard", "false", "--node-ip-address", bind, "--port", str(port)]
    if num_cpus is not None:
        args += ["--num-cpus", str(num_cpus)]
    if num_gpus is not None:
        args += ["--num-gpus", str(num_gpus)]
    return ray_start(bind, args + (["--block"] if block else []))


def join_command(address: str, bind: str, num_cpus: int | None, num_gpus: int | None) -> list[str]:
    args = ["--address", address, "--node-ip-address", bind, "--block"]
    if num_cpus is not None:
        args += ["--num-cpus", str(num_cpus)]
    if num_gpus is not None:
        args += ["--num-gpus", str(num_gpus)]
    return ray_start(bind, args)


def start_head(bind: str, port: int, num_cpus: int | None, num_gpus: int | None, block: bool) -> int:
    """``cluster head``: the checks (``addresses``), then ``ray start --head``."""
    bind = check_bind(bind)
    folder = node_folder("head", bind, port)
    if port_taken(bind, port):
        earlier = read_record(folder)
        if earlier is not None and running(earlier):
            raise UserError(f"--port {port}: {earlier.describe()} holds it, a head this machine started "
                            "earlier; `sayuri-async cluster stop` ends it")
        raise UserError(f"--port {port}: another program listens on {bind}:{port} already (not a head of "
                        "`sayuri-async cluster`); choose another --port")
    record = NodeRecord(role="head", bind=bind, port=port, head=f"{bind}:{port}", session=0, started=time.time())
    how = ("it stays in the foreground (ray start --block) until SIGTERM or Ctrl-C" if block
           else "`sayuri-async cluster stop` ends it")
    code = run_ray_start(head_command(bind, port, num_cpus, num_gpus, block), folder, record, block,
                         f"head started on {bind}:{port}; {how}")
    if code == 0 and not block:
        print(f"join from another machine: sayuri-async cluster join {bind}:{port} --bind <its address>")
    return code


def start_join(address: str, bind: str, num_cpus: int | None, num_gpus: int | None) -> int:
    """``cluster join``: the checks (``addresses``), then ``ray start --address --block``."""
    host, port = parse_head(address, "HEAD:PORT")
    bind = check_bind(bind)
    check_head(address, "HEAD:PORT")
    folder = node_folder("join", host, port)
    earlier = read_record(folder)
    if earlier is not None and running(earlier):
        raise UserError(f"{address}: this machine has joined it already: {earlier.describe()}; "
                        "`sayuri-async cluster stop` ends it")
    record = NodeRecord(role="join", bind=bind, port=port, head=address, session=0, started=time.time())
    return run_ray_start(join_command(address, bind, num_cpus, num_gpus), folder, record, True,
                         f"joined {address} as {bind}; the node stays in the foreground (ray start --block) "
                         "until SIGTERM or Ctrl-C, or until the head goes")


def stop_nodes() -> int:
    """``cluster stop``: every node ``cluster head``/``join`` started on this
    machine, and nothing else (``noderecord``)."""
    found = [(folder, rec) for folder, rec in records()]
    live = [(folder, rec) for folder, rec in found if running(rec)]
    for folder, rec in found:
        if (folder, rec) not in live:
            forget(folder)
    if not live:
        print("no node of `sayuri-async cluster` runs on this machine (other Ray processes are left alone)")
        return 0
    for folder, rec in live:
        forget(folder)  # first: a `cluster join` waiting on this node sees a stop, not a failure
        killed = stop_session(rec.session)
        late = f" ({len(killed)} process(es) that outlived SIGTERM killed)" if killed else ""
        print(f"stopped {rec.describe()}{late}; Ray's lines are in {folder / LOG_NAME}")
    return 0
