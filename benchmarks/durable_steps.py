"""A durable step beside LangGraph's counter on SqliteSaver, paired; and resuming a 1,000-step run's checkpoint.

Three counters of `--steps` steps, in rounds (each round runs all three, in turn, so that the load
of this shared machine falls on all alike), CPU time per step, medians over the rounds:

- diagrama, durable: a Function (a block with effects) calls an `async def` that adds 1, and the run is
  checkpointed after every step into the default SQLite store (stdlib sqlite3, WAL, synchronous=NORMAL), as
  `diagrama run` does (`--sync`: also with a plain `def`, which runs on a handler thread);
- diagrama, the same diagram with `durable: false` (what a checkpoint adds is the difference);
- LangGraph's counter compiled with `SqliteSaver` (langgraph-checkpoint-sqlite) on a file.

With `--store URL` (e.g. postgresql+psycopg://user@127.0.0.1/db) a fourth counter checkpoints into that
database instead (engine.runs.checkpoints_sql), and the resume figure is given for it too.

Then `--process`: `diagrama run` as a process on the same Function counter, `--steps` steps against 1 step,
per step.
Last, a 1,000-step durable run is interrupted in the store and its checkpoint read back for resume
(`resume_turn`: the run's row, its checkpoints, the last one decoded, the diagram loaded), timed.

    python -m benchmarks.durable_steps [--steps 2000] [--rounds 7] [--process] [--store URL]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from blocks.registry import BUILTIN_BLOCKS
from engine import BlockRegistry, Services, execute
from engine.compile.loader import load_diagram_text
from engine.runs.checkpoints import CheckpointStore, SqliteCheckpoints, open_checkpoints

COUNTER_MODULE = """
async def add_one(n):
    return n + 1

def add_one_sync(n):
    return n + 1
"""
"""The Function counter's function (`bench_counter.py` beside the diagrams): `async def`, awaited in the run's task,
or the plain `def` a thread runs (`--sync` also times that one)."""


def counter_yaml(steps: int, *, durable: bool, function: str = "add_one", level: str = "Default") -> str:
    """The issue's counter: a Function (a block with effects, so checkpointed after every step) adds one. `level`:
    the Start's message level (Default is Debug: a trace event a step, as `diagrama run` writes by default)."""
    return f"""diagram: durable-counter
allowed_modules: [bench_counter]
blocks:
  - {{id: start, type: Start, durable: {str(durable).lower()}, max_steps: {steps + 10}, variables: {{count: 0}},
      message_level: {level}, next: tick}}
  - id: tick
    type: Function
    with: {{function: "bench_counter:{function}", arguments: {{n: "{{{{ count }}}}"}}}}
    set: {{count: "{{{{ result }}}}"}}
    next: [{{to: tick, when: "{{{{ count < {steps} }}}}"}}]
"""


