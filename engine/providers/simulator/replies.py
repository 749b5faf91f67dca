"""The simulator's 200 bodies: one reply (text, calls, an outcome) in each vendor's wire format.

A scripted reply may name a `finish` (docs/VENDORS.md's vocabulary), a vendor `stop_reason`,
`refusal` text, a `blocked` reason, `thinking` text and `citations`; each vendor renders
what its wire format has for it (Anthropic has no prompt block, so `blocked` is its
refusal; only Anthropic pauses; Groq and Gemini answer an exceeded context with a 400).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from engine.providers.simulator.prompt_cache import CacheUse

__all__ = ["Outcome", "render", "vendor_error"]

_ANTHROPIC_STOP = {"complete": "end_turn", "tool_calls": "tool_use", "max_tokens": "max_tokens", "refused": "refusal",
                   "blocked": "refusal", "paused": "pause_turn", "context_exceeded": "model_context_window_exceeded"}
_GROQ_STOP = {"complete": "stop", "tool_calls": "tool_calls", "max_tokens": "length", "refused": "content_filter",
              "blocked": "content_filter", "paused": "stop"}
_GEMINI_STOP = {"complete": "STOP", "tool_calls": "STOP", "max_tokens": "MAX_TOKENS", "refused": "SAFETY", "paused": "STOP"}

# Each vendor's error type per status (docs/VENDORS.md, each vendor's "Errors"), for scripted errors and rejections.
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
                    403: "permission_error", 404: "not_found_error", 408: "timeout_error", 409: "conflict_error",
                    413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 504: "timeout_error",
                    529: "overloaded_error"}
_GROQ_TYPES = {400: ("invalid_request_error", None), 401: ("invalid_request_error", "invalid_api_key"),
               403: ("permission_error", None), 404: ("invalid_request_error", "model_not_found"),
               413: ("invalid_request_error", "request_too_large"), 422: ("invalid_request_error", None),
               429: ("tokens", "rate_limit_exceeded"), 498: ("service_unavailable", "capacity_exceeded"),
               500: ("internal_server_error", None), 502: ("bad_gateway", None), 503: ("service_unavailable", None)}
_GEMINI_STATUSES = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
                    500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def vendor_error(vendor: str, status: int, message: str, kind: str | None = None,
                 code: str | None = None) -> tuple[int, Any, dict[str, Any]]:
    """An error answer as the vendor sends it; `kind` overrides its usual type for the status."""
    if vendor == "anthropic":
        error_type = kind or _ANTHROPIC_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return status, {"type": "error", "error": {"type": error_type, "message": message},
                        "request_id": "req_sim"}, {}
    if vendor == "groq":
        usual, usual_code = _GROQ_TYPES.get(status, ("internal_server_error" if status >= 500 else "invalid_request_error",
                                                     None))
        error: dict[str, Any] = {"message": message, "type": kind or usual}
        if code or usual_code:
            error["code"] = code or usual_code
        return status, {"error": error}, {}
    status_name = kind or _GEMINI_STATUSES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")
    return status, {"error": {"code": status, "message": message, "status": status_name}}, {}


@dataclass
class Outcome:
    """One 200 reply to render: what it says, and how the turn ended."""

    model: str
    digest: str
    text: str
    calls: list[dict[str, Any]]
    input_tokens: int
    output_tokens: int
    script: dict[str, Any] = field(default_factory=dict)
    thinking_on: bool = False
    cache: CacheUse = field(default_factory=CacheUse)
    """Of input_tokens, those written to and read from the prompt cache."""

    @property
    def finish(self) -> str:
        if self.script.get("blocked"):
            return "blocked"
        return str(self.script.get("finish") or ("tool_calls" if self.calls else "complete"))

    @property
    def thinking(self) -> str | None:
        given = self.script.get("thinking")
        if given:
            return str(given)
        return "(simulated thinking)" if self.thinking_on else None

    def call_id(self, index: int, prefix: str) -> str:
        return str(self.calls[index].get("id") or f"{prefix}{self.digest}{index}")


def render(vendor: str, outcome: Outcome) -> tuple[int, Any, dict[str, Any]]:
    """The vendor's answer for this outcome: a 200 body, or the 400 a vendor gives for an exceeded context."""
    if vendor == "anthropic":
        return 200, _anthropic(outcome), {}
    if outcome.finish == "context_exceeded":
        message = "Please reduce the length of the messages or completion." if vendor == "groq" else \
            "The input token count exceeds the maximum number of tokens allowed."
        return vendor_error(vendor, 400, message, code="context_length_exceeded" if vendor == "groq" else None)
    return 200, (_groq(outcome) if vendor == "groq" else _gemini(outcome)), {}


