"""Retrieve: the passages of one of the diagram's knowledge bases that best answer a query, as a table.

`knowledge`, `query`, `top_k`, `min_score`, `filter` (metadata equality; a list: any of) → `result`, rows of
{text, source, line, page, score, lexical, embedding, metadata}, best first. The base is indexed at its first
retrieval in a process (only files changed since `diagrama index` are read again), off the event loop.
Debug traces each passage's scores (`passages_retrieved`); `{{ result | cite }}` numbers them for a prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from engine import Block, DataTable, Event, InputError, MessageLevel, Table
from engine.tools import traced_passages

if TYPE_CHECKING:
    from engine import RunContext  # annotations only: importing the run context loads asyncio

PASSAGE_COLUMNS = ("text", "source", "line", "page", "score", "lexical", "embedding", "metadata")


class RetrieveInputs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    knowledge: str = Field(min_length=1, description="the knowledge base to search: a name under the diagram's (or "
                                                     "its registries') `knowledge:`")
    query: str = Field(description="what to look for, e.g. '{{ question }}'")
    top_k: int = Field(default=5, ge=1, le=100, description="passages to return at most, best first")
    min_score: float = Field(default=0.0, ge=0, le=1, description="leave out passages scoring less (fused score, 0-1)")
    filter: dict[str, Any] = Field(default_factory=lambda: {}, description="metadata a passage must have: "
                                   "{field: value} (a list: any of them); `source` is the file's path in the folder")


class RetrieveOutputs(BaseModel):
    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    result: Table = Field(default_factory=lambda: DataTable(PASSAGE_COLUMNS),
                          description="passages, best first: text, source, line (or page), score, lexical, embedding, "
                                      "metadata")


class Retrieve(Block):
    """Finds the passages of a knowledge base that best match a query (words and meaning fused)."""

    Inputs = RetrieveInputs
    Outputs = RetrieveOutputs
    knowledge_input: ClassVar[str | None] = "knowledge"

    async def run(self, inputs: RetrieveInputs, context: RunContext) -> dict[str, Any]:
        bases = context.diagram.knowledge
        base = bases.get(inputs.knowledge)
        if base is None:
            known = ", ".join(sorted(bases)) or "none declared"
            raise InputError(f"no knowledge base '{inputs.knowledge}' (knowledge bases: {known})",
                             type="unknown_knowledge")
        if not base.ready:
            import asyncio  # loaded when a run retrieves: validate needs no event loop

            await asyncio.to_thread(base.loaded)  # the first retrieval indexes the folder: not on the event loop
        passages = base.retrieve(inputs.query, inputs.top_k, inputs.min_score, inputs.filter or None)
        rows = [passage.row() for passage in passages]
        if context.message_level >= MessageLevel.DEBUG:
            context.emit(Event.PASSAGES_RETRIEVED, knowledge=base.name, query=inputs.query,
                         passages=traced_passages(rows))
        return {"result": DataTable(PASSAGE_COLUMNS, [tuple(row[name] for name in PASSAGE_COLUMNS) for row in rows])}
