"""The Celery backend end to end: a real redis-server and real worker processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from blocks.registry import registry
from engine import Services
from engine.compile.loader import load_diagram
from engine.runs.batch import read_rows, run_batch, write_results
from engine.runs.store import RunStore

pytestmark = [pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="redis-server is absent (apt-get install redis-server)"),
              pytest.mark.slow]  # real Celery workers and a Redis server

SLOW_TOOLS = '''
import time

def pause(seconds: float):
    time.sleep(seconds)
    return {"slept": seconds}
'''
REGISTRY = """
registry: slow
allowed_modules: [slow_tools]
tools:
  - function: pause
    handler: slow_tools:pause
    description: Waits.
    parameters: {type: object, properties: {seconds: {type: number}}, required: [seconds]}
"""
DIAGRAM = """
diagram: celery-batch
tools: slow.yaml
blocks:
  - id: start
    type: Start
    inputs: {n: 0, seconds: 0.0}
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {model: claude-haiku-5-5, request: "row {{ n }}", max_tokens: 50}
    set: {answer: "{{ result }}"}
    next: wait
  - id: wait
    type: ToolDispatch
    with: {calls: "{{ [{'id': 'c' ~ n, 'name': 'pause', 'arguments': {'seconds': seconds}}] }}"}
    set: {slept: "{{ results['c' ~ n].slept }}"}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A redis-server of its own on a free port (no persistence, its files in `folder`), answering: its URL."""
    import redis

    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", str(folder)], stdout=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        client.close()
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path) as url:
        yield url


def start_worker(broker: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DIAGRAMA_VISIBILITY_TIMEOUT": "3"}
    return subprocess.Popen([sys.executable, "-m", "engine.cli", "worker", "--broker", broker, "--concurrency", "2"],
                            env=env, cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / f"worker-{time.monotonic_ns()}.log", "wb"))


def stop(worker: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, sig)
    worker.wait(timeout=20)


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "slow_tools.py").write_text(SLOW_TOOLS)
    (tmp_path / "slow.yaml").write_text(REGISTRY)
    (tmp_path / "batch.yaml").write_text(DIAGRAM)
    (tmp_path / "rows.csv").write_text("n,seconds\n" + "".join(f"{i},0\n" for i in range(1, 13)))
    return {"diagram": tmp_path / "batch.yaml", "rows": tmp_path / "rows.csv", "runs": tmp_path / "runs"}


def test_celery_and_local_backends_write_the_same_results(broker: str, project, tmp_path: Path) -> None:
    from engine.runs.celery_backend import run_batch_on_celery

    diagram = load_diagram(project["diagram"], registry())
    rows = read_rows(project["rows"], diagram)
    local_store = RunStore(f"sqlite:///{tmp_path / 'local.db'}")
    asyncio.run(run_batch(diagram, rows, batch_id="same", store=local_store, services=Services(environ={}, offline=True),
                          runs_dir=project["runs"], concurrency=4))
    celery_store = RunStore(f"sqlite:///{tmp_path / 'shared.db'}")
    worker = start_worker(broker, tmp_path)
    try:
        outcome = run_batch_on_celery(diagram, rows, batch_id="same", store=celery_store, broker=broker,
                                      runs_dir=project["runs"], offline=True, console=None, timeout=60)
    finally:
        stop(worker)
    assert outcome.succeeded == 12 and outcome.not_run == 0
    write_results(tmp_path / "local.jsonl", local_store, "same", 12, ["answer", "slept"])
    write_results(tmp_path / "celery.jsonl", celery_store, "same", 12, ["answer", "slept"])
    assert (tmp_path / "celery.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert len(celery_store.batch_runs("same")) == 12


def test_a_killed_workers_row_is_resumed_by_another_from_its_checkpoint(broker: str, project, tmp_path: Path,
                                                                         store_url: str) -> None:
    # On each kind of store (tests/conftest.py's `store_url`): the workers keep the row's checkpoints in the run store.
    from engine.runs.celery_backend import run_batch_on_celery

    diagram = load_diagram(project["diagram"], registry())
    rows = [{"n": 1, "seconds": 4.0}]
    store = RunStore(store_url)
    first = start_worker(broker, tmp_path)
    import threading

    results: dict[str, object] = {}
    follower = threading.Thread(target=lambda: results.update(outcome=run_batch_on_celery(
        diagram, rows, batch_id="k", store=store, broker=broker, runs_dir=project["runs"], offline=True,
        console=None, timeout=60)))
    time.sleep(3)  # the first worker is up
    follower.start()
    trace = project["runs"] / "k-r000001" / "trace.jsonl"
    for _ in range(200):  # until the first worker is inside the slow tool
        if trace.is_file() and b"ToolDispatch" in trace.read_bytes():
            break
        time.sleep(0.05)
    stop(first, signal.SIGKILL)
    # The row stays unacknowledged in Redis; a worker that starts after its visibility
    # timeout (3 s here, DIAGRAMA_VISIBILITY_TIMEOUT) takes it back and runs it.
    time.sleep(3.5)
    second = start_worker(broker, tmp_path)
    try:
        follower.join(timeout=60)
    finally:
        stop(second)
    outcome = results["outcome"]
    assert outcome.succeeded == 1  # type: ignore[attr-defined]
    runs = store.batch_runs("k")
    assert len(runs) == 1 and runs[1]["status"] == "succeeded" and runs[1]["variables"]["slept"] == 4.0
    # The second worker continued the row from its checkpoint after `ask`: the same run and trace, attempt 1, the
    # request not sent again; only the tool call that was in flight ran twice.
    assert runs[1]["run_id"] == "k-r000001" and runs[1]["attempt"] == 1
    import orjson

    events = [orjson.loads(line) for line in trace.read_bytes().splitlines()]
    starts = [e for e in events if e["event"] == "run_started"]
    assert len(starts) == 2 and starts[1]["resumed_at"] == "wait" and starts[0]["pid"] != starts[1]["pid"]
    assert [e["block"] for e in events if e["event"] == "block_started"] == ["start", "ask", "wait", "wait"]
    assert events[-1]["event"] == "run_finished" and events[-1]["status"] == "succeeded"
    assert not (project["runs"] / "k-r000001-a2").exists()


def test_redis_token_bucket_is_shared_and_refills(broker: str) -> None:
    from engine.runs.celery_backend import RedisBuckets

    first, second = RedisBuckets(broker, {"groq": 60}), RedisBuckets(broker, {"groq": 60})  # two workers

    async def take(buckets: RedisBuckets, count: int) -> None:
        for _ in range(count):
            async with buckets.slot("groq"):
                pass

    async def go() -> float:
        began = time.monotonic()
        await take(first, 1)  # a full bucket: at once
        await take(second, 2)  # one bucket for both workers: each waits a refill (1 a second); two buckets: one wait
        return time.monotonic() - began

    assert 1.5 <= asyncio.run(go()) <= 4


def test_rows_of_one_session_take_turns_across_worker_processes(broker: str, tmp_path: Path) -> None:
    from engine.runs.celery_backend import run_batch_on_celery
    from engine.runs.checkpoints import SqliteCheckpoints
    from engine.runs.sessions import read_session

    (tmp_path / "chat.yaml").write_text("""
