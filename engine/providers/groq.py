"""Groq's OpenAI-compatible chat completions wire format (GroqChatRequest)."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel, Field

from engine.format.tables import HistoryRow
from engine.providers.wire import HttpCall, Reply, Request, ToolCall, WireError, call_arguments, group_turns, read_model

__all__ = ["Groq"]


# -- the reply, as a model: a wrong type anywhere is a WireError, not a crash further on --

class _Function(BaseModel):
    name: str | None = None
    arguments: str | None = None  # JSON text, as OpenAI sends it


class _ToolCall(BaseModel):
    id: str | None = None
    function: _Function | None = None


class _Message(BaseModel):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class _Usage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _Completion(BaseModel):
    choices: list[_Choice] = Field(min_length=1)
    usage: _Usage | None = None


def _sent_as_written(row: HistoryRow) -> str:
    call_arguments(row)  # Groq takes the arguments as JSON text: check it, then send it unchanged
    return row.content or "{}"


class Groq:
    vendor = "groq"
    key_variables: tuple[str, ...] = ("GROQ_API_KEY",)
    base_variable = "GROQ_BASE_URL"
    default_base = "https://api.groq.com"
    name_limit: int = 64

    def messages(self, request: Request) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        for kind, rows in group_turns(request.rows):
            if kind == "user":
                messages.append({"role": "user", "content": rows[0].content})
            elif kind == "assistant":
                text = "".join(row.content for row in rows if not row.is_tool_call)
                calls = [row for row in rows if row.is_tool_call]
                if not calls:
                    messages.append({"role": "assistant", "content": text})
                    continue
                messages.append({
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [
                        {"id": row.tool_call_id, "type": "function",
                         "function": {"name": row.name, "arguments": _sent_as_written(row)}}
                        for row in calls
                    ],
                })
            else:
                messages += [
                    {"role": "tool", "tool_call_id": row.tool_call_id, "name": row.name, "content": row.content}
                    for row in rows
                ]
        return messages

    def build(self, request: Request, key: str) -> HttpCall:
        body: dict[str, Any] = {"model": request.model}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body["max_completion_tokens"] = request.max_tokens
        body["messages"] = self.messages(request)
        if request.tools:
            tools = []
            for tool in request.tools:
                function: dict[str, Any] = {"name": tool.name}
                if tool.description:
                    function["description"] = tool.description
                function["parameters"] = tool.parameters
                if tool.strict:
                    function["strict"] = True
                tools.append({"type": "function", "function": function})
            body["tools"] = tools
        headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        return HttpCall("/openai/v1/chat/completions", headers, body, api_version=request.api_version)

    def parse(self, body: Any) -> Reply:
        completion = read_model(_Completion, body)
        choice = completion.choices[0]
        message = choice.message
        calls = []
        for call in message.tool_calls or []:
            function = call.function or _Function()
            name = str(function.name)
            try:
                arguments = orjson.loads(function.arguments or "{}")
            except orjson.JSONDecodeError:
                raise WireError(f"the call of '{name}' has arguments that are not JSON") from None
            if not isinstance(arguments, dict):
                raise WireError(f"the call of '{name}' has arguments that are not a JSON object")
            calls.append(ToolCall(str(call.id), name, arguments))
        usage = completion.usage or _Usage()
        return Reply(message.content or "", calls, usage.prompt_tokens or 0, usage.completion_tokens or 0,
                     choice.finish_reason)

    def error(self, status: int, body: Any) -> tuple[str, str]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            kind = error.get("code") or error.get("type") or f"http_{status}"
            return str(kind), str(error.get("message") or "")
        return f"http_{status}", ""