def _anthropic(outcome: Outcome) -> dict[str, Any]:
    script, finish = outcome.script, outcome.finish
    content: list[dict[str, Any]] = []
    if outcome.thinking:
        content.append({"type": "thinking", "thinking": outcome.thinking, "signature": f"c2lt{outcome.digest}"})
    if finish == "paused":
        query = outcome.text or "simulated search"
        content += [{"type": "server_tool_use", "id": f"srvtoolu_sim{outcome.digest}", "name": "web_search",
                     "input": {"query": query}},
                    {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_sim{outcome.digest}",
                     "content": [{"type": "web_search_result", "url": "https://example.com/simulated",
                                  "title": "Simulated result", "encrypted_content": "c2ltdWxhdGVk", "page_age": None}]}]
    if outcome.text:
        block: dict[str, Any] = {"type": "text", "text": outcome.text}
        if script.get("citations"):
            block["citations"] = [{"type": "web_search_result_location", "url": c.get("source", ""),
                                   "title": c.get("source", ""), "encrypted_index": "c2lt", "cited_text": c.get("text", "")}
                                  for c in script["citations"]]
        content.append(block)
    for index, call in enumerate(outcome.calls):
        cut = finish == "max_tokens" and index == len(outcome.calls) - 1
        content.append({"type": "tool_use", "id": outcome.call_id(index, "toolu_sim"), "name": call["name"],
                        "input": {} if cut else call["arguments"]})
    stop_details = None
    if finish in ("refused", "blocked"):
        stop_details = {"type": "refusal", "category": script.get("blocked") and "general_harms",
                        "explanation": script.get("refusal")}
    return {"id": f"msg_sim{outcome.digest}", "type": "message", "role": "assistant", "model": outcome.model,
            "content": content, "stop_reason": script.get("stop_reason") or _ANTHROPIC_STOP.get(finish, "end_turn"),
            "stop_sequence": None, "stop_details": stop_details,
            "usage": {"input_tokens": outcome.input_tokens - outcome.cache.written - outcome.cache.read,
                      "output_tokens": outcome.output_tokens, "cache_creation_input_tokens": outcome.cache.written,
                      "cache_read_input_tokens": outcome.cache.read}}


def _groq(outcome: Outcome) -> dict[str, Any]:
    script, finish = outcome.script, outcome.finish
    message: dict[str, Any] = {"role": "assistant", "content": outcome.text or None}
    if outcome.calls:
        calls = []
        for index, call in enumerate(outcome.calls):
            arguments = orjson.dumps(call["arguments"]).decode()
            if finish == "max_tokens" and index == len(outcome.calls) - 1:
                arguments = arguments[: max(1, len(arguments) // 2)]  # cut off mid-JSON, as a token limit does
            calls.append({"id": outcome.call_id(index, "call_sim"), "type": "function",
                          "function": {"name": call["name"], "arguments": arguments}})
        message["tool_calls"] = calls
    reason = script.get("stop_reason") or _GROQ_STOP.get(finish, "stop")
    if finish == "refused" and script.get("refusal"):
        message["refusal"], reason = script["refusal"], script.get("stop_reason") or "stop"
    if outcome.thinking:
        message["reasoning"] = outcome.thinking
    usage: dict[str, Any] = {"prompt_tokens": outcome.input_tokens, "completion_tokens": outcome.output_tokens,
                             "total_tokens": outcome.input_tokens + outcome.output_tokens}
    if outcome.thinking:
        usage["completion_tokens_details"] = {"reasoning_tokens": max(1, len(outcome.thinking) // 4)}
    if outcome.cache.read:
        usage["prompt_tokens_details"] = {"cached_tokens": outcome.cache.read}
    return {"id": f"chatcmpl-sim{outcome.digest}", "object": "chat.completion", "created": 1764680400,
            "model": outcome.model, "choices": [{"index": 0, "logprobs": None, "message": message, "finish_reason": reason}],
            "usage": usage, "system_fingerprint": "fp_simulated", "x_groq": {"id": f"req_sim{outcome.digest}"}}


def _gemini(outcome: Outcome) -> dict[str, Any]:
    script, finish = outcome.script, outcome.finish
    usage: dict[str, Any] = {"promptTokenCount": outcome.input_tokens, "candidatesTokenCount": outcome.output_tokens,
                             "totalTokenCount": outcome.input_tokens + outcome.output_tokens}
    if outcome.thinking:
        usage["thoughtsTokenCount"] = max(1, len(outcome.thinking) // 4)
        usage["totalTokenCount"] += usage["thoughtsTokenCount"]
    if outcome.cache.read:
        usage["cachedContentTokenCount"] = outcome.cache.read
    if finish == "blocked":
        feedback: dict[str, Any] = {"blockReason": str(script.get("blocked") or "SAFETY")}
        if script.get("refusal"):
            feedback["blockReasonMessage"] = script["refusal"]
        return {"promptFeedback": feedback, "usageMetadata": usage, "modelVersion": outcome.model,
                "responseId": f"sim{outcome.digest}"}
    parts: list[dict[str, Any]] = [{"text": outcome.text}] if outcome.text else []
    for index, call in enumerate(outcome.calls):
        part: dict[str, Any] = {"functionCall": {"name": call["name"], "args": call["arguments"]}}
        if call.get("id"):
            part["functionCall"]["id"] = call["id"]
        if index == 0:
            part["thoughtSignature"] = f"c2ltdWxhdGVk{outcome.digest}"
        parts.append(part)
    candidate: dict[str, Any] = {"index": 0, "finishReason": script.get("stop_reason") or _GEMINI_STOP.get(finish, "STOP")}
    if parts:
        candidate["content"] = {"role": "model", "parts": parts}
    if finish == "refused":
        candidate["safetyRatings"] = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH",
                                       "blocked": True}]
        if script.get("refusal"):
            candidate["finishMessage"] = script["refusal"]
    sources = []
    for cited in script.get("citations") or []:
        start = outcome.text.find(str(cited.get("text", "")))
        if start >= 0:
            sources.append({"startIndex": start, "endIndex": start + len(str(cited.get("text", ""))),
                            "uri": cited.get("source", "")})
    if sources:
        candidate["citationMetadata"] = {"citationSources": sources}
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": outcome.model,
            "responseId": f"sim{outcome.digest}"}
