"""A registry's `knowledge:` tool as ToolDispatch calls it: the diagram's knowledge base searched for the model's
`query` as Retrieve searches it (indexed at the first retrieval, off the event loop), traced as Retrieve traces it
(`passages_retrieved` at Debug, with the tool's name), and answered with the passages cited as the `cite` filter
numbers them and their sources (engine.tools.knowledge_tools). A scenario runs it for real, or stubs it like any tool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine import Event, MessageLevel, ToolError
from engine.tools import KNOWLEDGE_TOP_K, knowledge_answer, traced_passages

if TYPE_CHECKING:
    from engine import RunContext
    from engine.tools import Tool

__all__ = ["call_knowledge_tool"]


async def call_knowledge_tool(tool: Tool, arguments: Mapping[str, Any], context: RunContext) -> dict[str, Any]:
    """The passages of the tool's base for the (checked) arguments' `query`, `top_k` of them at most."""
    bases = context.diagram.knowledge
    base = bases.get(tool.entry.knowledge or "")
    if base is None:  # pragma: no cover - the loader refuses a knowledge tool whose base the diagram lacks
        raise ToolError(f"tool '{tool.name}': no knowledge base '{tool.entry.knowledge}'", type="unknown_knowledge")
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolError(f"tool '{tool.name}': give a query to search for", type="invalid_input")
    wanted = arguments.get("top_k")
    top_k = min(max(int(wanted), 1), KNOWLEDGE_TOP_K[1]) if isinstance(wanted, int | float) else KNOWLEDGE_TOP_K[0]
    if not base.ready:
        await asyncio.to_thread(base.loaded)  # the first retrieval indexes the folder: not on the event loop
    rows = [passage.row() for passage in base.retrieve(query, top_k)]
    if context.message_level >= MessageLevel.DEBUG:
        context.emit(Event.PASSAGES_RETRIEVED, knowledge=base.name, query=query, tool=tool.name,
                     passages=traced_passages(rows))
    return knowledge_answer(rows)
