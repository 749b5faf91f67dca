"""A fake vendor server on loopback that plays a script of faults, byte by byte when it must.

One raw asyncio server (in its own thread and event loop) speaks HTTP/1.1 just well
enough for httpx: it reads a request, records it, and plays the next scripted *step*
for the test id in the path (`/t/<test-id>/v1/messages`, ...). A test points a request
block at `http://127.0.0.1:<port>/t/<test-id>` through the public base-URL variables, so
nothing inside the engine is touched. When a test's script runs out, its last step
repeats (a fault that never clears).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import struct
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BLOCK_TYPES",
    "ENV",
    "KEYS",
    "MODELS",
    "PATHS",
    "Drop",
    "FakeVendorServer",
    "Hit",
    "Oversized",
    "Reply",
    "Reset",
    "ShortBody",
    "SlowBody",
    "Stall",
    "Step",
    "Trickle",
    "error_body",
    "ok",
    "success_body",
]

VENDORS = ("anthropic", "groq", "gemini")
BLOCK_TYPES = {"anthropic": "ClaudeRequest", "groq": "GroqChatRequest", "gemini": "GeminiRequest"}
MODELS = {"anthropic": "claude-sonnet-5-5", "groq": "llama-3.3-70b-versatile", "gemini": "gemini-3.5-flash"}
ENV = {"anthropic": "ANTHROPIC_BASE_URL", "groq": "GROQ_BASE_URL", "gemini": "GEMINI_BASE_URL"}
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-reliability-key-0123456789",
        "GROQ_API_KEY": "gsk_reliability_key_0123456789",
        "GEMINI_API_KEY": "AIzaReliabilityKey0123456789"}

ANSWER = "Order 42 has shipped with DHL."
PATHS = {"anthropic": "/v1/messages", "groq": "/openai/v1/chat/completions",
         "gemini": f"/v1/models/{MODELS['gemini']}:generateContent"}
"""Where each block posts, under its base URL (docs/VENDORS.md)."""
_ROUTES = {
    "anthropic": re.compile(r"^/v1/messages$"),
    "groq": re.compile(r"^/openai/v1/chat/completions$"),
    "gemini": re.compile(r"^/v1(beta)?/models/[^/:]+:generateContent$"),
}


def success_body(vendor: str, text: str = ANSWER) -> dict[str, Any]:
    """A plain 200 answer in the vendor's wire format (docs/VENDORS.md)."""
    if vendor == "anthropic":
        return {"id": "msg_01Rel", "type": "message", "role": "assistant", "model": MODELS[vendor],
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 12, "output_tokens": 8}}
    if vendor == "groq":
        return {"id": "chatcmpl-rel", "object": "chat.completion", "created": 1764680402, "model": MODELS[vendor],
                "choices": [{"index": 0, "logprobs": None, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}}
    return {"candidates": [{"index": 0, "finishReason": "STOP",
                            "content": {"role": "model", "parts": [{"text": text}]}}],
            "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 8, "totalTokenCount": 20},
            "modelVersion": MODELS[vendor], "responseId": "relResp01"}


_ERRORS = {
    # status: (anthropic error.type, groq (type, code), gemini status)
    400: ("invalid_request_error", ("invalid_request_error", None), "INVALID_ARGUMENT"),
    429: ("rate_limit_error", ("tokens", "rate_limit_exceeded"), "RESOURCE_EXHAUSTED"),
    500: ("api_error", ("internal_server_error", None), "INTERNAL"),
    502: ("api_error", ("bad_gateway", None), "UNAVAILABLE"),
    503: ("overloaded_error", ("service_unavailable", None), "UNAVAILABLE"),
    529: ("overloaded_error", ("overloaded", None), "UNAVAILABLE"),
}


def error_body(vendor: str, status: int, message: str = "scripted failure", **extra: Any) -> dict[str, Any]:
    """The vendor's own error body for `status` (docs/VENDORS.md, each vendor's "Errors")."""
    anthropic_type, (groq_type, groq_code), gemini_status = _ERRORS[status]
    if vendor == "anthropic":
        return {"type": "error", "error": {"type": anthropic_type, "message": message}, "request_id": "req_rel"}
    if vendor == "groq":
        error: dict[str, Any] = {"message": message, "type": groq_type}
        if groq_code:
            error["code"] = groq_code
        return {"error": error}
    return {"error": {"code": status, "message": message, "status": gemini_status, **extra}}


def vendor_error_type(vendor: str, status: int) -> str:
    """What the vendor's error body names its error (the adapters quote it in messages)."""
    anthropic_type, (groq_type, groq_code), gemini_status = _ERRORS[status]
    return {"anthropic": anthropic_type, "groq": groq_code or groq_type, "gemini": gemini_status}[vendor]


# -- steps -----------------------------------------------------------------------------------------

_REASONS = {200: "OK", 302: "Found", 307: "Temporary Redirect", 400: "Bad Request", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 529: "Overloaded"}


def _head(status: int, headers: dict[str, str], length: int | None) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    merged = {"connection": "close", **{k.lower(): v for k, v in headers.items()}}
    if length is not None:
        merged["content-length"] = str(length)
    lines += [f"{k}: {v}" for k, v in merged.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _encode(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


async def _client_gone(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Wait up to `seconds`; True (early) when the client hangs up."""
    try:
        data = await asyncio.wait_for(reader.read(1), seconds)
    except TimeoutError:
        return False
    except (ConnectionError, asyncio.IncompleteReadError):
        return True
    return not data


def _abort_with_rst(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class Step:
    """One scripted answer to one request."""

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


@dataclass
class Reply(Step):
    """A whole response: status, body (object → JSON; bytes/str as they are), headers."""

    status: int
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    raw: bytes | None = None
    """Bytes sent instead of an HTTP response (then status, body and headers are unused)."""

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.raw is not None:
            writer.write(self.raw)
        else:
            data = _encode(self.body)
            writer.write(_head(self.status, {"content-type": self.content_type, **self.headers}, len(data)) + data)
        await writer.drain()


def ok(vendor: str) -> Reply:
    return Reply(200, success_body(vendor))


@dataclass
class Stall(Step):
    """Read the request, then say nothing at all (no status line) for `seconds`."""

    seconds: float = 30.0

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _client_gone(reader, self.seconds)


@dataclass
class SlowBody(Step):
    """Headers and the first bytes of a 200 body, then nothing for `seconds`."""

    vendor: str
    seconds: float = 30.0

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = _encode(success_body(self.vendor))
        writer.write(_head(200, {"content-type": "application/json"}, len(data)) + data[:10])
        await writer.drain()
        await _client_gone(reader, self.seconds)


@dataclass
class Trickle(Step):
    """A 200 whose body arrives one byte every `interval` seconds."""

    vendor: str
    interval: float = 0.2

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = _encode(success_body(self.vendor))
        writer.write(_head(200, {"content-type": "application/json"}, len(data)))
        await writer.drain()
        for index in range(len(data)):
            writer.write(data[index:index + 1])
            await writer.drain()
            if await _client_gone(reader, self.interval):
                return


@dataclass
class Reset(Step):
    """Headers and half the body of a 200, then a TCP reset (SO_LINGER 0)."""

    vendor: str

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = _encode(success_body(self.vendor))
        writer.write(_head(200, {"content-type": "application/json"}, len(data)) + data[: len(data) // 2])
        await writer.drain()
        await asyncio.sleep(0.05)  # let the half body reach the client before the reset
        _abort_with_rst(writer)


@dataclass
class ShortBody(Step):
    """A 200 whose content-length promises more than is sent before a clean close (FIN)."""

    vendor: str

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = _encode(success_body(self.vendor))
        writer.write(_head(200, {"content-type": "application/json"}, len(data)) + data[: len(data) // 2])
        await writer.drain()
        writer.close()


@dataclass
class Drop(Step):
    """Read the request and close the connection without a byte of response."""

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()


@dataclass
class Oversized(Step):
    """A 200 of `size` bytes sent in 1 MiB chunks: valid JSON (a huge unknown field) or not JSON."""

    vendor: str
    size: int = 20 * 1024 * 1024
    valid_json: bool = True

    def _data(self) -> bytes:
        if not self.valid_json:
            return b"<" * self.size
        body = success_body(self.vendor)
        skeleton = _encode({**body, "padding": ""})
        pad = max(0, self.size - len(skeleton))
        return _encode({**body, "padding": "x" * pad})

    async def play(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = self._data()
        writer.write(_head(200, {"content-type": "application/json"}, len(data)))
        chunk = 1024 * 1024
        for start in range(0, len(data), chunk):
            writer.write(data[start:start + chunk])
            await writer.drain()


# -- the server ------------------------------------------------------------------------------------


@dataclass
class Hit:
    """One request the server received."""

    test_id: str
    method: str
    path: str  # the path after /t/<test-id>
    host: str
    headers: dict[str, str]
    body: bytes
    vendor: str | None  # the vendor whose route the path matches, None for none
    at: float = 0.0  # time.time() when the request was read whole
    connected_at: float = 0.0  # time.time() when its connection was accepted

    def json(self) -> Any:
        return json.loads(self.body)


class FakeVendorServer:
    """Started once (per test module); each test scripts its own id."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-vendor", daemon=True)
        self._lock = threading.Lock()
        self._scripts: dict[str, list[Step]] = {}
        self._hits: dict[str, list[Hit]] = defaultdict(list)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.base_events.Server | None = None
        self.port = 0

    # lifecycle
    def start(self) -> FakeVendorServer:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        future.result(timeout=10)
        return self

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        async def shutdown() -> None:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            if self._server is not None:
                self._server.close()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    # scripting
    def base(self, test_id: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/t/{test_id}"

    def script(self, test_id: str, *steps: Step) -> None:
        with self._lock:
            self._scripts[test_id] = list(steps)
            self._hits.pop(test_id, None)

    def hits(self, test_id: str) -> list[Hit]:
        with self._lock:
            return list(self._hits.get(test_id, []))

    def _next_step(self, test_id: str) -> Step | None:
        with self._lock:
            steps = self._scripts.get(test_id)
            if not steps:
                return None
            return steps.pop(0) if len(steps) > 1 else steps[0]

    # serving
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve_one(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                if not writer.is_closing():
                    writer.close()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected_at = time.time()
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
        match = re.match(r"^/t/([^/]+)(/.*)?$", target.split("?", 1)[0])
        if match is None:
            await Reply(404, {"error": "no test id in the path"}).play(reader, writer)
            return
        test_id, path = match.group(1), match.group(2) or "/"
        vendor = next((name for name, route in _ROUTES.items() if route.match(path)), None)
        with self._lock:
            self._hits[test_id].append(Hit(test_id, method, path, headers.get("host", ""), headers, body, vendor,
                                          time.time(), connected_at))
        step = self._next_step(test_id) if vendor is not None and method == "POST" else None
        if step is None:
            await Reply(404, {"error": {"message": f"fake vendor: nothing scripted for {method} {target}"}}).play(
                reader, writer)
            return
        await step.play(reader, writer)
