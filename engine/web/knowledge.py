"""The studio's knowledge endpoints, for the Knowledge tab's retrieval test (as Dify's): a diagram's knowledge bases
(folder, files, chunks, when indexed), a query searched as its Retrieve block searches (engine.tools.knowledge), and
a re-index.

The bases are the diagram's as it compiles now (its own `knowledge:` and its registry files'), so their folders are
confined as a run's are (inside the diagram's folder or a data root). Each base is kept per folder and settings
between requests: it is indexed at its first search in the studio's process, as a run's is, and again only when
asked (`POST …/index`, a route that writes: refused under --read-only). Listing opens no index that is not there.
Answers' models are here, beside the routes (engine.web.api_schema joins them into the page's types).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import Response

from engine.web.files import FolderError
from engine.web.http import answer, json_body
from engine.web.models import Answer
from engine.web.view import compile_text

if TYPE_CHECKING:
    from engine.tools.knowledge.index import KnowledgeBase
    from engine.web.app import Studio

__all__ = ["KnowledgeIndexed", "KnowledgeListed", "KnowledgeRoutes", "KnowledgeSearch", "PassageFound"]

_MAX_QUERY = 2000
_MAX_TOP_K = 50


class KnowledgeListed(Answer):
    """A knowledge base as the Knowledge tab lists it: `folder` relative to the studio's folder (its name alone when
    it lies in a data root); `indexed`: when its SQLite index was last written (seconds since the epoch), None when
    it has none yet or lives in PostgreSQL."""

    name: str
    folder: str
    declared_in: str
    include: list[str]
    chunk_size: int
    chunk_overlap: int
    files: int = Field(description="the files it includes now")
    chunks: int = Field(description="the passages its index holds")
    indexed: float | None


class PassageFound(Answer):
    """A passage as Retrieve's `result` gives it: its text, file, line or page, and scores."""

    text: str
    source: str
    line: int | None
    page: int | None
    score: float = Field(description="the fused score, 0 to 1: what top_k and min_score read")
    lexical: float = Field(description="the words' (BM25) score, 0 to 1")
    embedding: float = Field(description="the dense embedding's cosine, -1 to 1")
    metadata: dict[str, Any]


class KnowledgeSearch(Answer):
    """`POST /api/diagrams/{path}/knowledge/{name}/search` {query, top_k}: the passages, best first."""

    knowledge: str
    query: str
    passages: list[PassageFound]
    took_ms: float = Field(description="the search's time, indexing at first use included")


class KnowledgeIndexed(Answer):
    """`POST /api/diagrams/{path}/knowledge/{name}/index`: what the refresh did (`diagrama index`'s line)."""

    knowledge: str
    files: int
    added: int
    changed: int
    removed: int
    unchanged: int
    chunks: int
    embedded: int
    seconds: float
    failed: list[str] = Field(description="files that could not be read, each `source: why`")


class KnowledgeRoutes:
    def __init__(self, studio: Studio) -> None:
        self.studio = studio
        self.folder = studio.folder
        self._bases: dict[tuple[str, str], KnowledgeBase] = {}

    async def _declared(self, request: Request) -> dict[str, KnowledgeBase]:
        """The diagram's knowledge bases as it compiles now; 422 when it does not compile."""
        path = self.folder.diagram(request.path_params["path"])
        text = self.folder.read(path)
        studio = self.studio
        found = await studio.compilations.run(path, text, lambda: compile_text(text, path, studio.registry,
                                                                               self.folder.data_roots))
        diagram = found[0] if found is not None else None
        if diagram is None:
            raise FolderError(422, "the diagram has problems: its knowledge bases are searched once it loads")
        return {name: self._kept(base) for name, base in diagram.knowledge.items()}

    def _kept(self, base: KnowledgeBase) -> KnowledgeBase:
        """The base this process already has for the same name, folder and settings (indexed and loaded once)."""
        key = (base.name, f"{base.folder}|{base.spec.model_dump_json()}")
        return self._bases.setdefault(key, base)

    async def _base(self, request: Request) -> KnowledgeBase:
        bases = await self._declared(request)
        name = request.path_params["name"]
        base = bases.get(name)
        if base is None:
            raise FolderError(404, f"no knowledge base '{name}' (knowledge bases: {', '.join(sorted(bases)) or 'none'})")
        return base

    def _listed(self, base: KnowledgeBase) -> KnowledgeListed:
        from engine.tools.knowledge.store import INDEX_FILE, index_url

        url, _ = index_url(base.folder, base.environ)
        index = base.folder / INDEX_FILE
        sqlite = url.startswith("sqlite")
        chunks = base.store().count() if not sqlite or index.is_file() else 0  # listing makes no index file
        return KnowledgeListed(name=base.name, folder=self.folder.relative(base.folder),
                               declared_in=self.folder.relative(Path(base.declared_in).resolve()), include=base.spec.include,
                               chunk_size=base.spec.chunk.size, chunk_overlap=base.spec.chunk.overlap,
                               files=len(base.documents()), chunks=chunks,
                               indexed=index.stat().st_mtime if sqlite and index.is_file() else None)

    async def listing(self, request: Request) -> Response:
        bases = await self._declared(request)
        return answer(await asyncio.to_thread(lambda: [self._listed(base) for _, base in sorted(bases.items())]))

    async def search(self, request: Request) -> Response:
        base = await self._base(request)
        payload = await json_body(request)
        query, top_k = payload.get("query"), payload.get("top_k", 5)
        if not isinstance(query, str) or not query.strip() or len(query) > _MAX_QUERY:
            raise FolderError(422, f"send {{\"query\": what to look for (at most {_MAX_QUERY} characters), "
                                   f"\"top_k\": 1 to {_MAX_TOP_K}}}")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= _MAX_TOP_K:
            raise FolderError(422, f"top_k is a whole number from 1 to {_MAX_TOP_K}")
        began = time.perf_counter()
        passages = await asyncio.to_thread(base.retrieve, query, top_k)  # the first search indexes: off the loop
        took = round((time.perf_counter() - began) * 1000, 3)
        return answer(KnowledgeSearch(knowledge=base.name, query=query, took_ms=took,
                                      passages=[PassageFound.model_validate(p.row()) for p in passages]))

    async def index(self, request: Request) -> Response:
        base = await self._base(request)
        report = await asyncio.to_thread(base.refresh)
        return answer(KnowledgeIndexed(knowledge=base.name, files=report.files, added=report.added,
                                       changed=report.changed, removed=report.removed, unchanged=report.unchanged,
                                       chunks=report.chunks, embedded=report.embedded,
                                       seconds=round(report.seconds, 3),
                                       failed=[f"{source}: {why}" for source, why in report.failed]))
