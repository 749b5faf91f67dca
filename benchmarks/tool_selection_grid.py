"""The grid `Ranking()`'s defaults were chosen on: every setting's figures on the tuning parts only.

Run through `python -m benchmarks.tool_selection_quality GORILLA --toollens TOOLLENS --grid`
(see that module for the data). For each way of embedding a tool and each hub correction,
every request of a set's tuning part is scored once by words and by embedding
(ranking.py's Ranker, the code `tools(query=…)` runs); each fusion is then ranking.py's
`fuse` over those scores, or the calibrated sum written here. Ranks break ties by name, as
a registry does. The criterion is the mean of the two sets' MRRs, each set weighing the
same; the held-out parts are never read here.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

import numpy as np

from benchmarks.tool_selection_quality import Case, held_out, registry_of
from engine.tools.ranking import EmbeddedText, Ranking, fuse

SHARES = [round(0.05 * step, 2) for step in range(10, 21)]  # the lexical share, 0.5 to 1
RRF_OFFSETS = (1, 3, 5, 10, 20, 60)
RRF_SHARES = (0.5, 0.6, 0.7, 0.8, 0.9)

Data = tuple[list[dict[str, Any]], list[Case]]


def _parts(tools: list[dict[str, Any]], cases: Sequence[Case], ranking: Ranking,
           folder: Path) -> tuple[np.ndarray, np.ndarray, list[list[int]], np.ndarray]:
    """The tuning part's (lexical, embedding) scores, requests by tools, each request's gold columns, name ranks."""
    registry = registry_of(tools, folder, ranking)
    ranker = registry.ranker()
    names = [tool.name for tool in registry.enabled()]  # the ranker's columns
    column = {name: index for index, name in enumerate(names)}
    vectors = registry.embedder.embed([case.query for case in cases])
    lexical = np.zeros((len(cases), len(names)), dtype=np.float32)
    embedding = np.zeros_like(lexical)
    for row, (case, vector) in enumerate(zip(cases, vectors, strict=True)):
        _, lexical[row], embedding[row] = ranker.scores(case.query, vector)
    gold = [[column[name] for name in sorted({case.gold, *case.also})] for case in cases]
    by_name = np.empty(len(names), dtype=np.intp)
    by_name[np.argsort(np.array(names))] = np.arange(len(names))
    return lexical, embedding, gold, by_name


def figures(scores: np.ndarray, gold: list[list[int]], by_name: np.ndarray) -> tuple[float, float, float, float]:
    """recall@1, @3, @5 and MRR of the best-ranked gold tool, ties broken by name."""
    ranks = np.empty(len(gold))
    for row, columns in enumerate(gold):
        line = scores[row]
        ranks[row] = min(int(np.count_nonzero(line > line[c]) + np.count_nonzero((line == line[c]) & (by_name < by_name[c])))
                         for c in columns) + 1
    return (float(np.mean(ranks <= 1)), float(np.mean(ranks <= 3)), float(np.mean(ranks <= 5)),
            float(np.mean(1 / ranks)))


def _calibrated(lexical: np.ndarray, embedding: np.ndarray, share: float) -> np.ndarray:
    """Each part divided by its best score for the request, then weighted."""
    def scaled(scores: np.ndarray) -> np.ndarray:
        best = scores.max(axis=-1, keepdims=True)
        return np.divide(scores, best, out=np.zeros_like(scores), where=best > 0)

    return share * scaled(lexical) + (1 - share) * scaled(embedding)


def fusions(base: Ranking) -> Iterator[tuple[str, Ranking | float]]:
    """(label, a Ranking for `fuse`, or the calibrated sum's lexical share)."""
    for share in SHARES:
        yield f"sum {share:.2f}", replace(base, fusion="sum", lexical_weight=share)
    for offset in RRF_OFFSETS:
        for share in RRF_SHARES:
            yield f"rrf k={offset} {share:.1f}", replace(base, fusion="rrf", rrf_k=offset, lexical_weight=share)
    for share in SHARES[:-1]:
        yield f"calibrated {share:.2f}", share


def grid(sets: dict[str, Data]) -> None:
    """Print every setting's tuning-part figures, the best by mean MRR, and where `Ranking()` stands."""
    default = Ranking()
    print(f"{'embedded':<28} {'hubs':<5} {'fusion':<16} " + " ".join(
        f"{label + ' R@1':>13} {'R@3':>5} {'R@5':>5} {'MRR':>5}" for label in sets) + "  mean MRR")
    results: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        for embedded in get_args(EmbeddedText):
            for hubs in ("idf", "none"):
                base = replace(default, embedded=embedded, hubs=hubs)
                scored = {label: _parts(tools, [c for c in cases if not held_out(c)], base, Path(folder))
                          for label, (tools, cases) in sets.items()}
                for label, how in fusions(base):
                    measured = []
                    for lexical, embedding, gold, by_name in scored.values():
                        fused = fuse(lexical, embedding, how) if isinstance(how, Ranking) else \
                            _calibrated(lexical, embedding, how)
                        measured.append(figures(fused, gold, by_name))
                    mean = sum(m[3] for m in measured) / len(measured)
                    chosen = " <- Ranking()" if how == default else ""
                    row = f"{embedded:<28} {hubs:<5} {label:<16} " + " ".join(
                        f"{m[0]:>13.3f} {m[1]:>5.3f} {m[2]:>5.3f} {m[3]:>5.3f}" for m in measured) + f"  {mean:.4f}"
                    print(row + chosen, flush=True)
                    results.append((mean, row))
    print("best by mean MRR:")
    for _, row in sorted(results, key=lambda result: -result[0])[:5]:
        print(row)
