"""The neutral conversation every vendor adapter translates, and what comes back.

A Request is what a request block asks for, in our own terms (DESIGN.md "Data
tables"); a Reply is what any vendor answered. Adapters map between these and JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from engine.errors import WireError
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
    "read_model",
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


_Model = TypeVar("_Model", bound=BaseModel)


def read_model(model: type[_Model], body: Any) -> _Model:
    """A vendor's JSON as the adapter's model of it; a missing field or a wrong type is a WireError naming it."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "the reply"
        more = exc.error_count() - 1
        raise WireError(f"{where}: {first['msg']}" + (f" (and {more} more)" if more else "")) from exc


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
    """Why the request looks as it does, for the Debug trace (e.g. the version a temperature chose)."""
    api_version: str | None = None
    """The API version the adapter chose or was given (None: the vendor's default, as for Gemini's v1)."""


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
