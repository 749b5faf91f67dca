"""Batch throughput: 2,000 offline runs of a 3-request-block diagram, in runs per second.

Local backend at concurrency 1, 10 and 100, and the Celery backend with 2 workers
(a redis-server on a loopback port; skipped without one). Then the engine's memory per
in-flight run: 1,000 runs held mid-request (a delayed simulated reply), traced with
tracemalloc, divided by 1,000.

    python -m benchmarks.batch_throughput [--runs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from blocks.registry import registry
from engine import Services, execute
from engine.compile.loader import load_diagram
from engine.providers import Simulator
from engine.runs.batch import run_batch
from engine.runs.store import RunStore

DIAGRAM = """diagram: three-requests
blocks:
  - {id: start, type: Start, message_level: Release, inputs: {n: 0}, next: a}
  - {id: a, type: ClaudeRequest, with: {model: claude-haiku-5-5, request: "first {{ n }}", max_tokens: 50}, next: b}
  - {id: b, type: GroqChatRequest, with: {model: llama-3.3-70b-versatile, request: "second {{ n }}"}, next: c}
  - {id: c, type: GeminiRequest, with: {model: gemini-3.5-flash, request: "third {{ n }}"}, set: {answer: "{{ result }}"}}
"""


def local(folder: Path, runs: int, concurrency: int) -> float:
    diagram = load_diagram(folder / "three.yaml", registry())
    store = RunStore(f"sqlite:///{folder / f'local-{concurrency}.db'}")
    rows = [{"n": i} for i in range(runs)]
    began = time.perf_counter()
    outcome = asyncio.run(run_batch(diagram, rows, batch_id=f"c{concurrency}", store=store,
                                    services=Services(environ={}, offline=True), runs_dir=folder / "runs",
                                    concurrency=concurrency))
    elapsed = time.perf_counter() - began
    assert outcome.succeeded == runs
    return runs / elapsed


def celery(folder: Path, runs: int, workers: int) -> float | None:
    if shutil.which("redis-server") is None:
        return None
    from engine.runs.celery_backend import run_batch_on_celery

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                               "no"], stdout=subprocess.DEVNULL)
    broker = f"redis://127.0.0.1:{port}/0"
    started = [subprocess.Popen([sys.executable, "-m", "engine.cli", "worker", "--broker", broker, "--concurrency", "1"],
                                start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for _ in range(workers)]
    try:
        time.sleep(4)
        diagram = load_diagram(folder / "three.yaml", registry())
        store = RunStore(f"sqlite:///{folder / 'celery.db'}")
        began = time.perf_counter()
        outcome = run_batch_on_celery(diagram, [{"n": i} for i in range(runs)], batch_id="celery", store=store,
                                      broker=broker, runs_dir=folder / "runs", offline=True, console=None, timeout=900)
        elapsed = time.perf_counter() - began
        assert outcome.succeeded == runs, outcome
        return runs / elapsed
    finally:
        for worker in started:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait()
        server.terminate()
        server.wait()


def memory_per_run(folder: Path, in_flight: int) -> float:
    diagram = load_diagram(folder / "three.yaml", registry())
    simulator = Simulator({"a": [{"delay": 2.0, "text": "slow"} for _ in range(in_flight)]})
    services = Services(environ={}, offline=True, simulator=simulator)

    async def go() -> float:
        await execute(diagram, {"n": -1}, runs_dir=None, services=Services(environ={}, offline=True))  # warm-up
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        tasks = [asyncio.create_task(execute(diagram, {"n": i}, runs_dir=None, services=services)) for i in range(in_flight)]
        await asyncio.sleep(1.0)  # every run is now waiting on its first (delayed) reply
        during = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        await asyncio.gather(*tasks)
        return (during - before) / in_flight

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "three.yaml").write_text(DIAGRAM)
        for concurrency in (1, 10, 100):
            rate = local(folder, args.runs, concurrency)
            print(json.dumps({"benchmark": "batch_local", "runs": args.runs, "concurrency": concurrency,
                              "runs_per_s": round(rate, 1)}))
        rate = celery(folder, args.runs, args.workers)
        print(json.dumps({"benchmark": "batch_celery", "runs": args.runs, "workers": args.workers,
                          "runs_per_s": round(rate, 1) if rate else None,
                          **({} if rate else {"skipped": "no redis-server"})}))
        per_run = memory_per_run(folder, 1000)
        print(json.dumps({"benchmark": "memory_per_in_flight_run", "runs_in_flight": 1000,
                          "kib_per_run": round(per_run / 1024, 1)}))


if __name__ == "__main__":
    main()
