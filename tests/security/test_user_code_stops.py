"""User code cannot stop more than its step (issue 37, findings 1 and 9): whatever a Function or a tool handler raises
— `sys.exit`, its own KeyboardInterrupt, GeneratorExit, StopIteration, an exception whose `str()` raises — is the
block's error under its error level, in process (a handler thread, a coroutine), in `diagrama run` (the run's own
thread), and in `diagrama api`, which goes on serving; and an abandoned coroutine that will not stop (finding 10)
cannot keep `diagrama run` from ending."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]

CODE = '''
import sys

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no words for it")

def leaves(code):
    sys.exit(code)

def interrupts():
    raise KeyboardInterrupt("pressed by the code itself")

def closes():
    raise GeneratorExit

def stops():
    raise StopIteration

def mute():
    raise Unprintable()

async def leaves_later(code):
    sys.exit(code)

async def stops_later():
    raise StopIteration

def tool(kind):
    {"exit": lambda: sys.exit("usage: tool KIND"), "interrupt": interrupts}[kind]()
'''
CASES = [
    ("leaves", {"code": "usage: prog [-h]"}, "SystemExit: usage: prog [-h]"),
    ("leaves", {"code": 3}, "SystemExit: 3"),
    ("interrupts", {}, "KeyboardInterrupt: pressed by the code itself"),
    ("closes", {}, "GeneratorExit"),
    ("stops", {}, "StopIteration"),
    ("mute", {}, "Unprintable: <unprintable Unprintable>"),
    ("leaves_later", {"code": 3}, "SystemExit: 3"),
    ("stops_later", {}, "RuntimeError: coroutine raised StopIteration"),
]


@pytest.fixture
def module(tmp_path: Path) -> str:
    name = f"stopping_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(CODE)
    return name


def _diagram(write: Callable[..., Path], module: str, function: str, arguments: dict[str, Any]) -> Path:
    return write(f"""
        diagram: stopping
        allowed_modules: [{module}]
        blocks:
          - {{id: start, type: Start, error_level: Handle, next: call}}
          - id: call
            type: Function
            with: {{function: "{module}:{function}", arguments: {json.dumps(arguments)}, timeout: 5}}
            next: after
            on_error: caught
          - {{id: caught, type: Set, set: {{why: "{{{{ error.type }}}}: {{{{ error.message }}}}"}}, next: after}}
          - {{id: after, type: Set, set: {{went_on: true}}}}
    """)


@pytest.mark.parametrize(("function", "arguments", "shown"), CASES)
def test_what_a_function_raises_is_its_blocks_error_in_process(write: Callable[..., Path], runner: Runner,
                                                                module: str, function: str, arguments: dict[str, Any],
                                                                shown: str) -> None:
    result = runner.run(_diagram(write, module, function, arguments))
    assert result.status == "succeeded" and result.variables["went_on"] is True
    assert result.variables["why"] == f"function_error: function '{module}:{function}' raised {shown}"


@pytest.mark.slow
def test_what_a_function_raises_on_the_runs_own_thread_is_its_error_too(write: Callable[..., Path], module: str,
                                                                         tmp_path: Path) -> None:
    for function, arguments, shown in CASES:
        path = _diagram(write, module, function, arguments)
        done = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(path), "-q", "--output", "json",
                               "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True, check=False)
        assert done.returncode == 0, (function, done.returncode, done.stderr)  # never 3, the waiting code
        assert "Traceback" not in done.stderr
        found = json.loads(done.stdout)["variables"]
        assert found["why"] == f"function_error: function '{module}:{function}' raised {shown}", function


def test_a_tool_handler_that_exits_is_a_failed_tool_row(write: Callable[..., Path], runner: Runner,
                                                        module: str) -> None:
    write(f"""
        registry: stoppers
        allowed_modules: [{module}]
        tools:
          - function: tool
            handler: {module}:tool
            description: Stops in a way of its choosing.
            parameters: {{type: object, properties: {{kind: {{type: string}}}}, required: [kind]}}
    """, "stoppers.yaml")
    path = write("""
        diagram: dispatching
        tools: stoppers.yaml
        blocks:
          - id: start
            type: Start
            variables:
              calls: [{id: c1, name: tool, arguments: {kind: exit}}, {id: c2, name: tool, arguments: {kind: interrupt}}]
              history: [{role: user, content: go}]
            next: dispatch
          - id: dispatch
            type: ToolDispatch
            with: {calls: "{{ calls }}", history: "{{ history }}"}
            set: {history: "{{ history }}"}
    """)
    result = runner.run(path)
    assert result.status == "succeeded", result.errors
    rows = [row for row in result.variables["history"] if row["role"] == "tool"]
    assert [json.loads(row["content"])["error"] for row in rows] == [
        "tool 'tool' failed: SystemExit: usage: tool KIND",
        "tool 'tool' failed: KeyboardInterrupt: pressed by the code itself"]


@pytest.mark.slow
def test_diagrama_api_goes_on_serving_after_a_function_exits(write: Callable[..., Path], module: str,
                                                             tmp_path: Path) -> None:
    import os
    import socket
    import time

    import httpx

    robots = tmp_path / "robots"
    robots.mkdir()
    (robots / f"{module}.py").write_text(CODE)
    for name, function in (("leaver", "leaves"), ("interrupter", "interrupts")):
        (robots / f"{name}.yaml").write_text(f"""
diagram: {name}
allowed_modules: [{module}]
blocks:
  - {{id: start, type: Start, next: call}}
  - id: call
    type: Function
    with: {{function: "{module}:{function}", arguments: {json.dumps({"code": 0} if function == "leaves" else {})}}}
""".lstrip())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "engine.cli", "api", str(robots), "--port", str(port),
                               "--no-auth", "--runs-dir", str(tmp_path / "runs")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env={**os.environ, "DIAGRAMA_STORE": ""})
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                httpx.get(f"{base}/v1/robots", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        answers = [httpx.post(f"{base}/v1/robots/{name}/runs", json={}, timeout=30) for name in ("leaver", "interrupter")]
        assert server.poll() is None, "the server stopped"
        still = httpx.get(f"{base}/v1/robots", timeout=5)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert [a.json()["status"] for a in answers] == ["failed", "failed"]
    assert answers[0].json()["errors"][0]["message"].endswith("raised SystemExit: 0")
    assert still.status_code == 200


STUBBORN = """
import asyncio


async def stubborn():
    while True:  # takes its cancellation, its closing and, without a running loop, each await's failure
        try:
            await asyncio.sleep(0.05)
        except:  # noqa: E722
            pass
"""


@pytest.mark.slow
def test_diagrama_run_ends_after_abandoning_a_function_that_will_not_stop(write: Callable[..., Path],
                                                                          tmp_path: Path) -> None:
    """Finalized where no event loop runs, the abandoned coroutine would loop for ever: the process used to print
    its result and spin at 100% CPU. It is kept, never finalized, and the command ends with its own status."""
    (tmp_path / "stubborn_code.py").write_text(STUBBORN)
    path = write("""
        diagram: stubborn
        allowed_modules: [stubborn_code]
        blocks:
          - {id: start, type: Start, error_level: Handle, next: call}
          - id: call
            type: Function
            with: {function: "stubborn_code:stubborn", timeout: 0.5}
            on_error: after
          - {id: after, type: Set, set: {went_on: true}}
    """)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    done = subprocess.run([sys.executable, "-m", "engine.cli", "run", str(path), "-q", "--output", "json",
                           "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded" and result["variables"]["went_on"] is True
    assert [error["type"] for error in result["errors"]] == ["block_timeout"]
