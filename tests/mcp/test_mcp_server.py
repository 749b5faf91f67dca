"""Robots as MCP servers, through the official SDK's client over both transports: `diagrama mcp DIR --offline` over
stdio (started as the README's Claude Desktop config says) and `/mcp` under a real `diagrama api` (uvicorn on a
loopback port, the README's HTTP config, a key). Tools are the robots (schema, description); a call answers the
final variables (Start `output`), a failed run is a tool error; a Wait is answered through elicitation where the
client takes one (both protocol eras) and through `resume_run` where it does not; progress comes per block; a robot
with memory takes a `session` argument whose runs share its memory (the caller's key's, as the API's sessions)."""

from __future__ import annotations

import json
import re
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.api.conftest import free_port

ROOT = Path(__file__).parents[2]
_STREAMABLE = {"Accept": "application/json, text/event-stream"}
KEY = "dgk_mcp-key-0123456789abcdef"
OTHER_KEY = "dgk_mcp-other-0123456789abcdef"

GREETER = """
diagram: greeter
description: Counts to N, then greets.
blocks:
  - id: start
    type: Start
    inputs: {name: Ana, times: 3}
    variables: {i: 0}
    output: [greeting, i]
    next: count
  - id: count
    type: Set
    set: {i: "{{ i + 1 }}"}
    next:
      - to: count
        when: "{{ i < times }}"
      - to: greet
  - id: greet
    type: Set
    set: {greeting: "Olá, {{ name }}! Counted to {{ i }}."}
"""
ECHOER = """
diagram: echoer
description: Keeps its input.
blocks:
  - id: start
    type: Start
    inputs: {text: ""}
    next: keep
  - id: keep
    type: Set
    set: {kept: "{{ text }}"}
"""
DIVIDER = """
diagram: divider
description: Divides ten by its input.
blocks:
  - id: start
    type: Start
    inputs: {by: 0}
    next: divide
  - id: divide
    type: Set
    set: {q: "{{ 10 // by }}"}
"""
APPROVE = """
diagram: approve
description: Drafts a reply and waits for a person's approval.
blocks:
  - id: start
    type: Start
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
    set: {sent: "{{ approved }}", draft: "{{ draft }}"}
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
NOTES = """
diagram: notes
description: Remembers notes; its input named session is its own.
blocks:
  - id: start
    type: Start
    memory: [notes]
    inputs: {session: morning, note: ""}
    variables: {notes: []}
    next: keep
  - id: keep
    type: Set
    set: {notes: "{{ notes + [session ~ ': ' ~ note] }}"}
"""


def _readme_json(marker: str) -> dict[str, Any]:
    """The README's JSON block that contains `marker` (its config snippets)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```json\n(.*?)```", readme, re.S):
        if marker in block:
            found: dict[str, Any] = json.loads(block)
            return found
    raise AssertionError(f"no README json block with {marker!r}")


@pytest.fixture
def robots(tmp_path: Path) -> Path:
    folder = tmp_path / "robots"
    folder.mkdir()
    for name, text in {"greeter": GREETER, "echoer": ECHOER, "divider": DIVIDER, "approve": APPROVE, "chat": CHAT,
                       "notes": NOTES}.items():
        (folder / f"{name}.yaml").write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return folder


@pytest.fixture
def api(robots: Path, tmp_path: Path) -> Iterator[str]:
    """A real `diagrama api` over the robots on a loopback port, keys `ci` and `other`: its base URL."""
    import uvicorn

    from engine.runtime.context import Services
    from engine.web.api import create_app

    app = create_app(robots, services=Services(environ={"DIAGRAMA_API_KEYS": f"ci={KEY},other={OTHER_KEY}"}),
                     runs_dir=tmp_path / "runs", offline=True)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the API did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


Connect = Callable[..., Any]


