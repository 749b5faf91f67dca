"""Instructions per step, counted by valgrind: the same comparisons as engine_steps, without the clock's noise.

On a shared machine, timings of a microsecond step move by a third from one run to the next; the
number of instructions a step executes does not (within a few per cent: hash seeds and run ids
vary). Each figure runs one program at two sizes under `valgrind --tool=cachegrind --cache-sim=no`
and divides the difference of their instruction counts by the difference of their steps, so that
start-up cancels out:

- diagrama's counter cycle in process (Release and Debug, the trace written to a file),
- the same counter as a whole `diagrama run … --output json` process, stderr to a pipe (Debug
  includes the per-block console lines),
- LangGraph's counter (one node adds 1, a conditional edge loops), when LangGraph is installed.

Instructions are not time: on this project's 2-core machine LangGraph's step ran about 7
instructions a nanosecond and diagrama's about 12, so the ratio of instructions is about half the
ratio of times. The figures are for telling changes apart (a change of 3 % shows); engine_steps
gives the times, and the issue's ratios are of times.

    python -m benchmarks.instructions      # needs valgrind (Debian: apt install valgrind)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.engine_steps import counter_yaml

ROOT = Path(__file__).resolve().parent.parent

_IN_PROCESS = """
import asyncio, sys
from pathlib import Path
from blocks.registry import registry
from engine import MessageLevel, execute
from engine.compile.loader import load_diagram
folder = Path(sys.argv[1])
diagram = load_diagram(folder / "counter.yaml", registry())
asyncio.run(execute(diagram, runs_dir=folder / "runs", message_level=MessageLevel[sys.argv[2]]))
"""

_LANGGRAPH = """
import sys
from benchmarks.engine_steps import langgraph_counter_app
steps = int(sys.argv[1])
assert langgraph_counter_app(steps).invoke({"i": 0}, {"recursion_limit": steps + 10})["i"] == steps
"""


def instructions(command: list[str]) -> int:
    """The instructions `command` executes (its children's not counted: none here)."""
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           *command], capture_output=True, text=True, cwd=ROOT, check=False,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{' '.join(command)} failed under valgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


Command = Callable[[int], list[str]]
"""command(steps): the program to count, sized to run that many steps."""


def per_step(make_command: Command, sizes: tuple[int, int]) -> int:
    small, large = sizes
    counts = [instructions(make_command(size)) for size in sizes]
    return (counts[1] - counts[0]) // (large - small)


def diagrama_command(folder: Path, level: str, cli: bool) -> Command:
    def command(steps: int) -> list[str]:
        sized = folder / f"{steps}"
        sized.mkdir(exist_ok=True)
        (sized / "counter.yaml").write_text(counter_yaml(steps), encoding="utf-8")
        if cli:
            return [sys.executable, "-m", "engine.cli", "run", str(sized / "counter.yaml"), "--output", "json",
                    "--message-level", level, "--runs-dir", str(sized / "runs")]
        return [sys.executable, "-c", _IN_PROCESS, str(sized), level.upper()]

    return command


def main() -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt install valgrind)")
    figures: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as folder:
        for cli in (False, True):
            for level in ("Release", "Debug"):
                name = f"{'cli_' if cli else ''}counter {level}"
                figures[name] = per_step(diagrama_command(Path(folder), level, cli), (1_000, 6_000))
                print(json.dumps({"benchmark": name, "instructions_per_step": figures[name]}), flush=True)
    try:
        import langgraph
    except ImportError:
        print(json.dumps({"benchmark": "langgraph_counter", "skipped": "pip install -e '.[bench]' for LangGraph"}))
        return
    langgraph = per_step(lambda steps: [sys.executable, "-c", _LANGGRAPH, str(steps)], (200, 1_200))
    print(json.dumps({"benchmark": "langgraph_counter", "instructions_per_step": langgraph}), flush=True)
    for name, count in figures.items():
        print(json.dumps({"benchmark": f"{name} vs langgraph", "times_fewer": round(langgraph / count, 1)}))


if __name__ == "__main__":
    main()
