"""Ranking a registry's tools for a request: words (BM25F) and embeddings (n-grams and WordLlama), fused.

Each tool gets three numbers, all in [0, 1]: `lexical` (lexical.py's BM25F over its name,
description, examples, rules and parameters), `embedding` (the cosine of the request's
embedding and the tool's, after hub correction, clipped at 0; with the default embedder,
the mean of two such cosines: the hashed n-grams' and WordLlama's, each block of the
cached vector compared alone) and `score`, their weighted sum, 0.6 × lexical + 0.4 ×
embedding — the one `min_score` reads and the Debug trace shows beside its parts.

What a tool's embedding is made of (`tool_text`): its name split into words, its
description and examples, then its parameters' names and descriptions. The name and the
parameters say what a terse description leaves out ("Weather getForecast: Get forecast"),
and they took the embedding alone from recall@1 0.17 to 0.36 on ToolLens's tuning part.

Hub correction: hashed n-grams of common words ("the", "of", "-ção") make every text a
little alike, and a tool whose text is mostly such words ends up near every request (a
hub). Each of the embedding's dimensions is weighted by its inverse document frequency
over the registry's tools, log(1 + (n + 1) / (df + 1)), before the cosine: what all tools
share counts least (a dense embedding from an endpoint has every dimension in every tool
and is left as it is). The weights are worked out once per set of tools, with the ranking
matrix (a pass over the cached vectors, about a millisecond for 1,000 tools). Measured
on benchmarks/tool_selection_quality.py, this beat subtracting the mean tool vector and
CSLS, both of which made the embedding's own ranking worse.

The settings (`Ranking`) were chosen on that benchmark's tuning parts of two public sets,
by the mean of their MRRs; `--grid` prints every setting tried. With WordLlama beside the
n-grams the mean MRR went from 0.616 (n-grams, 0.7 × words) to 0.633 (both, 0.6 × words;
0.622 with WordLlama alone in place of the n-grams; lexical shares 0.5 to 0.65 all within
0.003 of it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from engine.tools.lexical import Bm25f, LexicalIndex
from engine.tools.words import identifier_words, request_words, stem, words

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DOCUMENT_FORM", "EmbeddedText", "Ranker", "Ranking", "ToolScore", "fuse", "tool_document", "tool_text"]

EmbeddedText = Literal["description", "name+description", "name+description+parameters"]
"""What a tool's embedding is made of; "description" (with the examples) is what it was before names and parameters."""

DOCUMENT_FORM = 1
"""The form of `tool_document`'s output, stored with each cached document: raise it whenever words.py or
`tool_document` change what a tool's words are, so that cached documents are worked out again."""


@dataclass(frozen=True, slots=True)
class ToolScore:
    """A selected tool's fused score and the two parts it is made of, each in [0, 1]."""

    score: float
    lexical: float
    embedding: float

    def fields(self) -> dict[str, float]:
        return {"score": self.score, "lexical": self.lexical, "embedding": self.embedding}


@dataclass(frozen=True)
class Ranking:
    """How the two rankings are joined (chosen on benchmarks/tool_selection_quality.py's tuning parts)."""

    lexical_weight: float = 0.6
    """The fused score's share from words; the embedding has the rest (0.7 before WordLlama joined the n-grams)."""
    fusion: Literal["sum", "rrf"] = "sum"
    """`sum`: the weighted sum of the two scores; `rrf`: reciprocal-rank fusion (ranks only, for comparison)."""
    hubs: Literal["idf", "none"] = "idf"
    rrf_k: int = 5
    """RRF's rank offset; 5 ranked best on the tuning parts, the customary 60 worst."""
    embedded: EmbeddedText = "name+description+parameters"
    """What each tool's embedding is made of (`tool_text`); a cached embedding of another text is made again."""
    bm25f: Bm25f = field(default_factory=Bm25f)


def _schema_texts(schema: Any) -> Iterable[tuple[str, bool]]:
    """A JSON Schema's property names (True: an identifier) and descriptions (False), depth first."""
    if isinstance(schema, Mapping):
        if isinstance(schema.get("description"), str):
            yield schema["description"], False
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for name, sub in properties.items():
                yield str(name), True
                yield from _schema_texts(sub)
        if isinstance(schema.get("items"), Mapping):
            yield from _schema_texts(schema["items"])


