"""GTP version 2 wire format: reading command lines, writing responses.

Vocabulary
----------
line        one line of input as received (without its newline).
Command     a parsed line: optional numeric ``id``, the command ``name``
            (lower-cased) and its ``args`` (whitespace-separated tokens).
response    ``=id text`` (success) or ``?id message`` (failure) followed by
            one empty line; ``id`` is present exactly when the command had one.
            A response never contains an empty line inside it (the empty
            line ends it), so multi-line texts get their empty lines replaced
            by a single space.
GtpError    raised by command handlers; its message becomes the ``?`` text.

Pre-processing follows the GTP 2 specification: control characters other
than tab and newline are removed, tabs become spaces, everything after ``#``
is a comment, and lines left empty (or only whitespace) are ignored: they get
no response at all.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

_CONTROL = {i: None for i in range(32) if i not in (9, 10)}
_CONTROL[127] = None
_CONTROL[9] = " "


class GtpError(Exception):
    """A failed command: the message is sent after ``?``."""


@dataclass
class Command:
    id: int | None
    name: str
    args: list[str] = field(default_factory=list)

    @property
    def id_text(self) -> str:
        return "" if self.id is None else str(self.id)


def preprocess(line: str) -> str:
    """Remove control characters and comments; strip surrounding space."""
    text = line.translate(_CONTROL)
    hash_at = text.find("#")
    if hash_at >= 0:
        text = text[:hash_at]
    return text.strip()


def parse_line(line: str) -> Command | None:
    """The command on ``line``, or None for a line GTP ignores.

    A line that is only an id (``"12"``) gives a Command with an empty name,
    which the dispatcher answers with an error."""
    text = preprocess(line)
    if not text:
        return None
    tokens = text.split()
    cid: int | None = None
    if tokens[0].isascii() and tokens[0].isdigit():
        cid = int(tokens[0])
        tokens = tokens[1:]
    if not tokens:
        return Command(cid, "", [])
    return Command(cid, tokens[0].lower(), tokens[1:])


def _clean_body(text: str) -> str:
    """No empty line may appear inside a response."""
    text = text.rstrip("\n")
    if "\n" not in text:
        return text
    lines = text.split("\n")
    return "\n".join(ln if ln.strip() else " " for ln in lines)


def success(cid: int | None, text: str = "") -> str:
    """``=id text`` plus the closing empty line."""
    head = "=" if cid is None else f"={cid}"
    if text.startswith("\n"):  # a text that starts on the line after the id
        return f"{head}\n{_clean_body(text[1:])}\n\n"
    body = _clean_body(text)
    if not body:
        return f"{head}\n\n"
    return f"{head} {body}\n\n"


def failure(cid: int | None, message: str) -> str:
    """``?id message`` plus the closing empty line."""
    head = "?" if cid is None else f"?{cid}"
    body = _clean_body(message) or "error"
    return f"{head} {body}\n\n"


# ---- argument helpers (all raise GtpError with a message naming the problem) --


def want_args(args: list[str], lo: int, hi: int | None, usage: str) -> None:
    hi = lo if hi is None else hi
    if not lo <= len(args) <= hi:
        raise GtpError(f"syntax error: usage: {usage}")


def parse_int(text: str, what: str) -> int:
    s = text.strip()
    body = s[1:] if s[:1] in "+-" else s
    if not body or not body.isascii() or not body.isdigit():
        raise GtpError(f"syntax error: {what} must be an integer, not {text!r}")
    return int(s)


def parse_float(text: str, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise GtpError(f"syntax error: {what} must be a number, not {text!r}") from None
    if not math.isfinite(x):
        raise GtpError(f"syntax error: {what} must be a finite number, not {text!r}")
    return x


def parse_bool(text: str, what: str) -> bool:
    s = text.lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    raise GtpError(f"syntax error: {what} must be true or false, not {text!r}")
