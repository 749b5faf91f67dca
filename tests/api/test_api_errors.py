"""Answers that are not a route's own are `{error, problems}` too (issue 38, 8): 404 for a path the API does not serve,
405 with `Allow`, and 500 for a store that fails: its message names the request's id and nothing of the cause, which
the log line of that request id carries."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from structlog.testing import capture_logs

from tests.api.conftest import KEYS
from tests.api.test_tenants import ADMIN, ADMIN_KEY


def test_an_unknown_path_and_a_wrong_method_are_json_refusals(client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> list[httpx.Response]:
        async with client() as caller:
            return [await caller.get("/v1/nowhere"), await caller.delete("/v1/robots"),
                    await caller.put("/v1/runs/20260101-000000-abcdef")]

    nowhere, delete, put = asyncio.run(go())
    assert nowhere.status_code == 404 and nowhere.headers["content-type"] == "application/json"
    assert nowhere.json() == {"error": "no such path: the API's paths are in /openapi.json", "problems": []}
    assert delete.status_code == 405 and delete.headers["content-type"] == "application/json"
    assert set(delete.headers["allow"].split(", ")) == {"GET", "HEAD"}
    assert delete.json()["error"].startswith("DELETE is not a method of this path") and delete.json()["problems"] == []
    assert put.status_code == 405 and "GET" in put.headers["allow"]


def test_a_store_that_fails_is_a_500_naming_the_request_and_logged_with_its_cause(
        make_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient], tmp_path: Path) -> None:
    app = make_app(environ={"DIAGRAMA_API_KEYS": f"{KEYS},ops={ADMIN_KEY}"}, admin_keys=("ops",))
    with sqlite3.connect(tmp_path / "runs" / "diagrama.db") as db:
        db.execute("DROP TABLE run_states")  # the checkpoint store's runs: reading one now fails

    async def go() -> httpx.Response:
        async with client(app, **ADMIN, **{"X-Request-ID": "req-500"}) as ops:
            return await ops.get("/v1/runs/20260101-000000-abcdef")

    with capture_logs() as logs:
        failed = asyncio.run(go())
    assert failed.status_code == 500 and failed.headers["content-type"] == "application/json"
    assert failed.json() == {"error": "the server failed to answer; its log names this request req-500",
                             "problems": []}
    assert failed.headers["x-request-id"] == "req-500"
    assert "run_states" not in failed.text and str(tmp_path) not in failed.text
    (logged,) = [line for line in logs if line["event"] == "request_failed"]
    assert logged["request_id"] == "req-500" and logged["error"] == "OperationalError"
    assert "run_states" in str(logged["exc_info"])  # the cause is the log's, for whoever runs the server
    (request,) = [line for line in logs if line["event"] == "request"]
    assert request["status"] == 500 and request["request_id"] == "req-500"
