"""`diagrama api` and a robot's `secrets:`: a listed secret (its name no key's, so that only the listing makes
it one) that an HttpRequest sends, echoed back by the server in every form, reaches no answer of the API (the
run's result, its read-back, its events replayed from the trace) nor a file under the runs folder."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import httpx
import orjson

from blocks.registry import BUILTIN_BLOCKS
from engine import BlockRegistry
from engine.runtime.context import Services
from tests.api.conftest import AUTH, KEYS

TOKEN = "shop-ph4se/with\"quote"
FETCHER = """
diagram: fetcher
allowed_hosts: [api.shop.test]
secrets: [SHOP_PASS_PHRASE]
blocks:
  - id: start
    type: Start
    message_level: Detailed
    next: fetch
  - id: fetch
    type: HttpRequest
    with:
      url: https://api.shop.test/orders/42
      query: {key: "{{ secret('SHOP_PASS_PHRASE') }}"}
      headers: {X-Token: "{{ secret('SHOP_PASS_PHRASE') }}"}
    set: {order: "{{ json }}", raw: "{{ text }}"}
"""


def _echo(request: httpx.Request) -> httpx.Response:
    """The shop answers with what it was sent: the header, the query value, the whole URL."""
    sent = request.headers["x-token"]
    return httpx.Response(200, json={"token": sent, "url": str(request.url)}, headers={"x-echo": sent})


def test_a_robots_secret_reaches_no_answer_of_the_api_nor_its_files(tmp_path: Path) -> None:
    from engine.web.api import create_app

    folder = tmp_path / "robots"
    folder.mkdir()
    (folder / "fetcher.yaml").write_text(textwrap.dedent(FETCHER).lstrip(), encoding="utf-8")
    runs = tmp_path / "runs"
    services = Services(environ={"DIAGRAMA_API_KEYS": KEYS, "SHOP_PASS_PHRASE": TOKEN},
                        transports={"http": httpx.MockTransport(_echo)})
    app = create_app(folder, registry=BlockRegistry(BUILTIN_BLOCKS), services=services, runs_dir=runs)

    async def go() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://api.test",
                                     headers=AUTH, timeout=30) as caller:
            started = await caller.post("/v1/robots/fetcher/runs", json={"inputs": {}})
            run_id = started.json()["run_id"]
            return [started, await caller.get(f"/v1/runs/{run_id}"), await caller.get(f"/v1/runs/{run_id}/events")]

    started, read_back, events = asyncio.run(go())
    assert started.status_code == 200 and started.json()["status"] == "succeeded", started.text
    assert started.json()["variables"]["order"]["token"] == "[REDACTED]"
    assert "http_response" in events.text  # Detailed: the echoed headers and body are among the events
    files = [path.read_bytes().decode("utf-8", "replace") for path in runs.rglob("*") if path.is_file()]
    assert files
    forms = (TOKEN, orjson.dumps(TOKEN).decode()[1:-1], "shop-ph4se%2Fwith%22quote")
    for answer in (started.text, read_back.text, events.text, *files):
        for form in forms:
            assert form not in answer, form
