"""``sayuri-async cluster``: a real two-node Ray cluster on this machine.

Everything Ray runs happens inside a network namespace that has only ``lo``
(``unshare -n``, as root): Ray turns 127.0.0.1 into the machine's main
address and listens on every interface otherwise. Without the namespace, or
without Ray, the test skips, saying why.

One run (``DRIVER``, inside the namespace): a head (``cluster head``); the
fleet (``cluster run``: one engine per node, 7x7, the random network) with
its trainer (``train --follow``: a tiny net, one network published after 10
steps on the fleet's first chunks); a second node (``cluster join``) that
joins the running fleet and gets an engine; node B killed (its whole process
session, SIGKILL, as a machine dies) once every engine plays the trainer's
network; then the STOP file, which the run removes as it ends. Then the
fleet is started again on that workspace (no ``--spool``, the driver's own
``TMPDIR`` elsewhere): its engines wait for the workspace's network, so no
chunk of the second run records the random network, and their spools are in
the node's temporary folder (its ``RAY_TMPDIR``). Every node runs in a process
session of its own; the nodes are stopped with SIGTERM, as a supervisor stops them, and
must leave no process behind. The test checks the workspace and the fleet's
log afterwards. A Ray token file is there, as one that an earlier local
``ray.init()`` leaves in ``~/.ray``: the head would turn token
authentication on and refuse the nodes that join.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sayuri_async.chunkfile import peek_chunk, read_chunk

from helpers_netns import in_namespace, namespace_problem


ROOT = Path(__file__).resolve().parents[1]


def _problem() -> str | None:
    try:
        import ray  # noqa: F401
    except ImportError:
        return "needs Ray (pip install 'sayuri-async[cluster]')"
    return namespace_problem()


PROBLEM = _problem()

DRIVER = textwrap.dedent('''\
    import json, os, re, signal, socket, subprocess, sys, time
    from pathlib import Path
    from sayuri_async.chunkfile import peek_chunk

    work, ws, port = Path(sys.argv[1]), Path(sys.argv[1]) / "ws", "6411"
    NET = "net-s000000010"  # the trainer's one network: 10 steps, exported at step 10
    cli = [sys.executable, "-m", "sayuri_async", "cluster"]
    report = {"events": []}
    procs = {}

    def say(text):
        report["events"].append(f"{time.monotonic() - t0:6.1f}s {text}")

    def start(name, args, env=None):
        log = open(work / f"{name}.log", "w")
        procs[name] = subprocess.Popen(cli + args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                       env=env)

    def wait(cond, seconds, what):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if cond():
                say(what)
                return True
            time.sleep(0.5)
        say(f"TIMEOUT {what}")
        return False

    def chunks():
        return sorted((ws / "data").glob("*.npz")) if (ws / "data").is_dir() else []

    def plays(name):
        for p in chunks():
            try:
                if any(n["name"] == name for n in peek_chunk(p)[1]["networks"]):
                    return True
            except Exception:
                pass
        return False

    def every_engine_plays(name):  # the last totals line: the networks the engines play now
        totals = [line for line in log("fleet").splitlines() if line.startswith("total: ")]
        return bool(totals) and re.search(rf"  net {name}@[0-9a-f]+  [|]", totals[-1]) is not None

    def node_games():  # the last block of the plain view: games of each node's row
        rows = {}
        for line in log("fleet").splitlines():
            if line.startswith("total: "):
                rows = {}
            elif m := re.match(r"^  (\\S+)\\s+engines\\s+\\d+\\s+games\\s+(\\d+)", line):
                rows[m.group(1)] = int(m.group(2))
        return rows

    def engine_niceness():  # the niceness of every engine actor's process (Ray's own default: 15)
        found = []
        for pid in os.listdir("/proc"):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text() if pid.isdigit() else ""
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
            if "(ray::EngineActo" in stat:
                found.append(int(stat.rsplit(")", 1)[1].split()[16]))
        return sorted(set(found))

    def totals_games(name):  # the games of each totals line, in order
        return [int(line.split(" games ")[1].split()[0]) for line in log(name).splitlines()
                if line.startswith("total: ")]

    def log(name):
        p = work / f"{name}.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def port_open():
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", int(port))) == 0

    t0 = time.monotonic()
    ok = False
    try:
        start("head", ["head", "--bind", "127.0.0.1", "--port", port, "--num-cpus", "1", "--block"])
        ok = wait(lambda: "--block" in log("head") or procs["head"].poll() is not None, 180, "head up")
        ok = ok and procs["head"].poll() is None and port_open()
        if ok:
            start("fleet", ["run", "--address", f"127.0.0.1:{port}", "--config", str(work / "sp.toml"),
                            "--workspace", str(ws), "--train-config", str(work / "train.toml"),
                            "--train-args", "--steps 10",
                            "--spool", str(work / "spool"), "--poll", "1",
                            "--view-every", "3"])
            ok = wait(lambda: log("fleet").count("joined") >= 1 and len(chunks()) >= 2, 180, "the head plays")
        if ok:  # node b joins the running fleet
            start("nodeb", ["join", f"127.0.0.1:{port}", "--bind", "127.0.0.1", "--num-cpus", "1"])
            ok = wait(lambda: "--block" in log("nodeb") or procs["nodeb"].poll() is not None, 180, "node b up")
            ok = ok and procs["nodeb"].poll() is None
            ok = ok and wait(lambda: log("fleet").count("joined") >= 2, 180, "node b joined")
            ok = ok and wait(lambda: len(node_games()) == 2 and min(node_games().values()) > 0, 300,
                             "both nodes finished games")
            report["engine_niceness"] = engine_niceness()
            report["own_niceness"] = os.nice(0)
        if ok:
            ok = wait(lambda: len(chunks()) >= 4, 300, "four chunks")
        if ok:
            ok = wait(lambda: (ws / "weights" / f"{NET}.safetensors").is_file(), 600, "the trainer published")
            ok = ok and wait(lambda: plays(NET), 240, "a chunk of the published network")
            ok = ok and wait(lambda: every_engine_plays(NET), 300, "every engine plays it")
        if ok:
            report["chunks_before_kill"] = len(chunks())
            os.killpg(procs["nodeb"].pid, signal.SIGKILL)
            say("node b killed")
            ok = wait(lambda: "left" in log("fleet"), 120, "node b left")
            n = len(chunks())
            ok = wait(lambda: len(chunks()) >= n + 2, 240, "two more chunks after the kill") and ok
        if "fleet" in procs:
            ws.mkdir(parents=True, exist_ok=True)
            (ws / "STOP").touch()
            try:
                report["fleet_exit"] = procs["fleet"].wait(timeout=240)
            except subprocess.TimeoutExpired:
                say("TIMEOUT fleet stop")
                procs["fleet"].kill()
            report["stop_left"] = (ws / "STOP").exists()
        if ok:  # the fleet again on this workspace: it continues the published network
            first = {p.name for p in chunks()}
            report["first_run_chunks"] = len(first)
            driver_tmp = work / "driver-tmp"
            driver_tmp.mkdir()
            start("fleet2", ["run", "--address", f"127.0.0.1:{port}", "--config", str(work / "sp.toml"),
                             "--workspace", str(ws), "--train-config", str(work / "train.toml"),
                             "--train-args", "--steps 10", "--poll", "1", "--view-every", "3"],
                  env={**os.environ, "TMPDIR": str(driver_tmp)})
            ok = wait(lambda: len([p for p in chunks() if p.name not in first]) >= 3, 300, "three chunks of run 2")
            (ws / "STOP").touch()
            try:
                report["fleet2_exit"] = procs["fleet2"].wait(timeout=240)
            except subprocess.TimeoutExpired:
                say("TIMEOUT fleet 2 stop")
                procs["fleet2"].kill()
            report["second_run_networks"] = sorted({n["name"] for p in chunks() if p.name not in first
                                                    for n in peek_chunk(p)[1]["networks"]})
            report["second_run_chunks"] = len(chunks()) - len(first)
            report["stop_left_2"] = (ws / "STOP").exists()
            node_spool = Path(os.environ["RAY_TMPDIR"]) / "sayuri-async-spool"
            report["spools"] = {"node": node_spool.is_dir() and any(node_spool.glob("engine-*")),
                                "driver": (driver_tmp / "sayuri-async-spool").exists()}
        report["totals_games"] = totals_games("fleet")
    finally:
        for name, p in procs.items():
            if p.poll() is None and name != "fleet":
                p.send_signal(signal.SIGTERM)  # ray start --block ends its node on SIGTERM
        own = {p.pid for p in procs.values()}
        ray_tmp = os.environ["RAY_TMPDIR"].encode()

        def ours():  # the nodes' sessions (raylet, workers, monitors), and anything naming their folder
            found = []
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or int(pid) == os.getpid():
                    continue
                try:
                    if os.getsid(int(pid)) in own or ray_tmp in Path(f"/proc/{pid}/cmdline").read_bytes():
                        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                            found.append(int(pid))
                except (ProcessLookupError, FileNotFoundError, PermissionError):
                    pass
            return found

        def settle(seconds):  # the processes of ours still alive after at most `seconds`
            deadline = time.monotonic() + seconds
            while (left := ours()) and time.monotonic() < deadline:
                time.sleep(1)
            return left

        def described(pids):
            out = []
            for pid in pids:
                try:
                    out.append(f"{pid}: {Path(f'/proc/{pid}/cmdline').read_bytes()[:300]!r}")
                except (ProcessLookupError, FileNotFoundError, PermissionError):
                    pass
            return out

        for p in procs.values():
            try:
                p.wait(timeout=60)  # reaped: no zombie of ours counts as left
            except subprocess.TimeoutExpired:
                pass
        stopped = settle(60)
        report["left_after_stop"] = described(stopped)  # what the nodes' own stop did not end in a minute
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        report["left_processes"] = described(settle(20))
        report["ok"] = ok
        (work / "report.json").write_text(json.dumps(report))
''')


# the trainer: a tiny 7x7 net, 10 steps of 16 positions (--train-args "--steps 10"; 4 samples a
# position: 40 positions on disk allow them), one export at step 10, then it ends and self-play goes on
TRAIN_TOML = textwrap.dedent("""\
    [data]
    board_size = 7
    workers = 0
    shuffle_buffer = 64
    [model]
    blocks = 1
    channels = 8
    policy_channels = 4
    value_channels = 4
    value_hidden = 8
    board_size_min = 7
    board_size_max = 7
    [optim]
    batch_size = 16
    [schedule]
    reference_batch = 16
    warmup = 0
    boundaries = [1000]
    rates = [0.02, 0.01]
    total = 10
    [run]
    name = "net"
    device = "cpu"
    checkpoint_every = 5
    export_every = 10
    log_every = 5
    progress = "off"
