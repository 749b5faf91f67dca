"""`diagrama run --stream`: the model's text as it comes, on stdout (or stderr beside --output json), keys scrubbed."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import app

cli = CliRunner()
KEY = "sk-ant-stream-secret-12345678"
TWO_BLOCKS = """
diagram: two
blocks:
  - id: start
    type: Start
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {model: claude-sonnet-5-5, request: "my key is sk-ant-stream-secret-12345678"}
    set: {first: "{{ result }}"}
    next: again
  - id: again
    type: GeminiRequest
    with: {model: gemini-3.5-flash, request: "and now Gemini", stream: false}
    set: {second: "{{ result }}"}
    next: last
  - id: last
    type: GroqChatRequest
    with: {model: llama-3.3-70b-versatile, request: "and Groq"}
    set: {third: "{{ result }}"}
"""


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    path = tmp_path / "two.yaml"
    path.write_text(textwrap.dedent(TWO_BLOCKS), encoding="utf-8")
    return path


def test_stream_prints_each_streaming_blocks_answer_on_stdout_a_line_each_keys_scrubbed(two: Path,
                                                                                        tmp_path: Path) -> None:
    result = cli.invoke(app, ["run", str(two), "--offline", "--stream", "--quiet", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "(simulated claude-sonnet-5-5) You said: my key is [REDACTED]"
    assert lines[1] == "(simulated llama-3.3-70b-versatile) You said: and Groq"  # `stream: false` opted out
    assert lines[2].startswith("succeeded")
    assert KEY not in result.stdout and KEY not in result.stderr


def test_stream_with_output_json_keeps_stdout_one_object_and_streams_on_stderr(two: Path, tmp_path: Path) -> None:
    result = cli.invoke(app, ["run", str(two), "--offline", "--stream", "--output", "json", "--runs-dir",
                              str(tmp_path)])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["variables"]["third"] == "(simulated llama-3.3-70b-versatile) You said: and Groq"
    assert "(simulated llama-3.3-70b-versatile) You said: and Groq\n" in result.stderr
    assert KEY not in result.stderr


def test_without_stream_nothing_is_streamed(two: Path, tmp_path: Path) -> None:
    result = cli.invoke(app, ["run", str(two), "--offline", "--quiet", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("succeeded")
