"""`wait: true` answers its headers at once — the run's Location and X-Run-Id — and its body when the run ends: a
client whose connection drops while it waits has the run to poll."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.api.conftest import AUTH, GATES, Served
from tests.api.test_durable_api import add_durable_robots


def test_the_runs_location_comes_before_its_result(make_app: Callable[..., Any], serve: Callable[..., Served]) -> None:
    served = serve(make_app())
    gate = GATES.setdefault("w", threading.Event())
    with httpx.stream("POST", f"{served.url}/v1/robots/holder/runs", json={"inputs": {"gate": "w"}}, headers=AUTH,
                      timeout=30) as waiting:
        # The run is held at its gate: these headers came before any result could.
        status, location, run_id = waiting.status_code, waiting.headers["location"], waiting.headers["x-run-id"]
        meanwhile = httpx.get(f"{served.url}{location}", headers=AUTH).json()
        gate.set()
        result = waiting.read()
    assert status == 200 and waiting.headers["content-type"] == "application/json"
    assert location == f"/v1/runs/{run_id}"
    assert meanwhile["run_id"] == run_id and meanwhile["status"] == "running"
    answered = httpx.get(f"{served.url}{location}", headers=AUTH).json()
    assert httpx.Response(200, content=result).json() == answered
    assert answered["status"] == "succeeded" and answered["variables"]["done"] is True


def test_a_client_that_drops_while_waiting_finds_its_run(make_app: Callable[..., Any],
                                                         serve: Callable[..., Served]) -> None:
    served = serve(make_app())
    gate = GATES.setdefault("d", threading.Event())
    with httpx.stream("POST", f"{served.url}/v1/robots/holder/runs", json={"inputs": {"gate": "d"}}, headers=AUTH,
                      timeout=30) as waiting:
        location = waiting.headers["location"]
    # The connection is gone; the run goes on, and its URL answers it.
    gate.set()
    with httpx.stream("GET", f"{served.url}{location}/events", headers=AUTH, timeout=30) as events:
        events.read()  # the stream closes once the run has ended
    assert httpx.get(f"{served.url}{location}", headers=AUTH).json()["status"] == "succeeded"


def test_a_resume_that_waits_sends_the_location_too(make_app: Callable[..., Any], robots_dir: Path,
                                                   serve: Callable[..., Served]) -> None:
    add_durable_robots(robots_dir)
    served = serve(make_app())
    asked = httpx.post(f"{served.url}/v1/robots/approve/runs", json={}, headers=AUTH, timeout=30)
    run_id = asked.json()["run_id"]
    assert asked.headers["location"] == f"/v1/runs/{run_id}" and asked.headers["x-run-id"] == run_id
    resumed = httpx.post(f"{served.url}/v1/runs/{run_id}/resume", json={"answer": {"approved": True}},
                         headers=AUTH, timeout=30)
    assert resumed.status_code == 200 and resumed.json()["status"] == "succeeded"
    assert resumed.headers["location"] == f"/v1/runs/{run_id}" and resumed.headers["x-run-id"] == run_id
