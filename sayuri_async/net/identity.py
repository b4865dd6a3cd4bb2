"""Which network played: a name and the sha256 of its file.

Vocabulary
----------
NetworkId   ``(name, sha256)``: ``name`` is the weights file's name without
            its ``.safetensors`` suffix (``random`` for the random network),
            ``sha256`` the hex digest of the file's bytes (empty for the
            random network, which has no file).
label       ``name@<first SHA_CHARS hex digits>`` (``random`` alone): what
            chunk metadata, SGF files, the live view and the summary show.
sidecar     ``<weights file>.sha256``: an optional text file beside a weights
            file whose first word is the file's expected sha256 (the format
            of ``sha256sum``). ``train --follow`` writes one before it
            publishes a network; ``check_file`` refuses a file whose bytes
            do not match it (a copy still in progress on a shared
            filesystem, a damaged file).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

SHA_CHARS = 12  # hex digits of the sha256 in a label
SIDECAR_SUFFIX = ".sha256"
READ_BYTES = 1 << 20


class NetworkMismatch(ValueError):
    """A weights file whose bytes do not match its sidecar; the message names the file."""


@dataclass(frozen=True)
class NetworkId:
    name: str
    sha256: str = ""

    @property
    def label(self) -> str:
        return f"{self.name}@{self.sha256[:SHA_CHARS]}" if self.sha256 else self.name

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "sha256": self.sha256}

    @classmethod
    def from_dict(cls, d: dict) -> "NetworkId":
        return cls(str(d.get("name", "")), str(d.get("sha256", "")))


RANDOM = NetworkId("random")


def file_sha256(path: str | os.PathLike) -> str:
    """The hex sha256 of a file's bytes, read in pieces."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(READ_BYTES):
            h.update(block)
    return h.hexdigest()


def network_name(path: str | os.PathLike) -> str:
    p = Path(path)
    return p.name[: -len(".safetensors")] if p.name.endswith(".safetensors") else p.name


def sidecar_path(path: str | os.PathLike) -> Path:
    return Path(f"{path}{SIDECAR_SUFFIX}")


def check_file(path: str | os.PathLike) -> NetworkId:
    """The NetworkId of a weights file; NetworkMismatch when its sidecar
    (see the vocabulary) names another sha256. OSError when it cannot be read."""
    digest = file_sha256(path)
    side = sidecar_path(path)
    if side.is_file():
        words = side.read_text(encoding="utf-8", errors="replace").split()
        want = words[0].lower() if words else ""
        if want != digest:
            raise NetworkMismatch(f"{path}: its sha256 {digest[:SHA_CHARS]} does not match "
                                  f"{side.name} ({want[:SHA_CHARS] or 'empty'})")
    return NetworkId(network_name(path), digest)


def network_of(weights: str | None) -> NetworkId:
    """The NetworkId of a weights file, or RANDOM for none."""
    return check_file(weights) if weights else RANDOM
