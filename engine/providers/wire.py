"""The neutral conversation every vendor adapter translates, and what comes back.

A Request is what a request block asks for, in our own terms (DESIGN.md "Data
tables"); a Reply is what any vendor answered. Adapters map between these and JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from engine.format.names import valid_tool_name
from engine.format.tables import HistoryRow

__all__ = [
    "Adapter",
    "HttpCall",
    "Reply",
    "Request",
    "ToolCall",
    "ToolSpec",
    "WireError",
    "call_arguments",
    "group_turns",
    "system_text",
    "valid_tool_name",
]

def call_arguments(row: HistoryRow) -> dict[str, Any]:
    """A tool-call row's arguments: its content must be JSON text of an object."""
    try:
        value = orjson.loads(row.content or "{}")
    except orjson.JSONDecodeError:
        raise WireError(f"the history's call of '{row.name}' has arguments that are not JSON: {row.content[:80]!r}") from None
    if not isinstance(value, dict):
        raise WireError(f"the history's call of '{row.name}' has arguments that are not a JSON object")
    return value


class WireError(ValueError):
    """A conversation or a body that cannot be translated (the adapter names what)."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = False


@dataclass(frozen=True, slots=True)
class Request:
    model: str
    system: str
    rows: list[HistoryRow]
    tools: list[ToolSpec] = field(default_factory=list)
    temperature: float | None = None
    max_tokens: int | None = None
    api_version: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    signature: str | None = None


@dataclass(slots=True)
class Reply:
    text: str
    calls: list[ToolCall]
    input_tokens: int
    output_tokens: int
    stop_reason: str | None


@dataclass(frozen=True, slots=True)
class HttpCall:
    """One HTTP request an adapter wants sent: path below the base URL, headers, JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    notes: tuple[str, ...] = ()


class Adapter(Protocol):
    vendor: str
    key_variables: tuple[str, ...]
    base_variable: str
    default_base: str
    name_limit: int

    def build(self, request: Request, key: str) -> HttpCall: ...

    def parse(self, body: Any) -> Reply: ...

    def error(self, status: int, body: Any) -> tuple[str, str]: ...


def group_turns(rows: list[HistoryRow]) -> list[tuple[str, list[HistoryRow]]]:
    """Consecutive rows of the same kind form one turn: ('user'|'assistant'|'tool', rows)."""
    turns: list[tuple[str, list[HistoryRow]]] = []
    for row in rows:
        if row.role == "system":
            continue
        kind = row.role
        if turns and turns[-1][0] == kind and kind in ("assistant", "tool"):
            turns[-1][1].append(row)
        else:
            turns.append((kind, [row]))
    return turns


def system_text(role: str, rows: list[HistoryRow]) -> str:
    """The block's role first, then each system row, joined with a blank line."""
    parts = [role] if role else []
    parts += [row.content for row in rows if row.role == "system" and row.content]
    return "\n\n".join(parts)
