"""Durable runs with an HttpRequest: checkpointed after its call, the call not sent again on resume, its secret
kept out of the store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from blocks.registry import registry
from engine import Services, execute
from engine.compile.loader import load_diagram
from engine.runs.checkpoints import SqliteCheckpoints
from engine.runs.resume import resume_run
from engine.runtime.durable import decode_state
from tests.engine.test_durable import _interrupt_after

TOKEN = "shop-token-" + "t" * 24
ORDER = """
diagram: order
allowed_hosts: [api.shop.test]
secrets: [SHOP_TOKEN]
blocks:
  - {id: start, type: Start, variables: {placed: null}, next: place}
  - id: place
    type: HttpRequest
    with: {method: POST, url: "https://api.shop.test/orders", json: {item: 7},
           headers: {Authorization: "Bearer {{ secret('SHOP_TOKEN') }}"}}
    set: {placed: "{{ json }}"}
    next: confirm
  - {id: confirm, type: Set, set: {done: "{{ placed.id }}"}}
"""


def test_an_http_call_is_checkpointed_after_and_not_sent_again_on_resume(tmp_path: Path) -> None:
    sent: list[httpx.Request] = []

    def shop(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        # A careless API that echoes the credential: the checkpoint must not keep it.
        return httpx.Response(201, json={"id": len(sent), "echo": request.headers["authorization"]})

    (tmp_path / "order.yaml").write_text(ORDER)
    diagram = load_diagram(tmp_path / "order.yaml", registry())
    store = SqliteCheckpoints(tmp_path / "runs" / "diagrama.db")

    def services() -> Services:
        return Services(environ={"SHOP_TOKEN": TOKEN}, checkpoints=store, transports={"http": httpx.MockTransport(shop)})

    whole = asyncio.run(execute(diagram, {}, runs_dir=tmp_path / "runs", services=services()))
    assert whole.succeeded and whole.variables["done"] == 1 and len(sent) == 1
    headers = [decode_state(state)[0] for _, state in store.states(whole.run_id)]
    assert [h["next"] for h in headers] == ["start", "confirm", None]  # Start's scope, after the call, the end
    assert all(TOKEN.encode() not in state for _, state in store.states(whole.run_id))
    # Killed just after the call's checkpoint: the resumed run goes on at `confirm`, the order is not placed again.
    _interrupt_after(store, whole.run_id, 2)
    resumed = asyncio.run(resume_run(store, whole.run_id, registry=registry(), services=services(),
                                     runs_dir=tmp_path / "runs"))
    assert resumed.succeeded and resumed.variables["done"] == 1 and len(sent) == 1
    assert resumed.variables["placed"]["echo"] == "Bearer [REDACTED]"
    # Killed before it (after Start's checkpoint): the call was in flight, so it is the one step sent again.
    _interrupt_after(store, whole.run_id, 1)
    again = asyncio.run(resume_run(store, whole.run_id, registry=registry(), services=services(),
                                   runs_dir=tmp_path / "runs"))
    assert again.succeeded and again.variables["done"] == 2 and len(sent) == 2
