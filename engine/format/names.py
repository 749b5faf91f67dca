"""Rules about names in a diagram: which variable names a template can read back, which tool names the vendors
take, and 'did you mean' for a misspelt one."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["suggest", "valid_tool_name", "variable_name_problem"]

_TEMPLATE_CONSTANTS = {"true": "the boolean true", "false": "the boolean false", "none": "null", "True": "the boolean true",
                       "False": "the boolean false", "None": "null"}
"""Names jinja2 reads as constants wherever they are written: a variable of such a name could never be read."""
_JINJA_OPERATORS = frozenset({"not"})
"""jinja2 keywords it never reads as a name (`{{ not }}` is a syntax error). Its other operator words (`and`, `or`,
`in`, `is`, `if`, `else`) and every other Python keyword (`from`, `class`, `import`) read back as names wherever they
stand (`{{ from }}`, `{{ if + 1 }}`, `{% for x in in %}`): a template's names never become Python identifiers."""
_JINJA_RESERVED = frozenset({"self"})
"""Names jinja2 binds itself in every template (`self` is the template): a variable of that name is hidden."""

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def variable_name_problem(name: str) -> tuple[str, str] | None:
    """(message, hint) when `name` cannot be a variable a template reads back (a Start input or variable, a `set`
    key); None when it can. Python keywords can (`inputs: {from: ...}` is read as `{{ from }}`)."""
    if name in _TEMPLATE_CONSTANTS:
        return (f"'{name}' is a constant in templates ({_TEMPLATE_CONSTANTS[name]}), so a variable of that name could "
                "never be read", f"choose another name, such as '{name.lower()}_value'")
    if name in _JINJA_OPERATORS:
        return (f"'{name}' is a jinja2 keyword (the operator `not`), which templates cannot read as a variable",
                f"choose another name, such as '{name}_'")
    if name in _JINJA_RESERVED:
        return (f"'{name}' is reserved by jinja2 (a template reads it as the template itself)",
                f"choose another name, such as '{name}_'")
    if not name.isidentifier():
        return (f"'{name}' is not a usable variable name",
                "use letters, digits and '_', not starting with a digit")
    return None


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
