"""Groq's OpenAI-compatible chat completions wire format (GroqChatRequest).

Also the one table from `finish_reason` to `finish` (`FINISH`) and of which models take
which `reasoning_effort` (`REASONING_EFFORTS`), read by the block's load check and the simulator.
What Groq models take of images and response schemas is in `groq_inputs`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from pydantic import Field

from engine.format.parts import TextPart
from engine.format.tables import HistoryRow
from engine.providers.groq_inputs import image_part, response_format
from engine.providers.groq_stream import GroqStream
from engine.providers.wire import (
    HttpCall,
    Refusal,
    Reply,
    Request,
    ToolCall,
    WireError,
    WireModel,
    call_arguments,
    carried_parts,
    foreign_parts_note,
    group_turns,
    read_model,
    seal,
    tool_declaration,
)

__all__ = ["FINISH", "REASONING_EFFORTS", "Groq", "reasoning_refusal"]

# finish_reason → finish (docs/VENDORS.md, Groq); a value not listed is `complete`. An
# OpenAI-style `refusal` text on the message makes the turn `refused` whatever the reason says.
FINISH = {
    "stop": "complete",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "max_tokens",
    "content_filter": "refused",
}

# Which Groq models take which reasoning_effort (the groq SDK 1.7 docstring), by model id prefix,
# most specific first; other models take none.
REASONING_EFFORTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai/gpt-oss", ("low", "medium", "high")),
    ("qwen/qwen3.8", ("none", "default", "low", "medium", "high")),
    ("qwen/qwen3", ("none", "default")),
)


def reasoning_refusal(model: str | None, effort: str | None) -> Refusal | None:
    """Why Groq would refuse this reasoning_effort on this model, if it would; `model` None while unknown."""
    if effort is None or model is None:
        return None
    for prefix, efforts in REASONING_EFFORTS:
        if model.startswith(prefix):
            if effort in efforts:
                return None
            return Refusal("reasoning_effort", f"{model} takes reasoning_effort {', '.join(efforts)}, not {effort!r}")
    takers = ", ".join(f"{prefix}*" for prefix, _ in REASONING_EFFORTS)
    return Refusal("reasoning_effort", f"{model} does not take reasoning_effort; models that do: {takers}")


# -- the reply, as a model: a wrong type anywhere is a WireError, not a crash further on --

class _Function(WireModel):
    name: str | None = None
    arguments: str | None = None  # JSON text, as OpenAI sends it


class _ToolCall(WireModel):
    id: str | None = None
    function: _Function | None = None


class _Message(WireModel):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None
    refusal: str | None = None
    reasoning: str | None = None


class _Choice(WireModel):
    message: _Message
    finish_reason: str | None = None


class _CompletionDetails(WireModel):
    reasoning_tokens: int | None = None


class _PromptDetails(WireModel):
    cached_tokens: int | None = None


class _Usage(WireModel):
    prompt_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens: int | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _Completion(WireModel):
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
                row = rows[0]
                content: Any = row.content
                if row.parts:  # text and image_url content parts (the block refused documents before sending)
                    content = [{"type": "text", "text": part.text} if isinstance(part, TextPart) else image_part(part)
                               for part in row.parts]
                messages.append({"role": "user", "content": content})
            elif kind == "assistant":
                text = "".join(row.content for row in rows if not row.is_tool_call)
                calls = [row for row in rows if row.is_tool_call]
                message: dict[str, Any] = {"role": "assistant", "content": text or None}
                if not calls:
                    if not text:
                        continue  # a turn with nothing for Groq (another vendor's parts only)
                    message["content"] = text
                else:
                    message["tool_calls"] = [
                        {"id": row.tool_call_id, "type": "function",
                         "function": {"name": row.name, "arguments": _sent_as_written(row)}}
                        for row in calls
                    ]
                reasoning = "".join(str(part.get("reasoning") or "") for part in carried_parts(rows, self.vendor)
                                    if isinstance(part, dict))
                if reasoning:
                    message["reasoning"] = reasoning
                messages.append(message)
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
        if request.reasoning_effort is not None:
            body["reasoning_effort"] = request.reasoning_effort
        body["messages"] = self.messages(request)
        if request.tools:
            body["tools"] = [{"type": "function", "function": tool_declaration(tool, "parameters")} for tool in request.tools]
        notes = foreign_parts_note(request.rows, self.vendor)
        if request.response_schema is not None:
            body["response_format"], note = response_format(request.model, request.response_schema)
            notes += (note,) if note else ()
        headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
        return HttpCall("/openai/v1/chat/completions", headers, body, notes, api_version=request.api_version)

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
                if choice.finish_reason == "length":  # cut off by the token limit: `judge` makes it output_truncated
                    arguments = {}
                else:
                    raise WireError(f"the call of '{name}' has arguments that are not JSON") from None
            if not isinstance(arguments, dict):
                raise WireError(f"the call of '{name}' has arguments that are not a JSON object")
            calls.append(ToolCall(str(call.id), name, arguments))
        usage = completion.usage or _Usage()
        finish = "refused" if message.refusal else FINISH.get(choice.finish_reason or "", "complete")
        if calls and finish == "complete":
            finish = "tool_calls"
        details = usage.completion_tokens_details
        return Reply(message.content or "", calls, usage.prompt_tokens or 0, usage.completion_tokens or 0,
                     choice.finish_reason, finish=finish, refusal=message.refusal,
                     signature=seal(self.vendor, [{"reasoning": message.reasoning}] if message.reasoning else []),
                     thinking_tokens=details.reasoning_tokens if details else None,
                     cache_read_tokens=(usage.prompt_tokens_details.cached_tokens or 0) if usage.prompt_tokens_details
                     else 0)

    def streamed(self, call: HttpCall) -> HttpCall:
        return replace(call, body={**call.body, "stream": True}, headers={**call.headers, "accept": "text/event-stream"})

    def assembler(self) -> GroqStream:
        return GroqStream()

    def error(self, status: int, body: Any) -> tuple[str, str]:
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            kind = error.get("code") or error.get("type") or f"http_{status}"
            return str(kind), str(error.get("message") or "")
        return f"http_{status}", ""
