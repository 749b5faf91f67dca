"""Tool selection: latency per query over 1,000 registered tools, and recall@3 in PT/IT/EN.

Latency: a generated registry of 1,000 tools, embeddings cached (the second load):
`load_cached_ms` is loading it (median of 5), `first_ranked_ms` the first ranked
selection after a load (it builds the ranking from the cache: word index, matrix, hub
weights; median of 5), then `select(query=..., top_k=3)` on fresh queries (the query
embedding is part of it).
Recall@3: the shipped query set (benchmarks/data/tool_queries.yaml) against the example
shop registry (diagrams/registry/orders.yaml), disabled tools included for the count.

    python -m benchmarks.tool_selection
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from engine.format.yamlfile import LineMap
from engine.tools.embeddings import EmbeddingCache
from engine.tools.registry import ToolRegistry, load_registries

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    "order",
    "invoice",
    "customer",
    "payment",
    "refund",
    "stock",
    "price",
    "delivery",
    "address",
    "parcel",
    "supplier",
    "warehouse",
    "contract",
    "ticket",
    "account",
    "password",
    "subscription",
    "discount",
    "coupon",
    "shipment",
    "return",
    "product",
    "catalogue",
    "report",
    "tax",
]


def generated_registry(folder: Path, count: int) -> Path:
    rng = random.Random(7)
    (folder / "bench_handlers.py").write_text("def handler(**kwargs):\n    return kwargs\n")
    tools = []
    for index in range(count):
        words = rng.sample(WORDS, 4)
        tools.append(
            {
                "function": f"tool_{index}",
                "handler": "bench_handlers:handler",
                "group": f"g{index % 10}",
                "description": f"{' '.join(words)} operation number {index}",
                "examples": [f"please {words[0]} the {words[1]}", f"{words[2]} {words[3]} {index}"],
            }
        )
    path = folder / "big.yaml"
    path.write_text(yaml.safe_dump({"registry": "big", "allowed_modules": ["bench_handlers"], "tools": tools}))
    return path


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        path = generated_registry(base, 1000)
        diagram = base / "d.yaml"
        began = time.perf_counter()
        load_registries(path.name, diagram, LineMap(str(diagram)))
        first_load = time.perf_counter() - began
        loads, firsts = [], []
        for attempt in range(5):
            began = time.perf_counter()
            registry = load_registries(path.name, diagram, LineMap(str(diagram)))
            loads.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            registry.select(query=f"please refund my parcel {attempt}", top_k=3)
            firsts.append((time.perf_counter() - began) * 1000)
        assert registry.embedded == 0
        timings = []
        for index in range(300):
            query = f"please {WORDS[index % len(WORDS)]} my {WORDS[(index * 7) % len(WORDS)]} number {index}"
            began = time.perf_counter()
            registry.select(query=query, top_k=3)
            timings.append((time.perf_counter() - began) * 1000)
        print(
            json.dumps(
                {
                    "benchmark": "tool_selection_latency",
                    "tools": 1000,
                    "queries": len(timings),
                    "ms_median": round(statistics.median(timings), 3),
                    "ms_p95": round(sorted(timings)[int(len(timings) * 0.95)], 3),
                    "first_load_with_embedding_s": round(first_load, 2),
                    "load_cached_ms": round(statistics.median(loads), 1),
                    "first_ranked_ms": round(statistics.median(firsts), 1),
                    "python": sys.version.split()[0],
                }
            )
        )
    shop = ROOT / "diagrams" / "order_agent.yaml"
    registry = load_registries("registry/orders.yaml", shop, LineMap(str(shop)))
    for tool in registry.tools.values():
        tool.entry.enabled = True
    registry.prepare(_caches(registry))
    cases = yaml.safe_load((ROOT / "benchmarks" / "data" / "tool_queries.yaml").read_text())
    hits = 0
    misses = []
    for case in cases:
        top = [t.name for t, _ in registry.select(query=case["query"], top_k=3)]
        if case["tool"] in top:
            hits += 1
        else:
            misses.append({"query": case["query"], "expected": case["tool"], "got": top})
    print(
        json.dumps(
            {
                "benchmark": "tool_selection_recall_at_3",
                "queries": len(cases),
                "recall_at_3": round(hits / len(cases), 3),
                "misses": misses,
            }
        )
    )


def _caches(registry: ToolRegistry) -> dict[str, EmbeddingCache]:
    # The disabled tool is enabled for the count; its embedding goes to a throw-away cache.
    scratch = EmbeddingCache(Path(tempfile.mkdtemp()) / "recall.embeddings.json")
    return {tool.source: scratch for tool in registry.tools.values()}


if __name__ == "__main__":
    main()
