"""Running robots through the API: the listing, a run's result, bad bodies and inputs, unknown robots and runs,
runs that do not wait, 200 at once, and keys kept out of what a run answers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.conftest import AUTH, KEY, inner


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_robots_list_each_diagram_with_its_inputs_schema_and_leave_out_broken_ones(
        client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> dict[str, Any]:
        async with client() as caller:
            answered = await caller.get("/v1/robots")
        assert answered.status_code == 200
        return {robot["name"]: robot for robot in answered.json()["robots"]}

    robots = run(go())
    assert sorted(robots) == ["counter", "echoer", "holder", "speaker"]  # broken.yaml has problems; data/ is no robot
    counter = robots["counter"]
    assert counter["description"].startswith("Counts to N")
    assert counter["inputs"]["properties"] == {
        "name": {"type": "string", "default": "Ana"}, "times": {"type": "integer", "default": 3},
        "loud": {"type": "boolean", "default": False}, "ratio": {"type": "number", "default": 0.5},
        "tags": {"type": "array", "default": []}, "options": {"type": "object", "default": {}}}
    assert counter["memory"] == [] and counter["can_wait"] is False


def test_a_run_answers_its_result_in_the_shape_of_run_output_json(client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> httpx.Response:
        async with client() as caller:
            return await caller.post("/v1/robots/counter/runs", json={"inputs": {"name": "Bea", "times": "2"}})

    answered = run(go())
    assert answered.status_code == 200
    body = answered.json()
    assert body["status"] == "succeeded" and body["robot"] == "counter"
    assert body["path"] == ["start", "count", "count", "greet"]
    assert body["variables"]["greeting"] == "Olá, Bea! Counted to 2." and body["variables"]["times"] == 2  # typed
    assert body["errors"] == [] and body["steps"] == 4
    assert set(body) == {"run_id", "robot", "status", "variables", "path", "errors", "steps", "duration_ms", "cost",
                         "usage"}
    assert body["cost"] == {"usd": 0.0, "requests": 0, "unknown_steps": 0, "known_usd": None}  # no request
    assert body["usage"] == {}


def test_bad_inputs_are_refused_with_every_problem(client: Callable[..., httpx.AsyncClient], tmp_path: Path) -> None:
    async def go() -> httpx.Response:
        async with client() as caller:
            return await caller.post("/v1/robots/counter/runs", json={"inputs": {
                "times": "many", "loud": 3, "ratio": True, "tags": {"a": 1}, "nmae": "x", "name": 5}})

    answered = run(go())
    assert answered.status_code == 400
    problems = answered.json()["problems"]
    assert "input 'times' is a whole number (default 3), got 'many'" in problems
    assert any(p.startswith("input 'loud' is true or false") for p in problems)
    assert any(p.startswith("input 'ratio' is a number") for p in problems)
    assert any(p.startswith("input 'tags' is a list") for p in problems)
    assert any(p.startswith("input 'name' is text") for p in problems)
    assert "the robot has no input 'nmae'; did you mean 'name'?" in problems
    assert len(problems) == 6
    assert not [path for path in (tmp_path / "runs").iterdir() if path.is_dir()]  # no run's folder: nothing ran


def test_a_body_that_is_no_run_request_is_refused_with_its_problems(client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> list[httpx.Response]:
        async with client() as caller:
            return [await caller.post("/v1/robots/counter/runs", content=b"{not json"),
                    await caller.post("/v1/robots/counter/runs", json={"inputs": [], "wait": "later", "extra": 1}),
                    await caller.post("/v1/robots/counter/runs", json={"message_level": "Loud"})]

    not_json, wrong, level = run(go())
    assert not_json.status_code == 400 and not_json.json()["problems"]
    assert wrong.status_code == 400
    assert sorted(p.split(":")[0] for p in wrong.json()["problems"]) == ["extra", "inputs", "wait"]
    assert level.status_code == 400 and level.json()["problems"][0].startswith("message_level:")


def test_an_unknown_robot_or_run_is_404_and_a_broken_robot_422_with_its_problems(
        client: Callable[..., httpx.AsyncClient], robots_dir: Path) -> None:
    async def go() -> list[httpx.Response]:
        async with client() as caller:
            return [await caller.post("/v1/robots/nobody/runs", json={}),
                    await caller.post("/v1/robots/..%2Fcounter/runs", json={}),
                    await caller.post("/v1/robots/not_a_robot/runs", json={}),
                    await caller.get("/v1/runs/20260101-000000-abcdef"),
                    await caller.get("/v1/runs/..%2F..%2Fetc"),
                    await caller.get("/v1/runs/20260101-000000-abcdef/events"),
                    await caller.post("/v1/robots/broken/runs", json={})]

    *missing, broken = run(go())
    assert [answer.status_code for answer in missing] == [404] * 6
    assert missing[0].json()["error"] == "no robot named 'nobody'"
    assert broken.status_code == 422
    problem = broken.json()["problems"][0]
    assert problem.startswith("broken.yaml:") and "nowhere" in problem and str(robots_dir) not in problem


def test_a_run_that_does_not_wait_answers_202_and_is_read_back(client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> tuple[httpx.Response, dict[str, Any]]:
        async with client() as caller:
            accepted = await caller.post("/v1/robots/counter/runs", json={"wait": False, "inputs": {"times": 1}})
            run_id = accepted.json()["run_id"]
            while True:  # the run is a task of the same loop: it ends after a few turns
                found = (await caller.get(f"/v1/runs/{run_id}")).json()
                if found["status"] != "running":
                    return accepted, found
                await asyncio.sleep(0.01)

    accepted, found = run(go())
    assert accepted.status_code == 202
    body = accepted.json()
    assert accepted.headers["location"] == body["run"] == f"/v1/runs/{body['run_id']}"
    assert body["events"] == f"/v1/runs/{body['run_id']}/events"
    assert found["status"] == "succeeded" and found["path"] == ["start", "count", "greet"]


def test_a_finished_run_is_read_from_the_store_by_a_later_server(make_app: Callable[..., Any],
                                                                 client: Callable[..., httpx.AsyncClient]) -> None:
    first = make_app()

    async def start() -> str:
        async with client(first) as caller:
            answered = await caller.post("/v1/robots/counter/runs", json={"inputs": {"times": 2}})
        await inner(first).state.backend.recorded()  # recorded in the store, off the loop, after the answer
        return str(answered.json()["run_id"])

    run_id = run(start())

    async def read() -> httpx.Response:
        async with client(make_app()) as caller:  # a new process's memory: nothing of the run
            return await caller.get(f"/v1/runs/{run_id}")

    found = run(read())
    assert found.status_code == 200
    body = found.json()
    assert body["status"] == "succeeded" and body["path"] == ["start", "count", "count", "greet"]
    assert body["variables"]["i"] == 2 and body["robot"] == "counter"
    assert body["cost"] == {"usd": 0.0, "requests": 0, "unknown_steps": 0, "known_usd": None}  # the store's cost


def test_the_callers_key_never_reaches_a_result(client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> httpx.Response:
        async with client() as caller:
            return await caller.post("/v1/robots/echoer/runs", json={"inputs": {"text": f"my key is {KEY}"}})

    answered = run(go())
    assert answered.status_code == 200
    assert KEY not in answered.text
    assert answered.json()["variables"]["kept"] == "my key is [REDACTED]"


@pytest.mark.slow
def test_200_concurrent_runs_all_succeed_and_none_is_left_running(make_app: Callable[..., Any],
                                                                  client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app(rpm=None)

    async def go() -> list[httpx.Response]:
        async with client(app) as caller:
            answers = await asyncio.gather(*(caller.post("/v1/robots/counter/runs", json={"inputs": {"times": n % 5 + 1}})
                                             for n in range(200)))
            backend = inner(app).state.backend
            await backend.recorded()
            assert backend.active() == 0 and not backend.tasks
        return list(answers)

    answers = run(go())
    assert [a.status_code for a in answers] == [200] * 200
    assert all(a.json()["status"] == "succeeded" for a in answers)
    assert [a.json()["variables"]["i"] for a in answers] == [n % 5 + 1 for n in range(200)]
    assert len({a.json()["run_id"] for a in answers}) == 200
    store = inner(app).state.backend.store
    assert all(store.run(a.json()["run_id"])["status"] == "succeeded" for a in answers)  # batched commits lose none


def test_each_request_and_run_is_logged_with_the_key_id_never_the_key(
        client: Callable[..., httpx.AsyncClient]) -> None:
    from structlog.testing import capture_logs

    async def go() -> None:
        async with client() as caller:
            await caller.post("/v1/robots/counter/runs", json={"inputs": {"times": 1}}, headers=AUTH)

    with capture_logs() as logs:
        run(go())
    runs = [line for line in logs if line["event"] == "run"]
    requests = [line for line in logs if line["event"] == "request"]
    assert len(runs) == 1 and runs[0]["key_id"] == "ci" and runs[0]["status"] == "succeeded"
    assert runs[0]["robot"] == "counter" and runs[0]["duration_ms"] > 0
    assert len(requests) == 1
    assert requests[0]["status"] == 200 and requests[0]["key_id"] == "ci" and requests[0]["run_id"] == runs[0]["run_id"]
    assert KEY not in repr(logs)