def langgraph_sqlite(steps: int, path: Path) -> Any | None:
    """LangGraph's counter compiled with SqliteSaver on `path`; None without langgraph-checkpoint-sqlite."""
    try:
        import sqlite3
        from typing import TypedDict

        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph
    except ImportError:
        return None

    class State(TypedDict):
        i: int

    graph = StateGraph(State)
    graph.add_node("count", lambda state: {"i": state["i"] + 1})
    graph.add_edge(START, "count")
    graph.add_conditional_edges("count", lambda s: "count" if s["i"] < steps else END)
    return graph.compile(checkpointer=SqliteSaver(sqlite3.connect(path, check_same_thread=False)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--process", action="store_true", help="also time `diagrama run` as a process")
    parser.add_argument("--store", help="also checkpoint into this SQLAlchemy URL's database (e.g. PostgreSQL)")
    parser.add_argument("--sync", action="store_true", help="also time the counter with a plain `def` (on a thread)")
    args = parser.parse_args()
    steps: int = args.steps
    blocks = BlockRegistry(BUILTIN_BLOCKS)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "bench_counter.py").write_text(COUNTER_MODULE)
        durable = load_diagram_text(counter_yaml(steps, durable=True), root / "durable.yaml", blocks)
        sync = load_diagram_text(counter_yaml(steps, durable=True, function="add_one_sync"), root / "sync.yaml", blocks)
        release = load_diagram_text(counter_yaml(steps, durable=True, level="Release"), root / "release.yaml", blocks)
        plain = load_diagram_text(counter_yaml(steps, durable=False), root / "plain.yaml", blocks)
        store = SqliteCheckpoints(root / "runs" / "diagrama.db")
        app = langgraph_sqlite(steps, root / "langgraph.db")
        other = open_checkpoints(args.store, root / "runs") if args.store else None
        named = f"diagrama durable, {args.store.split(':', 1)[0]}" if args.store else ""
        figures: dict[str, list[float]] = {"diagrama durable": [], "diagrama durable: false": [],
                                           "diagrama durable, Release": [], "LangGraph SqliteSaver": []}
        if other is not None:
            figures[named] = []
        if args.sync:
            figures["diagrama durable, sync def"] = []
        walls: list[float] = []

        def ours(diagram: Any, into: CheckpointStore = store) -> float:
            began, wall = time.process_time(), time.perf_counter()
            result = asyncio.run(execute(diagram, runs_dir=None, services=Services(checkpoints=into)))
            assert result.succeeded and result.variables["count"] == steps, result.errors
            if into is other:
                walls.append((time.perf_counter() - wall) / steps * 1e6)
            return (time.process_time() - began) / steps * 1e6

        for round_ in range(args.rounds + 1):  # the first round warms up
            samples = {"diagrama durable": ours(durable), "diagrama durable: false": ours(plain),
                       "diagrama durable, Release": ours(release)}
            if other is not None:
                samples[named] = ours(durable, other)
            if args.sync:
                samples["diagrama durable, sync def"] = ours(sync)
            if app is not None:
                began = time.process_time()
                result = app.invoke({"i": 0}, {"recursion_limit": steps + 10, "configurable": {"thread_id": str(round_)}})
                samples["LangGraph SqliteSaver"] = (time.process_time() - began) / steps * 1e6
                assert result["i"] == steps
            if round_:
                for name, value in samples.items():
                    figures[name].append(value)
        print(f"{steps}-step counters, CPU µs per step, median of {args.rounds} paired rounds:")
        for name, values in figures.items():
            if values:
                print(f"  {name:<36} {statistics.median(values):8.1f}")
        if walls:  # the database's own time (its server process) is not this process's CPU time
            print(f"  {named} wall time: {statistics.median(walls[1:]):.1f} µs a step")
        ours_durable = statistics.median(figures["diagrama durable"])
        print(f"  a checkpoint adds {ours_durable - statistics.median(figures['diagrama durable: false']):.1f} µs")
        if figures["LangGraph SqliteSaver"]:
            for ours_name in ("diagrama durable", "diagrama durable, Release"):
                ratio = statistics.median(a / b for a, b in zip(figures["LangGraph SqliteSaver"], figures[ours_name],
                                                                strict=True))
                print(f"  LangGraph SqliteSaver / {ours_name}: {ratio:.1f}× (target ≥ 20×)")
        if args.process:
            _process(root, max(steps, 20_000), sync=args.sync)
        _resume_figure(root, blocks, store)
        if other is not None:
            _resume_figure(root, blocks, other)


def _process(root: Path, steps: int, *, sync: bool = False) -> None:
    """`diagrama run` as a process: `steps` durable Function steps against 1, per step (wall time), at Debug (the
    default) and Release, with `sync` also a plain `def` at Debug; then LangGraph's counter as a process, the same
    way, and the ratios (the issue's targets)."""
    per_step: dict[str, float] = {}
    shapes = [("Default", "add_one"), ("Release", "add_one")] + ([("Default", "add_one_sync")] if sync else [])
    for level, function in shapes:
        name = level if function == "add_one" else f"{level}, sync def"
        times = {}
        for count in (1, steps):
            path = root / f"process{count}{level}{function}.yaml"
            path.write_text(counter_yaml(count, durable=True, level=level, function=function))
            walls = []
            for _ in range(5):
                began = time.perf_counter()
                subprocess.run([sys.executable, "-m", "engine.cli", "run", str(path), "-q", "--runs-dir",
                                str(root / "p")], check=True, capture_output=True)
                walls.append(time.perf_counter() - began)
            times[count] = statistics.median(walls)
        per_step[name] = (times[steps] - times[1]) / (steps - 1) * 1e6
        print(f"  `diagrama run` as a process, Function counter, {name}: "
              f"{per_step[name]:.1f} µs a durable step (wall, median of 5, "
              f"{steps:,} steps against 1: the process's start-up taken out)")
    if sync:
        print(f"  a plain def / an async def, as processes: {per_step['Default, sync def'] / per_step['Default']:.2f}× "
              "(target ≤ 1.5×)")
    times = {}
    for count in (1, steps):  # LangGraph's counter on SqliteSaver, as a process too: the same measure
        walls = []
        for run in range(5):
            began = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", _LANGGRAPH_PROCESS, str(root / f"lg{count}-{run}.db"),
                                   str(count)], capture_output=True, text=True, cwd=Path(__file__).parents[1])
            walls.append(time.perf_counter() - began)
            if done.returncode:
                print(f"  LangGraph as a process: not measured ({done.stderr.strip().splitlines()[-1]})")
                return
        times[count] = statistics.median(walls)
    langgraph = (times[steps] - times[1]) / (steps - 1) * 1e6
    print(f"  LangGraph SqliteSaver counter as a process: {langgraph:.1f} µs a step (wall, the same way)")
    for level, ours in per_step.items():
        print(f"  as processes, LangGraph SqliteSaver / `diagrama run` {level}: {langgraph / ours:.1f}× (target ≥ 20×)")


