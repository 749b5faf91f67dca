"""Reading a recorded or simulated stream the way the request path does, without a socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from engine.providers import Anthropic, Gemini, Groq
from engine.providers.streaming import StreamReader
from engine.providers.wire import Adapter, Reply

ADAPTERS: dict[str, Adapter] = {"anthropic": Anthropic(), "groq": Groq(), "gemini": Gemini()}


def assembled(vendor: str, raw: bytes) -> tuple[dict[str, Any], list[str]]:
    """The body a stream assembles into, and the pieces of text it handed on, in order."""
    pieces: list[str] = []
    reader = StreamReader(ADAPTERS[vendor].assembler(), pieces.append, 1 << 30)

    async def lines() -> AsyncIterator[str]:
        for line in raw.decode().splitlines():
            yield line

    body = asyncio.run(reader.read(lines(), lambda: AssertionError("too large")))
    assert reader.pieces == len(pieces)
    return body, pieces


def streamed_reply(vendor: str, raw: bytes) -> tuple[Reply, list[str]]:
    body, pieces = assembled(vendor, raw)
    return ADAPTERS[vendor].parse(body), pieces
