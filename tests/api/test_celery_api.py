"""`diagrama api --backend celery` end to end: a real redis-server, a real worker process, the API enqueuing, reading
results from the run store and relaying events from the run's Redis stream; per-key limits shared by API processes."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from engine.runtime.trace import read_events as read_trace
from tests.api.conftest import AUTH, Served, read_events
from tests.batch.test_celery import broker, start_worker, stop

pytestmark = [pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="redis-server is absent (apt-get install redis-server)"),
              pytest.mark.slow]  # real Celery workers and a Redis server
__all__ = ["broker"]  # the fixture, imported for this module's tests

QA = """
diagram: qa
description: Asks Claude (offline) and keeps the answer.
blocks:
  - id: start
    type: Start
    message_level: Debug
    durable: false
    inputs: {question: "Quanto fa 2+2?"}
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {model: claude-haiku-5-5, request: "{{ question }}", max_tokens: 50}
    set: {answer: "{{ result }}"}
"""


@pytest.fixture
def celery_app(make_app: Callable[..., Any], robots_dir: Path, tmp_path: Path, broker: str) -> Callable[..., Any]:
    (robots_dir / "qa.yaml").write_text(QA.lstrip())

    def make(**options: Any) -> Any:
        return make_app(backend="celery", broker=broker, store_url=f"sqlite:///{tmp_path / 'shared.db'}", **options)

    return make


def test_runs_go_to_the_workers_and_answer_from_the_store(celery_app: Callable[..., Any], serve: Callable[..., Served],
                                                          broker: str, tmp_path: Path) -> None:
    served = serve(celery_app(admin_keys=("ci",)))  # an admin key reads events as the trace has them (test_shown)
    # Before any worker: the run is known to the API, and queued.
    queued = httpx.post(f"{served.url}/v1/robots/qa/runs", json={"wait": False}, headers=AUTH)
    assert queued.status_code == 202 and queued.json()["status"] == "queued"
    run_id = queued.json()["run_id"]
    assert httpx.get(f"{served.url}/v1/runs/{run_id}", headers=AUTH).json()["status"] == "queued"
    # The store is held locked until the test has seen run_finished: the worker records the run only after that.
    # (The robot keeps no checkpoints: they go to the same file, and would wait for the lock before the run began.)
    lock = sqlite3.connect(tmp_path / "shared.db", isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    worker = start_worker(broker, tmp_path)
    try:
        with httpx.stream("GET", f"{served.url}/v1/runs/{run_id}/events", headers=AUTH, timeout=60) as response:
            lines = response.iter_lines()
            events = []
            while not events or events[-1].event != "run_finished":
                events += read_events(lines, stop_after=1)
            lock.execute("COMMIT")
            assert read_events(lines) == []  # the stream ends after run_finished once the run is recorded...
        found = httpx.get(f"{served.url}/v1/runs/{run_id}", headers=AUTH).json()  # ...so a read then finds it
        waited = httpx.post(f"{served.url}/v1/robots/counter/runs", json={"inputs": {"times": "2"}}, headers=AUTH,
                            timeout=60)
    finally:
        lock.close()
        stop(worker)
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert events[0].event == "run_started" and events[-1].event == "run_finished"
    assert "provider_called" in [e.event for e in events]
    # The stream's events are the trace's lines, written by the worker.
    assert [orjson.loads(e.data) for e in events] == read_trace(tmp_path / "runs" / run_id / "trace.jsonl")
    assert found["status"] == "succeeded" and found["robot"] == "qa" and found["path"] == ["start", "ask"]
    assert found["variables"]["answer"].startswith("(simulated claude-haiku-5-5)")
    assert waited.status_code == 200
    body = waited.json()
    assert body["status"] == "succeeded" and body["path"] == ["start", "count", "count", "greet"]
    assert body["variables"]["greeting"] == "Olá, Ana! Counted to 2." and body["robot"] == "counter"
    # Another API process, sharing only the broker and the store, answers for the same run and its events.
    other = serve(celery_app(admin_keys=("ci",)))
    assert httpx.get(f"{other.url}/v1/runs/{run_id}", headers=AUTH).json() == found
    with httpx.stream("GET", f"{other.url}/v1/runs/{run_id}/events", headers={**AUTH, "Last-Event-ID": "2"},
                      timeout=60) as response:
        assert [e.id for e in read_events(response)] == [e.id for e in events][2:]
    assert httpx.get(f"{other.url}/v1/runs/20260101-000000-abcdef", headers=AUTH).status_code == 404


def test_a_keys_limit_is_shared_by_api_processes(celery_app: Callable[..., Any],
                                                 client: Callable[..., httpx.AsyncClient]) -> None:
    first, second = celery_app(rpm=2), celery_app(rpm=2)

    async def go() -> list[httpx.Response]:
        async with client(first) as one, client(second) as two:
            return [await one.get("/v1/robots"), await two.get("/v1/robots"), await one.get("/v1/robots"),
                    await two.get("/v1/robots", headers={"Authorization": "Bearer dgk_other-key-0123456789abcdef"})]

    answers = asyncio.run(go())
    assert [a.status_code for a in answers] == [200, 200, 429, 200]
    assert int(answers[2].headers["retry-after"]) >= 1


def test_durable_runs_on_the_workers_wait_resume_and_keep_sessions(
        celery_app: Callable[..., Any], serve: Callable[..., Served], broker: str, robots_dir: Path,
        tmp_path: Path) -> None:
    from tests.api.test_durable_api import FORM, add_durable_robots

    add_durable_robots(robots_dir)
    served = serve(celery_app(admin_keys=("ci",)))  # an admin key reads events as the trace has them (test_shown)
    worker = start_worker(broker, tmp_path)
    try:
        first = httpx.post(f"{served.url}/v1/robots/approve/runs", json={}, headers=AUTH, timeout=60).json()
        run = first["run_id"]
        read = httpx.get(f"{served.url}/v1/runs/{run}", headers=AUTH).json()
        wrong = httpx.post(f"{served.url}/v1/runs/{run}/resume", json={"answer": {}}, headers=AUTH, timeout=60)
        resumed = httpx.post(f"{served.url}/v1/runs/{run}/resume", json={"answer": {"approved": True}},
                             headers=AUTH, timeout=60)
        again = httpx.post(f"{served.url}/v1/runs/{run}/resume", json={"answer": {"approved": True}},
                           headers=AUTH, timeout=60)
        with httpx.stream("GET", f"{served.url}/v1/runs/{run}/events", headers=AUTH, timeout=60) as response:
            events = read_events(response)
        turns = [httpx.post(f"{served.url}/v1/robots/chat/runs", json={"inputs": {"message": m}, "session": "w"},
                            headers=AUTH, timeout=60).json() for m in ("one", "two")]
        session = httpx.get(f"{served.url}/v1/sessions/w", headers=AUTH).json()
        forgot = httpx.delete(f"{served.url}/v1/sessions/w", headers=AUTH)
    finally:
        stop(worker)
    assert first["status"] == "waiting" and first["waiting"]["form"] == FORM and read == first
    assert wrong.status_code == 400 and wrong.json()["problems"] == ['answer: "approved" is a required property']
    assert resumed.status_code == 200, resumed.text
    body = resumed.json()
    assert body["status"] == "succeeded" and body["path"] == ["start", "draft", "ask", "done"]
    assert body["variables"]["sent"] is True
    assert again.status_code == 409
    # One numbering for both parts, from the worker's trace: the first part read back from it, the rest streamed.
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert [orjson.loads(e.data) for e in events] == read_trace(tmp_path / "runs" / run / "trace.jsonl")
    assert [orjson.loads(e.data)["status"] for e in events if e.event == "run_finished"] == ["waiting", "succeeded"]
    assert [t["variables"]["said"] for t in turns] == [["one"], ["one", "two"]]
    assert session["turns"] == 2 and session["memory"]["said"] == ["one", "two"] and session["robot"] == "chat"
    assert forgot.status_code == 204


SLOWPOKE = """
diagram: slowpoke
description: Records an effect, then takes its time.
allowed_modules: [slowpoke_steps]
blocks:
  - id: start
    type: Start
    message_level: Debug
    next: mark
  - id: mark
    type: Function
    with: {function: "slowpoke_steps:mark"}
    next: nap
  - id: nap
    type: Function
    with: {function: "slowpoke_steps:nap", arguments: {seconds: 4}}
    set: {napped: "{{ result }}"}
