"""A 10,000-pass `count` Loop with one Set body block: µs per step and per pass, vs LangGraph.

Each pass is two steps (the Loop and its body). Measured at Release and at Debug; then
`diagrama trace RUN --block body` over the Debug trace is timed as a subprocess.

    python -m benchmarks.loop_steps [--passes 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.engine_steps import langgraph_counter
from blocks.registry import registry
from engine import MessageLevel, execute
from engine.compile.loader import load_diagram_text


def loop_yaml(passes: int) -> str:
    return f"""diagram: loop-bench
blocks:
  - {{id: start, type: Start, max_steps: {2 * passes + 10}, variables: {{total: 0}}, next: loop}}
  - {{id: loop, type: Loop, with: {{count: {passes}, max_iterations: {passes}}}, body: body, next: done}}
  - {{id: body, type: Set, set: {{total: "{{{{ total + index }}}}"}}, next: loop}}
  - {{id: done, type: Set}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--passes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        runs_dir = Path(folder)
        diagram = load_diagram_text(loop_yaml(args.passes), runs_dir / "loop.yaml", registry())
        figures = {}
        last_run = None
        for level in (MessageLevel.RELEASE, MessageLevel.DEBUG):
            per_pass: list[float] = []

            async def runs(level: MessageLevel = level, per_pass: list[float] = per_pass) -> None:
                nonlocal last_run
                for _ in range(args.repeat + 1):
                    began = time.perf_counter()
                    result = await execute(diagram, runs_dir=runs_dir, message_level=level)
                    per_pass.append((time.perf_counter() - began) / args.passes * 1e6)
                    assert result.succeeded and result.variables["total"] == sum(range(args.passes))
                    last_run = result

            asyncio.run(runs())
            median = statistics.median(per_pass[1:])
            figures[level.name.title()] = median
            print(json.dumps({"benchmark": "count_loop", "level": level.name.title(), "passes": args.passes,
                              "us_per_pass": round(median, 3), "us_per_step": round(median / 2, 3)}))
        assert last_run is not None and last_run.trace is not None
        began = time.perf_counter()
        shown = subprocess.run([sys.executable, "-m", "engine.cli", "trace", str(last_run.trace), "--block", "body"],
                               capture_output=True, text=True, check=True)
        elapsed = time.perf_counter() - began
        rows = sum(1 for line in shown.stdout.splitlines() if line[:5].strip().isdigit())
        print(json.dumps({"benchmark": "trace_block_filter", "trace_lines": sum(1 for _ in last_run.trace.open()),
                          "rows": rows, "seconds": round(elapsed, 3)}))
    langgraph = langgraph_counter(2_000, 3)
    if langgraph is not None:
        for name, pass_us in figures.items():
            print(json.dumps({"benchmark": "loop_pass_vs_langgraph_step", "level": name,
                              "langgraph_us_per_step": round(langgraph, 1), "times_cheaper": round(langgraph / pass_us, 1)}))


if __name__ == "__main__":
    main()
