"""Vendor HTTP: neutral requests, the three wire adapters, sending, the simulator."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.providers.anthropic import Anthropic, takes_temperature
from engine.providers.gemini import Gemini, gemini_schema
from engine.providers.groq import Groq
from engine.providers.http import MAX_RETRIES, Response, base_url, client_for, send
from engine.providers.simulator import BLOCK_HEADER, RecordedRequest, Simulator
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

if TYPE_CHECKING:
    from engine.runtime.context import Services

__all__ = [
    "BLOCK_HEADER",
    "MAX_RETRIES",
    "Adapter",
    "Anthropic",
    "Gemini",
    "Groq",
    "HttpCall",
    "RecordedRequest",
    "Reply",
    "Request",
    "Response",
    "Simulator",
    "ToolCall",
    "ToolSpec",
    "WireError",
    "base_url",
    "client_for",
    "gemini_schema",
    "send",
    "simulator_for",
    "system_text",
    "takes_temperature",
    "valid_tool_name",
]


def simulator_for(services: Services) -> Simulator:
    """The run's offline vendors (one per Services, created on first use)."""
    extras = services.extras
    simulator = extras.get("simulator")
    if not isinstance(simulator, Simulator):
        simulator = extras["simulator"] = Simulator()
    return simulator
