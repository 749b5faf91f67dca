"""GroqChatRequest: one turn of Groq's OpenAI-compatible chat completions."""

from __future__ import annotations

from typing import ClassVar

from blocks._request import RequestBlock
from engine.providers import Adapter, Groq


class GroqChatRequest(RequestBlock):
    """Asks a model on Groq (OpenAI-compatible chat completions), with history and tools."""

    adapter: ClassVar[Adapter] = Groq()
