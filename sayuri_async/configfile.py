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
          type; constructing it runs the dataclass's range checks. A key a
          section names in its ``RENAMED_KEYS`` (old name -> what to use) is
          refused with that advice, never read with a new meaning. A section
          that extends another's dataclass names the inherited fields that
          do not apply to it in ``REFUSED_KEYS`` (key -> why): refused by
          name too, never accepted and ignored.
sections  ``fill_sections(cls, document, source)``: a dataclass whose fields
          are all sections, from a whole file; unknown tables are errors.
Bad       one key's problem: the key and what is wrong with it. Range checks
          raise it (through ``require`` and the helpers below); ``fill`` and
          ``recheck`` turn it into a ``ConfigError`` with the file and table.
message   every error reads ``<file>: [<table>] <key>: <problem>``, so a typo
          never silently falls back to a default and the user knows where to
          look.
options   ``from_options(cls, values, options, base)``: a ``cls`` from
          command-line values (None: not given) over ``base``, through
          ``fill``: the same range checks as a file's, and an error names the
          option as typed (``--procs: must be in [1, 256], not 1000000``).
          Every subcommand checks its numeric options this way, through the
          settings dataclass they override (or one of their own).
reading   ``read_toml`` opens regular files only (``usererror.not_regular``:
          a named pipe, whose open waits for a writer, a device, a folder
          are refused before opening), reads at most ``MAX_CONFIG_BYTES``
          (1 MiB) and turns every way a
          parse can fail (bad TOML, not UTF-8, tables nested too deeply, an
          integer of more digits than Python converts) into one
          ``ConfigError`` naming the file.

Range checks: one style
-----------------------
Every settings dataclass checks its ranges in ``__post_init__``, with
``require`` / ``at_least`` / ``positive`` / ``within`` raising ``Bad``::

    @dataclass
    class OptimConfig:
        batch_size: int = 256
        momentum: float = 0.9

        def __post_init__(self) -> None:
            at_least(self, 1, "batch_size")
            within(self, "[0, 1)", "momentum")

Every size and count has an upper bound too (``within`` with both ends, or
``at_most``), so no setting can ask for unbounded memory or time; the
message quotes the range.

Why ``__post_init__`` rather than a ``check()`` method that callers must
remember: it runs on every construction and on every
``dataclasses.replace``, so no config can exist with a bad value, however it
was made: from a file (``fill`` builds it with ``cls(**values)``), from
command-line overrides (``fill(..., base=cfg)`` goes through ``replace``),
by hand in a tool or test, or derived in code (self-play's per-process
``replace``). The check needs no knowledge of files: it names only the key,
and ``fill`` knows the file and the table and adds them. ``Bad`` is a
``ValueError``, so a dataclass built by hand with a bad value fails like any
bad argument, with a message that names the key. The one way around the
checks is assigning a field of an existing object; code that does so (the
GTP command line) calls ``recheck`` afterwards, which runs the same
``__post_init__`` of the object and of its sections again. So these
``__post_init__`` methods only check and never change a value.
"""
from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar

from .usererror import UserError, not_regular

T = TypeVar("T")


class ConfigError(ValueError, UserError):
    """A configuration file or value that cannot be used."""


class Bad(ValueError, UserError):
    """One key's problem, raised by range checks; ``fill`` adds the file and table."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(key, message)
        self.key = key
        self.message = message

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"

    def located(self, source: str, section: str | None) -> ConfigError:
        """The error as the user reads it: ``<file>: [<table>] <key>: <problem>``,
        or ``<option>: <problem>`` for values from the command line (``CommandLine``)."""
        if isinstance(source, CommandLine):
            return ConfigError(f"{source.option(self.key)}: {self.message}")
        return ConfigError(f"{where(source, section)} {self.key}: {self.message}")


class CommandLine(str):
    """The ``source`` of values given as command-line options: an error names
    the option as the user typed it (``--num-games``), from ``options`` (key
    to option) or else the key with dashes."""

    options: dict[str, str]

    def __new__(cls, options: dict[str, str] | None = None) -> "CommandLine":
        obj = super().__new__(cls, "command line")
        obj.options = dict(options or {})
        return obj

    def option(self, key: str) -> str:
        return self.options.get(key, "--" + key.replace("_", "-"))


def shown(value: object) -> str:
    """``value`` for a message, cut to 40 characters: a number of thousands
    of digits reads as its first digits and its length."""
    text = str(value)
    if len(text) <= 40:
        return text
    if isinstance(value, int):
        return f"{text[:12]}... ({len(text.lstrip('-'))} digits)"
    return text[:37] + "..."


def require(ok: bool, key: str, message: str) -> None:
    """``Bad(key, message)`` unless ``ok``."""
    if not ok:
        raise Bad(key, message)


def at_least(obj: object, minimum: float, *keys: str) -> None:
    """Each field ``keys`` of ``obj`` is ``minimum`` or more."""
    for key in keys:
        value = getattr(obj, key)
        require(value >= minimum, key, f"must be at least {minimum}, not {shown(value)}")


def positive(obj: object, *keys: str) -> None:
    """Each field ``keys`` of ``obj`` is above 0."""
    for key in keys:
        value = getattr(obj, key)
        require(value > 0, key, f"must be positive, not {shown(value)}")


