"""Indexing a knowledge base of 10,000 passages, and a Retrieve step over it (issue 41's targets: under 20 s, and a
step's p95 under 5 ms).

A folder of generated shop documents (Markdown with front matter and headings, and CSV rows) is indexed from empty
with the default embedder (search.py's), then once more untouched (every file's hash checked, nothing read again),
then with one file changed. After that a Retrieve block runs offline in a loop of `--queries` steps at Debug (so that
its step times come from the run's own trace, each passage's scores traced too), each step asking one of a set of
questions (a third with a metadata filter).
Prints one JSON line: seconds per index pass, chunks, the seconds a new process takes to make the base ready
for its first retrieval, and the Retrieve step's median and p95 in milliseconds (the
median of `--repeat` rounds), with the Python version and machine.

    python -m benchmarks.knowledge_index [--chunks 10000] [--queries 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from blocks.registry import registry
from engine import MessageLevel, Services, execute, read_events
from engine.compile.loader import load_diagram

TOPICS = ["refunds", "shipping", "warranty", "payments", "gift cards", "repairs", "glazes", "care", "orders", "stores"]
_WORDS = """mug teapot bowl plate glaze stoneware porcelain kiln order parcel courier refund receipt invoice card
voucher warranty crack chip handle lid delivery week day euro price discount return exchange size colour blue green
white dishwasher oven microwave hand wash gift wrap store Porto Lisbon tracking email"""
WORDS = _WORDS.split()
QUESTIONS = ["How many days do I have to return an item?", "Can the mug go in the dishwasher?",
             "How long does delivery take to Spain?", "Is a cracked teapot covered by the warranty?",
             "Do you sell gift cards?", "Which payment methods do you take?", "Quanto custa o envio?"]


def _paragraph(rng: random.Random, words: int = 60) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def write_documents(folder: Path, chunks: int, seed: int = 7) -> None:
    """Markdown files of ten sections each (a passage a section) and CSV files of rows, about `chunks` in all."""
    rng = random.Random(seed)
    rows = chunks // 5
    sections = chunks - rows
    for number in range(sections // 10):
        topic = TOPICS[number % len(TOPICS)]
        body = "\n\n".join(f"## {topic.title()} {part}\n\n{_paragraph(rng)}" for part in range(10))
        (folder / f"{topic.replace(' ', '_')}_{number:04d}.md").write_text(
            f"---\ntopic: {topic}\nlang: {'pt' if number % 4 == 0 else 'en'}\n---\n# {topic.title()}\n\n{body}\n",
            encoding="utf-8")
    for table in range(max(1, rows // 500)):
        lines = ["sku,name,material,price,care"] + [
            f"SKU-{table}-{row},{rng.choice(WORDS)} {rng.choice(WORDS)},{rng.choice(WORDS)},{rng.randint(5, 90)},"
            f"{_paragraph(rng, 12)}" for row in range(500)]
        (folder / f"products_{table}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


DIAGRAM = """diagram: retrieve-loop
knowledge:
  docs: {{folder: docs, chunk: {{size: 800, overlap: 120}}}}
blocks:
  - id: start
    type: Start
    max_steps: {steps}
    inputs: {{questions: []}}
    variables: {{n: 0}}
    next: search
  - id: search
    type: Retrieve
    with:
      knowledge: docs
      query: "{{{{ questions[n % (questions | length)] }}}}"
      top_k: 5
      filter: "{{{{ {{'lang': 'pt'}} if n % 3 == 0 else {{}} }}}}"
    set: {{n: "{{{{ n + 1 }}}}"}}
    next:
      - {{to: search, when: "{{{{ n < {queries} }}}}"}}
"""


def _index_passes(folder: Path, diagram: Path) -> dict[str, float | int]:
    blocks = registry()
    loaded = load_diagram(diagram, blocks)
    base = loaded.knowledge["docs"]
    began = time.perf_counter()
    first = base.refresh()
    built = time.perf_counter() - began
    again = load_diagram(diagram, blocks).knowledge["docs"].refresh()
    changed_file = sorted(folder.glob("*.md"))[0]
    changed_file.write_text(changed_file.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    changed = load_diagram(diagram, blocks).knowledge["docs"].refresh()
    return {"chunks": first.chunks, "files": first.files, "index_s": round(built, 2),
            "embedder": base.embedder.name if base.embedder else "", "unchanged_s": round(again.seconds, 3),
            "one_changed_s": round(changed.seconds, 3), "one_changed_embedded": changed.embedded}


def _step_times(diagram: Path, queries: int) -> tuple[list[float], float]:
    """The Retrieve steps' durations, and the seconds a new process takes to make the base ready (hashes checked,
    passages and stored embeddings read, the words indexed)."""
    loaded = load_diagram(diagram, registry())
    began = time.perf_counter()
    loaded.knowledge["docs"].loaded()  # indexed and loaded: the steps measured are retrievals
    ready = time.perf_counter() - began
    with tempfile.TemporaryDirectory() as runs:
        result = asyncio.run(execute(loaded, {"questions": QUESTIONS}, runs_dir=Path(runs),
                                     message_level=MessageLevel.DEBUG, services=Services(offline=True)))
        assert result.status == "succeeded", result.errors
        assert result.trace is not None
        return [float(e["duration_ms"]) for e in read_events(result.trace)
                if e.get("event") == "block_finished" and e.get("block") == "search"], ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        (root / "docs").mkdir()
        write_documents(root / "docs", args.chunks)
        diagram = root / "retrieve.yaml"
        diagram.write_text(DIAGRAM.format(steps=args.queries * 2 + 10, queries=args.queries), encoding="utf-8")
        figures = _index_passes(root / "docs", diagram)
        medians, p95s, readies = [], [], []
        for _ in range(args.repeat):
            times, ready = _step_times(diagram, args.queries)
            readies.append(ready)
            times = sorted(times[5:])  # the first steps warm numpy's and jinja2's caches
            medians.append(statistics.median(times))
            p95s.append(times[int(len(times) * 0.95) - 1])
    print(json.dumps({"benchmark": "knowledge_index", **figures, "ready_s": round(statistics.median(readies), 3),
                      "retrieve_steps": args.queries,
                      "retrieve_median_ms": round(statistics.median(medians), 3),
                      "retrieve_p95_ms": round(statistics.median(p95s), 3),
                      "python": sys.version.split()[0], "machine": platform.machine(),
                      "cpus": __import__("os").cpu_count()}))


if __name__ == "__main__":
    main()
