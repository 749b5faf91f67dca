"""Start-up as a user feels it: whole `diagrama` processes, median of several runs.

    python -m benchmarks.startup [--repeat 15]

Each command runs once first so that Python has written its bytecode caches, as it has on a
user's machine after the first command; PYTHONDONTWRITEBYTECODE is dropped from the
environment for the same reason. Targets: `--help` within 8× a bare `python -c pass` (issue 36: the
ratio is printed), `validate` of diagrams/order_agent.yaml < 0.3 s (issue 16).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = {
    "help": ["--help"],
    "validate order_agent": ["validate", "diagrams/order_agent.yaml"],
    "validate claude_qa": ["validate", "diagrams/claude_qa.yaml"],
    "graph order_agent": ["graph", "diagrams/order_agent.yaml"],
}


def _diagrama() -> list[str]:
    found = shutil.which("diagrama")
    return [found] if found else [sys.executable, "-m", "engine.cli"]


def time_command(arguments: list[str], repeat: int) -> float:
    """Median wall seconds of `diagrama ARGUMENTS` as a whole process (output discarded)."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = _diagrama() + arguments
    subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, check=True)  # bytecode written
    timings = []
    for _ in range(repeat):
        began = time.perf_counter()
        subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, check=True)
        timings.append(time.perf_counter() - began)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    bare = [sys.executable, "-c", "pass"]
    timings = []
    for _ in range(args.repeat):
        began = time.perf_counter()
        subprocess.run(bare, check=True)
        timings.append(time.perf_counter() - began)
    python_itself = statistics.median(timings)
    figures: dict[str, float] = {"python_itself_s": round(python_itself, 4)}
    for name, arguments in COMMANDS.items():
        figures[f"{name}_s"] = round(time_command(arguments, args.repeat), 4)
    figures["help_over_python_itself"] = round(figures["help_s"] / python_itself, 1)
    print(json.dumps({"benchmark": "startup", "repeat": args.repeat, **figures,
                      "cpus": os.cpu_count(), "python": sys.version.split()[0]}, indent=1))


if __name__ == "__main__":
    main()