@pytest.fixture(params=[pytest.param("stdio", marks=pytest.mark.slow), "http"])  # stdio: a `diagrama mcp` process each
def connect(request: pytest.FixtureRequest, robots: Path, tmp_path: Path) -> Connect:
    """`connect(**Client options)`: an SDK client of the robots over stdio (the README's Claude Desktop config) or
    over streamable HTTP (the README's HTTP config, key `ci`)."""
    if request.param == "stdio":
        server = _readme_json('"command": "diagrama"')["mcpServers"]["robots"]
        assert server["command"] == "diagrama" and server["args"] == ["mcp", "/path/to/robots"]
        args = [*server["args"][:-1], str(robots), "--offline", "--runs-dir", str(tmp_path / "stdio-runs")]
        params = StdioServerParameters(command=sys.executable, args=["-m", "engine.cli", *args], cwd=str(ROOT))

        def stdio(**options: Any) -> Client:
            return Client(params, **options)

        return stdio
    base = request.getfixturevalue("api")
    remote = _readme_json('"type": "http"')["mcpServers"]["robots"]
    url = remote["url"].replace("http://127.0.0.1:8080", base)
    headers = {name: value.replace("${DIAGRAMA_KEY}", KEY) for name, value in remote["headers"].items()}
    return _http(url, headers)


def _http(url: str, headers: dict[str, str]) -> Connect:
    def http(**options: Any) -> Client:
        client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120))
        return Client(_Transport(url, client), **options)

    return http


class _Transport:
    """The SDK's streamable HTTP transport with our headers (its `Transport`: an async context of two streams)."""

    def __init__(self, url: str, client: Any) -> None:
        self._context = streamable_http_client(url, http_client=client)

    async def __aenter__(self) -> Any:
        return await self._context.__aenter__()

    async def __aexit__(self, *exc: object) -> Any:
        return await self._context.__aexit__(*exc)


def _run(work: Callable[[], Any]) -> Any:
    return anyio.run(work)


def _approving(answers: list[dict[str, Any]]) -> Any:
    async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        answers.append({"message": params.message, "schema": params.requested_schema})
        if len(answers) == 1:  # the form refuses it: the run still waits, and the client is asked again
            return types.ElicitResult(action="accept", content={"approved": "yes"})
        return types.ElicitResult(action="accept", content={"approved": True, "note": "ok"})

    return elicit


def test_each_robot_is_a_tool_with_its_description_and_input_schema(connect: Connect) -> None:
    async def go() -> list[types.Tool]:
        async with connect() as client:
            return list((await client.list_tools()).tools)

    tools = {tool.name: tool for tool in _run(go)}
    assert set(tools) == {"greeter", "echoer", "divider", "approve", "chat", "notes", "resume_run"}
    assert tools["greeter"].description == "Counts to N, then greets."
    assert tools["greeter"].input_schema["properties"] == {"name": {"type": "string", "default": "Ana"},
                                                          "times": {"type": "integer", "default": 3}}
    assert set(tools["resume_run"].input_schema["required"]) == {"run_id"}
    assert "session" not in tools["greeter"].input_schema["properties"]  # no memory: no sessions


def test_a_robot_with_memory_takes_a_session_whose_runs_share_its_memory(connect: Connect) -> None:
    async def go() -> tuple[dict[str, types.Tool], list[types.CallToolResult]]:
        async with connect() as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            calls = [await client.call_tool("chat", arguments) for arguments in (
                {"message": "a", "session": "ana-1"}, {"message": "b", "session": "ana-1"},
                {"message": "c", "session": "rui-1"}, {"message": "d"}, {"message": "e", "session": "no spaces"},
                {"message": "f", "diagrama_session": "ana-1"})]
            calls += [await client.call_tool("notes", arguments) for arguments in (
                {"note": "tea", "diagrama_session": "n-1"}, {"session": "noon", "note": "soup", "diagrama_session": "n-1"})]
            calls.append(await client.call_tool("greeter", {"session": "ana-1"}))
            return tools, calls

    tools, (first, second, other, none, bad, wrong, _noted, noted_again, greeter) = _run(go)
    about = "a conversation's id: runs of one session share the robot's memory"
    assert tools["chat"].input_schema["properties"]["session"] == {
        "type": "string", "pattern": r"^[A-Za-z0-9_.:@-]{1,100}$", "description": about}
    assert "session" not in tools["chat"].input_schema.get("required", [])
    notes = tools["notes"].input_schema["properties"]
    assert notes["session"] == {"type": "string", "default": "morning"}  # its own input
    assert notes["diagrama_session"]["description"].startswith(about)
    assert "diagrama_session" in notes["diagrama_session"]["description"]
    assert first.structured_content == {"message": "a", "said": ["a"], "turns": 1}
    assert second.structured_content == {"message": "b", "said": ["a", "b"], "turns": 2}  # the memory carried
    assert other.structured_content["said"] == ["c"]  # another session: its own memory
    assert none.structured_content["said"] == ["d"]  # no session: no memory kept
    assert bad.is_error and isinstance(bad.content[0], types.TextContent) and "session:" in bad.content[0].text
    assert wrong.is_error  # `diagrama_session` is not chat's: it has `session`
    assert noted_again.structured_content["notes"] == ["morning: tea", "noon: soup"]
    assert greeter.is_error and isinstance(greeter.content[0], types.TextContent)
    assert "no input 'session'" in greeter.content[0].text  # a robot without memory has no sessions


