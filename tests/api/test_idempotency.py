"""`Idempotency-Key` on run creation: the same key (from the same API key) answers the first request's run and
starts no other, also when two API processes sharing the store get it at once; another body with the key is a 422,
a key that is no key a 400, and a request that started no run leaves its key free."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.api.conftest import OTHER_KEY, inner


def _runs_of(app: Any, robot: str) -> list[str]:
    """The robot's runs as the app's run store has them (each written when it ended)."""
    store = inner(app).state.backend.store
    return [row["run_id"] for row in store.page(folder=inner(app).state.api.folder,
                                                diagram=inner(app).state.api.folder / f"{robot}.yaml", limit=500)]


def test_the_same_key_answers_the_first_run_and_starts_no_other(make_app: Callable[..., Any],
                                                                client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app()
    key = {"Idempotency-Key": "order-42/retry"}

    async def go() -> dict[str, httpx.Response]:
        async with client(app) as caller:
            body = {"inputs": {"text": "once"}}
            found = {"first": await caller.post("/v1/robots/echoer/runs", json=body, headers=key),
                     "again": await caller.post("/v1/robots/echoer/runs", json=body, headers=key),
                     "accepted": await caller.post("/v1/robots/echoer/runs", json={**body, "wait": False},
                                                   headers=key),
                     "other_body": await caller.post("/v1/robots/echoer/runs", json={"inputs": {"text": "twice"}},
                                                     headers=key),
                     "other_robot": await caller.post("/v1/robots/counter/runs", json=body, headers=key),
                     "other_caller": await caller.post("/v1/robots/echoer/runs", json=body,
                                                       headers={**key, "Authorization": f"Bearer {OTHER_KEY}"}),
                     "no_key": await caller.post("/v1/robots/echoer/runs", json=body)}
            await inner(app).state.backend.recorded()
            return found

    found = asyncio.run(go())
    first, again, accepted = found["first"].json(), found["again"], found["accepted"]
    assert found["first"].status_code == 200 and "idempotent-replayed" not in found["first"].headers
    assert again.status_code == 200 and again.json() == first and again.headers["idempotent-replayed"] == "true"
    assert again.headers["location"] == f"/v1/runs/{first['run_id']}" and again.headers["x-run-id"] == first["run_id"]
    assert accepted.status_code == 202 and accepted.json()["run_id"] == first["run_id"]
    assert accepted.json()["status"] == "succeeded" and accepted.headers["idempotent-replayed"] == "true"
    for refused in (found["other_body"], found["other_robot"]):
        assert refused.status_code == 422
        assert refused.json()["error"] == "Idempotency-Key 'order-42/retry' came with another request"
        assert refused.json()["problems"][0].startswith("Idempotency-Key: a request with another body")
    other = found["other_caller"].json()["run_id"]  # keys are per API key: another caller's is its own
    assert other != first["run_id"]
    assert sorted(_runs_of(app, "echoer")) == sorted([first["run_id"], other, found["no_key"].json()["run_id"]])
    assert _runs_of(app, "counter") == []


def test_two_api_processes_given_one_key_at_once_start_one_run(make_app: Callable[..., Any], tmp_path: Path,
                                                              client: Callable[..., httpx.AsyncClient]) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    one, two = make_app(store_url=store), make_app(store_url=store)
    key = {"Idempotency-Key": "the-same"}

    async def go() -> list[httpx.Response]:
        async with client(one) as first, client(two) as second:
            sent = [caller.post("/v1/robots/counter/runs", json={"wait": False}, headers=key)
                    for caller in (first, second, first, second)]
            answers = list(await asyncio.gather(*sent))
            await inner(one).state.backend.recorded()
            await inner(two).state.backend.recorded()
            return answers

    answers = asyncio.run(go())
    assert {a.status_code for a in answers} == {202}
    assert len({a.json()["run_id"] for a in answers}) == 1
    assert [a.headers.get("idempotent-replayed") for a in answers].count("true") == 3
    assert len(_runs_of(one, "counter")) == 1


def test_a_refused_request_leaves_its_key_free(make_app: Callable[..., Any],
                                               client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app()
    key = {"Idempotency-Key": "k-1"}

    async def go() -> list[httpx.Response]:
        async with client(app) as caller:
            return [await caller.post("/v1/robots/counter/runs", json={"inputs": {"times": "many"}}, headers=key),
                    await caller.post("/v1/robots/counter/runs", json={"inputs": {"times": 2}}, headers=key),
                    await caller.post("/v1/robots/counter/runs", json={"inputs": {"times": 2}}, headers=key)]

    refused, started, again = asyncio.run(go())
    assert refused.status_code == 400 and "'times'" in refused.json()["problems"][0]
    assert started.status_code == 200 and started.json()["status"] == "succeeded"
    assert again.json()["run_id"] == started.json()["run_id"] and again.headers["idempotent-replayed"] == "true"


def test_a_key_that_is_no_key_is_a_400_naming_the_header(make_app: Callable[..., Any],
                                                         client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app()
    values: list[str | bytes] = ["", "x" * 256, "é".encode("latin-1"), "tab\there"]

    async def go() -> tuple[list[httpx.Response], httpx.Response]:
        async with client(app) as caller:
            refused = [await caller.post("/v1/robots/echoer/runs", json={}, headers={"Idempotency-Key": value})
                       for value in values]
            longest = await caller.post("/v1/robots/echoer/runs", json={}, headers={"Idempotency-Key": "~" * 255})
            return refused, longest

    refused, longest = asyncio.run(go())
    for answer in refused:
        assert answer.status_code == 400
        assert answer.json()["error"] == "Idempotency-Key is 1 to 255 printable ASCII characters"
        assert answer.json()["problems"][0].startswith("Idempotency-Key: ")
    assert longest.status_code == 200
