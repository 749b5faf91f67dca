"""Load problems as they are found: each with file, line (and column), block, field, hint and code.

Translates pydantic ValidationErrors into Problems; decides nothing about what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import ValidationError

from engine.errors import Problem
from engine.format.names import suggest
from engine.format.yamlfile import LineMap

__all__ = ["Problems", "shown"]


def shown(value: Any) -> str:
    """A value as a problem quotes it: its repr, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Problems:
    """Every problem of one file, in the order found; `path` is a YAML location the LineMap knows."""

    def __init__(self, file: str, lines: LineMap) -> None:
        self.file = file
        self.lines = lines
        self.items: list[Problem] = []

    def add(
        self,
        path: tuple[str | int, ...],
        message: str,
        *,
        block: str | None = None,
        field: str | None = None,
        hint: str | None = None,
        code: str = "invalid",
        line_offset: int = 0,
        severity: Literal["error", "warning"] = "error",
    ) -> None:
        mark = self.lines.mark(path)
        line = mark[0] + line_offset if mark else None
        column = mark[1] if mark and not line_offset else None
        self.items.append(Problem(self.file, line, message, block, field, hint, code, column, severity))

    @property
    def errors(self) -> list[Problem]:
        """The problems that stop a diagram from loading (warnings do not)."""
        return [problem for problem in self.items if problem.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [problem for problem in self.items if problem.severity == "warning"]

    def from_validation(
        self,
        exc: ValidationError,
        base: tuple[str | int, ...],
        *,
        block: str | None,
        allowed: Iterable[str] = (),
        field_prefix: str = "",
    ) -> None:
        for error in exc.errors(include_url=False):
            loc = tuple(error["loc"])
            kind = error["type"]
            name = field_prefix + ".".join(str(part) for part in loc)
            if kind == "extra_forbidden":
                self.add(
                    (*base, *loc),
                    f"unknown key '{loc[-1]}'",
                    block=block,
                    field=name or None,
                    hint=suggest(str(loc[-1]), allowed),
                    code="unknown_key",
                )
            elif kind == "missing":
                self.add(base, f"missing required key '{loc[-1]}'", block=block, field=name, code="missing_key")
            else:
                self.add((*base, *loc), f"{error['msg']} (got {shown(error.get('input'))})", block=block, field=name,
                         code=kind)
