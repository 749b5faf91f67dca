"""Vendor HTTP: neutral requests, the three wire adapters, sending, the simulator.

`__all__` is the face request blocks use (blocks import nothing else from here):
the neutral types, one adapter per vendor, what a request cost (`cost_of`, the price table),
Anthropic's temperature rule, each vendor's thinking / reasoning_effort rule and what it takes of parts and response schemas, the
`response_schema` input type and the reading of a structured answer, the message parts,
`ask` (the run's request path) and the simulator; and HttpRequest's: its URL checks against
`allowed_hosts` and `send_web`. Sending, the client pool, the response cache and the simulator's
checks are this package's own (`engine.providers.http`, `.clients`, `.response_cache`, `.simulator`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.format.lazy import lazy_face

if TYPE_CHECKING:
    from engine.format.hosts import literal_url_refusal
    from engine.format.parts import Message, Part, PartsError, parts_of
    from engine.providers.answer_links import (
        ANSWER_SECRET_ENV,
        PUBLIC_URL_ENV,
        AnswerLinkRefused,
        answer_token,
        read_answer_token,
    )
    from engine.providers.anthropic import Anthropic, Sampling, sampling_version, thinking_refusal
    from engine.providers.anthropic_inputs import claude_output_refusal, claude_parts_refusal
    from engine.providers.ask import Answer, ask
    from engine.providers.gemini import Gemini, gemini_thinking_refusal
    from engine.providers.gemini_inputs import gemini_output_refusal, gemini_parts_refusal
    from engine.providers.gemini_tool_schema import SchemaRefused, gemini_schema
    from engine.providers.groq import Groq, reasoning_refusal
    from engine.providers.groq_inputs import groq_output_refusal, groq_parts_refusal
    from engine.providers.http import Exchanges, Retried
    from engine.providers.prices import cost_of, estimate
    from engine.providers.simulator import RecordedRequest, Simulator
    from engine.providers.structured import ResponseSchema, read_output
    from engine.providers.web import Fetched, Outgoing, checked_url, send_web, status_error, web_outputs
    from engine.providers.wire import (
        FINISHES,
        Adapter,
        HttpCall,
        Refusal,
        Reply,
        Request,
        ToolCall,
        ToolSpec,
        WireError,
        file_parts,
        system_text,
        valid_tool_name,
    )

# Names load on first use (PEP 562): a block module needs the adapters and wire types to be
# defined, and only a run that sends needs `ask`, httpx and the simulator.
_HOMES = {
    # Checked at load, with the standard library's URL parser: `validate` loads no HTTP client.
    "engine.format.hosts": ["literal_url_refusal"],
    "engine.format.parts": ["Message", "Part", "PartsError", "parts_of"],
    "engine.providers.anthropic": ["Anthropic", "Sampling", "sampling_version", "thinking_refusal"],
    "engine.providers.anthropic_inputs": ["claude_output_refusal", "claude_parts_refusal"],
    "engine.providers.answer_links": ["ANSWER_SECRET_ENV", "PUBLIC_URL_ENV", "AnswerLinkRefused", "answer_token",
                                      "read_answer_token"],
    "engine.providers.ask": ["Answer", "ask"],
    "engine.providers.gemini": ["Gemini", "gemini_thinking_refusal"],
    "engine.providers.gemini_inputs": ["gemini_output_refusal", "gemini_parts_refusal"],
    "engine.providers.gemini_tool_schema": ["SchemaRefused", "gemini_schema"],
    "engine.providers.groq": ["Groq", "reasoning_refusal"],
    "engine.providers.groq_inputs": ["groq_output_refusal", "groq_parts_refusal"],
    "engine.providers.http": ["Exchanges", "Retried"],
    "engine.providers.prices": ["cost_of", "estimate"],
    "engine.providers.simulator": ["RecordedRequest", "Simulator"],
    "engine.providers.structured": ["ResponseSchema", "read_output"],
    "engine.providers.web": ["Fetched", "Outgoing", "checked_url", "send_web", "status_error", "web_outputs"],
    "engine.providers.wire": ["FINISHES", "Adapter", "HttpCall", "Refusal", "Reply", "Request", "ToolCall",
                              "ToolSpec", "WireError", "file_parts", "system_text", "valid_tool_name"],
}


__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())


__all__ = [
    "ANSWER_SECRET_ENV",
    "FINISHES",
    "PUBLIC_URL_ENV",
    "Adapter",
    "Answer",
    "AnswerLinkRefused",
    "Anthropic",
    "Exchanges",
    "Fetched",
    "Gemini",
    "Groq",
    "HttpCall",
    "Message",
    "Outgoing",
    "Part",
    "PartsError",
    "RecordedRequest",
    "Refusal",
    "Reply",
    "Request",
    "ResponseSchema",
    "Retried",
    "Sampling",
    "SchemaRefused",
    "Simulator",
    "ToolCall",
    "ToolSpec",
    "WireError",
    "answer_token",
    "ask",
    "checked_url",
    "claude_output_refusal",
    "claude_parts_refusal",
    "cost_of",
    "estimate",
    "file_parts",
    "gemini_output_refusal",
    "gemini_parts_refusal",
    "gemini_schema",
    "gemini_thinking_refusal",
    "groq_output_refusal",
    "groq_parts_refusal",
    "literal_url_refusal",
    "parts_of",
    "read_answer_token",
    "read_output",
    "reasoning_refusal",
    "sampling_version",
    "send_web",
    "status_error",
    "system_text",
    "thinking_refusal",
    "valid_tool_name",
    "web_outputs",
]