"""
SLOWPOKE_STEPS = '''
import os
import time

def mark():
    with open(os.path.join(os.path.dirname(__file__), "marks.log"), "a") as log:
        log.write("marked\\n")
    return "marked"

def nap(seconds: float):
    time.sleep(seconds)
    return seconds
'''


def test_a_lost_workers_run_goes_on_from_its_checkpoint_on_another(
        celery_app: Callable[..., Any], serve: Callable[..., Served], broker: str, robots_dir: Path,
        tmp_path: Path) -> None:
    """A worker killed (SIGKILL) in a run's third block: the task comes back to another worker after its visibility
    timeout, which continues the run from its checkpoint under the same id (its first Function not run again)."""
    import signal
    import time

    (robots_dir / "slowpoke.yaml").write_text(SLOWPOKE.lstrip())
    (robots_dir / "slowpoke_steps.py").write_text(SLOWPOKE_STEPS)
    served = serve(celery_app())
    run = httpx.post(f"{served.url}/v1/robots/slowpoke/runs", json={"wait": False}, headers=AUTH).json()["run_id"]
    trace = tmp_path / "runs" / run / "trace.jsonl"
    first = start_worker(broker, tmp_path)
    try:
        for _ in range(400):  # until the first worker is in the nap
            if trace.is_file() and b'"block":"nap"' in trace.read_bytes():
                break
            time.sleep(0.05)
        assert trace.is_file() and b'"block":"nap"' in trace.read_bytes(), "the first worker never reached the nap"
    finally:
        stop(first, signal.SIGKILL)
    time.sleep(3.5)  # past the visibility timeout (3 s here): the task is given to the next worker that asks
    second = start_worker(broker, tmp_path)
    try:
        for _ in range(600):
            found = httpx.get(f"{served.url}/v1/runs/{run}", headers=AUTH).json()
            if found["status"] in ("succeeded", "failed"):
                break
            time.sleep(0.1)
    finally:
        stop(second)
    assert found["status"] == "succeeded", found
    assert found["path"] == ["start", "mark", "nap"] and found["variables"]["napped"] == 4
    assert (robots_dir / "marks.log").read_text() == "marked\n"  # the effect before the checkpoint ran once
    starts = [event for event in read_trace(trace) if event["event"] == "run_started"]
    assert [event.get("resumed_at") for event in starts] == [None, "nap"]  # the same run, on from its checkpoint
