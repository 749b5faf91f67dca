"""Anthropic Messages API wire format (ClaudeRequest): neutral request ↔ JSON.

Translation only: no retries, no sleeping, no logging, no environment. Also the home
of DESIGN.md's temperature rule (`sampling_version`), which the block's load check,
`build` and the simulator all follow.
"""

from __future__ import annotations

from typing import Annotated, Any, NamedTuple

import orjson
from pydantic import BaseModel, Discriminator, Tag

from engine.providers.wire import (
    HttpCall,
    Reply,
    Request,
    ToolCall,
    call_arguments,
    group_turns,
    read_model,
)

__all__ = [
    "CURRENT_VERSION",
    "FIXED_TEMPERATURE_FAMILIES",
    "SAMPLING_VERSION",
    "TEMPERATURE_MODELS",
    "VERSIONS",
    "Anthropic",
    "Refusal",
    "Sampling",
    "sampling_version",
    "takes_temperature",
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


class Refusal(NamedTuple):
    """Why Anthropic will refuse a request: the input at fault, and what to do."""

    field: str
    message: str


class Sampling(NamedTuple):
    """The anthropic-version a request goes out with, and the refusal it will meet, if any."""

    version: str
    refusal: Refusal | None = None


def sampling_version(model: str | None, temperature: float | None, api_version: str | None) -> Sampling:
    """DESIGN.md's temperature rule, the one place it is written ("API versions move").

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

class _Text(BaseModel):
    text: str = ""


class _ToolUse(BaseModel):
    id: str
    name: str
    input: dict[str, Any]


class _OtherBlock(BaseModel):
    """thinking, server tool results, ...: read past, as the SDKs' text helpers do."""


def _block_kind(block: Any) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    return kind if kind in ("text", "tool_use") else "other"


_Block = Annotated[
    Annotated[_Text, Tag("text")] | Annotated[_ToolUse, Tag("tool_use")] | Annotated[_OtherBlock, Tag("other")],
    Discriminator(_block_kind),
]


class _Usage(BaseModel):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class _Message(BaseModel):
    content: list[_Block]
    usage: _Usage | None = None
    stop_reason: str | None = None


def _is_error(text: str) -> bool:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and "error" in value


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
                text = rows[0].content
                if after_results and text:
                    messages[-1]["content"].append({"type": "text", "text": text})
                else:
                    messages.append({"role": "user", "content": text})
                after_results = False
                continue
            after_results = False
            if kind == "assistant":
                texts = [row.content for row in rows if not row.is_tool_call and row.content]
                calls = [row for row in rows if row.is_tool_call]
                if not calls:
                    messages.append({"role": "assistant", "content": "".join(texts)})
                    continue
                content: list[dict[str, Any]] = [{"type": "text", "text": text} for text in texts]
                content += [
                    {"type": "tool_use", "id": row.tool_call_id, "name": row.name,
                     "input": call_arguments(row)}
                    for row in calls
                ]
                messages.append({"role": "assistant", "content": content})
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
            tools = []
            for tool in request.tools:
                entry: dict[str, Any] = {"name": tool.name}
                if tool.description:
                    entry["description"] = tool.description
                entry["input_schema"] = tool.parameters
                if tool.strict:
                    entry["strict"] = True
                tools.append(entry)
            body["tools"] = tools
        notes: tuple[str, ...] = ()
        if request.temperature is not None:
            body["temperature"] = request.temperature
            if not request.api_version:
                notes = (f"a temperature was given, so anthropic-version {SAMPLING_VERSION} "
                         f"({CURRENT_VERSION} rejects sampling parameters)",)
        headers = {"x-api-key": key, "anthropic-version": version, "content-type": "application/json"}
        return HttpCall("/v1/messages", headers, body, notes, version)

    def parse(self, body: Any) -> Reply:
        message = read_model(_Message, body)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in message.content:
            if isinstance(block, _Text):
                texts.append(block.text)
            elif isinstance(block, _ToolUse):
                calls.append(ToolCall(block.id, block.name, block.input))
        usage = message.usage or _Usage()
        input_tokens = sum(tokens or 0 for tokens in (usage.input_tokens, usage.cache_creation_input_tokens,
                                                      usage.cache_read_input_tokens))
        return Reply("".join(texts), calls, input_tokens, usage.output_tokens or 0, message.stop_reason)

    def error(self, status: int, body: Any) -> tuple[str, str]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            return str(error.get("type") or f"http_{status}"), str(error.get("message") or "")
        return f"http_{status}", ""
