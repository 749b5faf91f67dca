"""BM25F over a registry's tools: each tool's name, description, examples, rules and parameters as weighted fields.

Written here rather than taken from a BM25 library: the ones kept on PyPI (bm25s, rank-bm25)
score one text per document, and a tool's name says more per word than its description —
field weights are the point. The index is a dictionary of posting lists (tool indices and
their precomputed weights), so a request costs one lookup and one add per word.

Scores are on a fixed scale: the weights a tool gathers for the request's words divided by
the most those words could give (each word's idf × (k1 + 1), BM25's bound), so in [0, 1]
without clipping, and the order stays BM25F's. A request word found once in a tool's
description gives about half its share, found in its name, description and examples
together about 0.85; a word no tool has still counts in the denominator, as much as a word
only one tool has.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["FIELDS", "Bm25f", "LexicalIndex"]

FIELDS = ("name", "description", "examples", "rules", "parameters")


@dataclass(frozen=True)
class Bm25f:
    """BM25F's settings: a weight and a length normalisation per field, one saturation."""

    # Chosen on benchmarks/tool_selection_quality.py's tuning part (BFCL and ToolLens): a name
    # word counts twice a description word; parameter names and descriptions count a little less.
    weights: Mapping[str, float] = field(default_factory=lambda: {
        "name": 2.0, "description": 1.0, "examples": 1.0, "rules": 0.3, "parameters": 0.8})
    lengths: Mapping[str, float] = field(default_factory=lambda: {
        "name": 0.75, "description": 0.75, "examples": 0.75, "rules": 0.75, "parameters": 0.75})
    k1: float = 0.9


class LexicalIndex:
    """Posting lists of the tools' stems, weighted by BM25F; `scores` ranks every tool for a request's words."""

    def __init__(self, documents: Sequence[Mapping[str, Sequence[str]]], settings: Bm25f | None = None) -> None:
        import numpy as np

        self.settings = settings = settings or Bm25f()
        self.size = len(documents)
        average = {name: (sum(len(d.get(name, ())) for d in documents) / self.size if self.size else 0.0) or 1.0
                   for name in FIELDS}
        pseudo: dict[str, dict[int, float]] = {}  # term → tool → BM25F's weighted, length-normalised frequency
        for index, document in enumerate(documents):
            for name in FIELDS:
                terms = document.get(name, ())
                weight = settings.weights.get(name, 0.0)
                if not terms or not weight:
                    continue
                b = settings.lengths.get(name, 0.75)
                norm = weight / (1 - b + b * len(terms) / average[name])
                for term, count in Counter(terms).items():
                    per_tool = pseudo.setdefault(term, {})
                    per_tool[index] = per_tool.get(index, 0.0) + count * norm
        k1 = settings.k1
        self.unknown_idf = self._idf(1)  # as rare as a word one tool has: the scale then hardly depends on size
        self.idf: dict[str, float] = {}
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, per_tool in pseudo.items():
            idf = self._idf(len(per_tool))
            tools = np.fromiter(per_tool, dtype=np.intp, count=len(per_tool))
            frequency = np.fromiter(per_tool.values(), dtype=np.float32, count=len(per_tool))
            self.idf[term] = idf
            self.postings[term] = (tools, (idf * frequency * (k1 + 1) / (frequency + k1)).astype(np.float32))

    def _idf(self, df: int) -> float:
        return math.log(1 + (self.size - df + 0.5) / (df + 0.5))

    def scores(self, request: Sequence[Sequence[str]]) -> np.ndarray:
        """Each tool's score in [0, 1] for a request's words (each given as its forms, best first)."""
        import numpy as np

        total = np.zeros(self.size, dtype=np.float32)
        most = 0.0
        for forms in request:
            term = next((form for form in forms if form in self.postings), None)
            if term is None:
                most += self.unknown_idf * (self.settings.k1 + 1)
                continue
            tools, weights = self.postings[term]
            total[tools] += weights
            most += self.idf[term] * (self.settings.k1 + 1)
        if most:
            total /= most
        return total
