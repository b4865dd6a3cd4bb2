"""TOML configuration files into dataclasses, with errors that name the file.

Vocabulary: a *section* is a TOML table mapped onto one dataclass; ``load``
reads a file and fills the dataclasses given for its sections. Unknown keys,
wrong types and bad values raise ``ConfigError`` naming the file and the key.
"""
from __future__ import annotations

import dataclasses
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration file or value that cannot be used."""


def read_toml(path: str | Path) -> dict:
    p = Path(path)
    try:
        with open(p, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such config file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None


def _check_type(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if tp is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_check_type(value, a) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if origin in (list, tuple):
        args = typing.get_args(tp)
        return isinstance(value, (list, tuple)) and (not args or all(_check_type(v, args[0]) for v in value))
    if origin is dict:
        return isinstance(value, dict)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True


def fill(cls: type[T], data: dict, where: str, base: T | None = None) -> T:
    """A ``cls`` from ``data`` (over ``base`` or the defaults); ``where``
    names the file and section in errors."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    for key in data:
        if key not in names:
            known = ", ".join(sorted(names))
            raise ConfigError(f"{where}: unknown key {key!r} (known keys: {known})")
    values = {}
    for key, value in data.items():
        tp = hints[key]
        if dataclasses.is_dataclass(tp) and isinstance(value, dict):
            sub_base = getattr(base, key) if base is not None else None
            value = fill(tp, value, f"{where}.{key}", sub_base)
        elif not _check_type(value, tp):
            raise ConfigError(f"{where}: key {key!r} should be {_type_name(tp)}, got {value!r}")
        elif tp is float and isinstance(value, int):
            value = float(value)
        values[key] = value
    try:
        obj = dataclasses.replace(base, **values) if base is not None else cls(**values)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {e}") from None
    return obj


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def load(cls: type[T], path: str | Path, section: str | None = None) -> T:
    """Read ``path`` into a ``cls``; ``section`` picks one table of the file."""
    data = read_toml(path)
    where = str(path)
    if section is not None:
        if section not in data:
            return cls()
        data = data[section]
        where = f"{path} [{section}]"
    return fill(cls, data, where)
