"""Start-up as a user feels it: whole `diagrama` processes, median of several runs.

    python -m benchmarks.startup [--repeat 15]

Each command runs once first so that Python has written its bytecode caches, as it has on a
user's machine after the first command; PYTHONDONTWRITEBYTECODE is dropped from the
environment for the same reason. Targets (issue 16): `--help` < 0.2 s, `validate` of
diagrams/order_agent.yaml < 0.3 s.
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
    began = time.perf_counter()
    for _ in range(args.repeat):
        subprocess.run(bare, check=True)
    figures = {"python_itself_s": round((time.perf_counter() - began) / args.repeat, 3)}
    for name, arguments in COMMANDS.items():
        figures[f"{name}_s"] = round(time_command(arguments, args.repeat), 3)
    print(json.dumps({"benchmark": "startup", "repeat": args.repeat, **figures,
                      "cpus": os.cpu_count(), "python": sys.version.split()[0]}, indent=1))


if __name__ == "__main__":
    main()
