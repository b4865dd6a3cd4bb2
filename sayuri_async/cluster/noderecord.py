"""The Ray nodes ``cluster head`` and ``cluster join`` started on this
machine: where each keeps its record and Ray's own lines, and how ``cluster
stop`` ends them (and only them).

Vocabulary
----------
nodes folder  ``<RAY_TMPDIR, else the temporary folder>/sayuri-async-nodes``:
            one folder a node, ``head-<port>`` or ``join-<head host>-<port>``,
            holding ``node.json`` (its record) and ``ray.log`` (``LOG_NAME``:
            everything ``ray start`` and Ray's C++ code print, which never
            reaches the screen).
record      ``NodeRecord``: the role, the addresses, and the setsid group
            of the node. ``ray start`` runs as the leader of a setsid
            group of its own, and every process of the node (the GCS, the
            raylet, the monitors, the workers) stays in that group, even
            after ``ray start`` itself has ended (a head without
            ``--block``). The group's id (its leader's pid) is the node's mark.
running     a record is running while some process of its group is alive
            (a zombie counts as ended).
stop        ``stop_session``: SIGTERM to the processes of the group in
            ``ray stop``'s order (the raylet, then the rest, the GCS last),
            each stage a third of ``STOP_WAIT_S`` to end before SIGKILL.
            Ray processes of other groups (``ray start`` by hand, another
            program's ``ray.init()``) are never touched, where ``ray stop``
            ends every Ray process of the machine.
"""
from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..fileio import atomic_path

LOG_NAME = "ray.log"
RECORD_NAME = "node.json"
STOP_WAIT_S = 30.0  # for the three stages of a stop together


@dataclass
class NodeRecord:
    role: str  # "head" or "join"
    bind: str  # the node's own address
    port: int  # the head's port (its own for a head)
    head: str  # the head's HOST:PORT
    session: int  # the setsid group of the node (ray start's pid)
    started: float  # time.time() at the start

    def describe(self) -> str:
        what = f"the head on {self.bind}:{self.port}" if self.role == "head" else f"the node {self.bind} of {self.head}"
        return f"{what} (setsid group {self.session})"


def nodes_root() -> Path:
    return Path(os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()) / "sayuri-async-nodes"


def node_folder(role: str, head_host: str, port: int) -> Path:
    name = f"head-{port}" if role == "head" else f"join-{head_host.replace(':', '_')}-{port}"
    return nodes_root() / name


def write_record(folder: Path, record: NodeRecord) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / RECORD_NAME) as tmp:
        Path(tmp).write_text(json.dumps(asdict(record)))


def read_record(folder: Path) -> NodeRecord | None:
    try:
        raw = json.loads((folder / RECORD_NAME).read_text())
        return NodeRecord(**raw)
    except (OSError, ValueError, TypeError):
        return None


def forget(folder: Path) -> None:
    """Remove the record (the log stays for reading)."""
    try:
        (folder / RECORD_NAME).unlink()
    except FileNotFoundError:
        pass


def records() -> list[tuple[Path, NodeRecord]]:
    """Every node record on this machine, running or not."""
    root = nodes_root()
    found = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        rec = read_record(folder)
        if rec is not None:
            found.append((folder, rec))
    return found


def session_pids(session: int) -> list[int]:
    """The live processes of setsid group ``session`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            if pid == os.getpid() or os.getsid(pid) != session:
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.append(pid)
    return out


def running(record: NodeRecord) -> bool:
    return bool(session_pids(record.session))


def _stage(pid: int) -> int:
    """When a process of a node gets SIGTERM: its raylet first (the agents
    that share its fate end with it), its GCS last (the others report to
    it), everything else between, as ``ray stop`` does it."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return 1
    name = os.path.basename(argv0.decode(errors="replace"))
    return 0 if name == "raylet" else 2 if name == "gcs_server" else 1


def stop_session(session: int, wait_s: float = STOP_WAIT_S) -> list[int]:
    """End every process of ``session`` (see "stop"), in three stages
    (``_stage``), each with SIGTERM and a third of ``wait_s`` before SIGKILL;
    the pids SIGKILL ended."""
    killed: list[int] = []
    for stage in range(3):
        pids = [p for p in session_pids(session) if _stage(p) <= stage]
        for sig, wait in ((signal.SIGTERM, wait_s / 3), (signal.SIGKILL, 5.0)):
            if not pids:
                break
            if sig == signal.SIGKILL:
                killed += pids
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            deadline = time.monotonic() + wait
            while pids and time.monotonic() < deadline:
                time.sleep(0.2)
                alive = set(session_pids(session))
                pids = [p for p in pids if p in alive]
    return killed
