"""Durable runs through `diagrama api` (local backend): a run that stops at a Wait answers `waiting` with its question,
is resumed with an answer its form accepts (400 with the problems otherwise, the run still waiting; 409 once it goes
on; 404 for no run), its events go on after the first part's; sessions carry a robot's memory from run to run, take
turns, are read and forgotten; the robots' list says which keep memory and which can wait."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from engine.runtime.trace import read_events as read_trace
from tests.api.conftest import AUTH, Served, inner, read_events

APPROVE = """
diagram: approve
description: Drafts a reply and waits for a person's approval.
blocks:
  - id: start
    type: Start
    message_level: Debug
    inputs: {text: hello}
    variables: {approved: false}
    next: draft
  - id: draft
    type: Set
    set: {draft: "Reply: {{ text }}"}
    next: ask
  - id: ask
    type: Wait
    with:
      prompt: "Send {{ draft }}?"
      form:
        type: object
        properties: {approved: {type: boolean}, note: {type: string}}
        required: [approved]
    set: {approved: "{{ answer.approved }}"}
    next: done
  - id: done
    type: Set
    set: {sent: "{{ approved }}"}
"""
CHAT = """
diagram: chat
description: Remembers what was said, turn by turn.
blocks:
  - id: start
    type: Start
    memory: [said, turns]
    inputs: {message: hi}
    variables: {said: [], turns: 0}
    next: keep
  - id: keep
    type: Set
    set: {said: "{{ said + [message] }}", turns: "{{ turns + 1 }}"}
"""
FLEETING = """
diagram: fleeting
description: Keeps no checkpoints.
blocks:
  - id: start
    type: Start
    durable: false
    next: keep
  - id: keep
    type: Set
    set: {kept: true}
