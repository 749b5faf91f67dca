"""MCP servers under attack: checking a diagram never runs a server's command, URLs stay on loopback unless allowed,
keys stay out of `--check-tools`, and a malformed server fails its call at once with one error line."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from click.testing import CliRunner

from blocks.registry import registry as block_registry
from engine import DiagramInvalid, validate
from engine.cli import app as cli_app
from engine.compile.loader import load_diagram
from engine.tools.mcp import list_server_tools
from engine.tools.mcp_servers import McpServerEntry, resolve_server
from engine.web.app import create_app

pytestmark = pytest.mark.slow  # real MCP servers as processes

pytest.importorskip("mcp", reason="the mcp extra is not installed")

BAD_SERVER = Path(__file__).with_name("bad_server.py")
KEY = "sk-ant-api03-check-tools-secret-0123456789"

PLAIN = """\
diagram: plain
tools: registry.yaml
blocks:
  - {id: start, type: Start, next: done}
  - {id: done, type: Set, set: {n: 1}}
"""


def marker_registry(marker: Path) -> str:
    return f"""\
registry: shop
groups: {{shop: Orders}}
mcp_servers:
  - name: marker
    command: [sh, -c, "echo started >> {marker.as_posix()}"]
    group: shop
    timeout: 5
"""


# -- 3. only a run, or validate --check-tools, starts a server ----------------------------------------------------


def _studio_reads(folder: Path, runs: Path, *, read_only: bool) -> list[tuple[str, int]]:
    app = create_app(folder, runs, block_registry(), token="t", read_only=read_only)
    headers = {"x-diagrama-token": "t", "origin": "http://127.0.0.1:8765"}

    async def go() -> list[tuple[str, int]]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as c:
            answers = []
            for url in ("/api/diagrams", "/api/diagrams/plain.yaml", "/api/diagrams/plain.yaml/hash", "/api/scenarios"):
                answers.append((url, (await c.get(url)).status_code))
            draft = (await c.get("/api/diagrams/plain.yaml")).json()["diagram"]
            checked = await c.post("/api/validate", json={"diagram": draft, "path": "plain.yaml"}, headers=headers)
            answers.append(("/api/validate", checked.status_code))
            return answers

    return asyncio.run(go())


def test_checking_a_diagram_never_runs_its_mcp_servers_commands(tmp_path: Path) -> None:
    marker = tmp_path / "started.txt"
    (tmp_path / "registry.yaml").write_text(marker_registry(marker), encoding="utf-8")
    path = tmp_path / "plain.yaml"
    path.write_text(PLAIN, encoding="utf-8")
    checked = CliRunner().invoke(cli_app, ["validate", str(path)])
    assert checked.exit_code == 0, checked.output
    assert not marker.exists(), "diagrama validate ran the server's command"
    drawn = CliRunner().invoke(cli_app, ["graph", str(path)])
    assert drawn.exit_code == 0 and not marker.exists(), "diagrama graph ran the server's command"
    assert validate(path, block_registry()) == [] and not marker.exists()
    for read_only in (True, False):
        answers = _studio_reads(tmp_path, tmp_path / "runs", read_only=read_only)
        assert all(status == 200 for _, status in answers), answers
        assert not marker.exists(), f"the studio ran the server's command (read_only={read_only})"
    # The studio's page knows the server's group for tools('shop'), without starting it.
    opened = create_app(tmp_path, tmp_path / "runs", block_registry(), token="t")

    async def registries() -> Any:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=opened), base_url="http://127.0.0.1:8765") as c:
            return (await c.get("/api/diagrams/plain.yaml")).json()["registries"]

    assert asyncio.run(registries()) == [{"group": "shop", "description": "", "tools": []}]
    assert not marker.exists()


def test_a_run_and_check_tools_do_start_the_server(tmp_path: Path) -> None:
    marker = tmp_path / "started.txt"
    (tmp_path / "registry.yaml").write_text(marker_registry(marker), encoding="utf-8")
    path = tmp_path / "plain.yaml"
    path.write_text(PLAIN, encoding="utf-8")
    listed = CliRunner().invoke(cli_app, ["validate", "--check-tools", str(path)])
    assert listed.exit_code == 2 and marker.read_text().count("started") == 1  # started, then it failed to answer
    assert "could not be started or listed" in listed.output
    ran = CliRunner().invoke(cli_app, ["run", str(path), "--offline", "--runs-dir", str(tmp_path / "runs")])
    assert ran.exit_code == 2 and marker.read_text().count("started") == 2


def test_a_diagram_loaded_to_check_starts_its_servers_when_it_runs(tmp_path: Path) -> None:
    from engine import execute

    marker = tmp_path / "started.txt"
    (tmp_path / "registry.yaml").write_text(marker_registry(marker), encoding="utf-8")
    (tmp_path / "plain.yaml").write_text(PLAIN, encoding="utf-8")
    diagram = load_diagram(tmp_path / "plain.yaml", block_registry())
    assert not marker.exists()
    with pytest.raises(DiagramInvalid) as caught:
        asyncio.run(execute(diagram, {}, runs_dir=tmp_path / "runs"))
    assert marker.exists() and [p.code for p in caught.value.problems] == ["mcp_server_failed"]


# -- 8. streamable-HTTP URLs: loopback, or a host the registry allows ----------------------------------------------


def http_registry(url: str, allowed: str = "") -> str:
    return f"""\
