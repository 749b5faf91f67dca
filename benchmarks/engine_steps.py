"""Executor cost per block step, in µs, at message levels Release and Debug.

(a) a 200-block chain of Set blocks with no `set`; (b) a counter cycle of one Set
block (`i = i + 1` while i < N) for 10,000 steps; (c) the same counter in LangGraph,
in the same process, as a ratio. Traces are written to a temporary folder, as in a
real run. Prints one JSON line per figure (medians of several repeats).

    python -m benchmarks.engine_steps [--repeat 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from blocks.registry import registry
from engine import MessageLevel, execute
from engine.compile.loader import load_diagram_text

COUNTER_STEPS = 10_000


def chain_yaml(length: int) -> str:
    lines = ["diagram: chain", "blocks:", "  - {id: start, type: Start, next: b0}"]
    for index in range(length - 1):
        following = f"b{index + 1}" if index < length - 2 else None
        lines.append(f"  - {{id: b{index}, type: Set{', next: ' + following if following else ''}}}")
    return "\n".join(lines) + "\n"


def counter_yaml(steps: int) -> str:
    return f"""diagram: counter
blocks:
  - id: start
    type: Start
    max_steps: {steps + 10}
    inputs: {{N: {steps}}}
    variables: {{i: 0}}
    next: count
  - id: count
    type: Set
    set: {{i: "{{{{ i + 1 }}}}"}}
    next: [{{to: count, when: "{{{{ i < N }}}}"}}]
"""


def measure(text: str, level: MessageLevel, repeat: int, runs_dir: Path) -> tuple[float, int]:
    diagram = load_diagram_text(text, runs_dir / "bench.yaml", registry())
    per_step: list[float] = []
    steps = 0

    async def runs() -> None:
        nonlocal steps
        for _ in range(repeat + 1):  # the first run warms up (template compilation)
            began = time.perf_counter()
            result = await execute(diagram, runs_dir=runs_dir, message_level=level)
            elapsed = time.perf_counter() - began
            assert result.succeeded, result.errors
            steps = result.steps
            per_step.append(elapsed / steps * 1e6)

    asyncio.run(runs())
    return statistics.median(per_step[1:]), steps


def langgraph_counter(steps: int, repeat: int) -> float | None:
    try:
        from typing import TypedDict

        from langgraph.graph import END, START, StateGraph
    except ImportError:
        return None

    class State(TypedDict):
        i: int

    def count(state: State) -> dict[str, int]:
        return {"i": state["i"] + 1}

    graph = StateGraph(State)
    graph.add_node("count", count)
    graph.add_edge(START, "count")
    graph.add_conditional_edges("count", lambda s: "count" if s["i"] < steps else END)
    app = graph.compile()
    per_step = []
    for _ in range(repeat + 1):
        began = time.perf_counter()
        result = app.invoke({"i": 0}, {"recursion_limit": steps + 10})
        per_step.append((time.perf_counter() - began) / steps * 1e6)
        assert result["i"] == steps
    return statistics.median(per_step[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--langgraph-steps", type=int, default=2_000)
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "processor": platform.processor()}
    with tempfile.TemporaryDirectory() as folder:
        runs_dir = Path(folder)
        figures = {}
        for level in (MessageLevel.RELEASE, MessageLevel.DEBUG):
            name = level.name.title()
            chain, chain_steps = measure(chain_yaml(200), level, args.repeat, runs_dir)
            counter, counter_steps = measure(counter_yaml(COUNTER_STEPS), level, args.repeat, runs_dir)
            figures[name] = counter
            print(json.dumps({"benchmark": "chain_200_set_blocks", "level": name, "us_per_step": round(chain, 3),
                              "steps": chain_steps, **machine}))
            print(json.dumps({"benchmark": "counter_cycle", "level": name, "us_per_step": round(counter, 3),
                              "steps": counter_steps, **machine}))
    lg = langgraph_counter(args.langgraph_steps, max(3, args.repeat // 2))
    if lg is None:
        print(json.dumps({"benchmark": "langgraph_counter", "skipped": "pip install -e '.[bench]' for LangGraph"}))
        return
    print(json.dumps({"benchmark": "langgraph_counter", "us_per_step": round(lg, 3),
                      "steps": args.langgraph_steps, **machine}))
    for name, ours in figures.items():
        print(json.dumps({"benchmark": "counter_vs_langgraph", "level": name, "times_faster": round(lg / ours, 1)}))


if __name__ == "__main__":
    main()