"""
FORM = {"type": "object", "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
        "required": ["approved"]}


def add_durable_robots(folder: Path) -> None:
    for name, text in {"approve": APPROVE, "chat": CHAT, "chat2": CHAT, "fleeting": FLEETING}.items():
        (folder / f"{name}.yaml").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


@pytest.fixture
def durable_app(make_app: Callable[..., Any], robots_dir: Path) -> Callable[..., Any]:
    add_durable_robots(robots_dir)
    return make_app


@pytest.fixture
def stored_app(durable_app: Callable[..., Any], store_url: str) -> Callable[..., Any]:
    """`durable_app` with its run store, and so its checkpoints, on each kind of database (SQLite, PostgreSQL)."""
    return lambda **options: durable_app(store_url=store_url, **options)


def test_a_run_waits_with_its_question_and_goes_on_with_a_fitting_answer(
        stored_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient]) -> None:
    app = stored_app()

    async def go() -> dict[str, httpx.Response]:
        async with client(app) as caller:
            first = await caller.post("/v1/robots/approve/runs", json={"inputs": {"text": "ciao"}})
            run = first.json()["run_id"]
            return {
                "first": first,
                "read": await caller.get(f"/v1/runs/{run}"),
                "wrong": await caller.post(f"/v1/runs/{run}/resume", json={"answer": {"approved": "yes"}}),
                "none": await caller.post(f"/v1/runs/{run}/resume", json={}),
                "extra": await caller.post(f"/v1/runs/{run}/resume", json={"answer": {"approved": True}, "x": 1}),
                "still": await caller.get(f"/v1/runs/{run}"),
                "right": await caller.post(f"/v1/runs/{run}/resume", json={"answer": {"approved": True,
                                                                                      "note": "ok"}}),
                "again": await caller.post(f"/v1/runs/{run}/resume", json={"answer": {"approved": True}}),
                "after": await caller.get(f"/v1/runs/{run}"),
                "unknown": await caller.post("/v1/runs/20260101-000000-abcdef/resume", json={"answer": {}}),
                "odd": await caller.post("/v1/runs/..%2Fx/resume", json={"answer": {}}),
            }

    answers = asyncio.run(go())
    first = answers["first"].json()
    assert answers["first"].status_code == 200 and first["status"] == "waiting"
    assert first["path"] == ["start", "draft"] and first["variables"]["draft"] == "Reply: ciao"
    assert first["waiting"]["block"] == "ask" and first["waiting"]["prompt"] == "Send Reply: ciao?"
    assert first["waiting"]["form"] == FORM
    assert answers["read"].json() == first
    assert answers["wrong"].status_code == 400
    assert answers["wrong"].json()["problems"] == ['approved: "yes" is not of type "boolean"']
    assert answers["none"].status_code == 400 and "Send Reply: ciao?" in answers["none"].json()["error"]
    assert answers["extra"].status_code == 400 and answers["extra"].json()["problems"][0].startswith("x:")
    assert answers["still"].json()["status"] == "waiting"  # a wrong answer leaves it waiting
    right = answers["right"].json()
    assert answers["right"].status_code == 200 and right["status"] == "succeeded" and right["run_id"] == first["run_id"]
    assert right["path"] == ["start", "draft", "ask", "done"] and right["variables"]["sent"] is True
    assert "waiting" not in right  # as `diagrama run --output json`: only while it waits
    assert answers["again"].status_code == 409 and "succeeded" in answers["again"].json()["error"]
    assert answers["after"].json()["status"] == "succeeded"
    assert answers["unknown"].status_code == 404 and answers["odd"].status_code == 404


def test_a_resume_without_waiting_answers_202_and_two_at_once_let_one_through(
        stored_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient]) -> None:
    app = stored_app()
    backend = inner(app).state.backend

    async def go() -> tuple[list[httpx.Response], Any, httpx.Response]:
        async with client(app) as caller:
            run = (await caller.post("/v1/robots/approve/runs", json={})).json()["run_id"]
            answer = {"answer": {"approved": False}, "wait": False}
            both = await asyncio.gather(caller.post(f"/v1/runs/{run}/resume", json=answer),
                                        caller.post(f"/v1/runs/{run}/resume", json=answer))
            ended = await backend.result(run)
            return list(both), ended, await caller.get(f"/v1/runs/{run}")

    both, ended, read = asyncio.run(go())
    assert sorted(r.status_code for r in both) == [202, 409]
    accepted = next(r for r in both if r.status_code == 202)
    assert accepted.json()["run"] == f"/v1/runs/{ended.run_id}" and accepted.headers["location"] == accepted.json()["run"]
    assert ended.status == "succeeded" and ended.variables["sent"] is False
    assert read.json()["path"] == ["start", "draft", "ask", "done"]


def test_a_run_that_kept_no_checkpoints_does_not_resume(durable_app: Callable[..., Any],
                                                        client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> httpx.Response:
        async with client(durable_app()) as caller:
            run = (await caller.post("/v1/robots/fleeting/runs", json={})).json()["run_id"]
            return await caller.post(f"/v1/runs/{run}/resume", json={})

    refused = asyncio.run(go())
    assert refused.status_code == 409 and "kept no checkpoints" in refused.json()["error"]


def test_the_event_stream_ends_waiting_and_goes_on_after_the_resume(
        durable_app: Callable[..., Any], serve: Callable[..., Served], tmp_path: Path) -> None:
    served = serve(durable_app(admin_keys=("ci",)))  # an admin key reads events as the trace has them (test_shown)
    run = httpx.post(f"{served.url}/v1/robots/approve/runs", json={}, headers=AUTH, timeout=30).json()["run_id"]
    with httpx.stream("GET", f"{served.url}/v1/runs/{run}/events", headers=AUTH, timeout=30) as response:
        first = read_events(response)
    assert first[-1].event == "run_finished" and orjson.loads(first[-1].data)["status"] == "waiting"
    waiting = next(e for e in first if e.event == "run_waiting")
    assert orjson.loads(waiting.data)["form"] == FORM
    resumed = httpx.post(f"{served.url}/v1/runs/{run}/resume", json={"answer": {"approved": True}}, headers=AUTH,
                         timeout=30)
    assert resumed.json()["status"] == "succeeded"
    last = str(first[-1].id)
    with httpx.stream("GET", f"{served.url}/v1/runs/{run}/events", headers={**AUTH, "Last-Event-ID": last},
                      timeout=30) as response:
        second = read_events(response)
    assert second[0].event == "run_started" and orjson.loads(second[-1].data)["status"] == "succeeded"
    events = first + second
    assert [e.id for e in events] == list(range(1, len(events) + 1))  # one numbering: the trace's lines
    assert [orjson.loads(e.data) for e in events] == read_trace(tmp_path / "runs" / run / "trace.jsonl")


def test_a_session_carries_memory_from_run_to_run_and_is_forgotten(
        stored_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> dict[str, httpx.Response]:
        async with client(stored_app()) as caller:
            def turn(message: str, session: str = "ana-1") -> Any:
                return caller.post("/v1/robots/chat/runs", json={"inputs": {"message": message}, "session": session})

            found = {"one": await turn("olá"), "two": await turn("tudo bem?"), "other": await turn("hi", "bo")}
            found["read"] = await caller.get("/v1/sessions/ana-1")
            found["wrong robot"] = await caller.post("/v1/robots/chat2/runs", json={"session": "ana-1"})
            found["no memory"] = await caller.post("/v1/robots/counter/runs", json={"session": "c-1"})
            found["bad id"] = await caller.post("/v1/robots/chat/runs", json={"session": "no spaces"})
            found["forget"] = await caller.delete("/v1/sessions/ana-1")
            found["gone"] = await caller.get("/v1/sessions/ana-1")
            found["forget again"] = await caller.delete("/v1/sessions/ana-1")
            found["fresh"] = await turn("de novo")
            found["unknown"] = await caller.get("/v1/sessions/nobody")
            return found

    found = asyncio.run(go())
    assert found["one"].json()["variables"]["said"] == ["olá"]
    assert found["two"].json()["variables"] == {"message": "tudo bem?", "said": ["olá", "tudo bem?"], "turns": 2}
    assert found["other"].json()["variables"]["said"] == ["hi"]  # another session, its own memory
    read = found["read"].json()
    assert read["session_id"] == "ana-1" and read["robot"] == "chat" and read["turns"] == 2
    assert read["memory"] == {"said": ["olá", "tudo bem?"], "turns": 2} and read["running"] is None
    assert found["wrong robot"].status_code == 409 and "robot 'chat'" in found["wrong robot"].json()["error"]
    assert found["no memory"].status_code == 400 and "keeps no memory" in found["no memory"].json()["error"]
    assert found["bad id"].status_code == 400 and found["bad id"].json()["problems"][0].startswith("session:")
    assert found["forget"].status_code == 204 and found["forget"].content == b""
    assert found["gone"].status_code == 404 and found["forget again"].status_code == 404
    assert found["fresh"].json()["variables"]["said"] == ["de novo"]  # forgotten: Start's values again
    assert found["unknown"].status_code == 404


def test_runs_of_one_session_take_turns_and_none_is_lost(stored_app: Callable[..., Any],
                                                         client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> tuple[list[httpx.Response], httpx.Response]:
        async with client(stored_app()) as caller:
            runs = await asyncio.gather(*(caller.post("/v1/robots/chat/runs", json={
                "inputs": {"message": f"m{n}"}, "session": "busy"}) for n in range(12)))
            return list(runs), await caller.get("/v1/sessions/busy")

    runs, session = asyncio.run(go())
    assert all(r.json()["status"] == "succeeded" for r in runs)
    assert sorted(r.json()["variables"]["turns"] for r in runs) == list(range(1, 13))  # each turn saw the last one's
    assert session.json()["turns"] == 12
    assert sorted(session.json()["memory"]["said"]) == sorted(f"m{n}" for n in range(12))


def test_the_robots_list_says_which_keep_memory_and_which_can_wait(
        durable_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient]) -> None:
    async def go() -> dict[str, Any]:
        async with client(durable_app()) as caller:
            return {r["name"]: r for r in (await caller.get("/v1/robots")).json()["robots"]}

    robots = asyncio.run(go())
    assert (robots["approve"]["memory"], robots["approve"]["can_wait"]) == ([], True)
    assert (robots["chat"]["memory"], robots["chat"]["can_wait"]) == (["said", "turns"], False)
    assert (robots["counter"]["memory"], robots["counter"]["can_wait"]) == ([], False)


def test_a_waiting_run_is_answered_waiting_by_a_new_server(durable_app: Callable[..., Any],
                                                           client: Callable[..., httpx.AsyncClient]) -> None:
    """The question is in the checkpoint store: a restarted server (nothing in memory) answers and resumes it."""

    async def first() -> str:
        app = durable_app()
        async with client(app) as caller:
            run = str((await caller.post("/v1/robots/approve/runs", json={})).json()["run_id"])
        await inner(app).state.backend.close()
        return run

    run = asyncio.run(first())

    async def second() -> tuple[httpx.Response, httpx.Response]:
        async with client(durable_app()) as caller:
            return (await caller.get(f"/v1/runs/{run}"),
                    await caller.post(f"/v1/runs/{run}/resume", json={"answer": {"approved": True}}))

    read, resumed = asyncio.run(second())
    assert read.json()["status"] == "waiting" and read.json()["waiting"]["block"] == "ask"
    assert resumed.json()["status"] == "succeeded" and resumed.json()["path"] == ["start", "draft", "ask", "done"]


ASKER = """
diagram: asker
description: Asks the simulator many times (a run long enough to be killed in the middle).
blocks:
  - id: start
    type: Start
    variables: {n: 0}
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {model: claude-haiku-5-5, request: "number {{ n }}", max_tokens: 20}
    next: count
  - id: count
    type: Set
    set: {n: "{{ n + 1 }}"}
    next:
      - to: ask
        when: "{{ n < 150 }}"