registry: shop
{allowed}mcp_servers:
  - name: remote
    url: {url}
    timeout: 3
"""


@pytest.mark.parametrize("url", ["http://10.255.255.1/mcp", "http://169.254.169.254/latest/meta-data",
                                 "http://[::ffff:169.254.169.254]/mcp", "http://metadata.google.internal/mcp",
                                 "http://2130706433/mcp", "http://0x7f.1/mcp"])
def test_a_url_that_leaves_loopback_is_refused_at_load_before_any_connection(tmp_path: Path, url: str) -> None:
    (tmp_path / "registry.yaml").write_text(http_registry(url), encoding="utf-8")
    (tmp_path / "plain.yaml").write_text(PLAIN, encoding="utf-8")
    for start_servers in (False, True):  # checked, or loaded to run: refused either way, without connecting
        with pytest.raises(DiagramInvalid) as caught:
            load_diagram(tmp_path / "plain.yaml", block_registry(), start_servers=start_servers)
        [problem] = caught.value.problems
        assert (problem.code, problem.line, problem.field) == ("host_not_allowed", 4, "mcp_servers[0].url"), problem
        assert problem.file == str(tmp_path / "registry.yaml") and "allowed_hosts" in (problem.hint or "")


def test_allowed_hosts_lets_a_named_host_through_and_loopback_needs_no_listing(tmp_path: Path) -> None:
    (tmp_path / "plain.yaml").write_text(PLAIN, encoding="utf-8")
    for url, allowed in (("http://shop.internal:9/mcp", "allowed_hosts: [shop.internal]\n"),
                         ("http://127.0.0.1:9/mcp", ""), ("http://localhost:9/mcp", ""), ("http://[::1]:9/mcp", "")):
        (tmp_path / "registry.yaml").write_text(http_registry(url, allowed), encoding="utf-8")
        assert load_diagram(tmp_path / "plain.yaml", block_registry()).tools is not None


# -- 9. --check-tools prints no key ----------------------------------------------------------------------------------


def test_check_tools_output_carries_no_key_from_a_command_or_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.mcp.conftest import SERVER

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("PLAIN_VALUE", "token-value-not-named-as-a-key")
    (tmp_path / "registry.yaml").write_text(f"""\
registry: shop
mcp_servers:
  - name: shop
    command: [python, {SERVER.as_posix()}, "${{ANTHROPIC_API_KEY}}", "${{PLAIN_VALUE}}"]
  - name: failing
    command: [sh, -c, "echo no key here $0 >&2; exit 3", "${{ANTHROPIC_API_KEY}}"]
    timeout: 5
""", encoding="utf-8")
    (tmp_path / "plain.yaml").write_text(PLAIN, encoding="utf-8")
    outcome = subprocess.run([sys.executable, "-m", "engine.cli", "validate", "--check-tools", str(tmp_path / "plain.yaml")],
                             capture_output=True, text=True, timeout=120, check=False)
    shown = outcome.stdout + outcome.stderr
    assert outcome.returncode == 2, shown
    assert KEY not in shown and "token-value-not-named-as-a-key" not in shown, shown
    assert "MCP server 'failing'" in shown


def test_check_tools_shows_a_listed_server_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.mcp.conftest import SERVER

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (tmp_path / "registry.yaml").write_text(f"""\
registry: shop
mcp_servers:
  - name: shop
    command: [python, {SERVER.as_posix()}, "${{ANTHROPIC_API_KEY}}"]
