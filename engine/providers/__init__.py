"""Vendor HTTP: neutral requests, the three wire adapters, sending, the simulator.

`__all__` is the face request blocks use (blocks import nothing else from here):
the neutral types, one adapter per vendor, Anthropic's temperature rule, `ask` (the
run's request path) and the simulator. Sending, the client pool and the simulator's
checks are this package's own (`engine.providers.http`, `.clients`, `.simulator`).
"""

from __future__ import annotations

from engine.providers.anthropic import Anthropic, Refusal, Sampling, sampling_version
from engine.providers.ask import Answer, ask
from engine.providers.gemini import Gemini, gemini_schema
from engine.providers.groq import Groq
from engine.providers.http import Exchanges, Retried
from engine.providers.simulator import RecordedRequest, Simulator
from engine.providers.wire import (
    Adapter,
    HttpCall,
    Reply,
    Request,
    ToolCall,
    ToolSpec,
    WireError,
    system_text,
    valid_tool_name,
)

__all__ = [
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
    "sampling_version",
    "system_text",
    "valid_tool_name",
]
