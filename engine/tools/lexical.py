"""BM25F over a registry's tools: each tool's name, description, examples, rules and parameters as weighted fields.

Written here rather than taken from a BM25 library: the ones kept on PyPI (bm25s, rank-bm25)
score one text per document, and a tool's name says more per word than its description —
field weights are the point. The index holds posting lists (tool indices and their
precomputed weights), so a request costs one lookup and one add per word.

Scores are on a fixed scale: the weights a tool gathers for the request's words divided by
the most those words could give (each word's idf × (k1 + 1), BM25's bound), so in [0, 1]
without clipping, and the order stays BM25F's. A request word found once in a tool's
description gives about half its share, found in its name, description and examples
together about 0.85; a word no tool has still counts in the denominator, as much as a word
only one tool has.
"""

from __future__ import annotations

import math
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
    """Posting lists of the tools' stems, weighted by BM25F; `scores` ranks every tool for a request's words.

    The lists are kept as arrays, one after the other (term by term, tools in order within a
    term), and built with numpy from each occurrence's field weight: about ten times faster
    than a dictionary per term, which matters because the index is built at a registry's
    first ranked selection.
    """

    def __init__(self, documents: Sequence[Mapping[str, Sequence[str]]], settings: Bm25f | None = None) -> None:
        import numpy as np

        self.settings = settings = settings or Bm25f()
        self.size = size = len(documents)
        self.vocabulary: dict[str, int] = {}
        terms: list[int] = []  # each occurrence's term, tool and BM25F's field weight over its length norm
        tools: list[int] = []
        norms: list[float] = []
        for name in FIELDS:
            weight = settings.weights.get(name, 0.0)
            lengths = [len(document.get(name, ())) for document in documents]
            if not weight or not any(lengths):
                continue
            average = sum(lengths) / size
            b = settings.lengths.get(name, 0.75)
            for index, (document, length) in enumerate(zip(documents, lengths, strict=True)):
                if length:
                    terms += [self.vocabulary.setdefault(term, len(self.vocabulary)) for term in document[name]]
                    tools += [index] * length
                    norms += [weight / (1 - b + b * length / average)] * length
        # One (term, tool) pair per posting, sorted by term then tool; its frequency is the sum of its weights.
        pairs, occurrence = np.unique(np.asarray(terms, dtype=np.int64) * max(size, 1) + np.asarray(tools, dtype=np.int64),
                                      return_inverse=True)
        frequency = np.bincount(occurrence, weights=np.asarray(norms, dtype=np.float64), minlength=len(pairs))
        term_of = pairs // max(size, 1)
        found = np.bincount(term_of, minlength=len(self.vocabulary))  # the tools each term is in
        k1 = settings.k1
        self.idf = np.log1p((size - found + 0.5) / (found + 0.5))
        self.unknown_idf = self._idf(1)  # as rare as a word one tool has: the scale then hardly depends on size
        self.starts = np.concatenate(([0], np.cumsum(found))).tolist()
        self.tools = (pairs % max(size, 1)).astype(np.intp)
        self.weights = (self.idf[term_of] * frequency * (k1 + 1) / (frequency + k1)).astype(np.float32)

    def _idf(self, df: int) -> float:
        return math.log(1 + (self.size - df + 0.5) / (df + 0.5))

    def scores(self, request: Sequence[Sequence[str]]) -> np.ndarray:
        """Each tool's score in [0, 1] for a request's words (each given as its forms, best first)."""
        import numpy as np

        total = np.zeros(self.size, dtype=np.float32)
        most = 0.0
        bound = self.settings.k1 + 1
        for forms in request:
            term = next((self.vocabulary[form] for form in forms if form in self.vocabulary), None)
            if term is None:
                most += self.unknown_idf * bound
                continue
            start, end = self.starts[term], self.starts[term + 1]
            total[self.tools[start:end]] += self.weights[start:end]
            most += float(self.idf[term]) * bound
        if most:
            total /= most
        return total