""", encoding="utf-8")
    (tmp_path / "plain.yaml").write_text(PLAIN, encoding="utf-8")
    outcome = CliRunner().invoke(cli_app, ["validate", "--check-tools", str(tmp_path / "plain.yaml")])
    assert outcome.exit_code == 0, outcome.output
    assert KEY not in outcome.output and "${ANTHROPIC_API_KEY}" in outcome.output
    assert "+ get_order_status" in outcome.output


# -- 14. a malformed server: one error line, and the call fails at once ---------------------------------------------

DISPATCH = """\
diagram: dispatch
tools: registry.yaml
blocks:
  - id: start
    type: Start
    error_level: Ignore
    variables: {calls: CALLS, history: []}
    next: dispatch
  - id: dispatch
    type: ToolDispatch
    with: {calls: "{{ calls }}", history: "{{ history }}"}
    set: {failed: "{{ errors }}", results: "{{ results }}"}
"""


def bad_registry(*flags: str) -> str:
    command = ", ".join(["python", BAD_SERVER.as_posix(), *flags])
    return f"registry: bad\nmcp_servers:\n  - name: bad\n    command: [{command}]\n    timeout: 120\n"


@pytest.mark.parametrize("tool", ["garbage", "deep"])
def test_a_malformed_reply_fails_the_call_with_mcp_error_and_no_traceback(tmp_path: Path, tool: str) -> None:
    (tmp_path / "registry.yaml").write_text(bad_registry(), encoding="utf-8")
    calls = [{"id": "c1", "name": tool, "arguments": {}}]
    (tmp_path / "d.yaml").write_text(DISPATCH.replace("CALLS", orjson.dumps(calls).decode()), encoding="utf-8")
    # The tool's timeout is 120 s: the call must fail on the bad line, not wait it out (the test's own limit is 60 s).
    outcome = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(tmp_path / "d.yaml"), "--offline",
                              "--runs-dir", str(tmp_path / "runs"), "--output", "json"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert outcome.returncode == 0, outcome.stderr
    assert "Traceback" not in outcome.stderr and "Failed to parse" not in outcome.stderr, outcome.stderr
    [failed] = orjson.loads(outcome.stdout)["variables"]["failed"]
    assert failed["type"] == "mcp_error", failed
    assert "not a JSON-RPC message" in failed["error"] and "\n" not in failed["error"]


def test_lines_that_are_not_json_rpc_before_the_answers_do_not_break_a_working_server(tmp_path: Path) -> None:
    (tmp_path / "registry.yaml").write_text(bad_registry("--noisy"), encoding="utf-8")
    calls = [{"id": "c1", "name": "fine", "arguments": {}}]
    (tmp_path / "d.yaml").write_text(DISPATCH.replace("CALLS", orjson.dumps(calls).decode()), encoding="utf-8")
    outcome = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(tmp_path / "d.yaml"), "--offline",
                              "--runs-dir", str(tmp_path / "runs"), "--output", "json"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert outcome.returncode == 0 and "Traceback" not in outcome.stderr, outcome.stderr
    assert orjson.loads(outcome.stdout)["variables"]["results"] == {"c1": "fine"}


# -- the listing's session: handed back before its server is stopped, and the stop bounded -------------------------


def test_a_listing_is_handed_back_before_its_server_stops_and_a_server_that_lingers_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    entry = McpServerEntry(name="bad", command=["python", BAD_SERVER.as_posix(), "--linger", pid_file.as_posix()],
                           timeout=60)
    server = resolve_server(entry, tmp_path / "registry.yaml", 1, {})
    listed = list_server_tools(server, fresh=True)
    assert [tool.name for tool in listed] == ["garbage", "deep", "fine"]
    # The load goes on while the server is stopped: it ignores the end of its input, so it is still there ...
    pid = int(pid_file.read_text())
    os.kill(pid, 0)
    # ... until the SDK's grace after its stdin closed runs out and it is killed (not the server's 60 s timeout).
    [stopping] = [thread for thread in threading.enumerate() if thread.name == "diagrama-mcp-list:bad"]
    stopping.join()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
