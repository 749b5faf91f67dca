"""Fake vendor servers for tests: functions behind httpx.MockTransport, and a loopback server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from engine import Services

PARALLEL_HISTORY = [
    {"role": "user", "content": "Where are my orders 42 and 57?", "tool_call_id": None, "name": None},
    {"role": "assistant", "content": "Let me look both orders up.", "tool_call_id": None, "name": None},
    {"role": "assistant", "content": '{"order_id": 42}', "tool_call_id": "ID1", "name": "get_order_status"},
    {"role": "assistant", "content": '{"order_id": 57}', "tool_call_id": "ID2", "name": "get_order_status"},
    {"role": "tool", "content": '{"status": "shipped", "carrier": "DHL"}', "tool_call_id": "ID1",
     "name": "get_order_status"},
    {"role": "tool", "content": '{"status": "packing", "ships": "2026-12-03"}', "tool_call_id": "ID2",
     "name": "get_order_status"},
]
ORDER_TOOL = {"name": "get_order_status", "description": "Returns the status and the carrier of an order.",
              "parameters": {"type": "object", "properties": {"order_id": {"type": "integer"}},
                             "required": ["order_id"]}}


@dataclass
class FakeVendor:
    """Answers each request with the next queued (status, body, headers); records what came."""

    replies: list[tuple[int, Any, dict[str, str]]] = field(default_factory=list)
    seen: list[httpx.Request] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    """The retry waits asked of the default sleep of `services()` (which returns at once)."""

    def reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> FakeVendor:
        self.replies.append((status, body, headers or {}))
        return self

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        status, body, headers = self.replies.pop(0)
        content = body if isinstance(body, bytes) else orjson.dumps(body)
        return httpx.Response(status, content=content, headers={"content-type": "application/json", **headers})

    def bodies(self) -> list[Any]:
        return [orjson.loads(r.content) for r in self.seen]

    def services(self, vendor: str, environ: dict[str, str] | None = None,
                 sleep: Callable[[float], Any] | None = None) -> Services:
        waits = self.waits

        async def no_sleep(seconds: float) -> None:
            waits.append(seconds)

        return Services(environ=environ if environ is not None else {"ANTHROPIC_API_KEY": "sk-ant-test-key-123456",
                                              "GROQ_API_KEY": "gsk_testkey123456", "GEMINI_API_KEY": "AIzaTestKey1234567890"},
                        sleep=sleep or no_sleep, transports={vendor: httpx.MockTransport(self.handler)})


@contextlib.asynccontextmanager
async def loopback_server(delay: float, body: bytes) -> AsyncIterator[str]:
    """A real HTTP server on 127.0.0.1 that waits `delay` seconds before answering."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length")), 0)
            await reader.readexactly(length)
            await asyncio.sleep(delay)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
