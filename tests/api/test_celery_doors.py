"""The API's other doors on `--backend celery`: a real redis-server and one real worker process for the module, each
door's run enqueued by the API and run by the worker: the OpenAI-compatible chat (whole, streamed, a robot with
memory in a session), `/mcp` through the official SDK's client, and a signed webhook. Each answer is held to what
the worker recorded (and the chat's to what the local backend answers)."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from engine.runtime.trace import read_events as read_trace
from tests.api.conftest import AUTH, KEYS, Served, inner, read_events
from tests.api.test_celery_api import QA
from tests.api.test_openai_compat import ROBOTS
from tests.batch.test_celery import redis_server, start_worker, stop

pytestmark = [pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="redis-server is absent (apt-get install redis-server)"),
              pytest.mark.slow]  # a real Celery worker and a Redis server

QUESTION = "What is the capital of Portugal?"


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One redis-server and one worker (two processes) for the module's tests, as tests.batch.test_celery's `broker`
    and `start_worker` make them: each test's API sends its own store and runs folder with every task."""
    folder = tmp_path_factory.mktemp("celery-doors")
    with redis_server(folder) as url:
        worker = start_worker(url, folder)
        try:
            yield url
        finally:
            stop(worker)


@pytest.fixture
def celery_app(make_app: Callable[..., Any], robots_dir: Path, tmp_path: Path,
               shared_broker: str) -> Callable[..., Any]:
    (robots_dir / "qa.yaml").write_text(QA.lstrip())
    (robots_dir / "memo.yaml").write_text(textwrap.dedent(ROBOTS["memo"]).lstrip())  # the local tests' memo

    def make(**options: Any) -> Any:
        app = make_app(backend="celery", broker=shared_broker, store_url=f"sqlite:///{tmp_path / 'shared.db'}",
                       rpm=None, **options)
        assert type(inner(app).state.backend).__name__ == "CeleryBackend"
        return app

    return make


def _chat(served: Served, robot: str, text: str, earlier: list[dict[str, str]] | None = None,
          headers: dict[str, str] | None = None, **fields: Any) -> httpx.Response:
    return httpx.post(f"{served.url}/v1/chat/completions", headers={**AUTH, **(headers or {})}, timeout=60,
                      json={"model": robot, "messages": [*(earlier or []), {"role": "user", "content": text}],
                            **fields})


def _run(served: Served, run_id: str) -> dict[str, Any]:
    found = httpx.get(f"{served.url}/v1/runs/{run_id}", headers=AUTH)
    assert found.status_code == 200, found.text
    return dict(found.json())


def test_a_chat_completion_is_the_workers_run_and_answers_as_the_local_backend(
        celery_app: Callable[..., Any], make_app: Callable[..., Any], serve: Callable[..., Served],
        tmp_path: Path) -> None:
    served = serve(celery_app())
    answered = _chat(served, "qa", QUESTION)
    local = _chat(serve(make_app(rpm=None, runs_dir=tmp_path / "local-runs")), "qa", QUESTION)
    assert answered.status_code == 200, answered.text
    assert local.status_code == 200, local.text
    body, expected = answered.json(), local.json()
    run_id = answered.headers["x-run-id"]
    assert body["id"] == f"chatcmpl-{run_id}" and body["object"] == "chat.completion" and body["model"] == "qa"
    content = body["choices"][0]["message"]["content"]
    assert content.startswith("(simulated claude-haiku-5-5)")
    # The same answer and usage as the robot gives in process: only the run (its id, its time) differs.
    assert {k: v for k, v in body.items() if k not in ("id", "created")} == \
        {k: v for k, v in expected.items() if k not in ("id", "created")}
    assert body["usage"]["prompt_tokens"] > 0
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    run = _run(served, run_id)  # the worker ran and recorded it
    assert run["status"] == "succeeded" and run["path"] == ["start", "ask"]
    assert run["variables"] == {"question": QUESTION, "answer": content}
    started = read_trace(tmp_path / "runs" / run_id / "trace.jsonl")[0]
    assert started["event"] == "run_started" and started["pid"] != os.getpid()  # the worker's process ran it


