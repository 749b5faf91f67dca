"""The studio's HTTP API as the studio tests call it: its token and page headers, a client over an app in process (a run
started with 202 is followed until it ends), and reading and saving a diagram."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from blocks.registry import registry
from engine.web.app import create_app

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "test-token"
ORIGIN = "http://127.0.0.1:8765"
HEADERS = {"x-diagrama-token": TOKEN, "origin": ORIGIN}


def make_client(folder: Path, runs: Path, **options: Any):
    app = create_app(folder, runs, registry(), token=TOKEN, **options)

    def call(method: str, url: str, *, base: str = "http://127.0.0.1:8765", **kwargs: Any) -> httpx.Response:
        async def go() -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base) as client:
                response = await client.request(method, url, **kwargs)
                if response.status_code == 202:
                    for _ in range(100):
                        await asyncio.sleep(0.05)
                        run = (await client.get(f"/api/runs/{response.json()['run_id']}")).json()
                        if run["status"] != "running":
                            break
                    response.extensions["run"] = run
                return response

        return asyncio.run(go())

    return call


def loaded(client, path: str = "order_agent.yaml") -> dict[str, Any]:
    response = client("GET", f"/api/diagrams/{path}")
    assert response.status_code == 200
    return response.json()


def put(client, path: str, base_hash: str, diagram: dict[str, Any]) -> httpx.Response:
    return client("PUT", f"/api/diagrams/{path}", json={"base_hash": base_hash, "diagram": diagram}, headers=HEADERS)
