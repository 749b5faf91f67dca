"""Anthropic Messages API wire format (ClaudeRequest): neutral request ↔ JSON.

Translation only: no retries, no sleeping, no logging, no environment. Also the home
of the temperature rule (docs/VENDORS.md, "API versions") (`sampling_version`) and of which models take which
`thinking` (`thinking_refusal`), which the block's load check, `build` and the
simulator all follow, and of the one table from `stop_reason` to `finish` (`FINISH`).
What Claude takes of images, documents and response schemas is in `anthropic_inputs`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, NamedTuple

import orjson
from pydantic import ConfigDict, Discriminator, Tag

from engine.format.parts import TextPart
from engine.format.tables import HistoryRow
from engine.providers.anthropic_inputs import file_block, mark_cache_prefix
from engine.providers.anthropic_stream import AnthropicStream
from engine.providers.wire import (
    HttpCall,
    Refusal,
    Reply,
    Request,
    ToolCall,
    WireModel,
    call_arguments,
    carried_parts,
    foreign_parts_note,
    group_turns,
    read_model,
    seal,
    tool_declaration,
)

__all__ = [
    "ADAPTIVE_THINKING_FAMILIES",
    "BUDGET_THINKING_FAMILIES",
    "CURRENT_VERSION",
    "FINISH",
    "FIXED_TEMPERATURE_FAMILIES",
    "MIN_THINKING_BUDGET",
    "NO_THINKING_FAMILIES",
    "SAMPLING_VERSION",
    "TEMPERATURE_MODELS",
    "VERSIONS",
    "Anthropic",
    "Refusal",
    "Sampling",
    "sampling_version",
    "takes_temperature",
    "thinking_refusal",
]

CURRENT_VERSION = "2026-10-21"
SAMPLING_VERSION = "2023-06-01"
VERSIONS = (CURRENT_VERSION, SAMPLING_VERSION)
DEFAULT_MAX_TOKENS = 1024
# Claude models from 4.7 on take only the default temperature, under either API version.
# The one list of them: the block's load check, `build` and the simulator all read it.
FIXED_TEMPERATURE_FAMILIES = (
    "claude-opus-4-7",
    "claude-opus-4-8",
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-haiku-5",
    "claude-opus-6",
    "claude-sonnet-6",
    "claude-haiku-6",
)
TEMPERATURE_MODELS = ("claude-sonnet-4-6", "claude-opus-4-6", "claude-haiku-4-5")


def takes_temperature(model: str) -> bool:
    return not model.startswith(FIXED_TEMPERATURE_FAMILIES)


# Which Claude models take which `thinking` (Anthropic's extended/adaptive thinking docs; the
# families from 4.7 on take only adaptive thinking, the 4.6 ones both, the earlier 4.x and
# 3.7 ones only a budget). The one table: the block's load check, `build` and the simulator read it.
ADAPTIVE_THINKING_FAMILIES = (*FIXED_TEMPERATURE_FAMILIES, "claude-opus-4-6", "claude-sonnet-4-6")
BUDGET_THINKING_FAMILIES = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-5", "claude-sonnet-4-5",
                            "claude-haiku-4-5", "claude-opus-4-1", "claude-opus-4-0", "claude-opus-4-2",
                            "claude-sonnet-4-0", "claude-sonnet-4-2", "claude-3-7-sonnet")
NO_THINKING_FAMILIES = ("claude-3-5-haiku", "claude-3-5-sonnet", "claude-3-haiku", "claude-3-opus", "claude-3-sonnet")
MIN_THINKING_BUDGET = 1024

# stop_reason → finish (docs/VENDORS.md, Anthropic); a value not listed is `complete`.
FINISH = {
    "end_turn": "complete",
    "stop_sequence": "complete",
    "tool_use": "tool_calls",
    "max_tokens": "max_tokens",
    "pause_turn": "paused",
    "refusal": "refused",
    "model_context_window_exceeded": "context_exceeded",
}


def thinking_refusal(model: str | None, thinking: int | str | None, max_tokens: int | None,
                     temperature: float | None) -> Refusal | None:
    """Why Anthropic would refuse this `thinking`, if it would; `model` is None while unknown (a template)."""
    if thinking is None:
        return None
    if temperature is not None:
        return Refusal("thinking", "thinking cannot be combined with a temperature (Anthropic takes only the default "
                                   "temperature with thinking on); remove one of them")
    family = model or ""
    if family.startswith(NO_THINKING_FAMILIES):
        return Refusal("thinking", f"{model} does not think; remove thinking, or use a model from "
                                   f"{', '.join(BUDGET_THINKING_FAMILIES[:3])} on")
    if thinking == "adaptive":
        if family.startswith(BUDGET_THINKING_FAMILIES) and not family.startswith(ADAPTIVE_THINKING_FAMILIES):
            return Refusal("thinking", f"{model} takes a thinking budget in tokens, not 'adaptive' (adaptive thinking "
                                       "came with the 4.6 models)")
        return None
    if not isinstance(thinking, int) or isinstance(thinking, bool):
        return Refusal("thinking", f"thinking must be a budget in tokens or 'adaptive', not {thinking!r}")
    if model is not None and model.startswith(ADAPTIVE_THINKING_FAMILIES) and not model.startswith(BUDGET_THINKING_FAMILIES):
        return Refusal("thinking", f"{model} takes only thinking: adaptive (Claude models from 4.7 on), not a budget")
    if thinking < MIN_THINKING_BUDGET:
        return Refusal("thinking", f"a thinking budget must be at least {MIN_THINKING_BUDGET} tokens, not {thinking}")
    limit = max_tokens if max_tokens is not None else DEFAULT_MAX_TOKENS
    if thinking >= limit:
        return Refusal("thinking", f"a thinking budget ({thinking}) must be less than max_tokens ({limit}"
                                   f"{', the default' if max_tokens is None else ''}); raise max_tokens")
    return None


class Sampling(NamedTuple):
    """The anthropic-version a request goes out with, and the refusal it will meet, if any."""

    version: str
    refusal: Refusal | None = None


def sampling_version(model: str | None, temperature: float | None, api_version: str | None) -> Sampling:
    """The temperature rule of docs/VENDORS.md (Anthropic), the one place it is written in code ("API versions move").

    A temperature means 2023-06-01 (2026-10-21 rejects sampling parameters), unless
    api_version says otherwise; Claude models from 4.7 on refuse a temperature under
    either version. `model` is None while unknown (a template, at load time).
    """
    version = api_version or (CURRENT_VERSION if temperature is None else SAMPLING_VERSION)
    if api_version is not None and api_version not in VERSIONS:
        return Sampling(version, Refusal("api_version", f"anthropic-version {api_version!r} is not one of "
                                                        f"{', '.join(VERSIONS)}"))
    if temperature is None:
        return Sampling(version)
    if version == CURRENT_VERSION:
        return Sampling(version, Refusal("temperature", f"anthropic-version {CURRENT_VERSION} rejects temperature; "
                                                        "remove it, or drop api_version so that 2023-06-01 is sent with it"))
    if model is not None and not takes_temperature(model):
        return Sampling(version, Refusal("temperature", f"{model} takes only its default temperature (Claude models from "
                                                        "4.7 on); remove temperature, or use a model that still takes "
                                                        f"one: {', '.join(TEMPERATURE_MODELS)}"))
    return Sampling(version)


# -- the reply, as a model: a wrong type anywhere is a WireError, not a crash further on --

class _Citation(WireModel):
    cited_text: str = ""
    url: str | None = None
    title: str | None = None
    document_title: str | None = None
    document_index: int | None = None

    def source(self) -> str:
        if self.url or self.document_title or self.title:
            return str(self.url or self.document_title or self.title)
        return f"document {self.document_index}" if self.document_index is not None else ""


class _Text(WireModel):
    text: str = ""
    citations: list[_Citation] | None = None


class _ToolUse(WireModel):
    id: str
    name: str
    input: dict[str, Any]


class _Thinking(WireModel):
    thinking: str
    signature: str


class _RedactedThinking(WireModel):
    data: str


class _OtherBlock(WireModel):
    """Server-tool use and results, and whatever else comes: carried on the history row as they came."""

    model_config = ConfigDict(extra="allow")
    type: str


def _block_kind(block: Any) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    return kind if kind in ("text", "tool_use", "thinking", "redacted_thinking") else "other"


_Block = Annotated[
    Annotated[_Text, Tag("text")] | Annotated[_ToolUse, Tag("tool_use")] | Annotated[_Thinking, Tag("thinking")]
    | Annotated[_RedactedThinking, Tag("redacted_thinking")] | Annotated[_OtherBlock, Tag("other")],
    Discriminator(_block_kind),
]


class _OutputDetails(WireModel):
    thinking_tokens: int | None = None


class _Usage(WireModel):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    output_tokens_details: _OutputDetails | None = None


class _StopDetails(WireModel):
    model_config = ConfigDict(extra="allow")
    type: str | None = None
    category: str | None = None
    explanation: str | None = None


class _Message(WireModel):
    content: list[_Block]
    usage: _Usage | None = None
    stop_reason: str | None = None
    stop_details: _StopDetails | None = None


def _is_error(text: str) -> bool:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and "error" in value


def _with_carried(content: list[dict[str, Any]], carried: list[Any]) -> list[dict[str, Any]]:
    """Thinking and server-tool blocks back where the reply had them (`at`), around our text and calls."""
    placed = sorted((part for part in carried if isinstance(part, dict) and isinstance(part.get("block"), dict)),
                    key=lambda part: int(part.get("at") or 0))
    for part in placed:
        content.insert(min(int(part.get("at") or 0), len(content)), part["block"])
    return content


def _user_content(row: HistoryRow) -> list[dict[str, Any]]:
    """A user row of parts as content blocks, in the row's order."""
    return [{"type": "text", "text": part.text} if isinstance(part, TextPart) else file_block(part) for part in row.parts]


