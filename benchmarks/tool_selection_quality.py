"""Tool selection quality on public data: recall@1/3/5 and MRR of three rankings, tuning and held-out parts.

The data is the Berkeley Function-Calling Leaderboard's (the ShishirPatil/gorilla repository
on GitHub, Apache-2.0), read from a local copy and never committed: every function of its
`simple_python`, `multiple`, `live_simple` and `live_multiple` sets becomes one tool of a
single registry (about 1,100 tools: name, description, parameters), and every question whose
answer calls exactly one function becomes a request whose gold tool is that function. The
other functions offered with a question are just more tools of the registry, so a request
is ranked against all of them, not against its own three or four.

A second set, `--toollens`, is ToolLens (the quchangle1/COLT repository, its
datasets/ToolLens): 464 ToolBench APIs with terse descriptions and natural requests that
each need about three of them; a request counts as found at the rank of its first gold
tool. It was used beside BFCL for tuning, to keep the weights from fitting one data set.

Requests are split in two by a hash of their id (ToolLens: odd query ids): the tuning part
(what the ranking's settings were chosen on) and the held-out part (never looked at while
tuning, measured once the settings were chosen).

    git clone --depth 1 <the gorilla repository> /tmp/gorilla
    python -m benchmarks.tool_selection_quality /tmp/gorilla [--toollens /tmp/COLT/datasets/ToolLens]
    python -m benchmarks.tool_selection_quality /tmp/gorilla --part held-out --json
    python -m benchmarks.tool_selection_quality /tmp/gorilla --toollens /tmp/COLT/datasets/ToolLens --grid

`--embedder` picks what the registries embed with (`local`, a registry's default: hashed
n-grams and WordLlama side by side; `wordllama`; `hashed-ngrams`, the default before).

Rankings side by side: `today` (the embedder's cosine of description and examples alone:
with `--embedder hashed-ngrams`, the ranking before the hybrid one), `bm25` (BM25 over descriptions, the usual
baseline), `words` (the hybrid's BM25F part alone: names, descriptions, parameters),
`hybrid` (what `tools(query=…)` does now: ranking.py's `Ranking()`), `hybrid-rrf`
(reciprocal-rank fusion at its best setting on the grid) and `hybrid-0.8` (the fused
ranking before the grid: 0.8 × words + 0.2 × an embedding of description and examples).
`top1_hub` is the most tools' first choice: how often one tool is ranked first.

`--grid` measures, on the tuning parts only, every setting the ranking exposes: what the
embedding is made of, hub correction, the lexical share of the weighted sum, RRF's offset
and share, and a calibrated sum (each part divided by its best score for the request, so
that neither part's scale decides). It prints each setting's figures for both sets and
their mean MRR, the criterion `Ranking()`'s defaults were chosen by. The calibrated sum
never beat the plain one there, and its score would be relative to the request (the best
tool always near 1), which `min_score` could not read, so it is not offered by ranking.py.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.tools.embeddings import Embedder, EmbeddingCache, make_embedder
from engine.tools.lexical import Bm25f, LexicalIndex
from engine.tools.ranking import Ranking, tool_document, tool_text
from engine.tools.registry import Tool, ToolEntry, ToolRegistry
from engine.tools.words import request_words

SETS = ("BFCL_v4_simple_python", "BFCL_v4_multiple", "BFCL_v4_live_simple", "BFCL_v4_live_multiple")
DATA = Path("berkeley-function-call-leaderboard/bfcl_eval/data")
BEFORE = Ranking(lexical_weight=0.8, embedded="description")
"""The fused ranking before the grid was run (its RRF option had an offset of 10)."""
RRF = Ranking(fusion="rrf", lexical_weight=0.5)
"""Reciprocal-rank fusion at its best share on the grid (with `Ranking`'s default offset)."""


@dataclass(frozen=True)
class Case:
    id: str
    query: str
    gold: str
    also: frozenset[str] = frozenset()
    """Other tools that answer the request as well (ToolLens: a request needs several)."""


def _tool_name(name: str) -> str:
    """A BFCL function name as a registry accepts it (`math.factorial` → `math_factorial`)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _find_data(root: Path) -> Path:
    for candidate in (root / DATA, root / "bfcl_eval" / "data", root / "data", root):
        if (candidate / f"{SETS[0]}.json").is_file():
            return candidate
    raise SystemExit(f"no {SETS[0]}.json under {root}: give the gorilla repository's folder (or its {DATA})")


def bfcl(root: Path) -> tuple[list[dict[str, Any]], list[Case]]:
    """The registry's tools (first description of each name) and the single-call requests."""
    folder = _find_data(root)
    tools: dict[str, dict[str, Any]] = {}
    cases = []
    for name in SETS:
        answers = {entry["id"]: entry["ground_truth"] for entry in _lines(folder / "possible_answer" / f"{name}.json")}
        for entry in _lines(folder / f"{name}.json"):
            for function in entry["function"]:
                tools.setdefault(_tool_name(function["name"]), {
                    "function": _tool_name(function["name"]), "description": function.get("description", ""),
                    "parameters": function.get("parameters") or {}})
            truth = answers.get(entry["id"]) or []
            turn = entry["question"][0] if entry["question"] else []
            asked = [message["content"] for message in turn if message.get("role") == "user"]
            if len(truth) == 1 and len(truth[0]) == 1 and asked:
                cases.append(Case(entry["id"], asked[-1], _tool_name(next(iter(truth[0])))))
    return list(tools.values()), [case for case in cases if case.gold in tools]


_TOOLLENS = re.compile(r"tool_name:(.*?), api_name:(.*?), api_description:(.*?), required_params: (\[.*?\]), "
                       r"optional_params: (\[.*?\]), return_schema", re.S)


def toollens(folder: Path) -> tuple[list[dict[str, Any]], list[Case]]:
    """ToolLens's APIs as tools (name: tool and API name; parameters from its lists) and its test requests."""
    tools: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}
    for entry in _lines(folder / "corpus.jsonl"):
        found = _TOOLLENS.search(entry["text"])
        if found is None:
            continue
        tool, api, description, required, optional = found.groups()
        name = base = re.sub(r"[^A-Za-z0-9]+", "_", f"{tool} {api}").strip("_")[:60]
        suffix = 2
        while name in tools:
            name, suffix = f"{base}_{suffix}", suffix + 1
        properties = {p["name"]: {"description": p.get("description") or ""}
                      for p in [*json.loads(required), *json.loads(optional)] if isinstance(p, dict) and "name" in p}
        tools[name] = {"function": name, "description": description,
                       "parameters": {"type": "object", "properties": properties}}
        names[entry["_id"]] = name
    queries = {entry["_id"]: entry["text"] for entry in _lines(folder / "queries.jsonl")}
    gold: dict[str, list[str]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, corpus, _ = line.split("\t")
        if corpus in names:
            gold.setdefault(query, []).append(names[corpus])
    cases = [Case(f"toollens-{query}", queries[query], tools_[0], frozenset(tools_[1:]))
             for query, tools_ in gold.items() if query in queries]
    return list(tools.values()), cases


def held_out(case: Case) -> bool:
    """BFCL: by a hash of the id; ToolLens: odd query ids (the split its tuning used)."""
    if case.id.startswith("toollens-"):
        return int(case.id.removeprefix("toollens-")) % 2 == 1
    return hashlib.sha256(case.id.encode()).digest()[0] % 2 == 1


EMBEDDER: list[Embedder] = [make_embedder(None)]
"""The embedder the registries are ranked with: a registry's default unless `--embedder` names another."""


def registry_of(tools: Sequence[dict[str, Any]], folder: Path, ranking: Ranking | None = None) -> ToolRegistry:
    """A ToolRegistry of the data's tools, embedded into a cache under `folder` (handlers never resolved)."""
    ranking = ranking or Ranking()
    cache = EmbeddingCache(folder / f"quality-{ranking.embedded}-{ranking.hubs}.embeddings.json")
    entries = [Tool(ToolEntry(handler="bench:none", **tool), "quality", "quality.yaml", None) for tool in tools]
    registry = ToolRegistry(entries, EMBEDDER[0], [cache], ranking)
    registry.prepare({"quality.yaml": cache})
    return registry


Ranked = Callable[[str], list[str]]


def today(registry: ToolRegistry) -> Ranked:
    """The ranking before this one: the n-gram embedding's cosine alone, ties by name."""
    names = sorted(registry.tools)
    embed = registry.embedder.embed
    entries = [registry.tools[name].entry for name in names]
    matrix = embed([tool_text(e.function, e.description, e.examples, e.parameters, "description") for e in entries])
    return lambda query: [names[i] for i in np.argsort(-(matrix @ embed([query])[0]), kind="stable")]


def lexical(registry: ToolRegistry, settings: Bm25f, fields: Sequence[str]) -> Ranked:
    names = sorted(registry.tools)
    documents = []
    for name in names:
        entry = registry.tools[name].entry
        document = tool_document(name, entry.description, entry.examples, entry.rules, entry.parameters)
        documents.append({field: terms for field, terms in document.items() if field in fields})
    index = LexicalIndex(documents, settings)
    return lambda query: [names[i] for i in np.argsort(-index.scores(request_words(query)), kind="stable")]


def hybrid(registry: ToolRegistry) -> Ranked:
    return lambda query: [tool.name for tool, _ in registry.select(query=query)]


def measure(rank: Ranked, cases: Sequence[Case]) -> dict[str, float]:
    hits = dict.fromkeys((1, 3, 5), 0)
    reciprocal = 0.0
    firsts: Counter[str] = Counter()
    for case in cases:
        ranked = rank(case.query)
        firsts[ranked[0]] += 1
        position = min(ranked.index(tool) for tool in {case.gold, *case.also}) + 1
        reciprocal += 1 / position
        for k in hits:
            hits[k] += position <= k
    count = len(cases) or 1
    return {**{f"recall@{k}": round(hits[k] / count, 3) for k in hits}, "mrr": round(reciprocal / count, 3),
            "top1_hub": firsts.most_common(1)[0][1] if firsts else 0}


def rankings(registry: ToolRegistry) -> dict[str, Ranked]:
    return {"today": today(registry),
            "bm25": lexical(registry, Bm25f(weights={"description": 1.0}, lengths={"description": 0.75}),
                            ("description",)),
            "words": lexical(registry, registry.ranking.bm25f, ("name", "description", "examples", "rules",
                                                                "parameters")),
            "hybrid": hybrid(registry)}


def latency(registry: ToolRegistry, cases: Sequence[Case]) -> dict[str, float]:
    """ms per `select(query=…, top_k=5)` on fresh requests (their embeddings not cached)."""
    registry.select(query="warm up", top_k=5)
    timings = []
    for case in cases[:400]:
        began = time.perf_counter()
        registry.select(query=case.query, top_k=5)
        timings.append((time.perf_counter() - began) * 1000)
    timings.sort()
    return {"ms_median": round(timings[len(timings) // 2], 3), "ms_p95": round(timings[int(len(timings) * 0.95)], 3)}


def report(label: str, tools: list[dict[str, Any]], cases: list[Case], options: argparse.Namespace) -> None:
    parts = {"tuning": [c for c in cases if not held_out(c)], "held-out": [c for c in cases if held_out(c)]}
    chosen = list(parts) if options.part == "both" else [options.part]
    with tempfile.TemporaryDirectory() as folder:
        registry = registry_of(tools, Path(folder))
        ranked = rankings(registry)
        ranked["hybrid-rrf"] = hybrid(registry_of(tools, Path(folder), RRF))
        ranked["hybrid-0.8"] = hybrid(registry_of(tools, Path(folder), BEFORE))
        print(f"{label}: {len(tools)} tools, {len(cases)} requests ({', '.join(f'{p} {len(parts[p])}' for p in parts)})")
        if not options.json:
            print(f"{'part':<9} {'ranking':<10} {'recall@1':>8} {'recall@3':>8} {'recall@5':>8} {'MRR':>6} {'top1_hub':>8}")
        for part in chosen:
            for name, rank in ranked.items():
                figures = measure(rank, parts[part])
                if options.json:
                    print(json.dumps({"data": label, "part": part, "ranking": name, "requests": len(parts[part]),
                                      **figures}))
                else:
                    print(f"{part:<9} {name:<10} {figures['recall@1']:>8.3f} {figures['recall@3']:>8.3f} "
                          f"{figures['recall@5']:>8.3f} {figures['mrr']:>6.3f} {figures['top1_hub']:>8}")
        print(json.dumps({"benchmark": "tool_selection_latency", "data": label, "tools": len(tools),
                          **latency(registry, parts["held-out"])}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gorilla", type=Path, help="a local copy of the gorilla repository (or its BFCL data folder)")
    parser.add_argument("--toollens", type=Path, help="ToolLens's folder (COLT's datasets/ToolLens), a second set")
    parser.add_argument("--part", choices=("tuning", "held-out", "both"), default="both")
    parser.add_argument("--json", action="store_true", help="one JSON line per part and ranking")
    parser.add_argument("--grid", action="store_true", help="every setting's figures on the tuning parts only")
    parser.add_argument("--embedder", choices=("local", "wordllama", "hashed-ngrams"),
                        help="the embedder fused with words (a registry's default when not given)")
    options = parser.parse_args()
    if options.embedder:
        EMBEDDER[0] = make_embedder({"type": options.embedder})
    print(json.dumps({"embedder": EMBEDDER[0].name}))
    if options.grid:
        import benchmarks.tool_selection_quality as imported  # this module as the grid sees it (not __main__)
        from benchmarks.tool_selection_grid import grid  # it imports this module's readers

        imported.EMBEDDER[0] = EMBEDDER[0]

        sets = {"BFCL": bfcl(options.gorilla)}
        if options.toollens:
            sets["ToolLens"] = toollens(options.toollens)
        grid(sets)
        return
    report("BFCL", *bfcl(options.gorilla), options)
    if options.toollens:
        report("ToolLens", *toollens(options.toollens), options)


if __name__ == "__main__":
    main()
