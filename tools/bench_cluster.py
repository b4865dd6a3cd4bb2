#!/usr/bin/env python3
"""The cluster path against local processes: games/s, nnEvals/s, bytes, publication.

Two ways to run the same K engine processes on this machine, measured in
turns (``--repeats`` pairs, local first, so that a drift of the machine's
speed shows in both):

local       ``selfplay --procs K``: ``run_multiprocess``, the engines write
            their chunks into one folder.
cluster     a one-node Ray cluster (``ray start --head``, K + 1 logical CPUs)
            and the fleet driver (``cluster/fleet.py``) in this process's
            child, inside a network namespace that has only ``lo``
            (``unshare -n``, as root: Ray listens on every interface
            otherwise). K engine actors; their chunks go through each
            actor's spool and Ingest into the workspace.

Both measure the same window: the counters of all engines between
``--warmup`` and ``--warmup + --seconds`` (``report.aggregate``), with
``chunk_games`` small enough that the data path runs inside the window.
Both hand their batches to the inference worker's threads, as a real
network's are (``selfplay_args``). ``--device model`` runs every engine on
the device model instead (``net/device_model.py``: the forward time of
``--net`` on an H200 at the padded batch size, waited on a stream thread):
engines that wait on a device with cores to spare, as on a GPU box. The
device model takes no weights, so that run measures no publication.
``ratio`` is cluster over local for nnEvals/s and games/s (the goal: at
least 0.95); games/s has none where either side finished fewer than
``MIN_GAMES`` games in the window (19x19 games need minutes).

Both give ``cpu_cores``: each program's share of one core over the window,
every process of the machine summed by name (``raylet``, ``gcs_server``,
``ray::EngineActo`` ...): where the CPU the engines did not get went.

The cluster run also gives:

bytes/game  the chunk bytes Ingest wrote over the games the engines
            finished (data and SGF files both cross the cluster).
network     the bytes one engine fetches for a published network (the
            ``--blocks`` x ``--channels`` file), and ``publish_s``: from the
            file's arrival in ``<workspace>/weights`` until every engine's
            status says it plays it (the driver's publication poll, the
            engines' ``--poll``, the fetch and the swap between batches).

The last line is a JSON object. Needs Ray (``pip install
'sayuri-async[cluster]'``), Linux and root for the namespace; it says why
and exits 2 otherwise.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_selfplay  # noqa: E402
from sayuri_async.selfplay.status import Status  # noqa: E402

PORT = 6412
STATUS_EVERY_S = 0.5
PUBLISH_TIMEOUT_S = 300.0
MIN_GAMES = 20  # games each side finishes in the window for a games/s ratio (19x19 needs minutes)
KEYS = ("nnEvals/s", "games/s", "playouts/s", "loop_busy", "batch_fill")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engines", type=int, default=2, help="engine processes, both ways (default 2)")
    ap.add_argument("--board", type=int, default=9)
    ap.add_argument("--playouts", type=int, default=100)
    ap.add_argument("--parallel-games", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--timeout-ms", type=float, default=5.0)
    ap.add_argument("--chunk-games", type=int, default=4, help="games per chunk file (default 4)")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=2, help="local/cluster pairs (default 2)")
    ap.add_argument("--poll", type=float, default=1.0, help="engines' seconds between looks for a network")
    ap.add_argument("--blocks", type=int, default=6, help="the published network's blocks (default 6)")
    ap.add_argument("--channels", type=int, default=96, help="the published network's channels (default 96)")
    ap.add_argument("--device", choices=["cpu", "model"], default="cpu",
                    help="the engines' device: the CPU (the random network) or the device model (default cpu)")
    ap.add_argument("--net", default="20b256c", help="--device model: the modelled net (default 20b256c)")
    ap.add_argument("--cluster-only", metavar="OUT", help=argparse.SUPPRESS)  # the child inside the namespace
    return ap


def selfplay_args(a: argparse.Namespace) -> argparse.Namespace:
    """``a`` with the settings bench_selfplay.make_cfg reads: the random network on the CPU
    (or the device model), its batches handed to the inference worker's threads both ways,
    as every real network's are (a cluster engine follows the published networks, so it never runs the random
    network inline on its loop; a local one would, and do less work a batch)."""
    return argparse.Namespace(**vars(a), weights=None, inline=False, device_table="",
                              encoder="", batches_in_flight=2, gumbel=False, edge_capacity=0,
                              leaves_per_await=bench_selfplay.SearchConfig().leaves_per_await)


def config(a: argparse.Namespace, out: str, procs: int):
    return replace(bench_selfplay.make_cfg(selfplay_args(a), out, procs), chunk_games=a.chunk_games)


def run_local(a: argparse.Namespace, tmp: Path) -> dict:
    cfg = config(a, str(tmp / "local"), a.engines)
    r = bench_selfplay.bench_multiprocess(argparse.Namespace(warmup=a.warmup, seconds=a.seconds), cfg)
    shutil.rmtree(tmp / "local", ignore_errors=True)
    return {**{k: r[k] for k in KEYS}, "cpu_cores": r["cpu_cores"]}


# ---- the cluster side (the child, inside the namespace) -------------------------
def random_network(path: Path, a: argparse.Namespace) -> Path:
    """A random ``--blocks`` x ``--channels`` network, its sidecar first, renamed into place."""
    import torch

    from sayuri_async.net.identity import file_sha256, sidecar_path
    from sayuri_async.net.model import Net, NetConfig, init_weights
    from sayuri_async.net.weights import save_weights

    net = init_weights(Net(NetConfig(blocks=a.blocks, channels=a.channels)), 1)
    tmp = path.with_name(f".{path.name}.tmp")
    with torch.no_grad():
        save_weights(tmp, net, {"name": path.stem})
    sidecar_path(path).write_text(f"{file_sha256(tmp)}  {path.name}\n")
    os.replace(tmp, path)
    return path


def cluster_side(a: argparse.Namespace, out: Path) -> None:
    from sayuri_async.cluster import NAMESPACE, import_ray
    from sayuri_async.cluster.fleet import Fleet, FleetSettings
    from sayuri_async.cluster.ingest import IngestStats
    from sayuri_async.cluster.nodes import start_head, stop_nodes, use_one_auth_mode
    from sayuri_async.usererror import RunFailure, UserError
    from sayuri_async.cluster.view import ClusterView

    work = Path(tempfile.mkdtemp(prefix="bc-", dir="/tmp"))  # short: Ray's socket paths fit in 107 bytes
    os.environ["RAY_TMPDIR"] = str(work / "ray")
    (work / "ray").mkdir()
    ray = import_ray()
    try:  # recorded under RAY_TMPDIR: stop_nodes ends this head only, not every Ray process of the machine
        start_head("127.0.0.1", PORT, a.engines + 1, 0, block=False)
    except (UserError, RunFailure) as e:
        raise SystemExit(f"bench_cluster: {e}") from None
    try:
        use_one_auth_mode()
        ray.init(address=f"127.0.0.1:{PORT}", namespace=NAMESPACE, log_to_driver=False, logging_level="WARNING")
        ws = work / "ws"
        settings = FleetSettings(workspace=ws, selfplay=config(a, str(work / "unused"), 1), spool=str(work / "spool"),
                                 cpu_engines=a.engines, cpu_device=a.device, poll_s=a.poll, stop_file=False)
        fleet = Fleet(settings, ray, ClusterView(every=1e9, stream=io.StringIO()), say=lambda text: None)
        fleet.start_services()
        fleet.publisher.start()  # the run's publisher thread: it looks every PUBLISH_EVERY_S
        fleet.sync_nodes()

        def statuses() -> list[Status]:
            fleet.gather()
            return [st.engine for st in fleet.with_figures()]

        window = bench_selfplay.Measurement(a.warmup, a.seconds)
        while not window.done():
            time.sleep(STATUS_EVERY_S)
            sts = statuses()
            if len(sts) == a.engines:
                window.add(sts)
        r = window.figures(a.batch_size)
        result = {**{k: r[k] for k in KEYS}, "cpu_cores": window.cpu_share()}

        net = None if a.device == "model" else random_network(ws / "weights" / "bench-s000000001.safetensors", a)
        t0 = time.monotonic()
        publish_s = None
        while net is not None and time.monotonic() - t0 < PUBLISH_TIMEOUT_S:
            sts = statuses()
            if len(sts) == a.engines and all(st.network.split("@")[0] == net.stem for st in sts):
                publish_s = time.monotonic() - t0
                break
            time.sleep(0.1)
        final = fleet.shutdown()
        finished = sum(st.engine.finished for st in final.statuses)
        ingest = final.ingest or IngestStats()
        result.update({
            "bytes/game": ingest.bytes / max(finished, 1), "games_finished": finished,
            "files": ingest.written, "network_bytes": None if net is None else net.stat().st_size,
            "publish_s": publish_s,
        })
        out.write_text(json.dumps(result))
    finally:
        ray.shutdown()
        stop_nodes()
        shutil.rmtree(work, ignore_errors=True)


def run_cluster(a: argparse.Namespace, tmp: Path) -> dict:
    out = tmp / "cluster.json"
    args = [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:], "--cluster-only", str(out)]
    quoted = " ".join(f"'{x}'" for x in args)
    run = subprocess.run(["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {quoted}"],
                         capture_output=True, text=True)
    if run.returncode != 0 or not out.exists():
        raise SystemExit(f"bench_cluster: the cluster run failed: {run.stderr.strip()[-1500:]}")
    return json.loads(out.read_text())


def publication(cluster: dict) -> str:
    if cluster["network_bytes"] is None:
        return "no publication (the device model takes no weights)"
    shown = "never" if cluster["publish_s"] is None else f"in {cluster['publish_s']:.2f} s"
    return f"network {cluster['network_bytes']} B published {shown}"


def pair_cpu(pair: dict, side: str) -> dict[str, float]:
    return pair[side].get("cpu_cores") or {}


def problem() -> str | None:
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux's"
    try:
        import ray  # noqa: F401
    except ImportError:
        return "needs Ray: pip install 'sayuri-async[cluster]'"
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot make a loopback-only network namespace (root needed): {probe.stderr.strip()[:120]}"
    return None


def main() -> int:
    a = build_parser().parse_args()
    if a.cluster_only:
        cluster_side(a, Path(a.cluster_only))
        return 0
    why = problem()
    if why is not None:
        print(f"bench_cluster: {why}", file=sys.stderr)
        return 2
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.repeats):
            local = run_local(a, Path(tmp))
            cluster = run_cluster(a, Path(tmp))
            ratio = {k: cluster[k] / local[k] if local[k] else None for k in ("nnEvals/s", "games/s")}
            if min(local["games/s"], cluster["games/s"]) * a.seconds < MIN_GAMES:
                ratio["games/s"] = None  # too few games in the window to compare
            pairs.append({"local": local, "cluster": cluster, "ratio": ratio})
            print(f"pair {i + 1}: nnEvals/s local {local['nnEvals/s']:.0f} cluster {cluster['nnEvals/s']:.0f} "
                  f"({ratio['nnEvals/s']:.3f})  games/s {local['games/s']:.2f} / {cluster['games/s']:.2f}  "
                  f"bytes/game {cluster['bytes/game']:.0f}  " + publication(cluster),
                  flush=True)
            for side in ("local", "cluster"):
                top = ", ".join(f"{k} {v:.2f}" for k, v in list(pair_cpu(pairs[-1], side).items())[:8])
                print(f"  {side} cores: {top}", flush=True)
    evals = [p["ratio"]["nnEvals/s"] for p in pairs]
    games = [p["ratio"]["games/s"] for p in pairs if p["ratio"]["games/s"] is not None]
    print(json.dumps({
        "engines": a.engines, "device": a.device, "net": a.net if a.device == "model" else None, "board": a.board,
        "playouts": a.playouts, "parallel_games": a.parallel_games, "batch_size": a.batch_size,
        "seconds": a.seconds, "chunk_games": a.chunk_games, "poll_s": a.poll,
        "ratio_nnEvals/s": sum(evals) / len(evals), "ratio_games/s": sum(games) / len(games) if games else None,
        "pairs": pairs,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
