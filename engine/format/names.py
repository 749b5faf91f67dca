"""Rules about names in a diagram: which tool names the vendors take, and 'did you mean' for a misspelt one."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["suggest", "valid_tool_name"]

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def valid_tool_name(name: str, limit: int = 64) -> bool:
    """The vendors' rule: Latin letters, digits, '_' and '-', at most `limit` (64; Gemini 63)."""
    return 0 < len(name) <= limit and _TOOL_NAME.match(name) is not None


def suggest(name: str, options: Iterable[str]) -> str | None:
    """'did you mean ...?' for a misspelt name, or None."""
    choices = list(options)
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    lowered = {choice.lower(): choice for choice in choices}
    if name.lower() in lowered:
        return f"did you mean '{lowered[name.lower()]}'?"
    return None
