"""A registry's ranked selection: embeddings and words kept in its caches, the ranking built from them.

`prepare` embeds what the caches lack (new tools, raised versions, another embedded text) and
works out each tool's words (ranking.py's `tool_document`) once, storing both beside the
registry. The ranking (ranking.py's Ranker: the word index and the hub-corrected matrix) is
built from the caches at the first ranked selection: checking a diagram whose tools are all
cached needs neither numpy nor the vectors, and that first selection stems nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from engine.tools.ranking import DOCUMENT_FORM, EmbeddedText, Ranker, Ranking, ToolScore

if TYPE_CHECKING:
    import numpy as np

    from engine.tools.embeddings import Embedder, EmbeddingCache
    from engine.tools.registry import Tool

__all__ = ["RankedTools"]


class RankedTools:
    """A registry's enabled tools as they are ranked: their cached vectors and words, the Ranker, query vectors."""

    def __init__(self, embedder: Embedder, caches: list[EmbeddingCache], ranking: Ranking) -> None:
        self.embedder = embedder
        self._ranking = ranking
        self.embedded = 0
        """How many tools' embeddings were computed (not found in a cache)."""
        self._caches = caches
        self._tools: list[Tool] = []
        self.cache_for: dict[str, EmbeddingCache] = {}
        self._prepared: EmbeddedText | None = None
        self._ranker: Ranker | None = None
        self._by_name: np.ndarray | None = None
        self._groups: dict[str | None, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}

    @property
    def ranking(self) -> Ranking:
        return self._ranking

    @ranking.setter
    def ranking(self, ranking: Ranking) -> None:
        self._ranking, self._ranker = ranking, None  # rebuilt at the next ranked selection

    def prepare(self, enabled: list[Tool], cache_for: Mapping[str, EmbeddingCache]) -> None:
        """Embed what the caches lack and work out the words they lack; store both back."""
        embedder, embedded = self.embedder.name, self._ranking.embedded
        missing = [t for t in enabled if not cache_for[t.source].has(t.embedding_key(embedder), embedded)]
        if missing:
            computed = self.embedder.embed([t.embedding_text(embedded) for t in missing])
            self.embedded += len(missing)
            for tool, vector in zip(missing, computed, strict=True):
                cache_for[tool.source].put(
                    tool.embedding_key(embedder), vector,
                    {"description": tool.entry.description, "short_description": tool.entry.short_description,
                     "group": tool.entry.group, "text": tool.embedding_text(embedded), "embedded": embedded},
                )
        for tool in enabled:
            cache, key = cache_for[tool.source], tool.embedding_key(embedder)
            if cache.document(key, DOCUMENT_FORM) is None:
                cache.put_document(key, tool.document(), DOCUMENT_FORM)
        for cache in self._caches:
            cache.save()
        self._tools, self.cache_for, self._prepared, self._ranker = list(enabled), dict(cache_for), embedded, None

    def ranker(self) -> Ranker:
        """The enabled tools' ranking: their cached vectors, their cached words indexed, hubs corrected."""
        if self._ranking.embedded != self._prepared:
            self.prepare(self._tools, self.cache_for)  # the ranking was changed after loading: embed the text it names
        if self._ranker is None:
            import numpy as np  # loaded when a run ranks tools, not when a diagram is checked

            vectors, documents = [], []
            for tool in self._tools:
                cache, key = self.cache_for[tool.source], tool.embedding_key(self.embedder.name)
                vector, document = cache.vector_bytes(key), cache.document(key, DOCUMENT_FORM)
                assert vector is not None and document is not None, f"prepare() stored {tool.name}'s vector and words"
                vectors.append(np.frombuffer(vector, dtype=np.float32))
                documents.append(document)
            matrix = np.vstack(vectors) if vectors else np.zeros((0, 1), dtype=np.float32)
            self._ranker = Ranker(documents, matrix, self._ranking, getattr(self.embedder, "blocks", ()))
            # Ties are broken by name: positions in name order, sorted stably by score.
            self._by_name = np.array(sorted(range(len(self._tools)), key=lambda i: self._tools[i].name), dtype=np.intp)
            self._groups = {}
        return self._ranker

    def _query_vector(self, query: str) -> np.ndarray:
        vector = self._queries.get(query)
        if vector is None:
            vector = self.embedder.embed([query])[0]
            if len(self._queries) > 4096:
                self._queries.clear()
            self._queries[query] = vector
        return vector

    def _in_group(self, group: str | None) -> np.ndarray:
        """The positions of a group's enabled tools (all of them for None), in name order."""
        positions = self._groups.get(group)
        if positions is None:
            import numpy as np

            assert self._by_name is not None
            positions = np.asarray([i for i in self._by_name.tolist()
                                    if group is None or self._tools[i].entry.group == group], dtype=np.intp)
            self._groups[group] = positions
        return positions

    def select(self, group: str | None, query: str, top_k: int | None,
               min_score: float | None) -> list[tuple[Tool, ToolScore | None]]:
        """The enabled tools of `group` (all for None), best match for `query` first (ties by name), with scores."""
        import numpy as np

        ranker = self.ranker()
        if not self._tools:
            return []
        fused, lexical, embedding = ranker.scores(query, self._query_vector(query))
        positions = self._in_group(group)
        if min_score is not None:
            positions = positions[fused[positions] >= min_score]
        order = positions[np.argsort(-fused[positions], kind="stable")]
        if top_k:
            order = order[:top_k]
        return [(self._tools[i], ToolScore(round(float(fused[i]), 6), round(float(lexical[i]), 6),
                                           round(float(embedding[i]), 6))) for i in order.tolist()]
