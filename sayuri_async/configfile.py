"""TOML configuration files into dataclasses, with errors that name the file,
the table and the key. Every config of the project (self-play, the RL loop,
training, GTP) is read through here.

Vocabulary
----------
section   a TOML table mapped onto one dataclass (``[selfplay]``,
          ``[optim]``, ``[search]`` ...). A dataclass field whose type is a
          dataclass is a nested section.
fill      ``fill(cls, table, source, section)``: a ``cls`` from one table (over
          a ``base`` or the defaults), every value checked against the field's
          type; then the dataclass's own range checks run (``__post_init__``
          raising ValueError, or a ``check()`` method raising ``Bad``).
sections  ``fill_sections(cls, document, source)``: a dataclass whose fields
          are all sections, from a whole file; unknown tables are errors.
Bad       what a ``check()`` raises: the key and what is wrong with it.
message   every error reads ``<file>: [<table>] <key>: <problem>``, so a typo
          never silently falls back to a default and the user knows where to
          look.
"""
from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration file or value that cannot be used."""


class Bad(Exception):
    """One key's problem, raised by range checks; ``fill`` adds the file and table."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def require(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise Bad(key, message)


def read_toml(path: str | Path) -> dict:
    p = Path(path)
    try:
        with open(p, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None


def where(source: str, section: str | None) -> str:
    return f"{source}: [{section}]" if section else f"{source}:"


def convert(key: str, value: Any, annotation: Any) -> Any:
    """``value`` checked against a field's annotation (ints are accepted for
    floats and become floats); raises ``Bad`` naming ``key``."""
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return value
    if origin is Literal:
        choices = typing.get_args(annotation)
        if value not in choices:
            raise Bad(key, f"must be one of {', '.join(repr(c) for c in choices)}, not {value!r}")
        return value
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(annotation):
            if option is type(None) and value is None:
                return None
            try:
                return convert(key, value, option)
            except Bad:
                continue
        raise Bad(key, f"must be {_type_name(annotation)}, not {value!r}")
    if origin in (list, tuple):
        args = typing.get_args(annotation)
        if not isinstance(value, (list, tuple)):
            raise Bad(key, f"must be a list, not {value!r}")
        return [convert(key, v, args[0]) for v in value] if args else list(value)
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise Bad(key, f"must be a table, not {value!r}")
        return value
    if annotation is bool:
        if not isinstance(value, bool):
            raise Bad(key, f"must be true or false, not {value!r}")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Bad(key, f"must be a whole number, not {value!r}")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Bad(key, f"must be a number, not {value!r}")
        if not math.isfinite(value):
            raise Bad(key, f"must be finite, not {value!r}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise Bad(key, f"must be a string, not {value!r}")
        return value
    if isinstance(annotation, type) and not isinstance(value, annotation):
        raise Bad(key, f"must be {_type_name(annotation)}, not {value!r}")
    return value


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def fill(cls: type[T], data: dict, source: str, section: str | None = None, base: T | None = None) -> T:
    """A ``cls`` from the table ``data`` over ``base`` (or the defaults).
    ``source`` names the file (or "command line"), ``section`` the table."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where(source, section)} must be a table")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    values = {}
    try:
        for key, value in data.items():
            if key not in names:
                raise Bad(key, f"unknown key (known keys: {', '.join(sorted(names))})")
            tp = hints[key]
            if dataclasses.is_dataclass(tp) and isinstance(value, tp):
                pass  # filled already (a sibling table of the file, as [search] beside [selfplay])
            elif dataclasses.is_dataclass(tp):
                sub = f"{section}.{key}" if section else key
                value = fill(tp, value, source, sub, getattr(base, key) if base is not None else None)
            else:
                value = convert(key, value, tp)
            values[key] = value
        obj = dataclasses.replace(base, **values) if base is not None else cls(**values)
        check = getattr(obj, "check", None)
        if callable(check):
            check()
    except Bad as e:
        raise ConfigError(f"{where(source, section)} {e.key}: {e.message}") from None
    except (TypeError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"{where(source, section)} {e}") from None
    return obj


def recheck(obj: Any, source: str, section: str | None = None) -> None:
    """Run ``obj.check()`` again after values were set by hand (command-line
    options), with the same error messages as ``fill``."""
    try:
        obj.check()
    except Bad as e:
        raise ConfigError(f"{where(source, section)} {e.key}: {e.message}") from None


def check_tables(data: dict, known: list[str], source: str) -> None:
    """Every top-level table of a parsed file must be one of ``known``."""
    for table, body in data.items():
        if table not in known:
            raise ConfigError(f"{source}: unknown section [{table}] (known: {', '.join(known)})")
        if not isinstance(body, dict):
            raise ConfigError(f"{source}: [{table}] must be a table")


def fill_sections(cls: type[T], data: dict, source: str, base: T | None = None) -> T:
    """A ``cls`` whose fields are sections, from a whole parsed file."""
    check_tables(data, [f.name for f in dataclasses.fields(cls)], source)
    return fill(cls, data, source, None, base)


def load(cls: type[T], path: str | Path, section: str | None = None) -> T:
    """Read ``path`` into a ``cls``; ``section`` picks one table of the file."""
    data = read_toml(path)
    if section is not None:
        return fill(cls, data.get(section, {}), str(path), section)
    return fill(cls, data, str(path))