def test_a_streamed_chat_relays_the_workers_text_as_it_comes(celery_app: Callable[..., Any],
                                                             serve: Callable[..., Served]) -> None:
    served = serve(celery_app())
    with httpx.stream("POST", f"{served.url}/v1/chat/completions", headers=AUTH, timeout=60,
                      json={"model": "qa", "messages": [{"role": "user", "content": QUESTION}], "stream": True,
                            "stream_options": {"include_usage": True}}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        run_id = response.headers["x-run-id"]
        sent = [event.data for event in read_events(response)]
    assert sent[-1] == "[DONE]"
    chunks = [orjson.loads(data) for data in sent[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "qa" and c["id"] == f"chatcmpl-{run_id}"
               for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    pieces = [c["choices"][0]["delta"]["content"] for c in chunks if c["choices"] and
              c["choices"][0]["delta"].get("content")]
    # The request block's text_delta events, relayed from the worker's Redis stream: several pieces, not the whole
    # answer in one chunk at the end.
    assert len(pieces) > 1
    run = _run(served, run_id)
    assert run["status"] == "succeeded"
    assert "".join(pieces) == run["variables"]["answer"]
    assert run["variables"]["answer"].startswith("(simulated claude-haiku-5-5)")
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


def test_a_memory_robots_chat_sessions_go_on_across_turns_on_the_worker(celery_app: Callable[..., Any],
                                                                        serve: Callable[..., Served]) -> None:
    served = serve(celery_app())
    session = {"X-Diagrama-Session": "s1"}
    first = _chat(served, "memo", "one", headers=session)
    second = _chat(served, "memo", "two", headers=session)
    assert first.status_code == 200 and second.status_code == 200, (first.text, second.text)
    assert first.headers["x-diagrama-session"] == "s1"
    assert first.json()["choices"][0]["message"]["content"] == "one"
    assert second.json()["choices"][0]["message"]["content"] == "one + two"  # the second turn saw the first
    kept = httpx.get(f"{served.url}/v1/sessions/s1", headers=AUTH).json()
    assert kept["turns"] == 2 and kept["memory"]["heard"] == ["one", "two"] and kept["robot"] == "memo"
    # No header: the earlier messages pick the conversation's session, as a chat front end sends them each turn.
    opened = _chat(served, "memo", "alpha").json()["choices"][0]["message"]["content"]
    earlier = [{"role": "user", "content": "alpha"}, {"role": "assistant", "content": opened}]
    assert opened == "alpha"
    assert _chat(served, "memo", "beta", earlier).json()["choices"][0]["message"]["content"] == "alpha + beta"


def test_mcp_lists_the_robot_and_a_call_is_the_workers_run(celery_app: Callable[..., Any],
                                                           serve: Callable[..., Served]) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import mcp_types as types

    from tests.mcp.test_mcp_server import _http
    from tests.mcp.test_mcp_server import _run as run_async

    served = serve(celery_app())
    told: list[tuple[float, str | None]] = []

    async def progress(value: float, _total: float | None, message: str | None) -> None:
        told.append((value, message))

    async def go() -> tuple[list[Any], Any]:
        async with _http(f"{served.url}/mcp", AUTH)() as client:
            tools = list((await client.list_tools()).tools)
            return tools, await client.call_tool("qa", {"question": QUESTION}, progress_callback=progress)

    tools, called = run_async(go)
    listed = {tool.name: tool for tool in tools}
    assert "qa" in listed and "memo" in listed
    assert listed["qa"].description == "Asks Claude (offline) and keeps the answer."
    assert listed["qa"].input_schema["properties"]["question"] == {"type": "string", "default": "Quanto fa 2+2?"}
    assert not called.is_error, called.content
    assert called.meta is not None
    run = _run(served, called.meta["diagrama/run_id"])
    assert run["status"] == "succeeded" and run["path"] == ["start", "ask"]
    assert called.structured_content == run["variables"] == {"question": QUESTION,
                                                             "answer": run["variables"]["answer"]}
    assert run["variables"]["answer"].startswith("(simulated claude-haiku-5-5)")
    assert isinstance(called.content[0], types.TextContent)
    assert json.loads(called.content[0].text) == called.structured_content
    # Progress per block, from the run's events relayed from the worker's stream.
    assert told == [(1, "start finished"), (2, "ask finished")]


def test_a_signed_webhook_starts_a_run_the_worker_finishes(celery_app: Callable[..., Any],
                                                           serve: Callable[..., Served], robots_dir: Path) -> None:
    from tests.api.test_webhooks import HOOKED, ISSUE, SECRET, signed

    (robots_dir / "hmac_hook.yaml").write_text(
        textwrap.dedent(HOOKED.format(name="hmac-hook", scheme="hmac")).lstrip(), encoding="utf-8")
    # A triggered run belongs to no key: an admin's reads it (engine.web.service.tenants).
    app = celery_app(environ={"DIAGRAMA_API_KEYS": KEYS, "HOOK_SECRET": SECRET}, admin_keys=("ci",))
    served = serve(app)
    body = orjson.dumps(ISSUE)
    headers = {"Content-Type": "application/json", **signed("hmac", body)}
    answered = httpx.post(f"{served.url}/v1/hooks/hmac_hook", content=body, headers=headers, timeout=30)
    assert answered.status_code == 202, answered.text
    run_id = answered.json()["run_id"]
    assert answered.json()["status"] == "queued"  # the worker takes it
    assert answered.headers["x-run-id"] == run_id and answered.headers["location"] == f"/v1/runs/{run_id}"
    again = httpx.post(f"{served.url}/v1/hooks/hmac_hook", content=body, headers=headers, timeout=30)
    assert again.status_code == 409 and "received already" in again.json()["error"]
    deadline = time.monotonic() + 60
    while (run := _run(served, run_id))["status"] not in ("succeeded", "failed") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert run["status"] == "succeeded", run
    assert run["variables"]["kept"] == "Login fails #42" and run["variables"]["agent"] == "mine"
    recorded = inner(app).state.backend.store.run(run_id)
    assert recorded["trigger"] == "webhook"
