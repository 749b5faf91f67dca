"""The regex filters (`regex_search`, `regex_replace`, `regex_findall`), bounded in time and in size.

Patterns run on RE2 (google-re2), whose matching time grows linearly with the text: a pattern that
backtracks catastrophically in Python's `re` (`(a+)+$`) cannot hold a run past its deadline. RE2 has
no lookaround and no backreferences; such a pattern is refused with that reason (at load when the
pattern is written literally, see `check_pattern`). What a filter builds is bounded as every template
value is (engine.compile.sizes): a replacement is measured match by match, before the text is joined. The time is
bounded too: RE2's Python wrapper takes microseconds a match (a replacement over a megabyte of matches took 15 s),
so each match is a step of the render's budget (engine.compile.render_budget), and one call takes at most what a
whole render may (`_Matches`), also where no render counts (an expression compiled to Python).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import re2

from engine.compile.render_budget import MATCH_STEPS, MAX_STEPS, charge
from engine.compile.sizes import MAX_ITEMS, MAX_TEXT, too_large
from engine.errors import TemplateError

__all__ = ["REGEX_FILTERS", "check_pattern"]

_NOT_IN_RE2 = "RE2 has no lookahead, lookbehind or backreferences (\\1 in a pattern); a replacement may use \\1"


class _PatternRefused(ValueError):
    """A pattern RE2 does not take; the message says why."""


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str, ignorecase: bool, multiline: bool) -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    options.case_sensitive = not ignorecase
    try:
        return re2.compile(f"(?m){pattern}" if multiline else pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise _PatternRefused(f"the pattern {pattern!r} is not one RE2 takes: {reason}") from None


def check_pattern(pattern: str) -> tuple[str, str] | None:
    """(message, hint) when a pattern written literally in a template cannot compile; None when it can."""
    try:
        _compiled(pattern, False, False)
    except _PatternRefused as exc:
        return str(exc), _NOT_IN_RE2
    return None


def _pattern(name: str, pattern: Any, ignorecase: bool, multiline: bool) -> Any:
    if not isinstance(pattern, str):
        raise TemplateError(f"{name}: the pattern must be text, not {type(pattern).__name__}")
    try:
        return _compiled(pattern, bool(ignorecase), bool(multiline))
    except _PatternRefused as exc:
        raise TemplateError(f"{name}: {exc} ({_NOT_IN_RE2})", type="template_bad_regex") from None


def _text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise TemplateError(f"{name}: the value must be text, not {type(value).__name__}")


def regex_search(value: Any, pattern: Any, group: int | str = 0, ignorecase: bool = False,
                 multiline: bool = False) -> str | None:
    """The first match's text (or its `group`, a number or a name); none when nothing matches."""
    found = _pattern("regex_search", pattern, ignorecase, multiline).search(_text("regex_search", value))
    if found is None:
        return None
    try:
        text: str | None = found.group(group)
    except (IndexError, KeyError, TypeError):
        raise TemplateError(f"regex_search: the pattern {pattern!r} has no group {group!r}") from None
    return text


class _Matches:
    """Counts one call's matches: every _BATCH of them charged to the render's budget (MATCH_STEPS each), and the
    call refused past what a whole render may take, whether or not a render counts."""

    __slots__ = ("by", "count")
    _BATCH = 256

    def __init__(self, by: str) -> None:
        self.by = by
        self.count = 0

    def one(self) -> None:
        self.count += 1
        if self.count % self._BATCH == 0:
            charge(self._BATCH * MATCH_STEPS)
            if self.count * MATCH_STEPS > MAX_STEPS:
                raise TemplateError(f"{self.by}: more than {MAX_STEPS // MATCH_STEPS:,} matches in one call; match "
                                    "fewer (a narrower pattern, a shorter text), or do the work in a Function block",
                                    type="template_over_budget")


def regex_findall(value: Any, pattern: Any, ignorecase: bool = False, multiline: bool = False) -> list[Any]:
    """Every match, as Python's `re.findall` gives them: texts, or for a pattern of several groups, lists of them."""
    compiled = _pattern("regex_findall", pattern, ignorecase, multiline)
    found: list[Any] = []
    matches = _Matches("regex_findall")
    for match in compiled.finditer(_text("regex_findall", value)):
        matches.one()
        if len(found) >= MAX_ITEMS:
            raise too_large("a list", len(found) + 1, MAX_ITEMS, "items", by="regex_findall")
        groups = compiled.groups
        found.append(match.group() if not groups else match.groups(default="")[0] if groups == 1
                     else list(match.groups(default="")))
    return found


def regex_replace(value: Any, pattern: Any, replacement: Any = "", ignorecase: bool = False, multiline: bool = False,
                  count: int = 0) -> str:
    """The text with each match (the first `count`, when given) replaced; `\\1` or `\\g<name>` in the replacement
    stands for a group."""
    text = _text("regex_replace", value)
    if not isinstance(replacement, str):
        raise TemplateError(f"regex_replace: the replacement must be text, not {type(replacement).__name__}")
    compiled = _pattern("regex_replace", pattern, ignorecase, multiline)
    added = 0
    matches = _Matches("regex_replace")

    def replaced(match: Any) -> str:
        nonlocal added
        matches.one()
        piece: str = match.expand(replacement)
        added += len(piece)
        if len(text) + added > MAX_TEXT:  # measured before the pieces are joined
            raise too_large("a text", len(text) + added, by="regex_replace")
        return piece

    try:
        result: str = compiled.sub(replaced, text, count)
    except (IndexError, KeyError, re2.error) as exc:  # a group the pattern does not have
        raise TemplateError(f"regex_replace: the replacement {replacement!r} names a group the pattern "
                            f"{pattern!r} does not have ({exc})") from None
    return result


REGEX_FILTERS: dict[str, Callable[..., Any]] = {"regex_search": regex_search, "regex_replace": regex_replace,
                                                "regex_findall": regex_findall}
"""The filters, by name, for the template environments."""
