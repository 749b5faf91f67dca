"""A registry tool of kind `knowledge:`: a knowledge base offered to the model, which calls it with a query.

`knowledge: policies` names a base the diagram or a registry file declares (the loader checks the name,
engine.compile.knowledge_tools); unless the entry writes its own `parameters`, they are KNOWLEDGE_PARAMETERS.
ToolDispatch searches the base as Retrieve does (blocks/_knowledge_tool.py) and gives the model `knowledge_answer`:
the passages numbered as the `cite` filter numbers them, and their sources.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.format.citations import cite

__all__ = ["KNOWLEDGE_PARAMETERS", "KNOWLEDGE_TOP_K", "knowledge_answer", "knowledge_parameters", "traced_passages"]

KNOWLEDGE_TOP_K = (5, 20)
"""Passages a call returns when the model gives no `top_k`, and the most it may ask for."""


def knowledge_parameters() -> dict[str, Any]:
    """A knowledge tool's arguments when its entry writes none: a query, and how many passages at most."""
    return {"type": "object", "properties": {
        "query": {"type": "string", "description": "what to look for in the documents, in the user's words"},
        "top_k": {"type": "integer", "minimum": 1, "maximum": KNOWLEDGE_TOP_K[1],
                  "description": f"passages to return at most (default {KNOWLEDGE_TOP_K[0]})"},
    }, "required": ["query"]}


KNOWLEDGE_PARAMETERS = knowledge_parameters()


def knowledge_answer(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the model reads: `passages`, the rows cited as `cite` cites them (`[1] text (source: refunds.md, line
    8)`), and `sources`, each passage's number, file, line or page and fused score."""
    sources = [{"n": number, "source": row.get("source"), **({"page": row["page"]} if row.get("page") else
                                                              {"line": row.get("line")}), "score": row.get("score")}
               for number, row in enumerate(rows, start=1)]
    return {"passages": cite(list(rows)) or "no passage matches the query", "sources": sources}


_SNIPPET = 240
"""Characters of a passage's text its trace keeps (the run view shows them; the whole text is the step's output)."""


def traced_passages(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Passages as `passages_retrieved` traces them: source, line, page, the three scores and the text's start."""
    traced = []
    for row in rows:
        text = " ".join(str(row.get("text", "")).split())
        traced.append({**{name: row.get(name) for name in ("source", "line", "page", "score", "lexical", "embedding")},
                       "text": text if len(text) <= _SNIPPET else text[:_SNIPPET - 1] + "…"})
    return traced
