"""Span attributes in OpenTelemetry's GenAI semantic conventions, from diagrama's trace events.

Kept apart from the span tree (otel.py) because it is a mapping table: which trace field
becomes which `gen_ai.*` attribute, and how each vendor's request and reply bodies become
the conventions' vendor-neutral messages (`[{role, parts: [{type, ...}]}]`). Contents are
mapped only at Detailed, from the bodies the trace records then, and always scrubbed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from engine.format.redact import Redactor

__all__ = ["chat_attributes", "content_attributes", "run_cost_attributes", "tool_attributes"]

PROVIDER_NAMES = {"anthropic": "anthropic", "groq": "groq", "gemini": "gcp.gemini"}
"""diagrama's vendor → the conventions' gen_ai.provider.name (Gemini's API at generativelanguage is gcp.gemini)."""

_CONTENT_LIMIT = 64 * 1024
"""Characters kept of one content attribute; collectors drop far smaller spans than a long history."""


def chat_attributes(event: Mapping[str, Any]) -> dict[str, Any]:
    """A `provider_called` event as the attributes of a `chat` span."""
    vendor = str(event.get("vendor"))
    usage = event.get("usage") or {}
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER_NAMES.get(vendor, vendor),
        "gen_ai.request.model": str(event.get("model")),
        "gen_ai.usage.input_tokens": int(usage.get("input_tokens") or 0),
        "gen_ai.usage.output_tokens": int(usage.get("output_tokens") or 0),
        "diagrama.finish": str(event.get("finish")),
        "diagrama.attempts": int(event.get("attempts") or 1),
    }
    if event.get("stop_reason") is not None:
        attributes["gen_ai.response.finish_reasons"] = (str(event["stop_reason"]),)
    if event.get("max_tokens") is not None:
        attributes["gen_ai.request.max_tokens"] = int(event["max_tokens"])
    if event.get("temperature") is not None:
        attributes["gen_ai.request.temperature"] = float(event["temperature"])
    if usage.get("thinking_tokens") is not None:
        attributes["gen_ai.usage.reasoning_tokens"] = int(usage["thinking_tokens"])
    if usage.get("cache_write_tokens"):
        attributes["gen_ai.usage.cache_creation.input_tokens"] = int(usage["cache_write_tokens"])
    if usage.get("cache_read_tokens"):
        attributes["gen_ai.usage.cache_read.input_tokens"] = int(usage["cache_read_tokens"])
    cost = event.get("cost")
    if isinstance(cost, Mapping) and isinstance(cost.get("usd"), int | float):
        attributes["diagrama.cost_usd"] = float(cost["usd"])
    elif "cost" in event:  # the model has no price: said, never 0
        attributes["diagrama.cost_unknown"] = True
    if event.get("api_version"):
        attributes["diagrama.api_version"] = str(event["api_version"])
    if event.get("cached"):  # answered from the response cache: the vendor was not called
        attributes["diagrama.cached"] = True
    return attributes


def run_cost_attributes(cost: Any) -> dict[str, Any]:
    """A run's cost (run_finished's) as its span's attributes: the total when every price was known, and how many
    requests had none."""
    if not isinstance(cost, Mapping):
        return {}
    attributes: dict[str, Any] = {"diagrama.cost_unknown_steps": int(cost.get("unknown_steps") or 0)}
    if isinstance(cost.get("usd"), int | float):
        attributes["diagrama.cost_usd"] = float(cost["usd"])
    return attributes


def tool_attributes(event: Mapping[str, Any], redactor: Redactor, *, contents: bool) -> dict[str, Any]:
    """A `tool_called` event as the attributes of an `execute_tool` span; arguments and result only with `contents`."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": str(event.get("tool")),
        "gen_ai.tool.call.id": str(event.get("call_id")),
        "gen_ai.tool.type": "function",
    }
    if event.get("ok") is False:
        attributes["error.type"] = str(event.get("error_type") or ("tool_abandoned" if event.get("abandoned") else "tool_error"))
    if contents:
        if "arguments" in event:
            attributes["gen_ai.tool.call.arguments"] = _json(event["arguments"], redactor)
        if "result" in event:
            attributes["gen_ai.tool.call.result"] = _json(event["result"], redactor)
    return attributes


def content_attributes(vendor: str, request: Any, response: Any, redactor: Redactor) -> dict[str, Any]:
    """gen_ai.system_instructions, gen_ai.input.messages and gen_ai.output.messages from one exchange's bodies."""
    attributes: dict[str, Any] = {}
    if isinstance(request, Mapping):
        system, messages = _INPUTS.get(vendor, _no_inputs)(request)
        if system:
            attributes["gen_ai.system_instructions"] = _json([{"type": "text", "content": system}], redactor)
        attributes["gen_ai.input.messages"] = _json(messages, redactor)
    if isinstance(response, Mapping):
        output, response_id = _OUTPUTS.get(vendor, _no_outputs)(response)
        attributes["gen_ai.output.messages"] = _json(output, redactor)
        if response_id:
            attributes["gen_ai.response.id"] = response_id
    return attributes


