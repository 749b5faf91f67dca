"""What a Subdiagram call and a concurrent Loop cost, in process and offline.

(a) A Subdiagram call: a `count` Loop of N passes whose body is one Subdiagram block running a
two-step child (Start, Set), against the same Loop whose body is two Set blocks doing the child's
work inline. The difference per pass is the call's own cost beyond the child's steps (issue 26's
target: ≤ 30 µs), in CPU time. At Release and at Debug (where the child's steps are traced, nested).
(b) A concurrent Loop: 100 items, each pass one GroqChatRequest that the simulator answers after
50 ms, at `concurrency: 10` (target: within 0.6 s; one at a time it takes 5 s), and at 1 and 100;
then the same with a body that only waits 50 ms (a block defined here), which leaves out the
request path's own CPU time (building, sending through httpx to the in-process simulator, parsing)
and so shows what the Loop's passes cost.

Traces go to a temporary folder, as in a real run. Prints one JSON line per figure.

    python -m benchmarks.subflows [--calls 2000] [--repeat 7]
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
from typing import Any

from pydantic import BaseModel

from blocks.registry import BUILTIN_BLOCKS, registry
from engine import Block, BlockRegistry, MessageLevel, RunContext, Services, execute
from engine.compile.loader import load_diagram
from engine.providers.simulator import Simulator


class PauseInputs(BaseModel):
    seconds: float = 0.05


class Pause(Block):
    """Waits, and answers with what it was given: a pass's work without the request path's CPU."""

    Inputs = PauseInputs

    async def run(self, inputs: PauseInputs, context: RunContext) -> dict[str, Any]:
        await asyncio.sleep(inputs.seconds)
        return {}

CHILD = """diagram: child
blocks:
  - {id: start, type: Start, inputs: {n: 0}, next: add}
  - {id: add, type: Set, set: {doubled: "{{ n * 2 }}"}}
"""


def calls_yaml(passes: int, *, inline: bool) -> str:
    body = ("""  - {id: start_like, type: Set, next: add}
  - {id: add, type: Set, set: {doubled: "{{ index * 2 }}"}, next: loop}
""" if inline else """  - id: start_like
    type: Subdiagram
    with: {diagram: child.yaml, inputs: {n: "{{ index }}"}}
    set: {doubled: "{{ variables.doubled }}"}
    next: loop
""")
    return f"""diagram: calls
blocks:
  - {{id: start, type: Start, max_steps: {passes * 5 + 10}, variables: {{doubled: 0}}, next: loop}}
  - {{id: loop, type: Loop, with: {{count: {passes}, max_iterations: {passes}}}, body: start_like, next: done}}
{body}  - {{id: done, type: Set}}
"""


def concurrent_yaml(items: int, concurrency: int) -> str:
    return f"""diagram: fan_out
blocks:
  - {{id: start, type: Start, variables: {{items: {list(range(items))}}}, next: each}}
  - id: each
    type: Loop
    with: {{for_each: "{{{{ items }}}}", concurrency: {concurrency}, max_iterations: {items}, collect: "{{{{ answer }}}}"}}
    body: ask
    set: {{answers: "{{{{ collected }}}}"}}
  - id: ask
    type: GroqChatRequest
    with: {{model: llama-3.3-70b-versatile, request: "item #{{{{ item }}}}."}}
    set: {{answer: "{{{{ result }}}}"}}
    next: each
"""


def paused_yaml(items: int, concurrency: int, delay: float) -> str:
    return f"""diagram: paused
blocks:
  - {{id: start, type: Start, variables: {{items: {list(range(items))}}}, next: each}}
  - id: each
    type: Loop
    with: {{for_each: "{{{{ items }}}}", concurrency: {concurrency}, max_iterations: {items}, collect: "{{{{ item }}}}"}}
    body: wait
    set: {{answers: "{{{{ collected }}}}"}}
  - {{id: wait, type: Pause, with: {{seconds: {delay}}}, next: each}}
