"""Executor cost per block step, in µs, at message levels Release and Debug, side by side with LangGraph.

In process: (a) a 200-block chain of Set blocks with no `set`; (b) a counter cycle of one
Set block (`i = i + 1` while i < N) for 10,000 steps. As a user runs it (`--cli`): the
whole `diagrama run FILE --output json` process, stdout and stderr to pipes (the per-block
lines at Debug included), for the counter and for a `count` Loop, per step from the
difference of two sizes (start-up cancels out); wall time and the child's CPU time, the
latter steadier on a shared machine. (c) The same counter in LangGraph (one node adds 1, a
conditional edge loops). Traces are written to a temporary folder, as in a real run.

Ratios are of CPU time and paired: LangGraph's counter runs between the repeats of each of
our figures, so that a ratio compares runs made in the same minutes (on a shared VM the
speed of both moves by a third from one minute to the next). Each ratio is given twice: of
the fastest repeats (`times_faster`, the figure least disturbed by the neighbours, as
`timeit` advises) and of the medians (`times_faster_median`). Prints one JSON line per figure.

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
from dataclasses import dataclass
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


@dataclass
class Figure:
    """µs per step: the median of the repeats, and the fastest (the least disturbed by the machine's neighbours)."""

    median: float
    fastest: float


class Samples:
    """µs per step of repeated runs."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def add(self, value: float) -> None:
        self.values.append(value)

    def figure(self) -> Figure:
        return Figure(statistics.median(self.values), min(self.values))


Between = Callable[[], None]
"""Run between two repeats of a figure (LangGraph's counter, for the paired ratio)."""


def measure(text: str, level: MessageLevel, repeat: int, runs_dir: Path,
            clock: Callable[[], float] = time.perf_counter, between: Between = lambda: None) -> tuple[Samples, int]:
    """µs per step of in-process runs, by `clock` (wall time, or `time.process_time` for CPU time)."""
    diagram = load_diagram_text(text, runs_dir / "bench.yaml", registry())
    per_step = Samples()
    steps = 0

    async def runs() -> None:
        nonlocal steps
        for index in range(repeat + 1):  # the first run warms up (template compilation)
            between()
            began = clock()
            result = await execute(diagram, runs_dir=runs_dir, message_level=level)
            elapsed = clock() - began
            assert result.succeeded, result.errors
            steps = result.steps
            if index:
                per_step.add(elapsed / steps * 1e6)

    asyncio.run(runs())
    return per_step, steps


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
                 repeat: int, folder: Path, between: Between = lambda: None) -> tuple[dict[str, float], Figure]:
    """µs per step of a whole `diagrama run` process: (large − small) / (their step difference), of the
    medians (the printed figures) and of the CPU time's medians and fastest runs (for the ratios)."""
    times: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
    paths = {}
    for size in sizes:
        paths[size] = folder / f"cli_{size}.yaml"
        paths[size].write_text(make_yaml(size))
    for index in range(repeat + 1):
        between()
        for size in sizes:  # interleaved, so that a slow spell of the machine hits both sizes
            with tempfile.TemporaryDirectory(dir=folder) as runs:
                measured = _cli_run(paths[size], level, Path(runs))
            if index:  # the first round warms the disk cache and the .pyc files
                times[size].append(measured)
    small, large = sizes
    steps = (large - small) * steps_per_unit
    wall = (statistics.median(w for w, _ in times[large]) - statistics.median(w for w, _ in times[small])) / steps
    cpu = (statistics.median(c for _, c in times[large]) - statistics.median(c for _, c in times[small])) / steps
    cpu_fastest = (min(c for _, c in times[large]) - min(c for _, c in times[small])) / steps
    return ({"us_per_step": round(wall * 1e6, 3), "us_per_step_cpu": round(cpu * 1e6, 3),
             "process_s_small": round(statistics.median(w for w, _ in times[small]), 3)},
            Figure(cpu * 1e6, cpu_fastest * 1e6))


def cli_figures(args: argparse.Namespace, machine: dict[str, str], langgraph: LangGraphBeside | None
                ) -> dict[str, tuple[Figure, Figure | None]]:
    """The counter and the Loop as a user runs them: each figure's rounds, and LangGraph's beside them."""
    from benchmarks.loop_steps import loop_yaml

    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        for level in ("Release", "Debug"):
            extra = args.cli_steps * (4 if level == "Release" else 1)
            for name, make, sizes, per_unit in (
                ("cli_counter", counter_yaml, (1_000, 1_000 + extra), 1),
                ("cli_loop", loop_yaml, (500, 500 + extra // 2), 2),
            ):
                figure, cpu = cli_per_step(make, sizes, per_unit, level, args.cli_repeat, Path(folder),
                                              langgraph.sample if langgraph else lambda: None)
                figures[f"{name} {level}"] = (cpu, langgraph.taken() if langgraph else None)
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
    """LangGraph's µs per step, the median of `repeat` runs after one to warm up (None without LangGraph)."""
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


class LangGraphBeside:
    """LangGraph's counter, run (CPU time) between the repeats of one of our figures."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.app = langgraph_counter_app(steps)
        self.samples = Samples()
        self.sample()  # a first run to warm up, not kept
        self.samples = Samples()

    def sample(self) -> None:
        assert self.app is not None
        began = time.process_time()
        result = self.app.invoke({"i": 0}, {"recursion_limit": self.steps + 10})
        self.samples.add((time.process_time() - began) / self.steps * 1e6)
        assert result["i"] == self.steps

    def taken(self) -> Figure:
        """LangGraph's figure from the runs since the last call."""
        taken, self.samples = self.samples, Samples()
        return taken.figure()


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
    langgraph = LangGraphBeside(args.langgraph_steps) if langgraph_counter_app(1) is not None else None
    between = langgraph.sample if langgraph else lambda: None
    figures: dict[str, tuple[Figure, Figure | None]] = {}
    if not args.cli_only:
        with tempfile.TemporaryDirectory() as folder:
            runs_dir = Path(folder)
            for level in (MessageLevel.RELEASE, MessageLevel.DEBUG):
                name = level.name.title()
                chain, chain_steps = measure(chain_yaml(200), level, args.repeat, runs_dir)
                counter, counter_steps = measure(counter_yaml(COUNTER_STEPS), level, args.repeat, runs_dir)
                counter_cpu, _ = measure(counter_yaml(COUNTER_STEPS), level, args.repeat, runs_dir, time.process_time,
                                         between)
                figures[f"counter_cycle {name}"] = (counter_cpu.figure(), langgraph.taken() if langgraph else None)
                print(json.dumps({"benchmark": "chain_200_set_blocks", "level": name,
                                  "us_per_step": round(chain.figure().median, 3), "steps": chain_steps, **machine}), flush=True)
                print(json.dumps({"benchmark": "counter_cycle", "level": name, "us_per_step": round(counter.figure().median, 3),
                                  "us_per_step_cpu": round(counter_cpu.figure().median, 3),
                                  "us_per_step_cpu_fastest": round(counter_cpu.figure().fastest, 3), "steps": counter_steps,
                                  **machine}), flush=True)
    if args.cli or args.cli_only:
        figures.update(cli_figures(args, machine, langgraph))
    if langgraph is None:
        print(json.dumps({"benchmark": "langgraph_counter", "skipped": "pip install -e '.[bench]' for LangGraph"}))
        return
    lg_wall = langgraph_counter(args.langgraph_steps, max(3, args.repeat // 2))
    print(json.dumps({"benchmark": "langgraph_counter", "us_per_step": round(lg_wall or 0, 3),
                      "steps": args.langgraph_steps, **machine}))
    # Ratios of CPU time per step, each against LangGraph's runs made between that figure's repeats.
    for name, (ours, theirs) in figures.items():
        benchmark, shown = name.split()
        assert theirs is not None
        print(json.dumps({"benchmark": f"{benchmark}_vs_langgraph", "level": shown,
                          "times_faster": round(theirs.fastest / ours.fastest, 1),
                          "times_faster_median": round(theirs.median / ours.median, 1),
                          "ours_us": round(ours.fastest, 3), "langgraph_us": round(theirs.fastest, 1)}))


if __name__ == "__main__":
    main()
