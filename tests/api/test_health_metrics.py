"""`GET /health`, `GET /ready` and `GET /metrics` of `diagrama api`: liveness and readiness without a key (503
while draining), and Prometheus counters that follow the runs and event streams the server really had."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.api.conftest import AUTH, GATES, Served, inner, read_events

FAILER = """
diagram: failer
description: Fails on its second block (a division by its input, zero).
blocks:
  - id: start
    type: Start
    inputs: {zero: 0}
    next: bad
  - id: bad
    type: Set
    set: {x: "{{ 1 // zero }}"}
"""


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Each sample of a metrics page: (name, sorted labels) → value, read by prometheus_client's own parser."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_health_and_ready_answer_without_a_key_and_metrics_need_one(
        make_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app()

    async def go() -> list[httpx.Response]:
        async with client(app, **{"X-Nothing": "no key"}) as anyone:
            return [await anyone.get("/health"), await anyone.get("/ready"), await anyone.get("/metrics"),
                    await anyone.get("/v1/runs")]

    health, ready, metrics, listing = asyncio.run(go())
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert (ready.status_code, ready.json()) == (200, {"status": "ready", "checked": ["run store", "checkpoint store"]})
    assert metrics.status_code == 401 and listing.status_code == 401


def test_ready_is_503_naming_the_drain_while_the_server_drains(make_app: Callable[..., Any],
                                                              client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app()
    backend = inner(app).state.backend

    async def go() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        async with client(app) as caller:
            before = await caller.get("/ready")
            backend.draining = True  # what SIGTERM's drain sets on the backend
            during = await caller.get("/ready")
            alive = await caller.get("/health")
            return before, during, alive

    before, during, alive = asyncio.run(go())
    assert before.status_code == 200
    assert during.status_code == 503
    assert during.json()["error"] == "not ready"
    assert during.json()["problems"] == ["draining: the server is stopping and takes no new runs"]
    assert alive.status_code == 200  # draining is not dead: a liveness probe must not restart it


def test_metrics_count_the_runs_by_robot_and_status_with_steps_durations_and_tokens(
        make_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient], robots_dir: Path) -> None:
    from tests.api.test_celery_api import QA

    (robots_dir / "failer.yaml").write_text(FAILER.lstrip())
    (robots_dir / "qa.yaml").write_text(QA.lstrip())
    app = make_app()
    backend = inner(app).state.backend

    async def go() -> tuple[list[dict[str, Any]], str, str]:
        async with client(app) as caller:
            ran = [(await caller.post(f"/v1/robots/{robot}/runs", json={})).json()
                   for robot in ("counter", "counter", "failer", "qa")]
            held = (await caller.post("/v1/robots/holder/runs", json={"wait": False, "inputs": {"gate": "m"}})).json()
            during = (await caller.get("/metrics")).text
            GATES.setdefault("m", threading.Event()).set()
            async with caller.stream("GET", held["events"]) as events:  # it closes when the run has ended
                await events.aread()
            ran.append((await caller.get(held["run"])).json())
            await backend.recorded()
            return ran, during, (await caller.get("/metrics")).text

    ran, during, after = asyncio.run(go())
    assert [run["status"] for run in ran] == ["succeeded", "succeeded", "failed", "succeeded", "succeeded"]
    assert samples(during)[("diagrama_runs_in_flight", ())] == 1
    found = samples(after)
    assert found[("diagrama_runs_in_flight", ())] == 0
    assert found[("diagrama_runs_total", (("robot", "counter"), ("status", "succeeded")))] == 2
    assert found[("diagrama_runs_total", (("robot", "failer"), ("status", "failed")))] == 1
    assert found[("diagrama_runs_total", (("robot", "holder"), ("status", "succeeded")))] == 1
    assert found[("diagrama_run_duration_seconds_count", (("robot", "counter"),))] == 2
    assert found[("diagrama_run_steps_total", (("robot", "counter"),))] == ran[0]["steps"] + ran[1]["steps"]
    tokens = backend.store.run(ran[3]["run_id"])["tokens"]
    assert tokens > 0 and found[("diagrama_run_tokens_total", (("robot", "qa"),))] == tokens
    assert ("diagrama_queue_depth", ()) not in found  # the local backend has no queue


def test_open_event_streams_are_counted_while_clients_read_them(make_app: Callable[..., Any],
                                                                serve: Callable[..., Served]) -> None:
    served = serve(make_app())
    run = httpx.post(f"{served.url}/v1/robots/holder/runs", json={"wait": False, "inputs": {"gate": "s"}},
                     headers=AUTH).json()

    def open_streams() -> float:
        return samples(httpx.get(f"{served.url}/metrics", headers=AUTH).text)[("diagrama_event_streams_open", ())]

    before = open_streams()
    with httpx.stream("GET", f"{served.url}{run['events']}", headers=AUTH, timeout=30) as response:
        lines = response.iter_lines()
        first = read_events(lines, stop_after=1)
        during = open_streams()
        GATES["s"].set()
        rest = read_events(lines)
    after = open_streams()
    assert first[0].event == "run_started" and rest[-1].event == "run_finished"
    assert (before, during, after) == (0, 1, 0)
