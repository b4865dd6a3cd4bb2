"""Self-play on a Ray cluster feeding one trainer (``sayuri-async cluster``).

Vocabulary
----------
Ray         the cluster engine (``pip install 'sayuri-async[cluster]'``):
            node membership, actors placed on GPUs, fault handling. Only
            this package imports it, and only through ``import_ray()``, so a
            one-machine run never loads it.
namespace   every actor of the fleet lives in Ray's namespace ``NAMESPACE``
            under a fixed name, so a restarted driver finds them again.
pieces      ``store.py`` (WeightStore: the network to play), ``ingest.py``
            (Ingest: chunk files into the workspace), ``actor.py``
            (EngineActor: one engine process on a node), ``fleet.py`` (the
            driver), ``view.py`` (the live figures per node), ``nodes.py``
            (``cluster head`` / ``cluster join``), ``addresses.py`` (their
            addresses, checked before Ray starts), ``noderecord.py`` (this
            machine's nodes, their logs, ``cluster stop``), ``raystart.py``
            (Ray with the node's address pinned, its lines in a log),
            ``cli.py`` (the command).
"""
from __future__ import annotations

from ..usererror import UserError

NAMESPACE = "sayuri-async"
INSTALL_HINT = "pip install 'sayuri-async[cluster]'"


def import_ray():
    """The ``ray`` module; UserError (one line, exit 2) saying what to
    install when it is missing or broken."""
    try:
        import ray
    except ImportError as e:
        why = "" if getattr(e, "name", None) == "ray" else f" ({' '.join(str(e).split())})"
        raise UserError(f"the cluster mode needs Ray{why}: {INSTALL_HINT}") from None
    return ray
