"""What the CLI prints: a closed output pipe, the trace table, the runs list."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _status(runs: Path) -> str:
    traces = list(runs.glob("*/trace.jsonl"))
    assert len(traces) == 1
    finished = json.loads(traces[0].read_text().splitlines()[-1])
    assert finished["event"] == "run_finished"
    return str(finished["status"])


@pytest.mark.slow
@pytest.mark.parametrize("closed", ["stdout", "stderr"])
def test_a_closed_output_pipe_does_not_change_the_runs_status(tmp_path: Path, closed: str) -> None:
    # `diagrama run … | head -1`: the reader goes away before the run prints (stderr during it, stdout after).
    runs = tmp_path / "runs"
    command = [sys.executable, "-m", "engine.cli", "run", str(ROOT / "diagrams/greeting_counter.yaml"), "--offline",
               "--runs-dir", str(runs)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    getattr(process, closed).close()
    kept = process.stderr if closed == "stdout" else process.stdout
    assert kept is not None
    kept.read()
    assert process.wait(timeout=60) == 0
    assert _status(runs) == "succeeded"


def _invoke(*args: str):
    from click.testing import CliRunner

    from engine.cli import app

    return CliRunner().invoke(app, list(args))


DISPATCH = """
diagram: d
tools: {registry}
blocks:
  - id: start
    type: Start
    message_level: Debug
    variables: {{calls: [{{id: c1, name: nope, arguments: {{}}}}], history: []}}
    next: dispatch
  - id: dispatch
    type: ToolDispatch
    error_level: {level}
    with: {{calls: "{{{{ calls }}}}", history: "{{{{ history }}}}"}}
    on_error: handler
  - id: handler
    type: Set
    set: {{why: "{{{{ error.message }}}}"}}
"""


def _dispatch_run(tmp_path: Path, level: str) -> tuple[Path, Path]:
    from tests.engine.test_tools import BASIC, make_registry

    registry, _ = make_registry(tmp_path, BASIC)
    diagram = tmp_path / f"dispatch_{level}.yaml"
    diagram.write_text(DISPATCH.format(registry=registry.name, level=level))
    runs = tmp_path / "runs"
    shown = _invoke("run", str(diagram), "-q", "--runs-dir", str(runs), "--output", "json")
    assert shown.exit_code == 0, shown.output
    return diagram, Path(json.loads(shown.stdout)["trace"])


def test_trace_errors_lists_failed_tool_calls(tmp_path: Path) -> None:
    _diagram, trace = _dispatch_run(tmp_path, "Ignore")
    table = _invoke("trace", str(trace), "--errors")
    assert table.exit_code == 0, table.output
    step = [line for line in table.stdout.splitlines() if " dispatch " in line]
    assert len(step) == 1 and "failed nope: unknown tool 'nope'" in step[0]
    events = [json.loads(line) for line in _invoke("trace", str(trace), "--errors", "--json").stdout.splitlines()]
    assert [e for e in events if e["event"] == "tool_called"] != []
    assert all(e["ok"] is False for e in events if e["event"] == "tool_called")


def test_a_failure_handled_by_on_error_is_drawn_failed_with_its_error_link_taken(tmp_path: Path) -> None:
    diagram, trace = _dispatch_run(tmp_path, "Handle")
    mermaid = _invoke("graph", str(diagram), "--run", str(trace)).stdout
    assert "class dispatch failed" in mermaid and "class handler,start taken" in mermaid
    edges = [line.strip() for line in mermaid.splitlines() if "-->" in line or "-.->" in line]
    error_edge = next(number for number, line in enumerate(edges) if line.startswith("dispatch -.->"))
    assert f"linkStyle {error_edge} stroke:#1a7f37" in mermaid
    dot = _invoke("graph", str(diagram), "--run", str(trace), "--format", "dot").stdout
    node = next(line for line in dot.splitlines() if line.strip().startswith('"dispatch" ['))
    assert "#ffd8d8" in node
    edge = next(line for line in dot.splitlines() if '"dispatch" -> "handler"' in line)
    assert "#1a7f37" in edge


def test_trace_table_puts_the_header_below_the_summary_and_shows_tool_scores(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    ran = _invoke("run", str(ROOT / "diagrams/order_agent.yaml"), "--offline", "-q", "--runs-dir", str(runs))
    assert ran.exit_code == 0, ran.output
    lines = _invoke("trace", "last", "--runs-dir", str(runs)).stdout.splitlines()
    assert lines[0].startswith("run ") and lines[1].startswith("run succeeded")
    assert lines[2].split()[:3] == ["step", "block", "type"]
    ask = next(line for line in lines if line.split()[1:3] == ["ask", "ClaudeRequest"])
    assert "tools get_order_status 0." in ask
    assert re.search(r"get_order_status \d\.\d\d \(lex \d\.\d\d, emb \d\.\d\d\)", ask), ask


def test_trace_follow_ends_on_an_interrupted_run(tmp_path: Path) -> None:
    import socket
    import time

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    folder = tmp_path / "runs" / "20260101-000000-abcdef"
    folder.mkdir(parents=True)
    (folder / "trace.jsonl").write_text(json.dumps({
        "event": "run_started", "run_id": folder.name, "diagram": "d", "path": "d.yaml", "timestamp": time.time() - 60,
        "pid": gone.pid, "host": socket.gethostname()}) + "\n")
    began = time.monotonic()
    shown = _invoke("trace", folder.name, "--runs-dir", str(tmp_path / "runs"), "--follow")
    assert time.monotonic() - began < 10
    assert shown.exit_code == 1 and "interrupted" in shown.stderr


def test_runs_aligns_long_ids_and_lists_scenario_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    rows = tmp_path / "rows.csv"
    rows.write_text("times\n1\n2\n")
    assert _invoke("batch", str(ROOT / "diagrams/greeting_counter.yaml"), "--inputs", str(rows), "--offline",
                   "--runs-dir", str(runs)).exit_code == 0
    assert _invoke("test", str(ROOT / "tests/scenarios/greeting_counter.scenario.yaml"), "--runs-dir",
                   str(runs)).exit_code == 0
    listed = _invoke("runs", "--runs-dir", str(runs)).stdout.splitlines()
    assert len(listed) == 4, listed
    column = listed[0].index("diagram")
    assert all(line[column:].startswith("greeting_counter.yaml") for line in listed[1:]), listed
    scenario = [line for line in listed if line.endswith(" scenario")]
    assert len(scenario) == 1 and scenario[0].split()[0].endswith("-scenario")
    assert sum("#1" in line or "#2" in line for line in listed) == 2


def test_trace_table_shows_an_http_requests_method_status_and_attempts(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    scenario = tmp_path / "lookup.scenario.yaml"
    scenario.write_text(f"""
scenarios:
  - scenario: a 503 then the order
    diagram: {ROOT / "diagrams/order_lookup.yaml"}
    replies:
      fetch: [{{status: 503}}, {{status: 200, json: {{id: 42}}}}]
      answer: [{{text: Shipped.}}]
""")
    tested = _invoke("test", str(scenario), "--runs-dir", str(runs))
    assert tested.exit_code == 0, tested.output
    lines = _invoke("trace", "last", "--runs-dir", str(runs)).stdout.splitlines()
    fetch = next(line for line in lines if line.split()[1:3] == ["fetch", "HttpRequest"])
    assert "GET 200 after 2 attempts" in fetch, fetch