def test_a_call_answers_the_final_variables_as_structured_content(connect: Connect) -> None:
    async def go() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with connect() as client:
            return (await client.call_tool("greeter", {"name": "Rui", "times": 2}),
                    await client.call_tool("echoer", {"text": "eco"}))

    greeted, echoed = _run(go)
    assert not greeted.is_error
    assert greeted.structured_content == {"greeting": "Olá, Rui! Counted to 2.", "i": 2}  # Start `output`
    assert isinstance(greeted.content[0], types.TextContent)
    assert json.loads(greeted.content[0].text) == greeted.structured_content
    assert greeted.meta is not None and greeted.meta["diagrama/run_id"]
    assert echoed.structured_content == {"text": "eco", "kept": "eco"}  # no `output`: every variable


def test_a_failed_run_and_bad_arguments_are_tool_errors(connect: Connect) -> None:
    async def go() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with connect() as client:
            return await client.call_tool("divider", {"by": 0}), await client.call_tool("greeter", {"nome": "Rui"})

    failed, refused = _run(go)
    assert failed.is_error
    assert failed.structured_content["status"] == "failed"
    assert [error["block"] for error in failed.structured_content["errors"]] == ["divide"]
    assert isinstance(failed.content[0], types.TextContent) and "divide" in failed.content[0].text
    assert refused.is_error
    assert isinstance(refused.content[0], types.TextContent) and "no input 'nome'" in refused.content[0].text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_wait_asks_a_client_that_takes_elicitation_and_the_answer_resumes_the_run(connect: Connect, mode: str,
                                                                                     tmp_path: Path) -> None:
    answers: list[dict[str, Any]] = []

    async def go() -> types.CallToolResult:
        async with connect(elicitation_callback=_approving(answers), mode=mode) as client:
            return await client.call_tool("approve", {"text": "hi"})

    result = _run(go)
    assert not result.is_error, result.content
    assert result.structured_content["sent"] is True
    asked = {"message": "Send Reply: hi?", "schema": {
        "type": "object", "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
        "required": ["approved"]}}
    assert answers == [asked, asked]
    store = tmp_path / "stdio-runs" / "diagrama.db"
    if store.is_file():  # stdio: the server recorded its runs as it closed (its waiting part and its end: the end)
        from engine.runs.store import open_store

        row = open_store(None, store.parent).run(result.meta["diagrama/run_id"])
        assert row is not None and row["status"] == "succeeded"


def test_a_wait_answers_the_waiting_state_and_resume_run_goes_on(connect: Connect) -> None:
    async def go() -> tuple[types.CallToolResult, types.CallToolResult, types.CallToolResult]:
        async with connect() as client:
            waiting = await client.call_tool("approve", {"text": "hi"})
            run_id = waiting.structured_content["run_id"]
            refused = await client.call_tool("resume_run", {"run_id": run_id, "answer": {"note": "no approval"}})
            return waiting, refused, await client.call_tool("resume_run", {"run_id": run_id,
                                                                           "answer": {"approved": True}})

    waiting, refused, resumed = _run(go)
    assert not waiting.is_error
    assert waiting.structured_content["status"] == "waiting"
    assert waiting.structured_content["waiting"]["prompt"] == "Send Reply: hi?"
    assert waiting.structured_content["waiting"]["form"]["required"] == ["approved"]
    assert isinstance(waiting.content[0], types.TextContent) and "resume_run" in waiting.content[0].text
    assert refused.is_error  # the form refuses it: the run still waits
    assert not resumed.is_error and resumed.structured_content["sent"] is True