class Anthropic:
    vendor = "anthropic"
    key_variables: tuple[str, ...] = ("ANTHROPIC_API_KEY",)
    base_variable = "ANTHROPIC_BASE_URL"
    default_base = "https://api.anthropic.com"
    name_limit: int = 64

    def messages(self, request: Request) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        after_results = False
        for kind, rows in group_turns(request.rows):
            if kind == "user":
                row = rows[0]
                if row.parts:
                    blocks = _user_content(row)
                    if after_results:
                        messages[-1]["content"] += blocks
                    else:
                        messages.append({"role": "user", "content": blocks})
                elif after_results and row.content:
                    messages[-1]["content"].append({"type": "text", "text": row.content})
                else:
                    messages.append({"role": "user", "content": row.content})
                after_results = False
                continue
            after_results = False
            if kind == "assistant":
                texts = [row.content for row in rows if not row.is_tool_call and row.content]
                calls = [row for row in rows if row.is_tool_call]
                carried = carried_parts(rows, self.vendor)
                if not calls and not carried:
                    if texts:
                        messages.append({"role": "assistant", "content": "".join(texts)})
                    continue
                content: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts]
                content += [
                    {"type": "tool_use", "id": row.tool_call_id, "name": row.name,
                     "input": call_arguments(row)}
                    for row in calls
                ]
                messages.append({"role": "assistant", "content": _with_carried(content, carried)})
            else:
                results = []
                for row in rows:
                    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": row.tool_call_id,
                                             "content": row.content}
                    if _is_error(row.content):
                        block["is_error"] = True
                    results.append(block)
                messages.append({"role": "user", "content": results})
                after_results = True
        return messages

    def build(self, request: Request, key: str) -> HttpCall:
        # Translation only: a refused combination is still built as asked (the block refused it at load
        # or before sending; a direct caller meets the vendor's own 400).
        version = sampling_version(request.model, request.temperature, request.api_version).version
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens if request.max_tokens is not None else DEFAULT_MAX_TOKENS,
        }
        if request.system:
            body["system"] = request.system
        body["messages"] = self.messages(request)
        if request.tools:
            body["tools"] = [tool_declaration(tool, "input_schema") for tool in request.tools]
        notes: tuple[str, ...] = foreign_parts_note(request.rows, self.vendor)
        if request.thinking is not None:
            body["thinking"] = ({"type": "adaptive"} if request.thinking == "adaptive"
                                else {"type": "enabled", "budget_tokens": request.thinking})
        if request.response_schema is not None:
            body["output_config"] = {"format": {"type": "json_schema", "schema": request.response_schema}}
        if request.cache:
            mark_cache_prefix(body)
        if request.temperature is not None:
            body["temperature"] = request.temperature
            if not request.api_version:
                notes += (f"a temperature was given, so anthropic-version {SAMPLING_VERSION} "
                          f"({CURRENT_VERSION} rejects sampling parameters)",)
        headers = {"x-api-key": key, "anthropic-version": version, "content-type": "application/json"}
        return HttpCall("/v1/messages", headers, body, notes, version)

    def parse(self, body: Any) -> Reply:
        message = read_model(_Message, body)
        texts: list[str] = []
        calls: list[ToolCall] = []
        citations: list[dict[str, str]] = []
        carried: list[dict[str, Any]] = []
        for index, block in enumerate(message.content):
            if isinstance(block, _Text):
                texts.append(block.text)
                citations += [{"text": c.cited_text, "source": c.source()} for c in block.citations or []]
            elif isinstance(block, _ToolUse):
                calls.append(ToolCall(block.id, block.name, block.input))
            else:  # thinking, redacted thinking, server tools: resent as they came (read_model checked the shape)
                carried.append({"at": index, "block": body["content"][index]})
        usage = message.usage or _Usage()
        input_tokens = sum(tokens or 0 for tokens in (usage.input_tokens, usage.cache_creation_input_tokens,
                                                      usage.cache_read_input_tokens))
        finish = FINISH.get(message.stop_reason or "", "complete")
        if calls and finish == "complete":
            finish = "tool_calls"
        details = message.stop_details
        refusal = details.explanation if details is not None and details.type == "refusal" else None
        thinking = usage.output_tokens_details.thinking_tokens if usage.output_tokens_details else None
        return Reply("".join(texts), calls, input_tokens, usage.output_tokens or 0, message.stop_reason, finish=finish,
                     refusal=refusal, stop_details=details.model_dump(exclude_none=True) if details else None,
                     citations=citations, signature=seal(self.vendor, carried), thinking_tokens=thinking,
                     cache_write_tokens=usage.cache_creation_input_tokens or 0,
                     cache_read_tokens=usage.cache_read_input_tokens or 0)

    def streamed(self, call: HttpCall) -> HttpCall:
        return replace(call, body={**call.body, "stream": True}, headers={**call.headers, "accept": "text/event-stream"})

    def assembler(self) -> AnthropicStream:
        return AnthropicStream()

    def error(self, status: int, body: Any) -> tuple[str, str]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            return str(error.get("type") or f"http_{status}"), str(error.get("message") or "")
        return f"http_{status}", ""