def at_most(obj: object, maximum: float, *keys: str) -> None:
    """Each field ``keys`` of ``obj`` is ``maximum`` or less (and a number: NaN is refused)."""
    for key in keys:
        value = getattr(obj, key)
        require(value <= maximum, key, f"must be at most {maximum}, not {shown(value)}")


def between(obj: object, minimum: float, maximum: float, *keys: str) -> None:
    """Each field ``keys`` of ``obj`` lies in ``[minimum, maximum]``: ``at_least``
    and ``at_most``, with their messages (a value under the range hears the
    minimum, one above it the maximum)."""
    at_least(obj, minimum, *keys)
    at_most(obj, maximum, *keys)


def within(obj: object, interval: str, *keys: str) -> None:
    """Each field ``keys`` of ``obj`` lies in ``interval``, written as in
    mathematics: ``"[0, 1)"`` includes 0 and excludes 1. The message quotes
    the interval as written."""
    if interval[:1] not in ("[", "(") or interval[-1:] not in ("]", ")") or interval.count(",") != 1:
        raise ValueError(f"not an interval: {interval!r}")
    lo, hi = (_number(x) for x in interval[1:-1].split(","))
    for key in keys:
        value = getattr(obj, key)
        above = lo <= value if interval[0] == "[" else lo < value
        below = value <= hi if interval[-1] == "]" else value < hi
        require(above and below, key, f"must be in {interval}, not {shown(value)}")


MAX_CONFIG_BYTES = 1 << 20
"""The largest config file read (1 MiB; the shipped ones are a few KB)."""


def _number(text: str) -> int | float:
    """An end of an interval: a whole number exactly (a seed's 2**63 - 1), else a float."""
    text = text.strip().replace("_", "")
    try:
        return int(text)
    except ValueError:
        return float(text)


SEED_RANGE = f"[0, {2 ** 63 - 1}]"
"""Seeds: what numpy and torch both take (a larger one is refused, not cut)."""


def read_toml(path: str | Path) -> dict:
    """The parsed file; ``ConfigError`` naming ``path`` for every way it can
    fail (see "reading" in the vocabulary)."""
    p = Path(path)
    kind = not_regular(p)
    if kind is not None:
        raise ConfigError(f"{p}: not a config file but {kind}; give a regular file")
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: a folder, not a config file") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot read: {e.strerror or e}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{p}: larger than the limit of {MAX_CONFIG_BYTES // 1024} KiB for a config file")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(f"{p}: tables or arrays nested too deeply") from None
    except ValueError as e:  # an integer of more digits than int() converts (4,300)
        raise ConfigError(f"{p}: not a usable TOML value ({e})") from None


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
        try:
            value = float(value)
        except OverflowError:
            raise Bad(key, "must be a finite number (this one is too large for a float)") from None
        if not math.isfinite(value):
            raise Bad(key, f"must be finite, not {value!r}")
        return value
    if annotation is str:
        if not isinstance(value, str):
            raise Bad(key, f"must be a string, not {value!r}")
        return value
    if isinstance(annotation, type) and not isinstance(value, annotation):
        raise Bad(key, f"must be {_type_name(annotation)}, not {value!r}")
    return value


_KIND_NAMES = {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}


def _type_name(tp: Any) -> str:
    """How an error names what a field takes: "a whole number or 'auto'"."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(t) for t in typing.get_args(tp) if t is not type(None))
    if origin is Literal:
        return " or ".join(repr(c) for c in typing.get_args(tp))
    return _KIND_NAMES.get(tp) or getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def fill(cls: type[T], data: dict, source: str, section: str | None = None, base: T | None = None) -> T:
    """A ``cls`` from the table ``data`` over ``base`` (or the defaults).
    ``source`` names the file (or "command line"), ``section`` the table."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where(source, section)} must be a table")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    renamed = getattr(cls, "RENAMED_KEYS", {})
    refused = getattr(cls, "REFUSED_KEYS", {})
    names = [n for n in names if n not in refused]
    values = {}
    try:
        for key, value in data.items():
            if key in renamed and key not in names:
                raise Bad(key, f"renamed: use {renamed[key]}")
            if key in refused:
                raise Bad(key, refused[key])
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
    except Bad as e:
        raise e.located(source, section) from None
    except ConfigError:
        raise
    except (TypeError, ValueError, ArithmeticError) as e:  # a check not written with Bad still names the file
        raise ConfigError(f"{where(source, section)} {e}") from None
    return obj


def from_options(cls: type[T], values: dict[str, Any], options: dict[str, str] | None = None,
                 base: T | None = None) -> T:
    """A ``cls`` from command-line ``values`` (key to value; None: not
    given) over ``base`` or the defaults, with ``fill``'s checks; an error
    names the option (``options``: key to option where it is not
    ``--<key with dashes>``)."""
    given = {k: v for k, v in values.items() if v is not None}
    return fill(cls, given, CommandLine(options), base=base)


def recheck(obj: Any, source: str, section: str | None = None) -> None:
    """Run the range checks (``__post_init__``) of ``obj`` and of its nested
    sections again after fields were assigned by hand (command-line
    options), with the same error messages as ``fill``."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            recheck(value, source, f"{section}.{f.name}" if section else f.name)
    post_init = getattr(obj, "__post_init__", None)
    if callable(post_init):
        try:
            post_init()
        except Bad as e:
            raise e.located(source, section) from None


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
