"""GTP version 2 wire format: reading command lines, writing responses.

Vocabulary
----------
line        one line of input as received, without its LF. Lines end at LF
            (byte 10) only: CR is a control character (removed below), and
            Unicode line breaks such as U+2028 or U+0085 are ordinary
            characters inside a line (``LineSplitter``; never
            ``str.splitlines`` on input).
long line   a line over MAX_LINE_BYTES: the reader keeps its first
            MAX_LINE_BYTES bytes, drops the rest and marks it (``TRUNCATED``
            at its end, a character no split line can hold); it is answered
            with an error, not run.
token       a run of characters other than ASCII space. After the
            pre-processing of GTP 2 section 2.2 (control characters other
            than HT and LF removed, HT turned into a space, everything from
            ``#`` on dropped) only the ASCII space separates tokens:
            non-ASCII whitespace (U+00A0, U+3000, ...) is part of a token, so
            ``genmove\\u3000b`` is one unknown word, and a line of only such
            characters is a command (an unknown one) that gets an answer.
            A line left empty, or only spaces, gets no answer at all.
Command     a parsed line: optional numeric ``id``, the command ``name``
            (lower-cased) and its ``args`` (tokens); ``error`` is set for a
            line that cannot be a command (an id of more than MAX_ID_DIGITS
            digits, a long line): the dispatcher answers it with ``?``.
id          a first token of ASCII digits only; at most MAX_ID_DIGITS digits
            once leading zeros go (every id fits a signed 64-bit integer), so
            no huge digit string is ever converted.
response    ``=id text`` (success) or ``?id message`` (failure) followed by
            one empty line; ``id`` is present exactly when the command had a
            valid one. A response never contains an empty line inside it (the
            empty line ends it), so multi-line texts get their empty lines
            replaced by a single space.
GtpError    raised by command handlers; its message becomes the ``?`` text.
shown       how a message quotes input: ``repr`` (so no control or
            line-breaking character reaches the output), cut to a few dozen
            characters for long tokens.

Argument helpers (numbers, colours, vertices) are in ``args.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MAX_LINE_BYTES = 1 << 20  # longer input lines are answered with an error
MAX_ID_DIGITS = 18
TRUNCATED = "\n"  # ends a line that the reader cut at MAX_LINE_BYTES
SHOWN_CHARS = 40

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
    error: str = ""


def shown(text: str) -> str:
    """``text`` quoted for a message: its repr, shortened when long."""
    if len(text) <= SHOWN_CHARS:
        return repr(text)
    return f"{text[:SHOWN_CHARS // 2]!r}... ({len(text)} characters)"


def preprocess(line: str) -> str:
    """Remove control characters and comments; strip surrounding spaces
    (ASCII spaces only: tabs are spaces by then)."""
    text = line.translate(_CONTROL)
    hash_at = text.find("#")
    if hash_at >= 0:
        text = text[:hash_at]
    return text.strip(" ")


def split_tokens(text: str) -> list[str]:
    """Tokens of a pre-processed line: separated by ASCII spaces only."""
    return [t for t in text.split(" ") if t]


def _command_id(token: str) -> tuple[int | None, str]:
    """(id, error) of a first token of ASCII digits."""
    digits = token.lstrip("0") or "0"
    if len(digits) > MAX_ID_DIGITS:
        return None, f"syntax error: command id {shown(token)} is longer than {MAX_ID_DIGITS} digits"
    return int(digits), ""


def parse_line(line: str) -> Command | None:
    """The command on ``line``, or None for a line GTP ignores.

    A line that is only an id (``"12"``) gives a Command with an empty name,
    which the dispatcher answers with an error; an overlong id or a long
    line gives one with ``error`` set."""
    truncated = line.endswith(TRUNCATED)
    if truncated:
        line = line[: -len(TRUNCATED)]
    text = preprocess(line)
    if not text:
        if truncated and "#" not in line:
            return Command(None, "", [], f"syntax error: line longer than {MAX_LINE_BYTES} bytes")
        return None
    tokens = split_tokens(text)
    cid: int | None = None
    if tokens[0].isascii() and tokens[0].isdigit():
        cid, error = _command_id(tokens[0])
        if error:
            return Command(None, "", [], error)
        tokens = tokens[1:]
    if truncated and "#" not in line:
        return Command(cid, tokens[0].lower() if tokens else "", [],
                       f"syntax error: line longer than {MAX_LINE_BYTES} bytes")
    if not tokens:
        return Command(cid, "", [])
    return Command(cid, tokens[0].lower(), tokens[1:])


class LineSplitter:
    """Bytes in, lines out: splits at LF only, decodes UTF-8 (bad bytes
    become U+FFFD), drops a CR before the LF, and keeps at most
    MAX_LINE_BYTES of a line (a long line comes out marked ``TRUNCATED``).
    Each byte is looked at once, however long the line."""

    def __init__(self, max_bytes: int = MAX_LINE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._dropping = False  # inside a long line: the rest of it is dropped

    def feed(self, chunk: bytes) -> list[str]:
        """The lines that ``chunk`` completes."""
        out = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl
            if not self._dropping:
                room = self.max_bytes - len(self._buf)
                if end - start > room:
                    self._buf += chunk[start : start + room]
                    self._dropping = True
                else:
                    self._buf += chunk[start:end]
            if nl < 0:
                return out
            out.append(self._take())
            start = nl + 1

    def end(self) -> str | None:
        """At end of input: the last line when it had no LF, else None."""
        if not self._buf and not self._dropping:
            return None
        return self._take()

    def _take(self) -> str:
        text = self._buf.decode("utf-8", "replace")
        truncated = self._dropping
        self._buf = bytearray()
        self._dropping = False
        if truncated:
            return text + TRUNCATED
        return text[:-1] if text.endswith("\r") else text


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
