"""A real MCP server for the tests, on the SDK's server API: stdio by default, `--http PORT` for streamable HTTP."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("shop")


@server.tool()
def get_order_status(order_id: int) -> str:
    """Returns the status and the carrier of an order (where is my order)."""
    if order_id == 404:
        raise ToolError(f"order {order_id} does not exist")
    return f"order {order_id}: shipped with CTT"


@server.tool()
def order_totals(order_id: int) -> dict[str, float]:
    """Returns the totals of an order: goods, shipping and the sum."""
    return {"goods": 40.0 + order_id, "shipping": 4.5}


@server.tool()
def environment_value(name: str) -> str:
    """Returns one variable of the server's own environment."""
    return os.environ.get(name, "<unset>")


@server.tool()
def internal_admin(command: str) -> str:
    """An administrative tool the registry leaves out."""
    return command


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
