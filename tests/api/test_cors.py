"""CORS (issue 38, 4): `--cors-origin` answers a browser's preflight from an allowed origin without a key, with the
methods and headers the API takes, and marks its answers (exposing Location, X-Request-ID, X-Run-Id); another origin
gets no CORS header; `*` and what is no origin are refused at the start."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from engine.cli import app as cli
from engine.errors import UsageError

APP_ORIGIN = "https://app.example.com"
PREFLIGHT = {"Origin": APP_ORIGIN, "Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type, idempotency-key"}


def _cors(response: httpx.Response) -> dict[str, str]:
    return {name: value for name, value in response.headers.items() if name.startswith("access-control-")}


def test_a_preflight_from_an_allowed_origin_needs_no_key_and_answers_are_marked(
        make_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient]) -> None:
    app = make_app(cors_origins=(APP_ORIGIN, "http://localhost:5173"))

    async def go() -> list[httpx.Response]:
        async with client(app, **{"X-Nothing": "no key"}) as anonymous, client(app) as caller:
            return [await anonymous.options("/v1/robots/counter/runs", headers=PREFLIGHT),
                    await caller.post("/v1/robots/counter/runs", json={"wait": False}, headers={"Origin": APP_ORIGIN}),
                    await anonymous.get("/v1/robots", headers={"Origin": APP_ORIGIN}),
                    await anonymous.options("/v1/robots", headers={**PREFLIGHT, "Origin": "https://evil.example"}),
                    await caller.get("/v1/robots", headers={"Origin": "https://evil.example"}),
                    await caller.get("/v1/robots")]

    preflight, started, refused, evil_preflight, evil, no_origin = asyncio.run(go())
    assert preflight.status_code == 204
    assert _cors(preflight) == {
        "access-control-allow-origin": APP_ORIGIN, "access-control-allow-methods": "GET, POST, DELETE",
        "access-control-allow-headers": "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, X-Request-ID",
        "access-control-max-age": "600"}
    assert started.status_code == 202 and started.headers["access-control-allow-origin"] == APP_ORIGIN
    assert started.headers["access-control-expose-headers"] == "Location, X-Request-ID, X-Run-Id"
    assert started.headers["vary"] == "Origin"
    # A page of the allowed origin without a key reads the 401 (and why), as a browser must let it.
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == APP_ORIGIN
    # Another origin: no CORS header at all; its preflight is a request like any, refused without a key.
    assert evil_preflight.status_code == 401 and _cors(evil_preflight) == {}
    assert evil.status_code == 200 and _cors(evil) == {}
    assert no_origin.status_code == 200 and _cors(no_origin) == {}


def test_without_cors_origins_a_preflight_is_refused_like_any_request(
        client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> httpx.Response:
        async with client(**{"X-Nothing": "no key"}) as anonymous:
            return await anonymous.options("/v1/robots", headers=PREFLIGHT)

    answered = asyncio.run(go())
    assert answered.status_code == 401 and _cors(answered) == {}


@pytest.mark.parametrize(("origin", "said"), [
    ("*", "'*' is refused"),
    ("https://app.example.com/", "not an origin"),
    ("app.example.com", "not an origin"),
    ("https://app.example.com/path", "not an origin"),
])
def test_a_star_or_what_is_no_origin_is_refused_at_the_start(make_app: Callable[..., Any], origin: str,
                                                              said: str) -> None:
    with pytest.raises(UsageError, match=said):
        make_app(cors_origins=(origin,))
    with pytest.raises(UsageError, match=said):
        make_app(cors_origins=(origin,), no_auth=True, environ={})


def test_the_command_line_refuses_a_star_origin_in_one_line(robots_dir: Any) -> None:
    result = CliRunner().invoke(cli, ["api", str(robots_dir), "--cors-origin", "*", "--no-auth"])
    assert result.exit_code == 2
    assert "--cors-origin '*' is refused" in result.output and "Traceback" not in result.output
