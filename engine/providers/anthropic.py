"""Anthropic Messages API wire format (ClaudeRequest): neutral request ↔ JSON.

Translation only: no retries, no sleeping, no logging, no environment.
"""

from __future__ import annotations

from typing import Any

import orjson

from engine.providers.wire import HttpCall, Reply, Request, ToolCall, WireError, call_arguments, group_turns

__all__ = ["CURRENT_VERSION", "FIXED_TEMPERATURE_FAMILIES", "SAMPLING_VERSION", "Anthropic", "takes_temperature"]

CURRENT_VERSION = "2026-10-21"
SAMPLING_VERSION = "2023-06-01"
VERSIONS = (CURRENT_VERSION, SAMPLING_VERSION)
DEFAULT_MAX_TOKENS = 1024
# Claude models from 4.7 on take only the default temperature, under either API version.
# The one list of them: the block's load check and the simulator both read it.
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

    def version(self, request: Request) -> str:
        if request.api_version:
            return request.api_version
        return SAMPLING_VERSION if request.temperature is not None else CURRENT_VERSION

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
        version = self.version(request)
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
        return HttpCall("/v1/messages", headers, body, notes)

    def parse(self, body: Any) -> Reply:
        if not isinstance(body, dict) or not isinstance(body.get("content"), list):
            raise WireError("the reply has no 'content' list")
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in body["content"]:
            if not isinstance(block, dict):
                raise WireError("a content block is not an object")
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                arguments = block.get("input")
                if not isinstance(arguments, dict):
                    raise WireError(f"the call of '{block.get('name')}' has input that is not an object")
                calls.append(ToolCall(str(block["id"]), str(block["name"]), arguments))
        usage = body.get("usage") or {}
        input_tokens = sum(int(usage.get(k) or 0) for k in
                           ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        return Reply("".join(texts), calls, input_tokens, int(usage.get("output_tokens") or 0), body.get("stop_reason"))

    def error(self, status: int, body: Any) -> tuple[str, str]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            return str(error.get("type") or f"http_{status}"), str(error.get("message") or "")
        return f"http_{status}", ""
