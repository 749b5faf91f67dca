"""`diagrama eval`'s speed: 1,000 offline cases of a two-block robot with two `check` scorers at concurrency 8.

Three figures (issue 39's targets: the whole eval under 10 s; the eval's own cost under 1 ms a case beyond the run):

1. the whole command, as a person runs it: a `diagrama eval … --offline` process, start-up and JSON included;
2. in-process, the eval (`run_eval` + `eval_json`) against the same 1,000 runs made the same way without scoring
   (`new_turn` + `run_turn` on as many workers), best of three each: the difference per case;
3. the eval's own work measured directly: scoring every case and building the JSON, per case.

    python -m benchmarks.evals [--cases 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from blocks.registry import registry
from engine.runs.evals.evaluate import load_for_eval
from engine.runs.evals.results import eval_json
from engine.runs.evals.runner import run_eval
from engine.runs.evals.scorers import Scoring, score_case
from engine.runs.turn import new_turn, run_turn
from engine.runtime.context import Services

ROBOT = """diagram: two-blocks
blocks:
  - {id: start, type: Start, message_level: Release, inputs: {question: ""}, next: ask}
  - id: ask
    type: ClaudeRequest
    with: {model: claude-haiku-5-5, request: "{{ question }}", max_tokens: 50}
    set: {answer: "{{ result }}"}
"""
EVAL = """diagram: robot.yaml
cases: {jsonl: cases.jsonl}
scorers:
  - {id: mentions, check: "{{ expected in output }}"}
  - {id: succeeded, check: "{{ status == 'succeeded' and 'ask' in path }}"}
threshold: 0.5
"""


def write(folder: Path, cases: int) -> Path:
    (folder / "robot.yaml").write_text(ROBOT, encoding="utf-8")
    lines = [json.dumps({"id": f"c{i}", "inputs": {"question": f"where is order {i}"}, "expected": f"order {i}"})
             for i in range(cases)]
    (folder / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = folder / "robot.eval.yaml"
    path.write_text(EVAL, encoding="utf-8")
    return path


def whole_command(path: Path, folder: Path) -> float:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "engine.cli", "eval", str(path), "--offline", "--concurrency", "8",
                           "--output", "json", "--runs-dir", str(folder / "cli-runs")], capture_output=True, check=False)
    elapsed = time.perf_counter() - began
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["summary"]["score"] == 1.0
    return elapsed


async def runs_only(path: Path, runs_dir: Path) -> float:
    """The same runs as the eval makes, on the same pool shape, without scoring anything."""
    loaded, diagram = load_for_eval(path, registry())
    services = Services(environ={}, offline=True)
    queue = list(loaded.cases)
    began = time.perf_counter()

    async def worker() -> None:
        while queue:
            case = queue.pop()
            await run_turn(new_turn(diagram, case.inputs, store=None), services=services, runs_dir=runs_dir)

    await asyncio.gather(*(worker() for _ in range(8)))
    return time.perf_counter() - began


async def whole_eval(path: Path, runs_dir: Path) -> tuple[float, float]:
    """The eval in-process; and its own work (scoring each case again, and the JSON), timed alone."""
    loaded, diagram = load_for_eval(path, registry())
    services = Services(environ={}, offline=True)
    began = time.perf_counter()
    outcome = await run_eval(loaded, diagram, services=services, runs_dir=runs_dir, concurrency=8)
    eval_json(outcome, 0.5)
    elapsed = time.perf_counter() - began
    began = time.perf_counter()
    for case in outcome.cases:
        run = case.last
        seen = Scoring(run.result, case.case.inputs, case.case.expected, run.output, run.latency_ms, None)
        await score_case(loaded.spec.scorers, seen, services, case.case.id)
    eval_json(outcome, 0.5)
    return elapsed, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    cases = parser.parse_args().cases
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = write(folder, cases)
        command = whole_command(path, folder)
        plain = min(asyncio.run(runs_only(path, folder / f"plain-{i}")) for i in range(3))
        evals = [asyncio.run(whole_eval(path, folder / f"eval-{i}")) for i in range(3)]
        evaluated = min(elapsed for elapsed, _ in evals)
        own = min(work for _, work in evals)
    print(f"{cases} cases, 2 check scorers, concurrency 8, offline")
    print(f"  diagrama eval (whole process):       {command:6.2f} s")
    print(f"  in-process eval:                     {evaluated:6.2f} s   ({evaluated / cases * 1000:.3f} ms a case)")
    print(f"  the same runs, unscored:             {plain:6.2f} s   ({plain / cases * 1000:.3f} ms a case)")
    print(f"  difference:                          {(evaluated - plain) / cases * 1000:6.3f} ms a case")
    print(f"  scoring + JSON alone:                {own / cases * 1000:6.3f} ms a case")


if __name__ == "__main__":
    main()