def tool_document(name: str, description: str, examples: Sequence[str] = (), rules: str = "",
                  parameters: Mapping[str, Any] | None = None) -> dict[str, list[str]]:
    """A tool's stems per BM25F field; its name is stemmed in English and in its description's language."""
    described, language = words(description)
    name_words = identifier_words(name)
    name_stems = [stem(word, "english") for word in name_words]
    if language != "english":
        name_stems += [s for s in (stem(word, language) for word in name_words) if s not in name_stems]
    document = {"name": [s for s in name_stems if len(s) > 1], "description": described,
                "examples": [term for example in examples for term in words(example)[0]],
                "rules": words(rules)[0] if rules else []}
    parameter_terms: list[str] = []
    for text, identifier in _schema_texts(parameters or {}):
        parameter_terms += words(" ".join(identifier_words(text)) if identifier else text, language)[0]
    document["parameters"] = parameter_terms
    return document


def tool_text(name: str, description: str, examples: Sequence[str] = (), parameters: Mapping[str, Any] | None = None,
              embedded: EmbeddedText = "name+description+parameters") -> str:
    """The text a tool's embedding is made of: its name's words, description, examples and parameters, one a line."""
    lines = [description, *examples]
    if embedded != "description":
        lines.insert(0, " ".join(identifier_words(name)))
    if embedded == "name+description+parameters":
        lines += [" ".join(identifier_words(text)) if identifier else text for text, identifier in _schema_texts(
            parameters or {})]
    return "\n".join(lines)


class Ranker:
    """The lexical index and the hub-corrected embedding matrix of one set of tools, in the registry's order.

    `blocks`: the widths of the embedders whose vectors sit side by side in each row
    (embeddings.py's CombinedEmbedder); each block is hub-corrected and compared alone, and
    a tool's `embedding` is the mean of the blocks' cosines, each clipped at 0.
    """

    def __init__(self, documents: Sequence[Mapping[str, Sequence[str]]], matrix: np.ndarray,
                 ranking: Ranking | None = None, blocks: Sequence[int] = ()) -> None:
        import numpy as np

        self.ranking = ranking = ranking or Ranking()
        self.index = LexicalIndex(documents, ranking.bm25f)
        self.weights = np.ones(matrix.shape[1], dtype=np.float32)
        if ranking.hubs == "idf" and len(matrix):
            present = np.count_nonzero(matrix, axis=0)
            self.weights = np.log1p((len(matrix) + 1) / (present + 1)).astype(np.float32)
        ends = np.cumsum(blocks).tolist() if sum(blocks) == matrix.shape[1] else [matrix.shape[1]]
        self.blocks = list(zip([0, *ends[:-1]], ends, strict=True))
        self.matrices = [_unit_rows(matrix[:, start:end] * self.weights[start:end]) for start, end in self.blocks]

    def scores(self, request: str, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every tool's (score, lexical, embedding) for a request and its embedding, as three arrays."""
        import numpy as np

        lexical = self.index.scores(request_words(request))
        weighted = vector * self.weights
        embedding = np.zeros(len(lexical), dtype=np.float32)
        for (start, end), matrix in zip(self.blocks, self.matrices, strict=True):
            part = weighted[start:end]
            norm = float(np.linalg.norm(part))
            embedding += np.clip(matrix @ (part / norm if norm else part), 0.0, 1.0)
        embedding /= len(self.blocks)
        return fuse(lexical, embedding, self.ranking), lexical, embedding


def fuse(lexical: np.ndarray, embedding: np.ndarray, ranking: Ranking) -> np.ndarray:
    """The fused scores of tools (the last axis) from their lexical and embedding scores."""
    if ranking.fusion == "rrf":
        return _rrf(lexical, embedding, ranking.rrf_k, ranking.lexical_weight)
    weight = ranking.lexical_weight
    return weight * lexical + (1 - weight) * embedding


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def _rrf(lexical: np.ndarray, embedding: np.ndarray, k: int, weight: float) -> np.ndarray:
    """Reciprocal-rank fusion, scaled so that a tool first in both rankings scores 1."""
    import numpy as np

    fused = np.zeros(lexical.shape, dtype=np.float64)
    for scores, share in ((lexical, weight), (embedding, 1 - weight)):
        order = np.argsort(-scores, axis=-1, kind="stable")
        ranks = np.empty(scores.shape, dtype=np.float64)
        np.put_along_axis(ranks, order, np.arange(1, scores.shape[-1] + 1, dtype=np.float64), axis=-1)
        fused += share * (k + 1) / (k + ranks)
    return fused.astype(np.float32)