_LANGGRAPH_PROCESS = """
import sys
from pathlib import Path
from benchmarks.durable_steps import langgraph_sqlite
steps = int(sys.argv[2])
app = langgraph_sqlite(steps, Path(sys.argv[1]))
assert app is not None, "langgraph-checkpoint-sqlite is not installed"
assert app.invoke({"i": 0}, {"recursion_limit": steps + 10, "configurable": {"thread_id": "1"}})["i"] == steps
"""
"""LangGraph's counter (`langgraph_sqlite`, the one timed in process) run in a process of its own."""


def _resume_figure(root: Path, blocks: BlockRegistry, store: CheckpointStore) -> None:
    from engine.runs.turn import resume_turn

    path = root / "thousand.yaml"
    path.write_text(counter_yaml(1000, durable=True))
    from engine.compile.loader import load_diagram

    result = asyncio.run(execute(load_diagram(path, blocks), runs_dir=None, services=Services(checkpoints=store)))
    from sqlalchemy import create_engine, text

    engine = create_engine(store.url)  # as if killed before its last checkpoint
    with engine.begin() as connection:
        last = {"run": result.run_id}
        connection.execute(text("DELETE FROM checkpoints WHERE run_id = :run AND seq = (SELECT max(seq) FROM "
                                "checkpoints WHERE run_id = :run)"), last)
        connection.execute(text("UPDATE run_states SET status = 'interrupted' WHERE run_id = :run"), last)
    engine.dispose()
    walls = []
    for _ in range(7):
        began = time.perf_counter()
        resumption = resume_turn(store, result.run_id, registry=blocks, take=False)
        walls.append((time.perf_counter() - began) * 1000)
    assert resumption.resumed is not None and resumption.resumed.steps == len(resumption.resumed.path) > 1000
    print(f"  resume of a 1,000-step run's checkpoint ({store.url.split(':', 1)[0]}): {statistics.median(walls):.1f} ms "
          f"(1,001 checkpoints; the last decoded; the diagram loaded) (target < 50 ms)")


if __name__ == "__main__":
    main()
