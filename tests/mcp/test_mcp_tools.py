"""MCP servers as tool sources: a real server (stdio and streamable HTTP), offline vendors, ToolDispatch's rules."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from blocks.registry import registry as block_registry
from engine import DiagramInvalid, Services, execute, read_events
from engine.compile.loader import load_diagram
from engine.tools.mcp import McpSessions
from tests.mcp.conftest import AGENT, DISPATCH, SECRET, SERVER, http_registry, stdio_registry, write

pytestmark = pytest.mark.slow  # real MCP servers as processes

VENDORS = [("ClaudeRequest", "claude-sonnet-5-5"), ("GroqChatRequest", "llama-3.3-70b-versatile"),
           ("GeminiRequest", "gemini-3.5-flash")]


def agent(block: str = "ClaudeRequest", model: str = "claude-sonnet-5-5") -> str:
    return AGENT.replace("BLOCK", block).replace("MODEL", model)


def dispatch(calls: list[dict[str, Any]]) -> str:
    return DISPATCH.replace("CALLS", orjson.dumps(calls).decode())


def run(path: Path, runs: Path, **services: Any) -> Any:
    diagram = load_diagram(path, block_registry())
    return asyncio.run(execute(diagram, {}, runs_dir=runs, services=Services(offline=True, **services))), diagram


def tool_rows(result: Any) -> list[dict[str, Any]]:
    return [row for row in result.variables["history"] if row["role"] == "tool"]


def test_server_tools_join_the_registry_with_names_descriptions_schemas_and_group(tmp_path: Path) -> None:
    diagram = load_diagram(write(tmp_path, stdio_registry(), agent()), block_registry(), start_servers=True)
    tools = diagram.tools
    assert tools is not None
    assert sorted(tools.tools) == ["environment_value", "get_order_status", "order_totals"]  # internal_admin excluded
    status = tools.tools["get_order_status"]
    assert status.entry.group == "shop"
    assert status.entry.description.startswith("Returns the status and the carrier of an order")
    assert status.entry.parameters["properties"]["order_id"]["type"] == "integer"
    assert status.entry.parameters["required"] == ["order_id"]
    table = tools.template_function()("shop", query="where is my order 42", top_k=1)
    assert table.column("name") == ["get_order_status"]
    # The embedding is cached under server + tool + a hash of description and schema, in place of a version.
    cached = orjson.loads((tmp_path / "registry.embeddings.json").read_bytes())
    assert any(key.startswith("mcp:shop/get_order_status@") for key in cached)


@pytest.mark.parametrize(("block", "model"), VENDORS)
def test_agent_calls_a_stdio_server_tool_for_every_vendor(tmp_path: Path, block: str, model: str) -> None:
    result, _ = run(write(tmp_path, stdio_registry(), agent(block, model)), tmp_path / "runs")
    assert result.status == "succeeded", result.errors
    assert result.path == ["start", "ask", "dispatch", "ask", "done"]
    [row] = tool_rows(result)
    assert (row["name"], row["content"]) == ("get_order_status", "order 42: shipped with CTT")
    called = [e for e in read_events(result.trace) if e["event"] == "tool_called"]
    assert [(e["tool"], e["ok"]) for e in called] == [("get_order_status", True)]


def test_agent_calls_a_streamable_http_server(tmp_path: Path, http_server: str) -> None:
    result, diagram = run(write(tmp_path, http_registry(http_server), agent()), tmp_path / "runs")
    assert sorted(diagram.tools.tools) == ["get_order_status", "order_totals"]  # include
    assert result.status == "succeeded", result.errors
    assert tool_rows(result)[0]["content"] == "order 42: shipped with CTT"


def test_structured_content_becomes_the_row_content(tmp_path: Path) -> None:
    calls = [{"id": "c1", "name": "order_totals", "arguments": {"order_id": "2"}}]  # coerced: "2" → 2
    result, _ = run(write(tmp_path, stdio_registry(), dispatch(calls)), tmp_path / "runs")
    assert result.variables["results"] == {"c1": {"goods": 42.0, "shipping": 4.5}}
    assert orjson.loads(tool_rows(result)[0]["content"]) == {"goods": 42.0, "shipping": 4.5}


def test_is_error_and_bad_arguments_become_tool_error_rows(tmp_path: Path) -> None:
    calls = [{"id": "c1", "name": "get_order_status", "arguments": {"order_id": 404}},
             {"id": "c2", "name": "get_order_status", "arguments": {"order_id": "many"}},
             {"id": "c3", "name": "internal_admin", "arguments": {"command": "rm"}}]
    result, _ = run(write(tmp_path, stdio_registry(), dispatch(calls)), tmp_path / "runs")
    failed = {e["id"]: e for e in result.variables["failed"]}
    assert failed["c1"]["type"] == "tool_failed" and "order 404 does not exist" in failed["c1"]["error"]
    assert failed["c2"]["type"] == "invalid_tool_arguments"  # checked before the server is asked
    assert failed["c3"]["type"] == "unknown_tool"  # excluded by the registry
    contents = [orjson.loads(row["content"]) for row in tool_rows(result)]
    assert all(set(content) == {"error"} for content in contents)


def test_environment_reaches_the_server_and_never_the_trace(tmp_path: Path) -> None:
    calls = [{"id": "c1", "name": "environment_value", "arguments": {"name": "SHOP_SECRET"}}]
    result, _ = run(write(tmp_path, stdio_registry(), dispatch(calls)), tmp_path / "runs")
    # The server got the value (it answered with it); the row, the result and the trace carry it redacted.
    assert tool_rows(result)[0]["content"] == "[REDACTED]"
    assert SECRET not in result.trace.read_text(encoding="utf-8")


def test_a_scenario_stub_replaces_an_mcp_tool(tmp_path: Path) -> None:
    calls = [{"id": "c1", "name": "get_order_status", "arguments": {"order_id": 7}}]
    result, _ = run(write(tmp_path, stdio_registry(), dispatch(calls)), tmp_path / "runs",
                    tool_stubs={"get_order_status": "stubbed: delivered"})
    assert tool_rows(result)[0]["content"] == "stubbed: delivered"


def test_runs_sharing_a_pool_open_one_session_per_server(tmp_path: Path) -> None:
    diagram = load_diagram(write(tmp_path, stdio_registry(), agent()), block_registry(), start_servers=True)
    pool = McpSessions()

    async def two_runs() -> list[str]:
        services = Services(offline=True, mcp_sessions=pool)
        try:
            results = [await execute(diagram, {}, runs_dir=tmp_path / "runs", services=services) for _ in range(2)]
        finally:
            await pool.aclose()
        return [r.status for r in results]

    assert asyncio.run(two_runs()) == ["succeeded", "succeeded"]
    assert pool.opened == 1


def test_a_server_that_fails_to_start_names_the_registry_file_line_and_server(tmp_path: Path) -> None:
    registry = """\
