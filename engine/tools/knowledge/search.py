"""Hybrid passage search: BM25 over the passages' stems and a dense embedding's cosine, fused into one score.

What a knowledge base's Retrieve step and retrieval tools call. Each passage gets three
numbers: `lexical` (BM25 over the passage's words as words.py reads them: stop words
dropped, stemmed in the passage's guessed language, accents folded; the request's words
looked up in every language, as for tools) on lexical.py's fixed scale: what the passage
gathers for the query's words over the most those words could give, in [0, 1];
`embedding` (the cosine of the query's and the passage's dense embeddings, WordLlama's by
default); and `score`, ranking.py's weighted `fuse` of the lexical score and the cosine
clipped at 0, in [0, 1], what `top_k` and `min_score` read.

The settings (`PassageRanking`: 0.6 × words + 0.4 × cosine, BM25's k1 0.9 and b 0.75)
were chosen on SciFact's training claims only (benchmarks/retrieval_quality.py --grid,
nDCG@10 0.879 against 0.857 for BM25 alone) and measured once on its validation claims.
Dividing the lexical score by the best passage's instead (`scale="best"`) and reciprocal-
rank fusion both ranked a little worse there, and a score relative to the best passage
would say nothing to `min_score`.

Searching is two array operations over the whole index: the BM25 posting lists of the
query's words added up (lexical.py's LexicalIndex) and one float32 matrix-vector product;
`among` (a metadata filter's survivors) picks from those before the best are sorted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from engine.tools.embeddings import Embedder, default_embedder
from engine.tools.lexical import Bm25f, LexicalIndex
from engine.tools.ranking import Ranking, fuse
from engine.tools.words import request_words, words

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Hit", "PassageIndex", "PassageRanking", "default_embedder"]


@dataclass(frozen=True, slots=True)
class Hit:
    """A passage found for a query: its position in the texts given and its scores."""

    index: int
    """The passage's position in the texts given."""
    score: float
    """The fused score, in [0, 1]: what top_k and min_score use."""
    lexical: float
    """The lexical (BM25) score, normalised to [0, 1] for this query (over the most its words could give)."""
    embedding: float
    """The dense cosine similarity, in [-1, 1]."""


@dataclass(frozen=True)
class PassageRanking:
    """How passages are scored (chosen on SciFact's training claims, benchmarks/retrieval_quality.py --grid)."""

    lexical_weight: float = 0.6
    """The fused score's share from words; the embedding's cosine has the rest."""
    fusion: Literal["sum", "rrf"] = "sum"
    scale: Literal["bound", "best"] = "bound"
    """The lexical score over the most the query's words could give (lexical.py's scale), or over the best passage's."""
    k1: float = 0.9
    b: float = 0.75

    def bm25(self) -> Bm25f:
        return Bm25f(weights={"description": 1.0}, lengths={"description": self.b}, k1=self.k1)

    def fusing(self) -> Ranking:
        return Ranking(lexical_weight=self.lexical_weight, fusion=self.fusion)


class PassageIndex:
    """Passages' BM25 posting lists and their embeddings, searched together.

    `vectors`: the texts' embeddings as a store keeps them (float32, one row per text, by
    `embedder`); None: embedded here. `ranking`'s k1 and b apply when the index is built,
    its fusion at each search (the benchmark's grid changes it on one index).
    """

    def __init__(self, texts: Sequence[str], embedder: Embedder, vectors: np.ndarray | None = None,
                 ranking: PassageRanking | None = None) -> None:
        import numpy as np

        self.embedder = embedder
        self.ranking = ranking = ranking or PassageRanking()
        self.size = len(texts)
        self._lexical = LexicalIndex([{"description": words(text)[0]} for text in texts], ranking.bm25())
        if vectors is None:
            vectors = embedder.embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != self.size:
            raise ValueError(f"{len(texts)} texts but vectors of shape {vectors.shape}")
        self._vectors = vectors

    @property
    def vectors(self) -> np.ndarray:
        """The texts' embeddings (float32, len(texts) x dimension): what a store keeps, to skip embedding again."""
        return self._vectors

    def search(self, query: str, top_k: int = 5, among: Sequence[int] | None = None) -> list[Hit]:
        """The best `top_k` passages for `query` (only those in `among`, when given), best first, ties by position."""
        import numpy as np

        if not self.size or top_k <= 0:
            return []
        lexical, embedding = self.parts(query)
        positions = np.arange(self.size) if among is None else np.unique(np.asarray(among, dtype=np.intp))
        lexical, embedding = lexical[positions], embedding[positions]
        best = float(lexical.max()) if len(positions) and self.ranking.scale == "best" else 0.0
        if best > 0:
            lexical = lexical / best
        fused = fuse(lexical, np.clip(embedding, 0.0, 1.0), self.ranking.fusing())
        kept = np.argpartition(-fused, top_k - 1)[:top_k] if top_k < len(positions) else np.arange(len(positions))
        kept = kept[np.lexsort((positions[kept], -fused[kept]))]
        return [Hit(int(positions[i]), float(fused[i]), float(lexical[i]), float(embedding[i])) for i in kept.tolist()]

    def parts(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every passage's raw lexical score (BM25 over its bound, lexical.py's scale) and cosine, as two arrays."""
        return self._lexical.scores(request_words(query)), self._vectors @ self.embedder.embed([query])[0]
