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
from engine.runs.turn import resume_run
from engine.runtime.durable import decode_state
from tests.engine.durable_support import interrupt_after

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
    interrupt_after(store, whole.run_id, 2)
    resumed = asyncio.run(resume_run(store, whole.run_id, registry=registry(), services=services(),
                                     runs_dir=tmp_path / "runs"))
    assert resumed.succeeded and resumed.variables["done"] == 1 and len(sent) == 1
    assert resumed.variables["placed"]["echo"] == "Bearer [REDACTED]"
    # Killed before it (after Start's checkpoint): the call was in flight, so it is the one step sent again.
    interrupt_after(store, whole.run_id, 1)
    again = asyncio.run(resume_run(store, whole.run_id, registry=registry(), services=services(),
                                   runs_dir=tmp_path / "runs"))
    assert again.succeeded and again.variables["done"] == 2 and len(sent) == 2


CHILD = """
diagram: child
blocks:
  - {id: start, type: Start, inputs: {q: ""}, next: ask}
  - id: ask
    type: GroqChatRequest
    with: {model: llama-3.3-70b-versatile, request: "{{ q }}"}
    set: {answer: "{{ result }}"}
"""
PARENT = """
diagram: parent
blocks:
  - {id: start, type: Start, variables: {qs: [one, two]}, next: each}
  - id: each
    type: Loop
    with: {for_each: "{{ qs }}", concurrency: 2, collect: "{{ got }}"}
    body: sub
    set: {answers: "{{ collected }}"}
    next: once
  - id: sub
    type: Subdiagram
    with: {diagram: child.yaml, inputs: {q: "{{ item }}"}}
    set: {got: "{{ variables.answer }}"}
    next: each
  - id: once
    type: Subdiagram
    with: {diagram: child.yaml, inputs: {q: last}}
    set: {last: "{{ variables.answer }}"}
"""


def test_a_concurrent_loop_and_a_subdiagram_are_each_one_checkpointed_step(tmp_path: Path) -> None:
    """Their passes and children run inside one step and write no checkpoint of their own: the run is checkpointed
    after the whole step, and a resume with one in flight runs that whole step again."""
    (tmp_path / "child.yaml").write_text(CHILD)
    (tmp_path / "parent.yaml").write_text(PARENT)
    store = SqliteCheckpoints(tmp_path / "runs" / "diagrama.db")
    diagram = load_diagram(tmp_path / "parent.yaml", registry())
    whole = asyncio.run(execute(diagram, {}, runs_dir=tmp_path / "runs",
                                services=Services(environ={}, offline=True, checkpoints=store)))
    assert whole.succeeded and len(whole.variables["answers"]) == 2
    headers = [decode_state(state)[0] for _, state in store.states(whole.run_id)]
    assert [h["next"] for h in headers] == ["start", "once", None, None]  # after the loop, after `once`, the end
    interrupt_after(store, whole.run_id, 2)  # killed while `once` ran its child
    resumed = asyncio.run(resume_run(store, whole.run_id, registry=registry(), runs_dir=tmp_path / "runs",
                                     services=Services(environ={}, offline=True)))
    assert resumed.succeeded and resumed.variables["answers"] == whole.variables["answers"]
    assert resumed.outputs.keys() == {"once"}  # only the step in flight ran again


def test_a_wait_inside_a_subdiagram_stops_the_run_waiting_at_its_address(tmp_path: Path) -> None:
    (tmp_path / "child.yaml").write_text("""
diagram: child
blocks:
  - {id: start, type: Start, next: ask}
  - {id: ask, type: Wait, with: {prompt: "ok?"}}
""")
    (tmp_path / "parent.yaml").write_text("""
diagram: parent
blocks:
  - {id: start, type: Start, next: sub}
  - {id: sub, type: Subdiagram, with: {diagram: child.yaml}}
""")
    store = SqliteCheckpoints(tmp_path / "runs" / "diagrama.db")
    result = asyncio.run(execute(load_diagram(tmp_path / "parent.yaml", registry()), {}, runs_dir=tmp_path / "runs",
                                 services=Services(environ={}, checkpoints=store)))
    assert result.status == "waiting" and result.errors == []
    assert result.waiting is not None and result.waiting["block"] == "sub/ask"
    assert store.run(result.run_id)["waiting"]["block"] == "sub/ask"  # type: ignore[index]
