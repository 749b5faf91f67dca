"""MCP servers as tool sources, the client's side: their tools listed, and the sessions that call them.

A server's tools are listed when its registry loads (they make the tools table, the
embeddings and the argument checks), through a short-lived session bounded by the server's
`timeout` and cached per process by its configuration. Calls go through the run's own
session per server (a batch's, when it shares one), opened on first use, closed at the end.
The `mcp` SDK (the `mcp` extra) is imported here only, and only when a server is used.

A server that writes what is not JSON-RPC fails the requests in flight at once (engine.tools.mcp_faults).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import hashlib
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from engine.errors import ToolError
from engine.tools.mcp_faults import OPEN_FAULTS, Faults, McpFault, fault_line, quiet_sdk_logs
from engine.tools.mcp_servers import McpServer

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult

__all__ = ["McpSessions", "McpToolInfo", "McpUnavailable", "list_server_tools", "mcp_handler", "run_sessions"]

@dataclass(frozen=True)
class McpToolInfo:
    """What a server says of one tool: name, description, input schema."""

    name: str
    description: str
    title: str
    input_schema: dict[str, Any]

    @property
    def fingerprint(self) -> str:
        """A hash of the description and schema: it stands for `version` in the embedding cache's key."""
        text = orjson.dumps([self.description, self.input_schema], option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(text).hexdigest()[:16]


class McpUnavailable(Exception):
    """A server could not be started, reached or listed; the message says why, without its environment."""


def _interpreter(command: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The executable and its arguments; `python` is this interpreter, so a server runs with diagrama's packages."""
    first, rest = command[0], command[1:]
    if first in ("python", "python3"):
        return sys.executable, rest
    return first, rest


@contextlib.asynccontextmanager
async def _client(server: McpServer) -> AsyncIterator[Client]:
    """A connected, initialised client for `server`; a failure to start or connect is McpUnavailable."""
    try:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
    except ImportError as exc:
        raise McpUnavailable("MCP servers need the mcp extra: pip install 'diagrama[mcp]'") from exc
    quiet_sdk_logs()
    faults = Faults()

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):  # a line the transport could not read as JSON-RPC
            faults.add(fault_line(message))

    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        if server.command is not None:
            executable, arguments = _interpreter(server.command)
            parameters = StdioServerParameters(command=executable, args=list(arguments), env=dict(server.env) or None,
                                               cwd=server.cwd)
            client = Client(stdio_client(parameters, errlog=errlog), read_timeout_seconds=server.timeout,
                            message_handler=on_message)
        else:
            assert server.url is not None
            client = Client(server.url, read_timeout_seconds=server.timeout, message_handler=on_message)
        try:
            async with asyncio.timeout(server.timeout):  # not wait_for: the SDK's task groups must stay in this task
                entered = await client.__aenter__()
        except Exception as exc:
            reason = faults.lines[0] if faults.lines else _reason(exc, errlog, server.timeout)
            raise McpUnavailable(server.scrub(reason)) from exc
        try:
            OPEN_FAULTS[id(entered)] = faults
            yield entered
        finally:
            OPEN_FAULTS.pop(id(entered), None)
            await client.__aexit__(None, None, None)


def _reason(exc: BaseException, errlog: Any, timeout: float) -> str:
    """Why a connection failed, in a line or two: the error, and the last lines the server wrote to stderr."""
    if isinstance(exc, TimeoutError):
        text = f"no answer within {timeout:g} s"
    elif isinstance(exc, BaseExceptionGroup):
        text = "; ".join(_reason(inner, None, timeout) for inner in exc.exceptions)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if errlog is not None:
        with contextlib.suppress(OSError, ValueError):
            errlog.seek(0)
            lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
            if lines:
                text += f" (its stderr ends: {' / '.join(lines[-3:])[:400]})"
    return text


async def _list(server: McpServer, deliver: Callable[[list[McpToolInfo]], object]) -> None:
    """Lists the server's tools and hands them to `deliver` before the session closes (the server's stop)."""
    async with _client(server) as client:
        found: list[McpToolInfo] = []
        cursor: str | None = None
        for _ in range(100):  # pages; a server whose cursor never ends cannot hold the load
            try:
                async with asyncio.timeout(server.timeout):
                    page = await OPEN_FAULTS[id(client)].unless_faulted(client.list_tools(cursor=cursor))
            except Exception as exc:
                reason = str(exc) if isinstance(exc, McpFault) else _reason(exc, None, server.timeout)
                raise McpUnavailable(server.scrub(f"listing its tools failed: {reason}")) from exc
            found += [McpToolInfo(tool.name, tool.description or "", tool.title or "",
                                  dict(tool.input_schema or {"type": "object", "properties": {}}))
                      for tool in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        deliver(found)


_listed: dict[McpServer, tuple[McpToolInfo, ...]] = {}
_listed_lock = threading.Lock()


def _listed_in_own_loop(server: McpServer) -> list[McpToolInfo]:
    """The listing, on an event loop of its own in a thread (a registry may load inside a running loop: the studio).

    It is handed back as soon as it is read: stopping the server (its stdin closed, then as long as it takes to
    exit, up to the SDK's bound of 2 s and a kill) goes on in that thread, beside the rest of the load. The thread
    is not a daemon, so the process does not exit before its server is stopped.
    """
    listing: concurrent.futures.Future[list[McpToolInfo]] = concurrent.futures.Future()

    async def work() -> None:
        try:
            await _list(server, listing.set_result)
        except BaseException as exc:  # handed to the caller's thread; once the listing is, a failed stop is the SDK's
            if not listing.done():
                listing.set_exception(exc)

    threading.Thread(target=asyncio.run, args=(work(),), name=f"diagrama-mcp-list:{server.name}").start()
    return listing.result()


def list_server_tools(server: McpServer, *, fresh: bool = False) -> tuple[McpToolInfo, ...]:
    """The tools `server` offers, from a short-lived session; cached per process unless `fresh`.

    McpUnavailable when the server cannot be started, reached or listed within its timeout.
    """
    with _listed_lock:
        known = None if fresh else _listed.get(server)
    if known is not None:
        return known
    try:
        tools = tuple(_listed_in_own_loop(server))
    except McpUnavailable:
        raise
    except Exception as exc:
        raise McpUnavailable(server.scrub(_reason(exc, None, server.timeout))) from exc
    with _listed_lock:
        _listed[server] = tools
    return tools


# -- the sessions of a run -------------------------------------------------------------------------


class _Session:
    """One open client, owned by a task of its own: the SDK's task groups must be left by the task that entered them."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.client: Client | None = None
        self.failure: McpUnavailable | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._own(), name=f"diagrama-mcp:{server.name}")

    async def _own(self) -> None:
        try:
            async with _client(self.server) as client:
                self.client = client
                self._ready.set()
                await self._closing.wait()
        except McpUnavailable as exc:
            self.failure = exc
        except Exception as exc:  # the connection broke while open: the next call opens a new one
            self.failure = McpUnavailable(self.server.scrub(_reason(exc, None, self.server.timeout)))
        finally:
            self.client = None
            self._ready.set()

    async def ready(self) -> Client:
        await self._ready.wait()
        if self.client is None:
            raise self.failure or McpUnavailable("the session closed")
        return self.client

    @property
    def alive(self) -> bool:
        return not self._task.done()

    async def close(self) -> None:
        self._closing.set()
        # Bounded: a server that does not stop is left to the SDK's own kill of its process.
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self._task), self.server.timeout)


class McpSessions:
    """One client session per server, opened on first use; a run's own, or a batch's shared by its runs.

    Sessions belong to the event loop that opened them: used from another loop (a Celery task's
    own `asyncio.run`), the pool starts afresh, and the old loop's close ended the old ones.
    """

    def __init__(self) -> None:
        self._sessions: dict[McpServer, _Session] = {}
        self._locks: dict[McpServer, asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.opened = 0

    async def client(self, server: McpServer) -> Client:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._sessions, self._locks, self._loop = {}, {}, loop
        lock = self._locks.setdefault(server, asyncio.Lock())
        async with lock:
            session = self._sessions.get(server)
            if session is None or not session.alive:
                session = self._sessions[server] = _Session(server)
                self.opened += 1
        return await session.ready()

    async def aclose(self) -> None:
        """Close every session (shielded: a cancelled run still stops its servers)."""
        sessions, self._sessions = list(self._sessions.values()), {}
        if sessions and self._loop is asyncio.get_running_loop():
            await asyncio.shield(asyncio.gather(*(session.close() for session in sessions)))


_current: contextvars.ContextVar[McpSessions | None] = contextvars.ContextVar("diagrama_mcp_sessions", default=None)


@contextlib.asynccontextmanager
async def run_sessions(shared: McpSessions | None = None) -> AsyncIterator[McpSessions]:
    """Within a run: its MCP calls go through `shared` (a batch's pool), else a pool of its own closed at its end."""
    pool = shared if shared is not None else McpSessions()
    token = _current.set(pool)
    try:
        yield pool
    finally:
        _current.reset(token)
        if shared is None:
            await pool.aclose()


# -- a call ------------------------------------------------------------------------------------------


def _content(result: CallToolResult) -> Any:
    """A result's content for the tool row: structured content, else its text parts (other parts named)."""
    parts: list[str] = []
    for part in result.content:
        kind = getattr(part, "type", "")
        if kind == "text":
            parts.append(str(getattr(part, "text", "")))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(part, 'mime_type', '') or ''}]".replace(" ]", "]"))
        elif kind in ("resource", "resource_link"):
            resource = getattr(part, "resource", None)
            text = getattr(resource, "text", None)
            parts.append(str(text) if text is not None else f"[{kind} {getattr(part, 'uri', '') or getattr(resource, 'uri', '')}]")
        else:
            parts.append(f"[{kind}]")
    text = "\n".join(parts)
    structured = result.structured_content
    # The SDK wraps a plain return value as {"result": value} beside the same value as text: the text says it.
    if structured is not None and not (set(structured) == {"result"} and str(structured["result"]) == text):
        return structured
    return text


