"""Before/after: one benchmark in two checkouts, run in turns, each figure's ratio taken within a round.

On this project's shared 2-core machine a microsecond step's time moves by a third from one minute to the next,
so two figures measured minutes apart tell nothing about a change of a few per cent. This runs the benchmark
module in the `--base` checkout and in this one in turns (the order swapped every round), and for every figure
both print (one JSON line per figure, keyed by `benchmark` and `level`) gives the ratio this/base of each round
and the median of those ratios: a change of a step's cost shows as a ratio away from 1.00 in every round.

    git worktree add --detach /tmp/wt-base main        # the "before"
    python -m benchmarks.paired --base /tmp/wt-base --rounds 5 engine_steps --repeat 5
    python -m benchmarks.paired --base /tmp/wt-base --rounds 5 loop_steps --repeat 5

Both checkouts run with this interpreter; each imports its own code (the benchmark runs with its checkout as the
working directory). Prints one JSON line per figure: base and this checkout's medians, the per-round ratios and
their median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FIGURES = ("us_per_step", "us_per_step_cpu", "us_per_step_cpu_fastest", "us_per_pass", "instructions_per_step")
"""The fields compared, where a figure has them (lower is better for each)."""


def figures(tree: Path, module: str, extra: list[str]) -> dict[str, float]:
    """`python -m benchmarks.MODULE EXTRA` in `tree`: each compared field of each figure, by `benchmark level field`."""
    done = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *extra], cwd=tree, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{module} failed in {tree}:\n{done.stderr[-3000:]}")
    found: dict[str, float] = {}
    for line in done.stdout.splitlines():
        try:
            figure = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(figure, dict):
            continue
        name = " ".join(str(part) for part in (figure.get("benchmark"), figure.get("level")) if part)
        for field in _FIGURES:
            if isinstance(figure.get(field), (int, float)):
                found[f"{name} {field}"] = float(figure[field])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="the checkout to compare with (the before)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("module", help="a module of benchmarks/: engine_steps, loop_steps, instructions, ...")
    parser.add_argument("extra", nargs=argparse.REMAINDER, help="the benchmark's own options")
    args = parser.parse_args()
    base: dict[str, list[float]] = {}
    head: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    for round_number in range(args.rounds):
        trees = [(args.base, base), (ROOT, head)]
        if round_number % 2:
            trees.reverse()  # neither checkout always runs first
        measured = [(store, figures(tree, args.module, args.extra)) for tree, store in trees]
        by_store = {id(store): found for store, found in measured}
        for store, found in measured:
            for key, value in found.items():
                store.setdefault(key, []).append(value)
        before, after = by_store[id(base)], by_store[id(head)]
        for key in before.keys() & after.keys():
            if before[key] > 0:
                ratios.setdefault(key, []).append(after[key] / before[key])
        print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    for key in sorted(ratios):
        print(json.dumps({"figure": key, "base_median": round(statistics.median(base[key]), 3),
                          "this_median": round(statistics.median(head[key]), 3),
                          "ratio_median": round(statistics.median(ratios[key]), 3),
                          "ratios": [round(r, 3) for r in ratios[key]]}), flush=True)


if __name__ == "__main__":
    main()
