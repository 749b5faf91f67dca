"""A body's cap holds on its decoded bytes, whatever its content-coding says.

A loopback server answers with gzip bombs: one layer (a 256 MiB body in a quarter of a MiB) and two
(`Content-Encoding: gzip, gzip`, the same 256 MiB in about a kilobyte: the ratio is squared, and httpx used to
decode the inner layer whole in one call). Real `diagrama run` processes, HttpRequest's and a streaming
ClaudeRequest's, must refuse the body as malformed (two layers) or too large (one), within a bounded memory: the
peak resident size of the process is measured by the process that waited for it.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DECODED = 256 * 1024 * 1024


@cache
def _one_layer() -> bytes:
    """gzip of DECODED zero bytes, made a MiB at a time (about 250 KiB)."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1024 * 1024)
    parts = [squeeze.compress(zeros) for _ in range(DECODED // len(zeros))]
    return b"".join(parts) + squeeze.flush()


def _bomb(path: str) -> bytes:
    return gzip.compress(_one_layer(), 9) if path.startswith("/twice") else _one_layer()


class _Bombs(BaseHTTPRequestHandler):
    """`/once…` one gzip layer, `/twice…` two; a Messages API path (`/twice/v1/messages`) as an event stream."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = _bomb(self.path)
        layers = "gzip, gzip" if "twice" in self.path else "gzip"
        self.send_response(200)
        streaming = "messages" in self.path
        self.send_header("content-type", "text/event-stream" if streaming else "application/json")
        self.send_header("content-encoding", layers)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def bombs() -> Iterator[tuple[str, int]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Bombs)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


FETCH = """\
diagram: fetch
allowed_hosts: ["127.0.0.1:{port}"]
blocks:
  - id: start
    type: Start
    inputs: {{url: ""}}
    next: fetch
  - id: fetch
    type: HttpRequest
    with: {{url: "{{{{ url }}}}", retries: 0}}
"""

ASK = """\
diagram: ask
blocks:
  - id: start
    type: Start
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {model: claude-sonnet-4-5, request: Hello, stream: true}
"""

_MEASURED = """\
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=300)
print(json.dumps({"exit": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
                  "peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def _run_measured(folder: Path, env: dict[str, str], *args: str) -> dict[str, object]:
    """`diagrama ARGS` in a process of its own, with its peak resident size (a fresh waiter: no other child)."""
    waiter = subprocess.run([sys.executable, "-c", _MEASURED, sys.executable, "-m", "engine.cli", *args],
                            capture_output=True, text=True, timeout=320, cwd=folder, env=env, check=True)
    measured: dict[str, object] = json.loads(waiter.stdout)
    return measured


def _env(**extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name != "DIAGRAMA_STORE"}
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


def _error(measured: dict[str, object]) -> dict[str, object]:
    result = json.loads(str(measured["stdout"]))
    assert result["status"] == "failed", measured
    error: dict[str, object] = result["errors"][0]
    return error


@pytest.mark.slow
@pytest.mark.parametrize(("path", "code", "says"), [
    ("/twice", "http_malformed_response", "2 layers of content-encoding (gzip, gzip)"),
    ("/once", "http_malformed_response", "larger than 32 MB"),
])
def test_an_http_request_refuses_a_bomb_within_bounded_memory(tmp_path: Path, bombs: tuple[str, int], path: str,
                                                              code: str, says: str) -> None:
    host, port = bombs
    (tmp_path / "fetch.yaml").write_text(FETCH.format(port=port), encoding="utf-8")
    measured = _run_measured(tmp_path, _env(), "run", "fetch.yaml", "-i", f"url=http://{host}:{port}{path}",
                             "--output", "json", "--runs-dir", str(tmp_path / "runs"))
    assert float(str(measured["peak_mib"])) < 200, measured  # the body decodes to 256 MiB; the cap is 32 MB
    error = _error(measured)
    assert error["type"] == code, measured
    assert says in str(error["message"])


@pytest.mark.slow
def test_a_vendor_stream_in_two_layers_is_malformed_within_bounded_memory(tmp_path: Path,
                                                                          bombs: tuple[str, int]) -> None:
    host, port = bombs
    (tmp_path / "ask.yaml").write_text(ASK, encoding="utf-8")
    env = _env(ANTHROPIC_API_KEY="sk-ant-test-key-123456", ANTHROPIC_BASE_URL=f"http://{host}:{port}/twice")
    measured = _run_measured(tmp_path, env, "run", "ask.yaml", "--output", "json", "--runs-dir",
                             str(tmp_path / "runs"))
    assert float(str(measured["peak_mib"])) < 200, measured
    error = _error(measured)
    assert error["type"] == "provider_malformed_response", measured
    assert "layers of content-encoding" in str(error["message"])