async def _call(server: McpServer, tool: str, arguments: Mapping[str, Any]) -> Any:
    pool = _current.get()
    began = time.perf_counter()
    client: Client | None = None
    try:
        if pool is None:  # outside a run (a direct call): a session for this call alone
            async with _client(server) as client:
                result = await OPEN_FAULTS[id(client)].unless_faulted(
                    client.call_tool(tool, dict(arguments), read_timeout_seconds=server.timeout))
        else:
            client = await pool.client(server)
            faults = OPEN_FAULTS.get(id(client))
            called = client.call_tool(tool, dict(arguments), read_timeout_seconds=server.timeout)
            result = await (faults.unless_faulted(called) if faults is not None else called)
    except McpUnavailable as exc:
        raise ToolError(f"MCP server '{server.name}' ({server.where}) could not be started: {exc}",
                        type="mcp_server_failed") from exc
    except ToolError:
        raise
    except Exception as exc:  # the protocol's errors (MCPError, a broken connection, a timeout): data for the model
        reason = str(exc) if isinstance(exc, McpFault) else _reason(exc, None, max(server.timeout, time.perf_counter() - began))
        raise ToolError(f"tool '{tool}' of MCP server '{server.name}' failed: {server.scrub(reason)}",
                        type="mcp_error") from exc
    if result.is_error:
        text = _content(result)
        message = text if isinstance(text, str) else orjson.dumps(text).decode()
        raise ToolError(f"tool '{tool}' failed: {server.scrub(message) or 'the server gave no reason'}",
                        type="tool_failed")
    content = _content(result)
    return server.scrub(content) if isinstance(content, str) else content


def mcp_handler(server: McpServer, tool: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    """An async handler for ToolDispatch: the call goes through the run's session with `server`."""

    async def call(**arguments: Any) -> Any:
        return await _call(server, tool, arguments)

    call.__name__ = f"mcp_{server.name}_{tool}".replace("-", "_")
    call.__qualname__ = call.__name__
    return call
