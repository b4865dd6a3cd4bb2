"""KataGo's GTP extensions that this engine has: ``stop``, ``clear_cache``,
``get_komi``, ``kata-get-rules``, ``kata-set-rules`` and
``rectangular_boardsize``.

Vocabulary
----------
KataCommands  the handlers, for the Dispatcher's table (``handlers()``).
rules JSON   KataGo's rules dictionary, ``{"hasButton":false,"ko":...,
             "scoring":...,"suicide":false,"tax":"NONE",
             "whiteHandicapBonus":"N"}``. This engine plays ``ko``
             POSITIONAL (superko) or SIMPLE and ``scoring`` AREA or
             TERRITORY; white's handicap bonus follows the scoring
             (BONUS_BY_SCORING: ``N`` under AREA, ``0`` under TERRITORY, as
             ``scoring.handicap_compensation`` counts); the other fields are
             fixed (FIXED): suicide is illegal, no tax, no button.
shorthand    a KataGo rules name (``tromp-taylor``, ``chinese``,
             ``japanese``, ...) standing for its dictionary (SHORTHANDS);
             each is checked like a dictionary, so one that needs a rule
             this engine lacks is refused with that rule named.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from sayuri_async.go.game import Rules

from .args import parse_int, want_args
from .context import Context, Handler
from .engine import Engine
from .protocol import GtpError, shown

MAX_RULES_CHARS = 1000
FIXED = {"hasButton": False, "suicide": False, "tax": "NONE"}
BONUS_BY_SCORING = {"AREA": "N", "TERRITORY": "0"}
SUPPORTED = ({"ko": ("POSITIONAL", "SIMPLE"), "scoring": ("AREA", "TERRITORY"), "whiteHandicapBonus": ("N", "0")}
             | {k: (v,) for k, v in FIXED.items()})


def _rules(ko: str, scoring: str, suicide: bool, tax: str, bonus: str, button: bool = False) -> dict:
    return {"hasButton": button, "ko": ko, "scoring": scoring, "suicide": suicide, "tax": tax,
            "whiteHandicapBonus": bonus}


SHORTHANDS = {  # KataGo's documented shorthands
    "tromp-taylor": _rules("POSITIONAL", "AREA", True, "NONE", "0"),
    "chinese": _rules("SIMPLE", "AREA", False, "NONE", "N"),
    "chinese-ogs": _rules("POSITIONAL", "AREA", False, "NONE", "N"),
    "chinese-kgs": _rules("POSITIONAL", "AREA", False, "NONE", "N"),
    "japanese": _rules("SIMPLE", "TERRITORY", False, "SEKI", "0"),
    "korean": _rules("SIMPLE", "TERRITORY", False, "SEKI", "0"),
    "stone-scoring": _rules("SIMPLE", "AREA", False, "ALL", "0"),
    "aga": _rules("SITUATIONAL", "AREA", False, "NONE", "N-1"),
    "bga": _rules("SITUATIONAL", "AREA", False, "NONE", "N-1"),
    "new-zealand": _rules("SITUATIONAL", "AREA", True, "NONE", "0"),
    "aga-button": _rules("SITUATIONAL", "AREA", False, "NONE", "N-1", button=True),
}


def rules_json(rules: Rules) -> dict:
    """KataGo's dictionary for ``rules``."""
    scoring = rules.scoring.upper()
    return {"hasButton": False, "ko": "POSITIONAL" if rules.superko else "SIMPLE",
            "scoring": scoring, "suicide": False, "tax": "NONE", "whiteHandicapBonus": BONUS_BY_SCORING[scoring]}


def _value_text(v: object) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def rules_from_text(text: str, current: Rules) -> Rules:
    """The rules a ``kata-set-rules`` argument asks for; fields it leaves
    out keep ``current``'s values. Raises GtpError naming what is not
    supported."""
    if len(text) > MAX_RULES_CHARS:
        raise GtpError(f"syntax error: rules longer than {MAX_RULES_CHARS} characters")
    name = text.lower()
    if name in SHORTHANDS:
        asked = dict(SHORTHANDS[name])
    else:
        try:
            asked = json.loads(text, parse_int=str, parse_float=str, parse_constant=str)
        except (ValueError, RecursionError):
            raise GtpError(f"syntax error: unknown rules {shown(text)} (a JSON dictionary or one of "
                           f"{', '.join(SHORTHANDS)})") from None
        if not isinstance(asked, dict):
            raise GtpError(f"syntax error: rules must be a JSON dictionary, not {shown(text)}")
    merged = rules_json(current)
    for key, value in asked.items():
        if key not in SUPPORTED:
            raise GtpError(f"unknown rule {shown(str(key))} (rules: {', '.join(sorted(SUPPORTED))})")
        if isinstance(value, str) and not isinstance(SUPPORTED[key][0], bool):
            value = value.upper()
        if value not in SUPPORTED[key] or type(value) is not type(SUPPORTED[key][0]):
            allowed = " or ".join(_value_text(v) for v in SUPPORTED[key])
            raise GtpError(f"rule {key} {shown(_value_text(value))} is not supported (this engine plays {key} {allowed})")
        merged[key] = value
    bonus = BONUS_BY_SCORING[merged["scoring"]]
    if "whiteHandicapBonus" in asked and merged["whiteHandicapBonus"] != bonus:
        raise GtpError(f"rule whiteHandicapBonus {shown(merged['whiteHandicapBonus'])} is not supported with scoring "
                       f"{merged['scoring']} (this engine gives white N under AREA, 0 under TERRITORY)")
    return Rules(scoring=merged["scoring"].lower(), superko=merged["ko"] == "POSITIONAL")


class KataCommands:
    def __init__(self, engine: Engine, boardsize: Callable[[Context, list[str]], Awaitable[str]]) -> None:
        self.engine = engine
        self.boardsize = boardsize

    def handlers(self) -> dict[str, Handler]:
        return {
            "stop": self.stop,
            "clear_cache": self.clear_cache,
            "get_komi": self.get_komi,
            "kata-get-rules": self.get_rules,
            "kata-set-rules": self.set_rules,
            "rectangular_boardsize": self.rectangular_boardsize,
        }

    async def stop(self, ctx: Context, args: list[str]) -> str:
        # analysis already stopped when this line arrived (any input stops it)
        return ""

    async def clear_cache(self, ctx: Context, args: list[str]) -> str:
        self.engine.clear_cache()
        return ""

    async def get_komi(self, ctx: Context, args: list[str]) -> str:
        return f"{self.engine.game.komi:g}"

    async def get_rules(self, ctx: Context, args: list[str]) -> str:
        return json.dumps(rules_json(self.engine.game.rules), sort_keys=True, separators=(",", ":"))

    async def set_rules(self, ctx: Context, args: list[str]) -> str:
        if not args:
            raise GtpError("syntax error: usage: kata-set-rules <rules name | JSON dictionary>")
        self.engine.set_rules(rules_from_text(" ".join(args), self.engine.game.rules))
        return ""

    async def rectangular_boardsize(self, ctx: Context, args: list[str]) -> str:
        want_args(args, 2, 2, "rectangular_boardsize <width> <height>")
        width = parse_int(args[0], "board width")
        height = parse_int(args[1], "board height")
        if width != height:
            raise GtpError(f"unacceptable size {width}x{height} (this engine plays square boards only)")
        return await self.boardsize(ctx, [args[0]])
