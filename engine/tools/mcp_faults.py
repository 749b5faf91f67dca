"""What an MCP server writes that is not JSON-RPC: the requests waiting on it fail at once, saying what it wrote.

A stray line on a stdio server's stdout, or a message nested too deeply to read, reaches the
SDK's session as an exception it only logs (with a traceback a line), while the request it
answered waits out its whole timeout. Here each such line fails the requests awaited meanwhile
with `McpFault` (the call becomes an `mcp_error` row naming what the server wrote), and the
SDK's logs of it are kept quiet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["OPEN_FAULTS", "Faults", "McpFault", "fault_line", "quiet_sdk_logs"]

_T = TypeVar("_T")


class Faults:
    """What a server wrote that is not JSON-RPC; each request awaited meanwhile fails with it at once."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._waiting: set[asyncio.Future[str]] = set()

    def add(self, line: str) -> None:
        self.lines.append(line)
        for waiter in self._waiting:
            if not waiter.done():
                waiter.set_result(line)

    async def unless_faulted(self, work: Coroutine[Any, Any, _T]) -> _T:
        """`work`'s result, or McpFault as soon as the server writes what is not JSON-RPC while it runs."""
        call = asyncio.ensure_future(work)
        fault: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting.add(fault)
        try:
            either: set[asyncio.Future[Any]] = {call, fault}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiting.discard(fault)
            if not call.done():
                call.cancel()
                with contextlib.suppress(BaseException):  # the cancelled request's own error says nothing more
                    await call
        if fault.done() and not (call.done() and not call.cancelled() and call.exception() is None):
            raise McpFault(fault.result())
        return call.result()


class McpFault(Exception):
    """A server wrote what is not a JSON-RPC message while a request waited for it."""


# Each open client's faults, by the client's id while it is open (a Client is not hashable).
OPEN_FAULTS: dict[int, Faults] = {}


def quiet_sdk_logs() -> None:
    """The SDK logs each unreadable line with a traceback (its loggers `mcp.*` and `client`); the error that fails the
    call says it once instead."""
    for name in ("mcp", "client"):
        logger = logging.getLogger(name)
        if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
            logger.addHandler(logging.NullHandler())
        logger.propagate = False


def fault_line(exc: Exception) -> str:
    """What a server wrote that is not a JSON-RPC message, in a line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic's ValidationError: the first reason, and the start of the line
        with contextlib.suppress(Exception):
            first = errors(include_url=False)[0]
            written = first.get("input")
            shown = f": {written[:60]!r}" if isinstance(written, str) else ""
            return f"the server wrote what is not a JSON-RPC message ({first.get('msg', 'unreadable')}{shown})"
    return f"the server wrote what is not a JSON-RPC message ({type(exc).__name__}: {str(exc)[:200]})"
