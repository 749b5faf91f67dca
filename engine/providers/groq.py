"""Groq's OpenAI-compatible chat completions wire format (GroqChatRequest)."""

from __future__ import annotations

from typing import Any

import orjson

from engine.format.tables import HistoryRow
from engine.providers.wire import HttpCall, Reply, Request, ToolCall, WireError, call_arguments, group_turns

__all__ = ["Groq"]


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
        return HttpCall("/openai/v1/chat/completions", headers, body)

    def parse(self, body: Any) -> Reply:
        try:
            choice = body["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise WireError("the reply has no choices[0].message") from None
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            name = str(function.get("name"))
            try:
                arguments = orjson.loads(function.get("arguments") or "{}")
            except (orjson.JSONDecodeError, TypeError):
                raise WireError(f"the call of '{name}' has arguments that are not JSON") from None
            if not isinstance(arguments, dict):
                raise WireError(f"the call of '{name}' has arguments that are not a JSON object")
            calls.append(ToolCall(str(call.get("id")), name, arguments))
        usage = body.get("usage") or {}
        return Reply(str(message.get("content") or ""), calls, int(usage.get("prompt_tokens") or 0),
                     int(usage.get("completion_tokens") or 0), choice.get("finish_reason"))

    def error(self, status: int, body: Any) -> tuple[str, str]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            kind = error.get("code") or error.get("type") or f"http_{status}"
            return str(kind), str(error.get("message") or "")
        return f"http_{status}", ""
