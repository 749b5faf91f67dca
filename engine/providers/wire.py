"""The neutral conversation every vendor adapter translates, and what comes back.

A Request is what a request block asks for, in our own terms (docs/VENDORS.md, "Our conversation"; README "Data
tables"); a Reply is what any vendor answered, with its outcome in one vocabulary
(`FINISHES`). Adapters map between these and JSON. Also the envelope in which a
vendor's reasoning and server-tool parts ride on a history row's `signature` cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from engine.errors import WireError
from engine.format.names import valid_tool_name
from engine.format.parts import DocumentPart, ImagePart, Part
from engine.format.tables import HistoryRow

if TYPE_CHECKING:
    from engine.providers.streaming import Assembler

__all__ = [
    "FINISHES",
    "Adapter",
    "HttpCall",
    "Refusal",
    "Reply",
    "Request",
    "ToolCall",
    "ToolSpec",
    "WireError",
    "WireModel",
    "call_arguments",
    "carried_parts",
    "file_parts",
    "foreign_parts_note",
    "group_turns",
    "read_model",
    "seal",
    "signature_vendor",
    "system_text",
    "tool_declaration",
    "valid_tool_name",
]


class WireModel(BaseModel):
    """A vendor reply's shape, read with pydantic; its validator is built on the first reply.

    `defer_build`: the adapters load with the request blocks, which `validate` loads too, and
    building some twenty reply models there cost a tenth of that command's time.
    """

    model_config = ConfigDict(defer_build=True)

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


class Refusal(NamedTuple):
    """Why a vendor will refuse a request: the input at fault, and what to do."""

    field: str
    message: str


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = False


def tool_declaration(tool: ToolSpec, schema_key: str) -> dict[str, Any]:
    """A tool as Anthropic (`input_schema`) and OpenAI-style vendors (`parameters`) declare it: name, description
    when there is one, the schema, and `strict` only when asked."""
    entry: dict[str, Any] = {"name": tool.name}
    if tool.description:
        entry["description"] = tool.description
    entry[schema_key] = tool.parameters
    if tool.strict:
        entry["strict"] = True
    return entry


@dataclass(frozen=True, slots=True)
class Request:
    model: str
    system: str
    rows: list[HistoryRow]
    tools: list[ToolSpec] = field(default_factory=list)
    temperature: float | None = None
    max_tokens: int | None = None
    api_version: str | None = None
    thinking: int | str | None = None
    """A thinking budget in tokens, or "adaptive" (Anthropic, Gemini)."""
    reasoning_effort: str | None = None
    """Groq's reasoning_effort, passed as it is."""
    response_schema: dict[str, Any] | None = None
    """A JSON Schema the answer must match (structured output), sent in the vendor's own form."""
    cache: bool = False
    """Mark the stable prefix (tools, system text, the history before the new turn) for the vendor's prompt
    cache, where the vendor asks for marks (Anthropic's cache_control); the others cache on their own."""

    def parts(self) -> list[Part]:
        """Every part of the conversation's user rows (images, documents, text among them), in order."""
        return [part for row in self.rows for part in row.parts]


def file_parts(parts: list[Part] | tuple[Part, ...]) -> list[ImagePart | DocumentPart]:
    """The image and document parts among `parts`."""
    return [part for part in parts if isinstance(part, (ImagePart, DocumentPart))]


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    signature: str | None = None


FINISHES = ("complete", "tool_calls", "max_tokens", "refused", "blocked", "paused", "context_exceeded")
"""docs/VENDORS.md's one vocabulary for how a turn ended; each adapter maps its vendor's values in one table."""


@dataclass(slots=True)
class Reply:
    text: str
    calls: list[ToolCall]
    input_tokens: int
    output_tokens: int
    stop_reason: str | None
    finish: str = "complete"
    """One of FINISHES."""
    refusal: str | None = None
    """The vendor's refusal text, where it gives one (Anthropic's explanation, OpenAI-style `refusal`)."""
    stop_details: dict[str, Any] | None = None
    """What the vendor says about the stop (Anthropic `stop_details`, Gemini's finishMessage, block reason)."""
    citations: list[dict[str, str]] = field(default_factory=list)
    """[{text, source}]: the passages the answer cites, and where from."""
    signature: str | None = None
    """The turn's parts our rows cannot hold (reasoning, server tools), sealed for the assistant row."""
    thinking_tokens: int | None = None
    """Reasoning tokens, where the vendor counts them apart (they are in output_tokens too)."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the vendor's cache (Anthropic's cache_creation_input_tokens); in input_tokens too."""
    cache_read_tokens: int = 0
    """Prompt tokens read from the vendor's cache (Anthropic's cache_read_input_tokens, Gemini's
    cachedContentTokenCount, Groq's prompt_tokens_details.cached_tokens); in input_tokens too."""


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

    def streamed(self, call: HttpCall) -> HttpCall:
        """The same request, asking the vendor for a stream of Server-Sent Events."""
        ...

    def assembler(self) -> Assembler:
        """A fresh reader of one streamed reply (engine.providers.streaming)."""
        ...


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


# -- the envelope: a vendor's opaque parts on the assistant row's `signature` cell --------------
#
# Gemini's thoughtSignature is stored as it came (base64 text, never JSON). Every other vendor's
# parts are sealed as JSON text: {"vendor": "anthropic", "parts": [...]}, each part as the vendor
# sent it (Anthropic: {"at": index in the reply's content, "block": {...}}; Groq: {"reasoning": ...}).
# The same vendor gets them back unchanged; another vendor's adapter drops them, with a Debug note.

def seal(vendor: str, parts: list[dict[str, Any]]) -> str | None:
    """The signature cell for a turn's parts (None when there are none)."""
    return orjson.dumps({"vendor": vendor, "parts": parts}).decode() if parts else None


def _opened(signature: str | None) -> tuple[str, list[Any]] | None:
    if not signature:
        return None
    if not signature.startswith("{"):
        return "gemini", [signature]  # a bare thought signature
    try:
        value = orjson.loads(signature)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict) and isinstance(value.get("vendor"), str) and isinstance(value.get("parts"), list):
        return value["vendor"], value["parts"]
    return None


def signature_vendor(signature: str | None) -> str | None:
    """Whose parts a signature cell holds: "gemini" for a bare thought signature, else the envelope's vendor."""
    opened = _opened(signature)
    return opened[0] if opened else None


def carried_parts(rows: list[HistoryRow], vendor: str) -> list[Any]:
    """The parts `vendor` gave for this turn, from its rows' signature cells, in row order."""
    parts: list[Any] = []
    for row in rows:
        opened = _opened(row.signature)
        if opened and opened[0] == vendor:
            parts += opened[1]
    return parts


def foreign_parts_note(rows: list[HistoryRow], vendor: str) -> tuple[str, ...]:
    """A Debug note when rows carry another vendor's reasoning or server-tool parts, which `vendor` is not sent."""
    dropped: dict[str, int] = {}
    for row in rows:
        opened = _opened(row.signature)
        if opened and opened[0] != vendor:
            dropped[opened[0]] = dropped.get(opened[0], 0) + len(opened[1])
    if not dropped:
        return ()
    counts = ", ".join(f"{count} from {other}" for other, count in sorted(dropped.items()))
    return (f"history parts another vendor gave (reasoning, signatures, server tools: {counts}) are not sent to {vendor}",)
