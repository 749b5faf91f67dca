"""The API driven from its own OpenAPI document: the document is valid OpenAPI 3.1, it names every route the app
serves, and each operation, called as the document describes it (good and bad calls), answers with a status the
document lists and a body that its schema for that status accepts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from starlette.routing import Route

from engine.web.service.app import DURABLE_OPERATIONS, OPERATIONS
from engine.web.service.openapi import openapi_document
from tests.api.conftest import AUTH, inner
from tests.api.test_durable_api import add_durable_robots


def _example(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """A body the request schema accepts, made from its defaults (the walk's good call)."""
    if "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return {name: spec["default"] for name, spec in schema.get("properties", {}).items() if "default" in spec}


def _check(document: dict[str, Any], path: str, method: str, answered: httpx.Response) -> None:
    operation = document["paths"][path][method]
    listed = operation["responses"]
    assert str(answered.status_code) in listed, f"{method.upper()} {path} answered {answered.status_code}, " \
                                                f"which the document does not list ({sorted(listed)})"
    if "content" not in listed[str(answered.status_code)]:
        assert answered.content == b"", f"{method.upper()} {path} {answered.status_code} has a body, documented none"
        return
    content = listed[str(answered.status_code)]["content"]
    media = answered.headers["content-type"].split(";")[0]
    assert media in content, f"{method.upper()} {path} answered {media}, documented {sorted(content)}"
    for header in listed[str(answered.status_code)].get("headers", {}):
        assert header.lower() in answered.headers, f"{method.upper()} {path} {answered.status_code} lacks {header}"
    if media == "application/json":
        schema = {**content[media]["schema"], "components": document["components"]}
        errors = [e.message for e in Draft202012Validator(schema).iter_errors(answered.json())]
        assert not errors, f"{method.upper()} {path} {answered.status_code}: {errors}"


def test_the_document_is_valid_openapi_and_names_every_route(make_app: Callable[..., Any],
                                                             client: Callable[..., httpx.AsyncClient]) -> None:
    validator = pytest.importorskip("openapi_spec_validator")
    app = make_app()

    async def go() -> dict[str, Any]:
        async with client(app) as caller:
            return dict((await caller.get("/openapi.json")).json())

    document = asyncio.run(go())
    validator.validate(document)
    served = {(route.path, method.lower()) for route in inner(app).routes if isinstance(route, Route)
              for method in route.methods or () if method != "HEAD"}
    documented = {(path, method) for path, item in document["paths"].items() for method in item}
    assert served == documented


def test_the_durable_routes_are_served_and_documented(make_app: Callable[..., Any],
                                                     client: Callable[..., httpx.AsyncClient]) -> None:
    document = openapi_document(OPERATIONS, title="t", version="1", secured=True)
    assert {"/v1/runs/{run_id}/resume", "/v1/sessions/{session_id}"} <= set(document["paths"])
    assert {op.name for op in DURABLE_OPERATIONS} <= {op.name for op in OPERATIONS}
    assert "content" not in document["paths"]["/v1/sessions/{session_id}"]["delete"]["responses"]["204"]
    statuses = set(document["paths"]["/v1/runs/{run_id}/resume"]["post"]["responses"])
    assert {"200", "202", "400", "404", "409"} <= statuses


@pytest.mark.slow
def test_every_operation_answers_as_documented(make_app: Callable[..., Any], serve: Callable[..., Any],
                                               robots_dir: Path) -> None:
    add_durable_robots(robots_dir)
    served = serve(make_app(rpm=None))
    document = httpx.get(f"{served.url}/openapi.json").json()
    finished = httpx.post(f"{served.url}/v1/robots/counter/runs", json={}, headers=AUTH).json()["run_id"]
    waiting = [httpx.post(f"{served.url}/v1/robots/approve/runs", json={}, headers=AUTH).json()["run_id"]
               for _ in range(2)]
    httpx.post(f"{served.url}/v1/robots/chat/runs", json={"session": "talk"}, headers=AUTH)
    values = {"name": ["counter", "nobody", "broken", "chat"], "run_id": [finished, "20260101-000000-abcdef", *waiting],
              "session_id": ["talk", "nobody"], "token": ["not-a-token"]}
    called = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            names = [p["name"] for p in operation["parameters"] if p["in"] == "path"]
            choices = [dict(zip(names, combo, strict=True)) for combo in _combos([values[n] for n in names])]
            bodies: list[Any] = [None]
            if "requestBody" in operation:
                schema = operation["requestBody"]["content"]["application/json"]["schema"]
                bodies = [_example(schema, document), {"inputs": {"times": "many"}}, {"wait": "later"},
                          {"wait": False}, {"session": "s"}, {"answer": {"approved": "no"}},
                          {"answer": {"approved": True}, "wait": False}]
            for params in choices:
                url = path.format(**params)
                for body in bodies:
                    for headers in (AUTH, {}, {"Authorization": "Bearer wrong-key-0123456789"}):
                        with httpx.stream(method.upper(), served.url + url, json=body, headers=headers,
                                          timeout=30) as answered:
                            answered.read()
                        _check(document, path, method, answered)
                        called += 1
    assert called >= 100


def _combos(lists: list[list[str]]) -> list[tuple[str, ...]]:
    combos: list[tuple[str, ...]] = [()]
    for options in lists:
        combos = [(*combo, option) for combo in combos for option in options]
    return combos
