"""``cluster head``, ``join``, ``stop`` and the driver's Ray lines, on real
Ray nodes inside a network namespace that has only ``lo`` (``unshare -n``, as
root; the test skips, saying why, without it or without Ray).

Each mistake that once hung or ended in a traceback (a head address that is
not one, where nothing answers, where a program that is not Ray answers; a
``--bind`` that is not this machine's; a port that a program or an earlier
head holds) is one line and exit status 2 within seconds. SIGTERM to ``join``
while it connects leaves no process of its node. ``cluster stop`` ends the
nodes that ``head`` and ``join`` started, and no other Ray-named process.
Ray's own lines (the probe of 8.8.8.8 for the machine's address, "(raylet)
The node ... has been marked dead") never reach the screen: the node's and the
driver's log files hold them, and the commands name those files.
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
    import json, os, shutil, signal, socket, subprocess, sys, threading, time
    from pathlib import Path
    from sayuri_async.cluster.noderecord import session_pids
    from sayuri_async.lifetime import child_pids

    work = Path(sys.argv[1])
    cli = [sys.executable, "-m", "sayuri_async", "cluster"]
    report = {}

    def run(name, args, timeout=90):
        t = time.monotonic()
        try:
            p = subprocess.run(cli + args, capture_output=True, text=True, timeout=timeout)
            report[name] = {"rc": p.returncode, "out": p.stdout, "err": p.stderr, "s": time.monotonic() - t}
        except subprocess.TimeoutExpired as e:
            report[name] = {"rc": "timeout", "out": str(e.stdout), "err": str(e.stderr), "s": timeout}

    silent = socket.socket()  # a program that is not Ray: it accepts and says nothing
    silent.bind(("127.0.0.1", 6422))
    silent.listen(8)
    held = []
    threading.Thread(target=lambda: [held.append(silent.accept()) for _ in range(8)], daemon=True).start()

    stuck = socket.socket()  # a head that answers the first frame, then nothing: ray start hangs connecting
    stuck.bind(("127.0.0.1", 6424))
    stuck.listen(8)

    def answer_once():
        while True:
            conn = stuck.accept()[0]
            conn.sendall(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
            held.append(conn)

    threading.Thread(target=answer_once, daemon=True).start()

    run("join_nonsense", ["join", "nonsense", "--bind", "127.0.0.1"])
    run("join_nothing", ["join", "127.0.0.1:6421", "--bind", "127.0.0.1"])
    run("join_not_ray", ["join", "127.0.0.1:6422", "--bind", "127.0.0.1"])
    run("join_foreign_bind", ["join", "127.0.0.1:6423", "--bind", "10.255.255.1"])
    run("head_foreign_bind", ["head", "--bind", "10.255.255.1", "--port", "6423"])
    run("head_bind_nonsense", ["head", "--bind", "nonsense", "--port", "6423"])
    run("head_port_held", ["head", "--bind", "127.0.0.1", "--port", "6422", "--num-cpus", "1"])
    run("head", ["head", "--bind", "127.0.0.1", "--port", "6423", "--num-cpus", "1"], timeout=180)
    run("head_again", ["head", "--bind", "127.0.0.1", "--port", "6423", "--num-cpus", "1"])

    def sigterm_while_connecting(name, head, settle):  # SIGTERM to join: nothing of its node is left
        join = subprocess.Popen(cli + ["join", head, "--bind", "127.0.0.1", "--num-cpus", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        starts = []
        deadline = time.monotonic() + 60
        while not starts and time.monotonic() < deadline and join.poll() is None:
            starts = child_pids(join.pid)
            time.sleep(0.05)
        time.sleep(settle)
        join.send_signal(signal.SIGTERM)
        t = time.monotonic()
        try:
            out = join.communicate(timeout=120)[0]
            rc = join.returncode
        except subprocess.TimeoutExpired:
            join.kill()
            out, rc = join.communicate()[0], "timeout"
        report[name] = {"rc": rc, "out": out, "starts": starts, "s": time.monotonic() - t,
                        "left": [p for s in starts for p in session_pids(s)] + session_pids(join.pid)}
        for p in report[name]["left"]:
            os.kill(p, signal.SIGKILL)

    sigterm_while_connecting("join_sigterm", "127.0.0.1:6423", 1.0)  # ray start is loading Ray
    sigterm_while_connecting("join_sigterm_stuck", "127.0.0.1:6424", 3.0)  # ray start waits on the head

    # a node that joins, a driver that relays the cluster's errors, the node killed, then cluster stop
    logs = {n: open(work / f"{n}.txt", "w") for n in ("nodeb", "driver")}
    nodeb = subprocess.Popen(cli + ["join", "127.0.0.1:6423", "--bind", "127.0.0.1", "--num-cpus", "1"],
                             stdout=logs["nodeb"], stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while "joined" not in (work / "nodeb.txt").read_text() and time.monotonic() < deadline and nodeb.poll() is None:
        time.sleep(0.2)
    driver = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, ray; from pathlib import Path; from sayuri_async.cluster.raystart import connect_driver; "
        "connect_driver(ray, '127.0.0.1:6423', 'x', Path(sys.argv[1])); print('connected', flush=True); "
        "time.sleep(300)"), str(work / "driver-ray.log")], stdout=logs["driver"], stderr=subprocess.STDOUT,
        start_new_session=True)
    deadline = time.monotonic() + 120
    while "connected" not in (work / "driver.txt").read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    node_sessions = child_pids(nodeb.pid)  # its ray start leads the node's own setsid group
    os.killpg(nodeb.pid, signal.SIGKILL)  # the `cluster join` killed outright: its node dies with it
    deadline = time.monotonic() + 20
    while any(session_pids(s) for s in node_sessions) and time.monotonic() < deadline:
        time.sleep(0.2)
    left_of_b = [p for s in node_sessions for p in session_pids(s)]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if "marked dead" in (work / "driver-ray.log").read_text(errors="replace"):
            break
        time.sleep(1)
    time.sleep(2)
    driver.kill()
    driver.wait()
    nodeb.wait(timeout=60)
    report["nodeb"] = {"out": (work / "nodeb.txt").read_text(), "sessions": node_sessions, "left": left_of_b}
    report["driver"] = {"out": (work / "driver.txt").read_text(),
                        "log": (work / "driver-ray.log").read_text(errors="replace")}

    # cluster stop ends the head, and no other process, not even one named as Ray's are
    fake = work / "gcs_server"
    shutil.copy(shutil.which("sleep"), fake)
    other = subprocess.Popen([str(fake), "300"], start_new_session=True)
    run("stop", ["stop"])
    report["stop"]["other_alive"] = other.poll() is None
    other.kill()
    other.wait()
    heads = sorted(Path(os.environ["RAY_TMPDIR"]).glob("ray/session_*/logs"))
    report["left"] = [p for p in map(int, filter(str.isdigit, os.listdir("/proc")))
                      if os.environ["RAY_TMPDIR"].encode() in Path(f"/proc/{p}/cmdline").read_bytes()]
    run("stop_again", ["stop"])
    node_logs = Path(os.environ["RAY_TMPDIR"]) / "sayuri-async-nodes"
    report["node_logs"] = {str(p.relative_to(node_logs)): p.read_text(errors="replace")
                           for p in node_logs.rglob("ray.log")}
    for p in report["left"]:
        os.kill(p, signal.SIGKILL)
    (work / "report.json").write_text(json.dumps(report))
''')

MISTAKES = {
    # case: the words its one line holds
    "join_nonsense": ("'nonsense': not an address HOST:PORT",),
    "join_nothing": ("127.0.0.1:6421: nothing answers there",),
    "join_not_ray": ("127.0.0.1:6422: a program there says nothing: not a Ray head",),
    "join_foreign_bind": ("--bind 10.255.255.1: not an address of this machine",),
    "head_foreign_bind": ("--bind 10.255.255.1: not an address of this machine",),
    "head_bind_nonsense": ("--bind 'nonsense': not an IP address",),
    "head_port_held": ("--port 6422: another program listens on 127.0.0.1:6422",),
    "head_again": ("--port 6423: the head on 127.0.0.1:6423", "`sayuri-async cluster stop` ends it"),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    if PROBLEM is not None:
        pytest.skip(PROBLEM)
    work = Path(os.path.realpath(tmp_path_factory.mktemp("mistakes")))
    (work / "driver.py").write_text(DRIVER)
    ray_tmp = Path("/tmp") / f"rm-{os.getpid()}"  # short: Ray's socket paths must fit in 107 bytes
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "RAY_TMPDIR": str(ray_tmp)}
    try:
        run = subprocess.run(in_namespace(sys.executable, str(work / "driver.py"), str(work)), env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=1200)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert (work / "report.json").is_file(), run.stderr[-3000:]
    return json.loads((work / "report.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_a_mistake_is_one_line_within_seconds(report, case):
    got = report[case]
    assert got["rc"] == 2, got
    lines = [line for line in got["err"].splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("sayuri-async cluster: "), got
    assert all(words in lines[0] for words in MISTAKES[case]), got
    assert got["s"] < 30, got  # each former hang is bounded: a probe of 5 s at most, no Ray started


@pytest.mark.slow
def test_a_head_names_its_log_and_ray_probes_no_public_address(report):
    head = report["head"]
    assert head["rc"] == 0, head
    shown = head["out"] + head["err"]
    assert "Ray's own lines go to " in shown and "head started on 127.0.0.1:6423" in shown, shown
    assert "8.8.8.8" not in shown and "Traceback" not in shown, shown
    assert any("Ray runtime started" in text for text in report["node_logs"].values()), report["node_logs"].keys()
    assert not any("8.8.8.8" in text for text in report["node_logs"].values())


@pytest.mark.slow
@pytest.mark.parametrize("case", ["join_sigterm", "join_sigterm_stuck"])
def test_sigterm_to_join_while_it_connects_leaves_nothing_of_its_node(report, case):
    got = report[case]
    assert got["starts"], got  # its ray start was running
    assert got["rc"] == 143, got
    assert "joined" not in got["out"] and "Traceback" not in got["out"], got  # it had not joined yet
    assert got["left"] == [], got
    # a ray start that waits on its head heeds no SIGTERM for half a minute: it gets 5 s, then its session ends
    assert got["s"] < 20, got


@pytest.mark.slow
def test_a_join_killed_outright_takes_its_node_with_it(report):
    got = report["nodeb"]
    assert "joined 127.0.0.1:6423" in got["out"] and got["sessions"], got
    assert got["left"] == [], got


@pytest.mark.slow
def test_the_driver_keeps_rays_lines_off_the_screen(report):
    driver = report["driver"]
    assert "connected" in driver["out"], driver
    assert "marked dead" in driver["log"], driver["log"][-2000:]  # node b died; the relayed line is in the log
    assert "(raylet)" not in driver["out"] and "8.8.8.8" not in driver["out"] + driver["log"], driver


@pytest.mark.slow
def test_cluster_stop_ends_our_nodes_and_nothing_else(report):
    stop = report["stop"]
    assert stop["rc"] == 0 and "stopped the head on 127.0.0.1:6423" in stop["out"], stop
    assert stop["other_alive"], stop  # `ray stop` would have ended this "gcs_server"
    assert report["left"] == [], report["left"]
    assert report["stop_again"]["rc"] == 0 and "no node" in report["stop_again"]["out"], report["stop_again"]