def test_progress_is_reported_per_block(connect: Connect) -> None:
    told: list[tuple[float, str | None]] = []

    async def progress(value: float, _total: float | None, message: str | None) -> None:
        told.append((value, message))

    async def go() -> types.CallToolResult:
        async with connect() as client:
            return await client.call_tool("greeter", {"times": 2}, progress_callback=progress)

    assert not _run(go).is_error
    # start, count ×2, greet
    assert told == [(1, "start finished"), (2, "count finished"), (3, "count finished"), (4, "greet finished")]


def test_mcp_needs_a_key_of_the_server_and_runs_stay_the_key_s(api: str) -> None:
    refused = httpx.post(f"{api}/mcp", headers={"Authorization": "Bearer dgk_wrong-0123456789abcdef"},
                         json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401
    assert httpx.post(f"{api}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    opened = httpx.post(f"{api}/mcp", headers={"Authorization": f"Bearer {KEY}", **_STREAMABLE}, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    session = opened.headers["mcp-session-id"]
    borrowed = httpx.post(f"{api}/mcp", headers={"Authorization": f"Bearer {OTHER_KEY}", "mcp-session-id": session,
                                                 "mcp-protocol-version": "2025-11-25", **_STREAMABLE},
                          json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert borrowed.status_code == 404  # a session is the key's that opened it
    mine = httpx.post(f"{api}/mcp", headers={"Authorization": f"Bearer {KEY}", "mcp-session-id": session,
                                             "mcp-protocol-version": "2025-11-25", **_STREAMABLE},
                      json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert mine.status_code == 202

    async def go() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with _http(f"{api}/mcp", {"Authorization": f"Bearer {KEY}"})() as mine:
            waiting = await mine.call_tool("approve", {})
        run_id = waiting.structured_content["run_id"]
        async with _http(f"{api}/mcp", {"Authorization": f"Bearer {OTHER_KEY}"})() as theirs:
            return waiting, await theirs.call_tool("resume_run", {"run_id": run_id, "answer": {"approved": True}})

    waiting, other = _run(go)
    assert waiting.structured_content["status"] == "waiting"
    assert other.is_error and isinstance(other.content[0], types.TextContent)
    assert "no waiting run" in other.content[0].text
    run = httpx.get(f"{api}/v1/runs/{waiting.structured_content['run_id']}", headers={"Authorization": f"Bearer {KEY}"})
    assert run.json()["status"] == "waiting"  # the other key's answer never reached it


def test_an_mcp_session_is_the_key_s_as_the_api_s_sessions_are(api: str) -> None:
    async def go() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with _http(f"{api}/mcp", {"Authorization": f"Bearer {KEY}"})() as mine:
            for message in ("a", "b"):
                await mine.call_tool("chat", {"message": message, "session": "ana-1"})
        async with _http(f"{api}/mcp", {"Authorization": f"Bearer {OTHER_KEY}"})() as theirs:
            return (await theirs.call_tool("chat", {"message": "x", "session": "ana-1"}),
                    await theirs.call_tool("chat", {"session": "s" * 100}))

    theirs, long = _run(go)
    assert theirs.structured_content["said"] == ["x"]  # the other key's session of that name is another
    assert long.is_error and isinstance(long.content[0], types.TextContent) and "too long" in long.content[0].text
    read = httpx.get(f"{api}/v1/sessions/ana-1", headers={"Authorization": f"Bearer {KEY}"}).json()
    assert read["robot"] == "chat" and read["turns"] == 2 and read["memory"]["said"] == ["a", "b"]


def test_an_output_naming_no_variable_is_a_load_error_at_its_line(robots: Path) -> None:
    from blocks.registry import registry
    from engine.compile.loader import load_diagram
    from engine.errors import DiagramInvalid

    path = robots / "greeter.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("output: [greeting, i]", "output: [greting, i]"))
    with pytest.raises(DiagramInvalid) as raised:
        load_diagram(path, registry())
    [problem] = raised.value.problems
    assert (problem.line, problem.block, problem.field, problem.code) == (8, "start", "output[0]", "output_undeclared")
    assert "output names 'greting'" in problem.message and "greeting" in str(problem.hint)