"""


@pytest.mark.slow
def test_an_interrupted_run_goes_on_from_its_last_checkpoint(durable_app: Callable[..., Any], robots_dir: Path,
                                                             client: Callable[..., httpx.AsyncClient],
                                                             tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    from tests.reliability.test_durable_kills import _until_checkpoints

    (robots_dir / "asker.yaml").write_text(textwrap.dedent(ASKER).lstrip(), encoding="utf-8")
    runs = tmp_path / "runs"
    process = subprocess.Popen(  # `diagrama run`, killed after its third checkpoint: its run is interrupted
        [sys.executable, "-m", "engine.cli", "run", str(robots_dir / "asker.yaml"), "--offline", "-q",
         "--runs-dir", str(runs)], env={**os.environ, "DIAGRAMA_STORE": ""}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    _until_checkpoints("", runs / "diagrama.db", process, 3)
    process.send_signal(signal.SIGKILL)
    process.wait()
    (run,) = [path.name for path in runs.iterdir() if path.is_dir()]

    async def go() -> list[httpx.Response]:
        async with client(durable_app(admin_keys=("ci",))) as caller:  # a run of `diagrama run`: no key's but an admin's
            return [await caller.get(f"/v1/runs/{run}"),
                    await caller.post(f"/v1/runs/{run}/resume", json={"answer": {"approved": True}}),
                    await caller.post(f"/v1/runs/{run}/resume", json={})]

    read, with_answer, resumed = asyncio.run(go())
    assert read.json()["status"] == "interrupted"
    assert with_answer.status_code == 400 and "interrupted" in with_answer.json()["error"]
    assert resumed.status_code == 200 and resumed.json()["status"] == "succeeded", resumed.text
    assert resumed.json()["run_id"] == run and resumed.json()["variables"]["n"] == 150


def test_a_callers_key_in_an_input_never_reaches_the_checkpoint_store(
        durable_app: Callable[..., Any], client: Callable[..., httpx.AsyncClient], tmp_path: Path) -> None:
    from tests.api.conftest import KEY

    async def go() -> httpx.Response:
        async with client(durable_app()) as caller:
            return await caller.post("/v1/robots/approve/runs", json={"inputs": {"text": f"mine is {KEY}"}})

    waiting = asyncio.run(go())
    assert waiting.json()["status"] == "waiting" and KEY not in waiting.text
    stored = b"".join(path.read_bytes() for path in (tmp_path / "runs").glob("diagrama.db*"))
    assert b"[REDACTED]" in stored and KEY.encode() not in stored and KEY[6:-6].encode() not in stored


WIDE = """
diagram: wide
blocks:
  - id: start
    type: Start
    inputs: {n: 0, f: 0.5, items: []}
    next: ask
  - id: ask
    type: Wait
    with: {prompt: "n is {{ n }}", form: {type: object}}
    set: {doubled: "{{ n * 2 }}"}
"""


def test_inputs_past_64_bits_and_nan_are_kept_and_resumed(stored_app: Callable[..., Any], robots_dir: Path,
                                                          client: Callable[..., httpx.AsyncClient]) -> None:
    (robots_dir / "wide.yaml").write_text(WIDE.lstrip(), encoding="utf-8")
    huge = 2**65

    async def go() -> tuple[httpx.Response, httpx.Response]:
        async with client(stored_app()) as caller:
            body = b'{"inputs": {"n": %d, "f": NaN, "items": [%d, Infinity]}}' % (huge, -huge)
            first = await caller.post("/v1/robots/wide/runs", content=body, headers={"content-type": "application/json"})
            done = await caller.post(f"/v1/runs/{first.json()['run_id']}/resume", json={"answer": {}})
            return first, done

    first, done = asyncio.run(go())
    assert first.status_code == 200 and first.json()["status"] == "waiting", first.text
    assert first.json()["waiting"]["prompt"] == f"n is {huge}"
    assert done.status_code == 200 and done.json()["status"] == "succeeded", done.text
    assert done.json()["variables"]["n"] == huge and done.json()["variables"]["doubled"] == 2 * huge
