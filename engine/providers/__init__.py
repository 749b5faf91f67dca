"""Vendor HTTP: neutral requests, the three wire adapters, sending, the simulator.

`__all__` is the face request blocks use (blocks import nothing else from here):
the neutral types, one adapter per vendor, Anthropic's temperature rule, each vendor's
thinking / reasoning_effort rule, `ask` (the run's request path) and the simulator. Sending, the client pool and the simulator's
checks are this package's own (`engine.providers.http`, `.clients`, `.simulator`).
"""

from __future__ import annotations

from engine.providers.anthropic import Anthropic, Sampling, sampling_version, thinking_refusal
from engine.providers.ask import Answer, ask
from engine.providers.gemini import Gemini, gemini_schema, gemini_thinking_refusal
from engine.providers.groq import Groq, reasoning_refusal
from engine.providers.http import Exchanges, Retried
from engine.providers.simulator import RecordedRequest, Simulator
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
    system_text,
    valid_tool_name,
)

__all__ = [
    "FINISHES",
    "Adapter",
    "Answer",
    "Anthropic",
    "Exchanges",
    "Gemini",
    "Groq",
    "HttpCall",
    "RecordedRequest",
    "Refusal",
    "Reply",
    "Request",
    "Retried",
    "Sampling",
    "Simulator",
    "ToolCall",
    "ToolSpec",
    "WireError",
    "ask",
    "gemini_schema",
    "gemini_thinking_refusal",
    "reasoning_refusal",
    "sampling_version",
    "system_text",
    "thinking_refusal",
    "valid_tool_name",
]
