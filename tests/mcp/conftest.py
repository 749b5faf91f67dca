"""A real MCP server (tests/mcp/shop_server.py) over stdio and over streamable HTTP, and diagrams that use it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

SERVER = Path(__file__).with_name("shop_server.py")
SECRET = "mcp-test-secret-4f1d9a"

AGENT = """\
diagram: mcp-agent
tools: registry.yaml
blocks:
  - id: start
    type: Start
    message_level: Debug
    error_level: Handle
    inputs: {question: "Where is my order 42?"}
    variables: {history: [], calls: []}
    next: ask
  - id: ask
    type: BLOCK
    with:
      model: MODEL
      request: "{{ question if history | length == 0 else '' }}"
      history: "{{ history }}"
      tools: "{{ tools('shop', query=question, top_k=2) }}"
      max_tokens: 256
    set: {answer: "{{ result }}", history: "{{ history }}", calls: "{{ called_tools }}"}
    next:
      - to: dispatch
        when: "{{ called_tools | length > 0 }}"
      - to: done
  - id: dispatch
    type: ToolDispatch
    with: {calls: "{{ calls }}", history: "{{ history }}"}
    set: {history: "{{ history }}"}
    next: ask
  - id: done
    type: Set
"""

DISPATCH = """\
diagram: mcp-dispatch
tools: registry.yaml
blocks:
  - id: start
    type: Start
    message_level: Debug
    error_level: Ignore
    variables:
      calls: CALLS
      history: []
    next: dispatch
  - id: dispatch
    type: ToolDispatch
    with: {calls: "{{ calls }}", history: "{{ history }}"}
    set: {history: "{{ history }}", failed: "{{ errors }}", results: "{{ results }}"}
"""


def stdio_registry(extra: str = "") -> str:
    return f"""\
registry: shop
groups: {{shop: Orders of the online shop}}
mcp_servers:
  - name: shop
    command: [python, {SERVER.as_posix()}]
    group: shop
    exclude: [internal_admin]
    env: {{SHOP_SECRET: "${{MCP_TEST_SECRET}}"}}
    timeout: 20
{extra}"""


def http_registry(url: str) -> str:
    return f"""\
registry: shop
groups: {{shop: Orders of the online shop}}
mcp_servers:
  - name: shop
    url: {url}
    group: shop
    include: [get_order_status, order_totals]
"""


def write(folder: Path, registry: str, diagram: str) -> Path:
    (folder / "registry.yaml").write_text(registry, encoding="utf-8")
    path = folder / "diagram.yaml"
    path.write_text(diagram, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def secret_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_SECRET", SECRET)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """The same server over streamable HTTP on a loopback port; its URL."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            pytest.fail("the MCP test server did not start listening")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)
