"""An eval online answers from the response cache by default (issue 39, 2 and 3's target): a second eval of an
unchanged robot makes no vendor request; `--cache off` makes them all again. The vendor is a loopback server speaking
Anthropic's wire format."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import app

KEY = "sk-ant-test-0123456789abcdefghijklmnop"
ROBOT = """\
diagram: robot
blocks:
  - id: start
    type: Start
    inputs: {question: ""}
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {model: claude-sonnet-4-5, request: "{{ question }}", max_tokens: 50}
    set: {answer: "{{ result }}"}
"""
EVAL = """\
diagram: robot.yaml
cases:
  - {id: a, inputs: {question: where is 42}, expected: shipped}
  - {id: b, inputs: {question: where is 57}, expected: shipped}
scorers:
  - {id: says, check: "{{ expected in output }}"}
"""


@pytest.fixture
def vendor() -> Iterator[tuple[str, list[dict[str, object]]]]:
    """Anthropic's Messages API on a loopback port; every request it is sent, kept."""
    received: list[dict[str, object]] = []

    class Messages(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the standard library names it so
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            received.append(body)
            answer = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                                 "content": [{"type": "text", "text": "Order shipped."}], "stop_reason": "end_turn",
                                 "usage": {"input_tokens": 9, "output_tokens": 3}}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Messages)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def test_a_second_eval_of_an_unchanged_robot_asks_the_vendor_nothing(
        tmp_path: Path, vendor: tuple[str, list[dict[str, object]]]) -> None:
    base, received = vendor
    (tmp_path / "robot.yaml").write_text(ROBOT, encoding="utf-8")
    (tmp_path / "robot.eval.yaml").write_text(EVAL, encoding="utf-8")
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": base}

    def evaluate(*options: str) -> dict[str, object]:
        result = CliRunner().invoke(app, ["eval", str(tmp_path / "robot.eval.yaml"), "--output", "json",
                                          "--runs-dir", str(tmp_path / "runs"), *options], env=env)
        assert result.exit_code == 0, result.output
        assert KEY not in result.output
        return json.loads(result.output)  # type: ignore[no-any-return]

    first = evaluate()
    assert len(received) == 2 and first["summary"]["score"] == 1.0  # type: ignore[index]
    assert (tmp_path / ".diagrama" / "cache").is_dir()  # beside the eval file
    second = evaluate()
    assert len(received) == 2  # every answer from the cache
    assert [c["score"] for c in second["cases"]] == [1.0, 1.0]  # type: ignore[index]
    evaluate("--cache", "off")
    assert len(received) == 4
    evaluate("--cache", str(tmp_path / "elsewhere"))
    assert len(received) == 6 and (tmp_path / "elsewhere").is_dir()
