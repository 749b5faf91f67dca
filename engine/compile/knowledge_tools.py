"""A `knowledge:` registry tool checked against the knowledge bases its diagram has: a name nobody declares is a
load problem at the registry file's line (with "did you mean"), as is an entry's own `parameters` without a string
`query`. Searching is ToolDispatch's (blocks/_knowledge_tool.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.errors import Problem
from engine.format.names import suggest

if TYPE_CHECKING:
    from engine.tools.registry import ToolRegistry

__all__ = ["knowledge_tool_problems"]


def knowledge_tool_problems(tools: ToolRegistry, declared: Iterable[str]) -> list[Problem]:
    """A problem for each knowledge tool naming a base that is not in `declared` (the names the diagram and its
    registry files declare), or whose parameters give the model no `query` to send."""
    names = sorted(set(declared))
    problems: list[Problem] = []
    for tool in tools.tools.values():
        base = tool.entry.knowledge
        if base is None:
            continue
        if base not in names:
            hint = suggest(base, names) or (f"declared: {', '.join(names)}" if names else
                                            "declare it under `knowledge:` in the diagram or in this registry file")
            problems.append(Problem(tool.source, tool.handler_line, f"tool '{tool.name}': no knowledge base '{base}'",
                                    field="knowledge", hint=hint, code="unknown_knowledge"))
        query = (tool.entry.parameters.get("properties") or {}).get("query")
        if not isinstance(query, dict) or query.get("type") != "string":
            problems.append(Problem(tool.source, tool.line, f"tool '{tool.name}': a knowledge tool's parameters must "
                                    "have a string 'query'", field="parameters", code="invalid_tool",
                                    hint="leave parameters out: {query: string, top_k?: integer} is made for it"))
    return problems
