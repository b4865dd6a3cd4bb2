"""The checks of ``cluster head`` and ``join`` that need no Ray and no
network: addresses that are not ``HOST:PORT``, a ``--bind`` that is not one
IP address of this machine, a port that is taken, a head that answers in
another protocol, and how a failed ``ray start`` is said in one line. (The
commands themselves, on real Ray nodes: ``test_cluster_mistakes.py``.)"""
from __future__ import annotations

import socket
import threading

import pytest

from sayuri_async.cluster.addresses import check_bind, check_head, is_loopback, parse_head, port_taken
from sayuri_async.cluster.nodes import _ended, last_error
from sayuri_async.usererror import UserError


@pytest.mark.parametrize("text", ["nonsense", "10.0.0.1", "10.0.0.1:", ":6379", "10.0.0.1:port", "10.0.0.1:0",
                                  "10.0.0.1:70000", "a b:6379", "::1:6379", "10.0.0.1:63 79"])
def test_what_is_not_host_port_is_refused_in_one_line(text):
    with pytest.raises(UserError) as e:
        parse_head(text, "HEAD:PORT")
    assert "not an address HOST:PORT" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("text, host, port", [("10.0.0.1:6379", "10.0.0.1", 6379), ("[::1]:6379", "::1", 6379),
                                              ("head.lan:7000", "head.lan", 7000)])
def test_host_port_is_read(text, host, port):
    assert parse_head(text, "HEAD:PORT") == (host, port)


@pytest.mark.parametrize("bind, words", [("nonsense", "not an IP address"), ("0.0.0.0", "not every one"),
                                         ("::", "not every one"), ("192.0.2.77", "not an address of this machine")])
def test_a_bind_that_is_not_one_address_of_this_machine_is_refused(bind, words):
    with pytest.raises(UserError) as e:  # 192.0.2.0/24 is for documentation: no machine has it
        check_bind(bind)
    assert words in str(e.value) and str(e.value).startswith("--bind ") and bind in str(e.value)


def test_loopback_is_an_address_of_this_machine():
    assert check_bind("127.0.0.1") == "127.0.0.1" and is_loopback("127.0.0.1") and not is_loopback("10.0.0.1")


def test_a_port_in_use_is_taken():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert port_taken("127.0.0.1", port)
    assert not port_taken("127.0.0.1", port)


def test_a_head_that_answers_in_another_protocol_is_not_ray():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)

        def http() -> None:
            conn = s.accept()[0]
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            conn.close()

        threading.Thread(target=http, daemon=True).start()
        address = f"127.0.0.1:{s.getsockname()[1]}"
        with pytest.raises(UserError) as e:
            check_head(address, "HEAD:PORT", timeout_s=2)
    assert f"HEAD:PORT {address}: a program there answers in another protocol: not a Ray head" in str(e.value)


def test_a_failed_ray_start_is_said_with_rays_own_error():
    out = "2026 INFO scripts.py -- Local node IP\nTraceback (most recent call last):\n  File x\n" \
          "ConnectionError: Ray is trying to start at 10.0.0.1:6379, but is already running\n"
    assert last_error(out) == "ConnectionError: Ray is trying to start at 10.0.0.1:6379, but is already running"
    assert last_error("2026 INFO scripts.py -- --block\n") is None
    assert _ended(-9, "") == "ray start was killed by SIGKILL"
    assert _ended(1, out).startswith("ray start ended with status 1: ConnectionError: ")
