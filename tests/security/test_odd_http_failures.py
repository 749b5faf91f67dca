"""Failures a server or the environment causes are the block's errors, which `on_error` handles, never
`internal_error`: a redirect whose Location no URL reads (`http:\\\\host`), and a proxy from the environment that
this installation cannot use (`ALL_PROXY=socks5://…` without the socksio package)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import Runner


class _Redirects(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("location", "http:\\\\evil.example\\x")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def redirecting() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirects)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


DIAGRAM = """
    diagram: odd
    allowed_hosts: ["127.0.0.1:{port}"]
    blocks:
      - {{id: start, type: Start, error_level: Handle, next: fetch}}
      - id: fetch
        type: HttpRequest
        with: {{url: "http://127.0.0.1:{port}/orders", retries: 2}}
        on_error: handled
      - {{id: handled, type: Set, set: {{handled: true}}}}
"""


def _handled(runner: Runner, path: Path) -> tuple[str, str]:
    result = runner.run(path)
    assert result.status == "succeeded" and result.path == ["start", "fetch", "handled"], result.errors
    [error] = result.errors
    assert error["handled_by"] == "handled"
    return str(error["type"]), str(error["message"])


def test_a_redirect_to_no_url_is_a_malformed_answer_that_on_error_handles(
        runner: Runner, write: Callable[..., Path], redirecting: int) -> None:
    kind, message = _handled(runner, write(DIAGRAM.format(port=redirecting)))
    assert kind == "http_malformed_response"
    assert "answered with a redirect whose Location is not a URL" in message


def test_a_proxy_this_installation_cannot_use_is_a_connection_error_at_once(
        runner: Runner, write: Callable[..., Path], redirecting: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALL_PROXY", "socks5://robot:s3cr3t-pw@127.0.0.1:9")
    kind, message = _handled(runner, write(DIAGRAM.format(port=redirecting)))
    assert kind == "http_connection_error"
    assert "s3cr3t-pw" not in message
    try:
        import socksio  # noqa: F401  # installed: the proxy is used, and nobody listens on port 9
    except ImportError:
        assert "cannot use the proxy ALL_PROXY=socks5://127.0.0.1:9" in message, message
        assert "socksio" in message and "(after" not in message  # not retried: no retry could change it
