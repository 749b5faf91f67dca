"""One way to say what pydantic rejected, for load problems and run-time input errors alike.

pydantic gives each error a `loc` path, a `type` and a message; callers add the file,
line and block. Nothing here knows which model was being validated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["dotted", "shown_input", "validation_message"]

_SHOWN = 60
# For these, pydantic's `input` is the enclosing mapping, not a rejected value.
_NO_INPUT = frozenset({"missing", "missing_argument", "missing_keyword_only_argument"})


def dotted(loc: Iterable[str | int]) -> str:
    """A `loc` path as written in messages: ``tools.0.parameters``."""
    return ".".join(str(part) for part in loc)


def shown_input(value: Any) -> str:
    """A rejected value as a message quotes it: its repr, cut to a readable length."""
    shown = repr(value)
    return shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."


def validation_message(error: Mapping[str, Any]) -> str:
    """pydantic's message plus what it got: ``Input should be a valid integer (got 'many')``."""
    if error.get("type") in _NO_INPUT or "input" not in error:
        return str(error["msg"])
    return f"{error['msg']} (got {shown_input(error['input'])})"