""")


@pytest.mark.slow
@pytest.mark.skipif(PROBLEM is not None, reason=str(PROBLEM))
def test_a_two_node_fleet_feeds_its_trainer_plays_its_network_and_survives_a_node(tmp_path):
    work = Path(os.path.realpath(tmp_path))
    (work / "sp.toml").write_text(textwrap.dedent("""\
        [selfplay]
        board_sizes = [7]
        playouts = 4
        parallel_games = 2
        batch_size = 2
        chunk_games = 1
        writer_process = false
        seed = 3
        [search]
        edge_capacity = 20000
    """))
    (work / "train.toml").write_text(TRAIN_TOML)
    (work / "driver.py").write_text(DRIVER)
    ray_tmp = Path("/tmp") / f"ray-{os.getpid()}"  # short: Ray's socket paths must fit in 107 bytes
    (work / "auth_token").write_text("a" * 64)  # found as ~/.ray/auth_token would be (nodes.py, "auth")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "RAY_TMPDIR": str(ray_tmp),
           "RAY_AUTH_TOKEN_PATH": str(work / "auth_token")}
    env.pop("RAY_AUTH_MODE", None)
    try:
        run = subprocess.run(in_namespace(sys.executable, str(work / "driver.py"), str(work)), env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=2100)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    report = json.loads((work / "report.json").read_text())
    fleet_log = (work / "fleet.log").read_text(errors="replace") if (work / "fleet.log").exists() else ""
    why = f"{report['events']}\n{fleet_log[-3000:]}\n{run.stderr[-2000:]}"
    assert report["ok"], why
    assert report["left_after_stop"] == [] and report["left_processes"] == [], why
    assert report.get("fleet_exit") == 0, why
    # the engines run at the niceness of the command that started their node, not Ray's 15
    assert report["engine_niceness"] == [report["own_niceness"]], why
    assert fleet_log.count("joined") == 2 and "left: " in fleet_log and "game(s) lost (" in fleet_log, why
    # the totals keep the games of node b's engine after it left
    games = report["totals_games"]
    assert games and all(a <= b for a, b in zip(games, games[1:])), (games, why)
    assert "starting from nothing" in fleet_log, why  # an empty workspace, no weights in the config
    assert "published net-s000000010@" in fleet_log and "stopping (STOP file)" in fleet_log, why
    assert "trainer finished" in fleet_log, why  # it reached its 10 steps; self-play went on
    assert (work / "ws" / "train" / "checkpoints" / "ckpt-000000010.pt").is_file(), why
    data = work / "ws" / "data"
    files = sorted(data.iterdir())
    assert files and all(p.suffix == ".npz" and not p.name.startswith(".") for p in files), files
    networks = set()
    for p in files:
        read_chunk(p)  # whole and readable
        meta = peek_chunk(p)[1]
        assert meta["host"], p
        networks |= {n["name"] for n in meta["networks"]}
    assert {"random", "net-s000000010"} <= networks
    assert "files left in spools: 0" in fleet_log, fleet_log[-1500:]  # a put retried after its answer was lost
    # is refused as a duplicate: every name on disk once, every file whole
    assert not [p for p in (work / "spool").rglob("*.npz")]  # node b's leftovers were adopted and uploaded
    assert report["stop_left"] is False and report["stop_left_2"] is False, why  # each run removed its STOP
    # the run started again continues the published network: none of its chunks records the random one
    fleet2_log = (work / "fleet2.log").read_text(errors="replace")
    why2 = f"{report['events']}\n{fleet2_log[-3000:]}"
    assert report.get("fleet2_exit") == 0 and report["second_run_chunks"] >= 3, why2
    assert report["second_run_networks"] == ["net-s000000010"], why2
    assert "starting from nothing" not in fleet2_log and "files left in spools: 0" in fleet2_log, why2
    # its spools are in the node's own temporary folder (RAY_TMPDIR), not the driver's TMPDIR
    assert report["spools"] == {"node": True, "driver": False}, why2