def _json(value: Any, redactor: Redactor) -> str:
    text = orjson.dumps(value, default=str).decode()
    return redactor.text(text[:_CONTENT_LIMIT])


def _text(content: Any) -> str:
    return content if isinstance(content, str) else orjson.dumps(content, default=str).decode()


# -- Anthropic Messages ------------------------------------------------------------------------------------

def _anthropic_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            parts.append({"type": "text", "content": block.get("text", "")})
        elif kind in ("tool_use", "server_tool_use"):
            parts.append({"type": "tool_call", "id": block.get("id"), "name": block.get("name"),
                          "arguments": block.get("input")})
        elif kind == "tool_result":
            parts.append({"type": "tool_call_response", "id": block.get("tool_use_id"),
                          "response": _text(block.get("content"))})
        elif kind in ("thinking", "redacted_thinking"):
            parts.append({"type": "reasoning", "content": block.get("thinking", "")})
    return parts


def _anthropic_inputs(body: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    system = body.get("system") or ""
    if isinstance(system, list):
        system = "\n".join(str(block.get("text", "")) for block in system if isinstance(block, Mapping))
    messages = [{"role": message.get("role"), "parts": _anthropic_parts(message.get("content"))}
                for message in body.get("messages") or [] if isinstance(message, Mapping)]
    return str(system), messages


def _anthropic_outputs(body: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    message = {"role": "assistant", "parts": _anthropic_parts(body.get("content") or []),
               "finish_reason": body.get("stop_reason")}
    return [message], body.get("id")


# -- Groq (OpenAI chat completions) ------------------------------------------------------------------------

def _openai_parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if message.get("role") == "tool":
        return [{"type": "tool_call_response", "id": message.get("tool_call_id"), "response": _text(message.get("content"))}]
    if message.get("reasoning"):
        parts.append({"type": "reasoning", "content": message["reasoning"]})
    if message.get("content"):
        parts.append({"type": "text", "content": _text(message["content"])})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                      "arguments": function.get("arguments")})
    return parts


def _groq_inputs(body: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        if message.get("role") in ("system", "developer"):
            system.append(_text(message.get("content")))
        else:
            messages.append({"role": message.get("role"), "parts": _openai_parts(message)})
    return "\n".join(system), messages


def _groq_outputs(body: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    output = [{"role": "assistant", "parts": _openai_parts(choice.get("message") or {}),
               "finish_reason": choice.get("finish_reason")}
              for choice in body.get("choices") or [] if isinstance(choice, Mapping)]
    return output, body.get("id")


# -- Gemini generateContent --------------------------------------------------------------------------------

def _gemini_parts(content: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    found = content.get("parts") if isinstance(content, Mapping) else None
    for part in found if isinstance(found, list) else []:
        if not isinstance(part, Mapping):
            continue
        if "text" in part:
            parts.append({"type": "reasoning" if part.get("thought") else "text", "content": part["text"]})
        call = part.get("functionCall") or part.get("function_call")
        if isinstance(call, Mapping):
            parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "arguments": call.get("args")})
        answer = part.get("functionResponse") or part.get("function_response")
        if isinstance(answer, Mapping):
            parts.append({"type": "tool_call_response", "id": answer.get("id") or answer.get("name"),
                          "response": _text(answer.get("response"))})
    return parts


def _gemini_inputs(body: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    instruction = body.get("systemInstruction") or body.get("system_instruction")
    system = "\n".join(part["text"] for part in _gemini_parts(instruction) if part["type"] == "text")
    messages = [{"role": "assistant" if content.get("role") == "model" else content.get("role"),
                 "parts": _gemini_parts(content)}
                for content in body.get("contents") or [] if isinstance(content, Mapping)]
    return system, messages


def _gemini_outputs(body: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    output = [{"role": "assistant", "parts": _gemini_parts(candidate.get("content")),
               "finish_reason": candidate.get("finishReason")}
              for candidate in body.get("candidates") or [] if isinstance(candidate, Mapping)]
    return output, body.get("responseId")


def _no_inputs(_body: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    return "", []


def _no_outputs(_body: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    return [], None


_INPUTS = {"anthropic": _anthropic_inputs, "groq": _groq_inputs, "gemini": _gemini_inputs}
_OUTPUTS = {"anthropic": _anthropic_outputs, "groq": _groq_outputs, "gemini": _gemini_outputs}