diagram: chat
blocks:
  - id: start
    type: Start
    memory: [history]
    inputs: {message: ""}
    variables: {history: []}
    next: think
  - id: think
    type: Set
    set: {history: "{{ history + [message] }}"}
""")
    (tmp_path / "rows.csv").write_text("session,message\n" + "".join(f"{'ab'[i % 2]},m{i}\n" for i in range(8)))
    diagram = load_diagram(tmp_path / "chat.yaml", registry())
    rows = read_rows(tmp_path / "rows.csv", diagram)
    store = RunStore(f"sqlite:///{tmp_path / 'runs' / 'diagrama.db'}")
    worker = start_worker(broker, tmp_path)  # two processes: rows of one session may reach both at once
    try:
        outcome = run_batch_on_celery(diagram, rows, batch_id="s", store=store, broker=broker,
                                      runs_dir=tmp_path / "runs", offline=True, console=None, timeout=60)
    finally:
        stop(worker)
    assert outcome.succeeded == 8
    checkpoints = SqliteCheckpoints(tmp_path / "runs" / "diagrama.db")
    for session, numbers in (("a", range(0, 8, 2)), ("b", range(1, 8, 2))):
        kept = read_session(checkpoints, session)
        assert kept is not None and kept["turns"] == 4 and kept["held_by"] is None
        # One turn at a time, none lost: every message once (in the order the workers took the session).
        assert sorted(kept["memory"]["history"]) == sorted(f"m{n}" for n in numbers)


def test_a_total_budget_is_shared_by_the_workers_and_a_resume_counts_what_was_spent(broker: str, project,
                                                                                   tmp_path: Path) -> None:
    from engine.format.spec import Budget
    from engine.runs.celery_backend import run_batch_on_celery

    diagram = load_diagram(project["diagram"], registry())
    rows = read_rows(project["rows"], diagram)  # 12 rows, one request each
    store = RunStore(f"sqlite:///{tmp_path / 'shared.db'}")
    worker = start_worker(broker, tmp_path)
    try:
        first = run_batch_on_celery(diagram, rows, batch_id="capped", store=store, broker=broker,
                                    runs_dir=project["runs"], offline=True, console=None, timeout=60,
                                    total=Budget(requests=5))
        spent = sum((run["cost"] or {}).get("requests", 0) for run in store.batch_runs("capped").values())
        again = run_batch_on_celery(diagram, rows, batch_id="capped", store=store, broker=broker,
                                    runs_dir=project["runs"], offline=True, console=None, timeout=60,
                                    total=Budget(requests=8))
    finally:
        stop(worker)
    # Counted in Redis by both worker processes: two rows checking at the same moment may each send one request.
    assert 5 <= spent <= 6 and first.budget_spent and first.not_run >= 12 - 6
    assert first.succeeded + first.failed + first.not_run == 12
    recorded = store.batch_runs("capped").values()
    assert sum((run["cost"] or {}).get("requests", 0) for run in recorded) <= 8 + 1
    assert again.budget_spent and again.succeeded >= 1
