"""What a Function step costs over a Set step, in µs, at Release, in process.

The counter cycle of benchmarks.engine_steps (one block sets `i = i + 1` and links back to itself while `i <
N`, 10,000 steps), its block a Set, then a Function calling an `async def` that returns at once (awaited in
the run's task, its first step at once: done with no scheduling, no task and no timer, so what is left is the
block's own cost; issue 26's target is 3 µs over the Set step), then a Function calling a plain `def` (run on
a handler thread, as every sync function is, reused from the last call: the hand-over to the thread and the
loop's wake-up dominate). The functions take one constant argument and return a small dict. Traces go to a
temporary folder, as in a real run. Prints one JSON line per figure: µs per step (median and fastest of the
repeats) and the difference from the Set cycle (the median of the paired rounds' differences, and the
difference of the fastest), with the Python version and machine.

`--instructions` counts instead, under valgrind (benchmarks.instructions): instructions per step of
the Set and the async Function cycles, the figure a shared machine's noise does not move.

    python -m benchmarks.function_steps [--repeat 15] [--steps 10000] [--instructions]
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

MODULE = '''
async def quick(order_id):
    return {"order_id": order_id, "total": 120.5}

def plain(order_id):
    return {"order_id": order_id, "total": 120.5}
'''


def counter_yaml(steps: int, block: str) -> str:
    return f"""diagram: counter
allowed_modules: [bench_functions]
blocks:
  - id: start
    type: Start
    max_steps: {steps + 10}
    inputs: {{N: {steps}}}
    variables: {{i: 0}}
    next: count
  - id: count
    {block}
    set: {{i: "{{{{ i + 1 }}}}"}}
    next: [{{to: count, when: "{{{{ i < N }}}}"}}]
"""


BLOCKS = {
    "set": "type: Set",
    "function_async": "type: Function\n    with: {function: 'bench_functions:quick', arguments: {order_id: 42}}",
    "function_sync": "type: Function\n    with: {function: 'bench_functions:plain', arguments: {order_id: 42}}",
}


def paired(names: tuple[str, ...], steps: int, repeat: int, runs: Path) -> tuple[dict[str, list[float]], dict[str, int]]:
    """µs per step of each cycle named, in rounds that run every one once: a slow spell of a shared machine
    hits them all. The first round warms up (templates, the route, the function's import)."""
    diagrams = {name: load_diagram_text(counter_yaml(steps, BLOCKS[name]), runs / f"{name}.yaml", registry())
                for name in names}
    samples: dict[str, list[float]] = {name: [] for name in names}
    taken: dict[str, int] = {}

    async def rounds() -> None:
        for index in range(repeat + 1):
            for name, diagram in diagrams.items():
                began = time.perf_counter()
                result = await execute(diagram, runs_dir=runs, message_level=MessageLevel.RELEASE)
                elapsed = time.perf_counter() - began
                assert result.succeeded, result.errors
                taken[name] = result.steps
                if index:
                    samples[name].append(elapsed / result.steps * 1e6)

    asyncio.run(rounds())
    return samples, taken


_IN_PROCESS = """
import asyncio, sys
from pathlib import Path
from blocks.registry import registry
from engine import MessageLevel, execute
from engine.compile.loader import load_diagram
diagram = load_diagram(Path(sys.argv[1]), registry())
asyncio.run(execute(diagram, runs_dir=Path(sys.argv[1]).parent / "runs", message_level=MessageLevel.RELEASE))
"""


def count_instructions(machine: dict[str, str]) -> None:
    """Instructions per step of the Set and the async Function cycles (valgrind; start-up cancels out)."""
    from benchmarks.instructions import per_step

    with tempfile.TemporaryDirectory() as folder:
        runs = Path(folder)
        (runs / "bench_functions.py").write_text(MODULE)
        counts = {}
        for name in ("set", "function_async"):
            def command(steps: int, name: str = name) -> list[str]:
                path = runs / f"{name}_{steps}.yaml"
                path.write_text(counter_yaml(steps, BLOCKS[name]))
                return [sys.executable, "-c", _IN_PROCESS, str(path)]

            counts[name] = per_step(command, (1_000, 6_000))
        print(json.dumps({"benchmark": "function_steps_instructions", "level": "Release",
                          "set_instructions_per_step": counts["set"],
                          "function_async_instructions_per_step": counts["function_async"],
                          "over_set": counts["function_async"] - counts["set"], **machine}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--instructions", action="store_true", help="count instructions under valgrind instead")
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "system": platform.system()}
    if args.instructions:
        count_instructions(machine)
        return
    with tempfile.TemporaryDirectory() as folder:
        runs = Path(folder)
        (runs / "bench_functions.py").write_text(MODULE)
        # The sync cycle apart, with fewer steps: a thread a step, and a thousand threads' exits slow what follows.
        for names, steps in ((("set", "function_async"), args.steps), (("set", "function_sync"), args.steps // 10)):
            samples, taken = paired(names, steps, args.repeat, runs)
            base = samples["set"]
            for name in names[1:]:
                values = samples[name]
                print(json.dumps({
                    "benchmark": "function_steps", "cycle": name, "level": "Release", "steps": taken[name],
                    "us_per_step": round(statistics.median(values), 3), "us_per_step_fastest": round(min(values), 3),
                    "set_us_per_step": round(statistics.median(base), 3), "set_us_per_step_fastest": round(min(base), 3),
                    "over_set_us": round(statistics.median(v - b for v, b in zip(values, base, strict=True)), 3),
                    "over_set_us_fastest": round(min(values) - min(base), 3), **machine}), flush=True)


if __name__ == "__main__":
    main()