"""


def paused(path: Path, items: int, runs_dir: Path) -> float:
    diagram = load_diagram(path, BlockRegistry((*BUILTIN_BLOCKS, Pause)))
    began = time.perf_counter()
    result = asyncio.run(execute(diagram, runs_dir=runs_dir, message_level=MessageLevel.RELEASE))
    elapsed = time.perf_counter() - began
    assert result.succeeded and result.variables["answers"] == list(range(items)), result.errors
    return elapsed


def _machine() -> dict[str, str]:
    return {"python": platform.python_version(), "machine": platform.machine()}


def per_pass(path: Path, level: MessageLevel, repeat: int, runs_dir: Path, passes: int) -> tuple[float, float]:
    """µs of CPU time per Loop pass of in-process runs (the first run warms up): the median and the fastest
    (CPU time, as it is steadier than wall time on a machine shared with others)."""
    diagram = load_diagram(path, registry())
    samples: list[float] = []

    async def runs() -> None:
        for index in range(repeat + 1):
            began = time.process_time()
            result = await execute(diagram, runs_dir=runs_dir, message_level=level)
            elapsed = time.process_time() - began
            assert result.succeeded, result.errors
            assert result.variables["doubled"] == (passes - 1) * 2
            if index:
                samples.append(elapsed / passes * 1e6)

    asyncio.run(runs())
    return statistics.median(samples), min(samples)


def fan_out(path: Path, items: int, delay: float, runs_dir: Path, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of runs whose `items` passes each wait `delay` s for the simulated vendor; a
    first run warms up (the request path's modules load with the first request a process sends). The CPU time
    tells a busy machine (wall far above `delay` × rounds + CPU) from a slow loop."""
    diagram = load_diagram(path, registry())
    samples: list[float] = []
    cpu: list[float] = []

    async def runs() -> None:
        for index in range(repeat + 1):
            simulator = Simulator({"ask": [{"text": f"answer {i}", "match": f"#{i}.", "delay": delay}
                                           for i in range(items)]})
            services = Services(environ={}, offline=True, simulator=simulator)
            began, began_cpu = time.perf_counter(), time.process_time()
            result = await execute(diagram, runs_dir=runs_dir, services=services, message_level=MessageLevel.RELEASE)
            elapsed, used = time.perf_counter() - began, time.process_time() - began_cpu
            assert result.succeeded, result.errors
            assert result.variables["answers"] == [f"answer {i}" for i in range(items)], "collected out of input order"
            if index:
                samples.append(elapsed)
                cpu.append(used)

    asyncio.run(runs())
    return statistics.median(samples), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        runs_dir = base / "runs"
        (base / "child.yaml").write_text(CHILD)
        (base / "sub.yaml").write_text(calls_yaml(args.calls, inline=False))
        (base / "inline.yaml").write_text(calls_yaml(args.calls, inline=True))
        for level in (MessageLevel.RELEASE, MessageLevel.DEBUG):
            inline = per_pass(base / "inline.yaml", level, args.repeat, runs_dir, args.calls)
            called = per_pass(base / "sub.yaml", level, args.repeat, runs_dir, args.calls)
            print(json.dumps({"benchmark": "subdiagram_call", "level": level.name.title(), "calls": args.calls,
                              "cpu_us_per_pass_inline": round(inline[0], 2),
                              "cpu_us_per_pass_subdiagram": round(called[0], 2),
                              "cpu_us_per_call_beyond_child_steps": round(called[0] - inline[0], 2),
                              "fastest_cpu_us_per_call_beyond_child_steps": round(called[1] - inline[1], 2),
                              "target_us": 30, **_machine()}))
        for concurrency in (10, 1, args.items):
            path = base / f"fan_out_{concurrency}.yaml"
            path.write_text(concurrent_yaml(args.items, concurrency))
            seconds, cpu = fan_out(path, args.items, args.delay, runs_dir, 1 if concurrency == 1 else 3)
            print(json.dumps({"benchmark": "concurrent_loop", "items": args.items, "delay_s": args.delay,
                              "concurrency": concurrency, "seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3),
                              **({"target_s": 0.6} if concurrency == 10 else {}), **_machine()}))
        for concurrency in (10, 1):
            path = base / f"paused_{concurrency}.yaml"
            path.write_text(paused_yaml(args.items, concurrency, args.delay))
            seconds = paused(path, args.items, runs_dir)
            print(json.dumps({"benchmark": "concurrent_loop_waits_only", "items": args.items, "delay_s": args.delay,
                              "concurrency": concurrency, "seconds": round(seconds, 3),
                              **({"target_s": 0.6} if concurrency == 10 else {}), **_machine()}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
