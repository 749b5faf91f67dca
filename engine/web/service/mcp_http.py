"""`/mcp` under `diagrama api`: the robots' MCP server (engine.web.service.mcp_robots) over the SDK's streamable HTTP
transport, an ASGI app inside the API's, so the same Gate (bearer keys, rate limits) and request log stand in front
of it. The SDK's session manager runs for the server's lifespan (`running`).

A transport session (`Mcp-Session-Id`, the handshake era's) belongs to the key that opened it: another key's request
for it is answered as for no session (404), as another key's run is. Which runs a call may see and answer is the
key's tenancy, checked per call.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from engine.web.service.mcp_robots import RobotsMcp

if TYPE_CHECKING:
    from engine.web.service.app import RobotsApi

__all__ = ["MCP_PATH", "McpEndpoint"]

MCP_PATH = "/mcp"
_SESSION_HEADER = b"mcp-session-id"
_KEPT_SESSIONS = 10_000
"""Sessions whose key is remembered (the SDK's own default limit of open sessions)."""


class McpEndpoint:
    """The ASGI app served at MCP_PATH."""

    def __init__(self, api: RobotsApi) -> None:
        self.robots = RobotsMcp(api)
        self.manager = StreamableHTTPSessionManager(app=self.robots.server, max_sessions=_KEPT_SESSIONS)
        self._owners: OrderedDict[str, str | None] = OrderedDict()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager, for the server's lifespan."""
        async with self.manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key_id = scope.get("state", {}).get("key_id")
        session = next((value.decode("latin-1") for name, value in scope["headers"] if name == _SESSION_HEADER), None)
        if session is not None and session in self._owners and self._owners[session] != key_id:
            await JSONResponse({"jsonrpc": "2.0", "id": None,
                                "error": {"code": -32600, "message": "Session not found"}}, 404)(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                opened = next((value.decode("latin-1") for name, value in message.get("headers", [])
                               if name.lower() == _SESSION_HEADER), None)
                if opened is not None and opened not in self._owners:
                    self._owners[opened] = key_id
                    if len(self._owners) > _KEPT_SESSIONS:
                        self._owners.popitem(last=False)
            await send(message)

        await self.manager.handle_request(scope, receive, sending)