registry: broken
mcp_servers:
  - name: shop
    command: [python, -c, "import sys; sys.exit('cannot open the shop database')"]
    timeout: 10
"""
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(tmp_path, registry, agent().replace("tools('shop', ", "tools(")), block_registry(), start_servers=True)
    [problem] = [p for p in caught.value.problems if p.code == "mcp_server_failed"]
    assert problem.file == str(tmp_path / "registry.yaml") and problem.line == 3
    assert "MCP server 'shop'" in problem.message and "cannot open the shop database" in problem.message


def test_entry_mistakes_are_load_problems_with_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_TEST_SECRET")
    registry = f"""\
registry: shop
groups: {{shop: Orders}}
mcp_servers:
  - name: shop
    command: [python, {SERVER.as_posix()}]
    env: {{SHOP_SECRET: "${{MCP_TEST_SECRET}}"}}
  - name: both
    command: [python, x.py]
    url: http://127.0.0.1:9/mcp
  - name: other
    command: [python, {SERVER.as_posix()}]
    group: nowhere
    include: [no_such_tool]
"""
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(tmp_path, registry, agent()), block_registry(), start_servers=True)
    found = {(p.code, p.line) for p in caught.value.problems}
    assert ("missing_environment_variable", 6) in found
    assert ("invalid_mcp_server", 7) in found  # command and url both
    assert ("invalid_mcp_server", 12) in found  # an undeclared group
    # What a server offers is known once it is started: an include naming a tool it lacks, when the entries are right.
    monkeypatch.setenv("MCP_TEST_SECRET", SECRET)
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(tmp_path, stdio_registry().replace("exclude: [internal_admin]", "include: [no_such_tool]"),
                           agent()), block_registry(), start_servers=True)
    assert [(p.code, p.line, p.field) for p in caught.value.problems] == [("unknown_mcp_tool", 7, "mcp_servers[0].include")]


def test_without_the_mcp_extra_a_registry_says_which_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "mcp", None)
    registry = stdio_registry().replace("timeout: 20", "timeout: 19")  # a configuration no test listed yet
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(write(tmp_path, registry, agent()), block_registry(), start_servers=True)
    assert any("pip install 'diagrama[mcp]'" in p.message for p in caught.value.problems)


def test_validate_check_tools_lists_what_each_server_offers(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engine.cli import app

    path = write(tmp_path, stdio_registry(), agent())
    outcome = CliRunner().invoke(app, ["validate", "--check-tools", str(path)])
    assert outcome.exit_code == 0, outcome.output
    assert "mcp server shop (stdio: python" in outcome.output
    assert "+ get_order_status:" in outcome.output and "- internal_admin:" in outcome.output
    assert SECRET not in outcome.output
