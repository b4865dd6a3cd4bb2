"""GTP frontend of sayuri-async: speaks GTP version 2 on stdin/stdout.

Modules: ``protocol`` (wire format: lines, tokens, ids, responses),
``args`` (numbers, colours, vertices and their ranges), ``config``
(settings from ``configs/gtp.toml``), ``context`` (what a handler gets),
``commands`` (the dispatcher and the standard commands), ``analyze_args``
and ``analyze_cmds`` (the analysis commands), ``analysis`` (Sabaki, Lizzie
and KataGo analysis lines), ``kata_cmds`` (KataGo's extensions),
``timecontrol`` (clocks and budgets), ``engine`` (glue to the search and
batching queue), ``main`` (the program: ``sayuri-async gtp`` or ``python -m
gtp``), ``match`` (a small GTP match runner). The protocol is documented in
``docs/gtp.md``.
"""
from __future__ import annotations

from importlib import metadata


def _version() -> str:
    try:
        return metadata.version("sayuri-async")
    except metadata.PackageNotFoundError:
        return "0.1.0"


__version__ = _version()
