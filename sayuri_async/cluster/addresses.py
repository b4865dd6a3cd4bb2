"""The addresses ``cluster head``, ``join`` and ``run`` are given, checked
before Ray starts, each within a bounded time and with one line.

Vocabulary
----------
head address  ``HOST:PORT`` (``[V6]:PORT`` for IPv6), the head's address as
            ``cluster head`` printed it: anything else is refused at once
            (``parse_head``).
bind        ``--bind``: one IP address of this machine, where its node
            listens. An address no interface of this machine has is refused
            by trying to bind a socket there (the kernel says
            EADDRNOTAVAIL at once, where Ray would hang or fail after a
            minute); an unspecified address (``0.0.0.0``, ``::``) is refused
            too: Ray has no authentication and listens where it is told.
free port   ``port_taken(bind, port)``: whether a program listens on the
            head's port already (a socket there gets EADDRINUSE).
Ray head    ``check_head``: something must accept a connection at the
            address within ``PROBE_S`` seconds, and answer the HTTP/2
            preface with a SETTINGS frame as Ray's GCS (a gRPC server) does.
            Nothing there, or a program that is not a Ray head (one that
            says nothing, or something else), is one line, where Ray would
            retry for minutes.
loopback    ``127.0.0.0/8`` and ``::1``, which Ray would otherwise turn into
            the machine's main address by probing a public one (``raystart``).
"""
from __future__ import annotations

import errno
import ipaddress
import socket

from ..usererror import UserError

PROBE_S = 5.0
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # + an empty SETTINGS frame
_SETTINGS = 4


def parse_head(text: str, what: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT``; UserError naming ``what`` otherwise."""
    host, sep, port = text.strip().rpartition(":")
    bracketed = host.startswith("[") and host.endswith("]")
    host = host[1:-1] if bracketed else host
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65_535 or any(c.isspace() for c in host) \
            or (":" in host and not (bracketed and _is_ip(host))):
        raise UserError(f"{what} {text!r}: not an address HOST:PORT (e.g. 192.168.1.10:6379, as `sayuri-async "
                        "cluster head` printed it)")
    return host, int(port)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    return _is_ip(host) and ipaddress.ip_address(host).is_loopback


def check_bind(bind: str, option: str = "--bind") -> str:
    """``bind`` when it is one IP address of this machine (see the vocabulary)."""
    try:
        ip = ipaddress.ip_address(bind.strip("[]"))
    except ValueError:
        raise UserError(f"{option} {bind!r}: not an IP address (give this machine's address on the trusted "
                        "network, e.g. 192.168.1.10)") from None
    if ip.is_unspecified:
        raise UserError(f"{option} {bind}: give one address of this machine, not every one (Ray has no "
                        "authentication: it listens only where it is told)")
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((str(ip), 0))
        except OSError as e:
            if e.errno == errno.EADDRNOTAVAIL:
                raise UserError(f"{option} {bind}: not an address of this machine (`ip -brief address` lists "
                                "them)") from None
            raise UserError(f"{option} {bind}: cannot listen there ({e.strerror or e})") from None
    return str(ip)


def port_taken(bind: str, port: int) -> bool:
    """Whether a program listens on ``port`` of ``bind`` (or of every address) already."""
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is free for Ray too
        try:
            s.bind((bind, port))
        except OSError as e:
            return e.errno == errno.EADDRINUSE
    return False


def check_head(address: str, what: str, timeout_s: float = PROBE_S) -> tuple[str, int]:
    """``(host, port)`` of a Ray head that answers at ``address`` (see the
    vocabulary); UserError in one line, within about ``2 * timeout_s``."""
    host, port = parse_head(address, what)
    try:
        conn = socket.create_connection((host, port), timeout=timeout_s)
    except socket.gaierror as e:
        raise UserError(f"{what} {address}: no such host ({e.strerror or e})") from None
    except OSError as e:
        why = "no answer" if isinstance(e, socket.timeout) else (e.strerror or str(e))
        raise UserError(f"{what} {address}: nothing answers there ({why} within {timeout_s:g} s); is `sayuri-async "
                        "cluster head` running on that machine?") from None
    answer = b""
    with conn:
        conn.settimeout(timeout_s)
        try:
            conn.sendall(_PREFACE)
            while len(answer) < 9:
                got = conn.recv(9 - len(answer))
                if not got:
                    break
                answer += got
        except OSError:
            pass
    if len(answer) < 9 or answer[3] != _SETTINGS:
        said = "says nothing" if not answer else "answers in another protocol"
        raise UserError(f"{what} {address}: a program there {said}: not a Ray head (within {timeout_s:g} s); is "
                        "the port the one `sayuri-async cluster head` printed?")
    return host, port
