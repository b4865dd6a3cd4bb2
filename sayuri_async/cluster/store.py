"""The network the fleet plays, held by one named, detached actor.

Vocabulary
----------
WeightStore  ``(generation, name, sha256, bytes)`` of the newest network
            published. The fleet driver publishes each new export of the
            trainer (``publish``); every EngineActor asks ``current()``
            every few seconds (a ~1 ms call) and, on a new generation,
            ``fetch``es its bytes once. The bytes live in this actor's
            memory, never in a ``ray.put`` of the trainer or driver, whose
            objects die with them (Ray's ownership); the driver's restart
            finds the store again by name and keeps its generation.
generation  1, 2, ... in order of publication in this store's life; 0 before
            the first.
Published   what ``current()`` answers: generation, name, sha256.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

STORE_NAME = "weight-store"


@dataclass(frozen=True)
class Published:
    generation: int
    name: str
    sha256: str


class WeightStore:
    """A plain class: the fleet makes it a Ray actor (``ray.remote``)."""

    def __init__(self) -> None:
        self._current: Published | None = None
        self._bytes = b""

    def publish(self, name: str, sha256: str, data: bytes) -> int:
        """Make ``data`` (a weights file's bytes, named ``name``) the network
        to play; its sha256 must be ``sha256``. Returns its generation; the
        same network again returns the current one."""
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise ValueError(f"{name}: its bytes have sha256 {digest[:12]}, not {sha256[:12]}")
        if self._current is not None and self._current.sha256 == sha256:
            return self._current.generation
        generation = (self._current.generation if self._current else 0) + 1
        self._current, self._bytes = Published(generation, name, sha256), bytes(data)
        return generation

    def current(self) -> Published | None:
        return self._current

    def fetch(self, generation: int) -> bytes | None:
        """The bytes of ``generation`` while it is current; None once a
        newer one replaced it (the caller asks ``current()`` again)."""
        if self._current is None or self._current.generation != generation:
            return None
        return self._bytes
