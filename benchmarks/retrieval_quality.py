"""Passage retrieval quality on SciFact (a BEIR set): BM25 alone, the dense embedder alone, and their fusion.

SciFact (allenai, CC BY-NC 2.0: read from a local copy, never committed) pairs scientific
claims with the abstracts that support or refute them: 5,183 abstracts (title and text,
one passage each, as BEIR indexes them) and claims whose relevant abstracts are their
`evidence_doc_id`s (claims with none are left out; `--relevant cited` counts the
abstracts such a claim cites instead, as BEIR's qrels do, for figures comparable to
BEIR's: its SciFact test set is these 300 validation claims). The training claims are
the tuning part (`--grid` measures every setting on them alone); the validation claims,
BEIR's SciFact test set, are the held-out part, measured once the settings were chosen.

    python -m benchmarks.retrieval_quality --data /path/to/scifact.zip
    python -m benchmarks.retrieval_quality --data /path/to/scifact.zip --grid
    python -m benchmarks.retrieval_quality --download   # the allenai release, where the network allows

`--data` is a zip or a folder of CSVs (corpus_train.csv: doc_id,title,abstract with the
abstract's sentences as a list literal; claims_train.csv and claims_validation.csv:
id,claim,evidence_doc_id,…, a row per evidence document) or the allenai release's folder
of JSON lines (corpus.jsonl, claims_train.jsonl, claims_dev.jsonl).

Printed: recall@5, recall@10 and nDCG@10 of each ranking on each part (a JSON line each and
a table), the corpus's indexing time and search latency, and the time to embed and index
10,000 chunks of 800 characters cut from the corpus and search them (the knowledge targets).
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import math
import re
import tarfile
import tempfile
import time
import tokenize
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.tools.knowledge.search import PassageIndex, PassageRanking, default_embedder

RELEASE = "https://scifact.s3-us-west-2.amazonaws.com/release/latest/data.tar.gz"
PARTS = {"tuning": ("claims_train",), "held-out": ("claims_validation", "claims_dev")}


@dataclass(frozen=True)
class Claim:
    query: str
    relevant: frozenset[int]
    """Positions of the relevant abstracts in the corpus."""


@dataclass
class Data:
    ids: list[str]
    texts: list[str]
    parts: dict[str, list[Claim]]


def _sentences(literal: str) -> list[str]:
    """An abstract's sentences from their list literal (numpy's repr: strings with or without commas between)."""
    tokens = tokenize.generate_tokens(io.StringIO(literal).readline)
    return [ast.literal_eval(token.string) for token in tokens if token.type == tokenize.STRING]


def _files(source: Path) -> dict[str, str]:
    """The data set's files by stem (corpus_train, claims_train, …), from a zip or a folder."""
    if source.is_file():
        with zipfile.ZipFile(source) as archive:
            return {Path(name).stem: archive.read(name).decode() for name in archive.namelist()
                    if name.endswith((".csv", ".jsonl"))}
    return {path.stem: path.read_text() for path in source.rglob("*") if path.suffix in (".csv", ".jsonl")}


def _rows(files: dict[str, str], stem: str) -> Iterator[dict[str, str]]:
    if stem in files and files[stem].lstrip().startswith("{"):
        for line in files[stem].splitlines():
            if line.strip():
                yield json.loads(line)
    elif stem in files:
        csv.field_size_limit(1 << 30)
        yield from csv.DictReader(io.StringIO(files[stem]))


def load(source: Path, cited: bool = False) -> Data:
    """The corpus and the claims of each part; `cited`: a claim with no evidence counts its cited abstracts (BEIR)."""
    files = _files(source)
    ids, texts = [], []
    for row in [*_rows(files, "corpus_train"), *_rows(files, "corpus")]:
        abstract = row["abstract"]
        sentences = abstract if isinstance(abstract, list) else _sentences(abstract)
        ids.append(str(row["doc_id"]))
        texts.append(f"{row['title']}\n{' '.join(sentences)}")
    position = {doc: i for i, doc in enumerate(ids)}
    parts: dict[str, list[Claim]] = {}
    for part, stems in PARTS.items():
        claims: dict[str, tuple[str, set[int]]] = {}
        for stem in stems:
            for row in _rows(files, stem):
                _, relevant = claims.setdefault(str(row["id"]), (row["claim"], set()))
                evidence = row.get("evidence_doc_id") or row.get("evidence") or ""
                for doc in ([*evidence] if isinstance(evidence, dict) else [str(evidence)]):
                    if doc.split(".")[0] in position:
                        relevant.add(position[doc.split(".")[0]])
                if cited and not relevant:
                    listed = row.get("cited_doc_ids") or ""
                    relevant.update(position[doc] for doc in re.findall(r"\d+", str(listed)) if doc in position)
        parts[part] = [Claim(query, frozenset(relevant)) for query, relevant in claims.values() if relevant]
    return Data(ids, texts, parts)


def download() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="scifact-"))
    with urllib.request.urlopen(RELEASE, timeout=60) as response, \
            tarfile.open(fileobj=io.BytesIO(response.read()), mode="r:gz") as archive:
        archive.extractall(folder, filter="data")
    return folder


def metrics(ranked: Sequence[int], relevant: frozenset[int]) -> dict[str, float]:
    gains = [1.0 if doc in relevant else 0.0 for doc in ranked[:10]]
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(relevant), 10)))
    return {"recall@5": sum(gains[:5]) / len(relevant), "recall@10": sum(gains) / len(relevant),
            "ndcg@10": sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains)) / ideal}


Ranked = Callable[[str], Sequence[int]]


