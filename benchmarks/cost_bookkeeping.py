"""What cost bookkeeping and budgets add to a step, in process, at Release (issue 40's target: under 1 µs to a step
without a request, nothing measurable to a request step).

Two cycles, each run with and without a Start `budget` in paired rounds (a slow spell of the shared machine hits
both): the counter cycle of benchmarks.engine_steps (a Set that links back to itself, 10,000 steps: no request, so
no cost is counted and no budget checked), and a request cycle (a GroqChatRequest answered by the simulator that
links back to itself, 500 steps: each step counts its usage and cost and, with a budget, estimates what the request
may spend and checks it before sending). A third figure times the bookkeeping alone: `cost_of` and the run's
`Spend.add` for one request's usage, as every request step does them. Prints one JSON line per figure: µs per step
(median of the rounds) and the median of the paired differences.

For the step without a request, the instruction count is the figure a shared machine's noise does not move:
`python -m benchmarks.paired --base CHECKOUT_BEFORE_COSTS --rounds 1 engine_steps --instructions`.

    python -m benchmarks.cost_bookkeeping [--repeat 9] [--steps 10000] [--requests 500]
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
import timeit
from pathlib import Path

from blocks.registry import registry
from engine import MessageLevel, Services, execute
from engine.compile.loader import load_diagram_text
from engine.providers.prices import cost_of
from engine.runtime.context import Spend

# A budget the runs never reach: what is measured is checking it, not stopping.
BUDGET = "budget: {usd: 1000, tokens: 1000000000, requests: 1000000}"


def cycle(steps: int, block: str, budget: bool) -> str:
    return f"""diagram: cycle
blocks:
  - id: start
    type: Start
    max_steps: {steps + 10}
    {BUDGET if budget else ""}
    variables: {{i: 0}}
    next: step
  - id: step
    {block}
    set: {{i: "{{{{ i + 1 }}}}"}}
    next: [{{to: step, when: "{{{{ i < {steps} }}}}"}}]
"""


SET = "type: Set"
REQUEST = "type: GroqChatRequest\n    with: {model: llama-3.3-70b-versatile, request: 'Where is order 57?', max_tokens: 50}"


def paired(block: str, steps: int, repeat: int, runs: Path) -> dict[str, list[float]]:
    """µs per step without and with a budget, in rounds that run both (the first round warms up)."""
    diagrams = {name: load_diagram_text(cycle(steps, block, name == "budget"), runs / f"{name}.yaml", registry())
                for name in ("plain", "budget")}
    samples: dict[str, list[float]] = {name: [] for name in diagrams}
    services = Services(offline=True, environ={})

    async def rounds() -> None:
        for index in range(repeat + 1):
            order = list(diagrams.items()) if index % 2 else list(reversed(diagrams.items()))
            for name, diagram in order:
                began = time.perf_counter()
                result = await execute(diagram, runs_dir=runs, services=services, message_level=MessageLevel.RELEASE)
                elapsed = time.perf_counter() - began
                assert result.succeeded, result.errors
                if index:
                    samples[name].append(elapsed / result.steps * 1e6)

    asyncio.run(rounds())
    return samples


def bookkeeping_us() -> float:
    """µs for one request's cost and count: `cost_of` (a price looked up, four kinds summed) and `Spend.add`."""
    usage = {"input_tokens": 812, "output_tokens": 95, "cache_read_tokens": 512}
    spend = Spend()

    def once() -> None:
        cost = cost_of("anthropic", "claude-sonnet-4-5", usage)
        spend.add(usage, None if cost is None else cost.usd)

    number = 100_000
    return min(timeit.repeat(once, number=number, repeat=5)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "system": platform.system()}
    with tempfile.TemporaryDirectory() as folder:
        runs = Path(folder)
        for name, block, steps in (("set_step", SET, args.steps), ("request_step", REQUEST, args.requests)):
            samples = paired(block, steps, args.repeat, runs)
            plain, budget = samples["plain"], samples["budget"]
            print(json.dumps({
                "benchmark": f"cost_bookkeeping_{name}", "level": "Release", "steps": steps,
                "us_per_step": round(statistics.median(plain), 3),
                "us_per_step_with_budget": round(statistics.median(budget), 3),
                "budget_adds_us": round(statistics.median(b - p for p, b in zip(plain, budget, strict=True)), 3),
                **machine}), flush=True)
    print(json.dumps({"benchmark": "cost_bookkeeping_per_request", "us": round(bookkeeping_us(), 3), **machine}),
          flush=True)


if __name__ == "__main__":
    main()
