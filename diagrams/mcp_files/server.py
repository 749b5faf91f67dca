"""An MCP server of the shop's policy notes, written with the MCP SDK's server API.

Run over stdio (`python server.py`, as diagrams/registry/files_mcp.yaml does) or over
streamable HTTP (`python server.py --http 8931`, then `url: http://127.0.0.1:8931/mcp`).
It reads only the notes folder beside it.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

NOTES = Path(__file__).resolve().parent / "notes"

server = MCPServer("files", instructions="The online shop's policy notes: returns, shipping, warranty.")


def _words(text: str) -> set[str]:
    plain = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    return {word for word in re.findall(r"[a-z0-9]+", plain) if len(word) > 3}


def _note(name: str) -> Path:
    path = (NOTES / f"{name}.md").resolve()
    if path.parent != NOTES or not path.is_file():
        raise ToolError(f"no note '{name}' (there are: {', '.join(list_notes())})")
    return path


@server.tool()
def list_notes() -> list[str]:
    """Lists the names of the shop's policy notes."""
    return sorted(path.stem for path in NOTES.glob("*.md"))


@server.tool()
def read_note(name: str) -> str:
    """Returns the whole text of one policy note, by its name (returns, shipping, warranty)."""
    return _note(name).read_text(encoding="utf-8")


@server.tool()
def search_notes(query: str) -> str:
    """Searches the shop's policy notes (returns, refunds, shipping, delivery, warranty) and returns the best match."""
    wanted = _words(query)
    scored = sorted(((len(wanted & _words(path.read_text(encoding="utf-8"))), path.stem) for path in NOTES.glob("*.md")),
                    reverse=True)
    if not scored or scored[0][0] == 0:
        raise ToolError(f"no note matches {query!r}")
    return _note(scored[0][1]).read_text(encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
