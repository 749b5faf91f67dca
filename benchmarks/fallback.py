"""What a `fallback` costs a request block whose own vendor answers (issue 40's target: no extra request, nothing
measurable in time).

In process, offline, at Release: a ClaudeRequest answered by the simulator that links back to itself (500 steps),
run with and without `fallback: [{type: GeminiRequest, ...}, {type: GroqChatRequest, ...}]` in paired rounds (a slow
spell of the shared machine hits both). Each round counts the requests the simulator got, per vendor: the runs with
a fallback must send exactly as many, all to Anthropic. Prints one JSON line: µs per step (median of the rounds),
the median of the paired differences, and the requests per vendor of one run of each.

    python -m benchmarks.fallback [--repeat 9] [--requests 500]
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
from collections import Counter
from pathlib import Path

from blocks.registry import registry
from engine import MessageLevel, Services, execute
from engine.compile.loader import load_diagram_text
from engine.providers import Simulator

FALLBACK = ("fallback: [{type: GeminiRequest, model: gemini-2.5-flash}, "
            "{type: GroqChatRequest, model: llama-3.3-70b-versatile}]")


def cycle(steps: int, fallback: bool) -> str:
    return f"""diagram: cycle
blocks:
  - id: start
    type: Start
    max_steps: {steps + 10}
    variables: {{i: 0}}
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {{model: claude-sonnet-4-5, request: 'Where is order 57?', max_tokens: 50}}
    {FALLBACK if fallback else ""}
    set: {{i: "{{{{ i + 1 }}}}"}}
    next: [{{to: ask, when: "{{{{ i < {steps} }}}}"}}]
"""


def paired(steps: int, repeat: int, runs: Path) -> tuple[dict[str, list[float]], dict[str, Counter[str]]]:
    """µs per step without and with a fallback, in rounds that run both (the first round warms up), and the
    requests each sent, per vendor."""
    diagrams = {name: load_diagram_text(cycle(steps, name == "fallback"), runs / f"{name}.yaml", registry())
                for name in ("plain", "fallback")}
    samples: dict[str, list[float]] = {name: [] for name in diagrams}
    sent: dict[str, Counter[str]] = {}

    async def rounds() -> None:
        for index in range(repeat + 1):
            order = list(diagrams.items()) if index % 2 else list(reversed(diagrams.items()))
            for name, diagram in order:
                simulator = Simulator()
                services = Services(offline=True, environ={}, simulator=simulator)
                began = time.perf_counter()
                result = await execute(diagram, runs_dir=runs, services=services, message_level=MessageLevel.RELEASE)
                elapsed = time.perf_counter() - began
                assert result.succeeded, result.errors
                sent[name] = Counter(request.vendor for request in simulator.requests)
                if index:
                    samples[name].append(elapsed / result.steps * 1e6)

    asyncio.run(rounds())
    return samples, sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "system": platform.system()}
    with tempfile.TemporaryDirectory() as folder:
        samples, sent = paired(args.requests, args.repeat, Path(folder))
    plain, fallback = samples["plain"], samples["fallback"]
    assert sent["fallback"] == sent["plain"], sent  # a fallback adds no request when the first vendor answers
    print(json.dumps({
        "benchmark": "fallback_unused_request_step", "level": "Release", "steps": args.requests,
        "us_per_step": round(statistics.median(plain), 3),
        "us_per_step_with_fallback": round(statistics.median(fallback), 3),
        "fallback_adds_us": round(statistics.median(f - p for p, f in zip(plain, fallback, strict=True)), 3),
        "requests": dict(sent["plain"]), "requests_with_fallback": dict(sent["fallback"]), **machine}), flush=True)


if __name__ == "__main__":
    main()