def rankings(index: PassageIndex) -> dict[str, Ranked]:
    def by(part: int) -> Ranked:
        def rank(query: str) -> Sequence[int]:
            scores = index.parts(query)[part]
            top = np.argpartition(-scores, 10)[:10]
            return top[np.argsort(-scores[top], kind="stable")].tolist()
        return rank
    return {"bm25": by(0), "dense": by(1), "fusion": lambda query: [hit.index for hit in index.search(query, 10)]}


def measure(rank: Ranked, claims: Sequence[Claim]) -> dict[str, float]:
    totals = {"recall@5": 0.0, "recall@10": 0.0, "ndcg@10": 0.0}
    for claim in claims:
        for name, value in metrics(rank(claim.query), claim.relevant).items():
            totals[name] += value
    return {name: round(value / len(claims), 4) for name, value in totals.items()}


def latency(index: PassageIndex, queries: Sequence[str]) -> dict[str, float]:
    times = []
    for query in queries:
        start = time.perf_counter()
        index.search(query, 10)
        times.append(time.perf_counter() - start)
    return {"search_ms_p50": round(1000 * float(np.percentile(times, 50)), 3),
            "search_ms_p95": round(1000 * float(np.percentile(times, 95)), 3)}


def report(data: Data, vectors: np.ndarray, parts: Sequence[str]) -> None:
    start = time.perf_counter()
    index = PassageIndex(data.texts, default_embedder(), vectors)
    lexical_s = time.perf_counter() - start
    rows = []
    for part in parts:
        for name, rank in rankings(index).items():
            figures = measure(rank, data.parts[part])
            rows.append((part, name, figures))
            print(json.dumps({"benchmark": "retrieval_quality", "data": "SciFact", "part": part, "ranking": name,
                              "claims": len(data.parts[part]), **figures}))
    print(f"{'part':9} {'ranking':8} {'recall@5':>8} {'recall@10':>9} {'nDCG@10':>8}")
    for part, name, figures in rows:
        print(f"{part:9} {name:8} {figures['recall@5']:8.3f} {figures['recall@10']:9.3f} {figures['ndcg@10']:8.3f}")
    queries = [claim.query for claim in data.parts["held-out"]]
    print(json.dumps({"benchmark": "retrieval_latency", "data": "SciFact", "passages": len(data.texts),
                      "lexical_index_s": round(lexical_s, 2), **latency(index, queries)}))


def grid(data: Data, vectors: np.ndarray) -> None:
    """Every setting's figures on the tuning part only, best nDCG@10 last."""
    results = []
    for k1 in (0.9, 1.2, 1.5):
        for b in (0.5, 0.75, 0.9):
            index = PassageIndex(data.texts, default_embedder(), vectors, PassageRanking(k1=k1, b=b))
            for fusion, scale, weights in (("sum", "bound", (0.4, 0.5, 0.6, 0.7, 0.8)),
                                           ("sum", "best", (0.3, 0.4, 0.5, 0.6, 0.7)), ("rrf", "best", (0.5, 0.6, 0.7))):
                for weight in weights:
                    ranking = PassageRanking(weight, fusion, scale, k1, b)  # type: ignore[arg-type]
                    index.ranking = ranking  # the words' index is the same for every fusion: only how it is fused changes
                    figures = measure(rankings(index)["fusion"], data.parts["tuning"])
                    results.append((figures["ndcg@10"], figures, ranking))
    for _, figures, ranking in sorted(results, key=lambda item: item[0]):
        print(json.dumps({"benchmark": "retrieval_grid", "part": "tuning", **figures, "setting": str(ranking)}))


def chunks_at_scale(data: Data, count: int = 10_000, size: int = 800) -> None:
    """Embed, index and search `count` chunks of `size` characters cut from the corpus (repeated as needed)."""
    text = "\n".join(data.texts)
    while len(text) < count * size:
        text += "\n" + text
    chunks = [text[i * size:(i + 1) * size] for i in range(count)]
    embedder = default_embedder()
    start = time.perf_counter()
    vectors = embedder.embed(chunks)
    embedded = time.perf_counter() - start
    index = PassageIndex(chunks, embedder, vectors)
    indexed = time.perf_counter() - start
    queries = [claim.query for claim in data.parts["held-out"]]
    print(json.dumps({"benchmark": "retrieval_at_scale", "chunks": count, "chunk_chars": size,
                      "embed_s": round(embedded, 2), "embed_and_index_s": round(indexed, 2),
                      **latency(index, queries)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="SciFact: a zip or folder of its CSVs, or the allenai release folder")
    parser.add_argument("--download", action="store_true", help="fetch the allenai release (needs the network)")
    parser.add_argument("--grid", action="store_true", help="every fusion setting's figures on the tuning part only")
    parser.add_argument("--relevant", choices=("evidence", "cited"), default="evidence",
                        help="cited: a claim with no evidence counts the abstracts it cites, as BEIR's SciFact does")
    parser.add_argument("--part", choices=("tuning", "held-out", "both"), default="both")
    options = parser.parse_args()
    if options.data is None and not options.download:
        parser.error("give --data PATH (or --download where the network allows)")
    data = load(options.data or download(), cited=options.relevant == "cited")
    embedder = default_embedder()
    start = time.perf_counter()
    vectors = embedder.embed(data.texts)
    print(json.dumps({"benchmark": "retrieval_indexing", "data": "SciFact", "passages": len(data.texts),
                      "embed_s": round(time.perf_counter() - start, 2),
                      "claims": {part: len(claims) for part, claims in data.parts.items()}}))
    if options.grid:
        grid(data, vectors)
        return
    report(data, vectors, ("tuning", "held-out") if options.part == "both" else (options.part,))
    chunks_at_scale(data)


if __name__ == "__main__":
    main()
