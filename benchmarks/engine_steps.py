"""Executor cost per block step, in µs, at message levels Release and Debug.

In process: (a) a 200-block chain of Set blocks with no `set`; (b) a counter cycle of one
Set block (`i = i + 1` while i < N) for 10,000 steps. As a user runs it (`--cli`): the
whole `diagrama run FILE --output json` process, stdout and stderr to pipes (the per-block
lines at Debug included), for the counter and for a `count` Loop, per step from the
difference of two sizes (start-up cancels out); wall time and the child's CPU time, the
latter steadier on a shared machine. (c) The same counter in LangGraph, in the same run,
and each figure as a ratio to it. Traces are written to a temporary folder, as in a real
run. Prints one JSON line per figure (medians of several repeats).

    python -m benchmarks.engine_steps [--repeat 7] [--cli] [--cli-only] [--cli-steps 40000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from blocks.registry import registry
from engine import MessageLevel, execute
from engine.compile.loader import load_diagram_text

COUNTER_STEPS = 10_000
ROOT = Path(__file__).resolve().parent.parent


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


def measure(text: str, level: MessageLevel, repeat: int, runs_dir: Path,
            clock: Callable[[], float] = time.perf_counter) -> tuple[float, int]:
    """µs per step of in-process runs, by `clock` (wall time, or `time.process_time` for CPU time)."""
    diagram = load_diagram_text(text, runs_dir / "bench.yaml", registry())
    per_step: list[float] = []
    steps = 0

    async def runs() -> None:
        nonlocal steps
        for _ in range(repeat + 1):  # the first run warms up (template compilation)
            began = clock()
            result = await execute(diagram, runs_dir=runs_dir, message_level=level)
            elapsed = clock() - began
            assert result.succeeded, result.errors
            steps = result.steps
            per_step.append(elapsed / steps * 1e6)

    asyncio.run(runs())
    return statistics.median(per_step[1:]), steps


def _cli_run(path: Path, level: str, runs_dir: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `diagrama run` process, its output read through pipes."""
    command = [sys.executable, "-m", "engine.cli", "run", str(path), "--output", "json",
               "--message-level", level, "--runs-dir", str(runs_dir)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["status"] == "succeeded"
    if level != "Release":
        assert done.stderr.count(b"\n") > 1000, "the per-block lines are missing from stderr"
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cli_per_step(make_yaml: Callable[[int], str], sizes: tuple[int, int], steps_per_unit: int, level: str,
                 repeat: int, folder: Path) -> dict[str, float]:
    """µs per step of a whole `diagrama run` process: (large − small) / (their step difference), medians."""
    times: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
    paths = {}
    for size in sizes:
        paths[size] = folder / f"cli_{size}.yaml"
        paths[size].write_text(make_yaml(size))
    for index in range(repeat + 1):
        for size in sizes:  # interleaved, so that a slow spell of the machine hits both sizes
            with tempfile.TemporaryDirectory(dir=folder) as runs:
                measured = _cli_run(paths[size], level, Path(runs))
            if index:  # the first round warms the disk cache and the .pyc files
                times[size].append(measured)
    small, large = sizes
    steps = (large - small) * steps_per_unit
    wall = (statistics.median(w for w, _ in times[large]) - statistics.median(w for w, _ in times[small])) / steps
    cpu = (statistics.median(c for _, c in times[large]) - statistics.median(c for _, c in times[small])) / steps
    return {"us_per_step": round(wall * 1e6, 3), "us_per_step_cpu": round(cpu * 1e6, 3),
            "process_s_small": round(statistics.median(w for w, _ in times[small]), 3)}


def cli_figures(args: argparse.Namespace, machine: dict[str, str]) -> dict[str, float]:
    """The counter and the Loop as a user runs them; the figures by name, for the ratios."""
    from benchmarks.loop_steps import loop_yaml

    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        for level in ("Release", "Debug"):
            extra = args.cli_steps * (4 if level == "Release" else 1)
            for name, make, sizes, per_unit in (
                ("cli_counter", counter_yaml, (1_000, 1_000 + extra), 1),
                ("cli_loop", loop_yaml, (500, 500 + extra // 2), 2),
            ):
                figure = cli_per_step(make, sizes, per_unit, level, args.cli_repeat, Path(folder))
                figures[f"{name} {level}"] = figure["us_per_step_cpu"]
                print(json.dumps({"benchmark": name, "level": level, **figure,
                                  "steps": [s * per_unit for s in sizes], "stderr": "pipe", **machine}), flush=True)
    return figures


def langgraph_counter_app(steps: int) -> Any | None:
    """LangGraph's counter cycle, compiled: one node adds 1, a conditional edge loops until `steps`
    (None when LangGraph is not installed). `invoke({"i": 0}, {"recursion_limit": steps + 10})` runs it."""
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
    return graph.compile()


def langgraph_counter(steps: int, repeat: int, clock: Callable[[], float] = time.perf_counter) -> float | None:
    app = langgraph_counter_app(steps)
    if app is None:
        return None
    per_step = []
    for _ in range(repeat + 1):
        began = clock()
        result = app.invoke({"i": 0}, {"recursion_limit": steps + 10})
        per_step.append((clock() - began) / steps * 1e6)
        assert result["i"] == steps
    return statistics.median(per_step[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--langgraph-steps", type=int, default=2_000)
    parser.add_argument("--cli", action="store_true", help="also measure whole `diagrama run` processes")
    parser.add_argument("--cli-only", action="store_true", help="only the whole-process figures (and LangGraph)")
    parser.add_argument("--cli-steps", type=int, default=40_000,
                        help="steps between the two sizes at Debug (four times as many at Release)")
    parser.add_argument("--cli-repeat", type=int, default=5)
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "processor": platform.processor()}
    figures: dict[str, float] = {}
    if not args.cli_only:
        with tempfile.TemporaryDirectory() as folder:
            runs_dir = Path(folder)
            for level in (MessageLevel.RELEASE, MessageLevel.DEBUG):
                name = level.name.title()
                chain, chain_steps = measure(chain_yaml(200), level, args.repeat, runs_dir)
                counter, counter_steps = measure(counter_yaml(COUNTER_STEPS), level, args.repeat, runs_dir)
                counter_cpu, _ = measure(counter_yaml(COUNTER_STEPS), level, args.repeat, runs_dir, time.process_time)
                figures[f"counter_cycle {name}"] = counter_cpu
                print(json.dumps({"benchmark": "chain_200_set_blocks", "level": name, "us_per_step": round(chain, 3),
                                  "steps": chain_steps, **machine}), flush=True)
                print(json.dumps({"benchmark": "counter_cycle", "level": name, "us_per_step": round(counter, 3),
                                  "us_per_step_cpu": round(counter_cpu, 3), "steps": counter_steps, **machine}),
                      flush=True)
    if args.cli or args.cli_only:
        figures.update(cli_figures(args, machine))
    lg_wall = langgraph_counter(args.langgraph_steps, max(3, args.repeat // 2))
    lg = langgraph_counter(args.langgraph_steps, max(3, args.repeat // 2), time.process_time)
    if lg is None or lg_wall is None:
        print(json.dumps({"benchmark": "langgraph_counter", "skipped": "pip install -e '.[bench]' for LangGraph"}))
        return
    print(json.dumps({"benchmark": "langgraph_counter", "us_per_step": round(lg_wall, 3),
                      "us_per_step_cpu": round(lg, 3), "steps": args.langgraph_steps, **machine}))
    # Ratios of CPU time per step: on a shared machine, wall time mostly measures the neighbours.
    for name, ours in figures.items():
        benchmark, shown = name.split()
        print(json.dumps({"benchmark": f"{benchmark}_vs_langgraph", "level": shown,
                          "times_faster": round(lg / ours, 1) if ours > 0 else None}))


if __name__ == "__main__":
    main()
