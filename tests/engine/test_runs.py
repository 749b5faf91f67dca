"""Reading runs back: `diagrama trace`, `diagrama runs`, and the run's path on the graph."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from engine import read_events
from engine.compile.graph import to_dot, to_mermaid
from engine.runs.traces import find_trace, list_runs, run_path

cli = CliRunner()

FAILING = """
    diagram: failing
    blocks:
      - {id: start, type: Start, message_level: Debug, next: first}
      - {id: first, type: Echo, with: {value: hello}, next: [{to: boom, when: "{{ result == 'hello' }}"}, {to: other}]}
      - {id: boom, type: Fail, with: {message: "disk full"}, next: other}
      - {id: other, type: Set}
"""


def app():
    from engine.cli import app as typer_app

    return typer_app


def test_trace_table_shows_each_step_and_the_error(runner, write, monkeypatch) -> None:
    result = runner.run(write(FAILING))
    monkeypatch.setattr("engine.cli.blocks_registry", lambda: runner.registry)
    shown = cli.invoke(app(), ["trace", result.run_id, "--runs-dir", str(runner.runs_dir)])
    assert shown.exit_code == 0, shown.output
    rows = [line.split() for line in shown.stdout.splitlines() if line[:5].strip().isdigit()]
    assert [(r[0], r[1], r[2]) for r in rows] == [("1", "start", "Start"), ("2", "first", "Echo"), ("3", "boom", "Fail")]
    assert rows[1][5] == "succeeded" and rows[1][7] == "boom"
    assert rows[2][5] == "failed" and "test_failure: disk full" in " ".join(rows[2])
    assert "run failed after 3 steps" in shown.stdout
    errors_only = cli.invoke(app(), ["trace", result.run_id, "--errors", "--runs-dir", str(runner.runs_dir)])
    assert [line.split()[1] for line in errors_only.stdout.splitlines() if line[:5].strip().isdigit()] == ["boom"]
    one_block = cli.invoke(app(), ["trace", "last", "--block", "first", "--runs-dir", str(runner.runs_dir)])
    assert [line.split()[1] for line in one_block.stdout.splitlines() if line[:5].strip().isdigit()] == ["first"]


def test_trace_json_round_trips_the_events(runner, write) -> None:
    result = runner.run(write(FAILING))
    shown = cli.invoke(app(), ["trace", str(result.trace), "--json"])
    assert [json.loads(line) for line in shown.stdout.splitlines()] == read_events(result.trace)
    release = cli.invoke(app(), ["trace", str(result.trace.parent), "--json", "--level", "Release"])
    names = {json.loads(line)["event"] for line in release.stdout.splitlines()}
    assert names == {"run_started", "block_failed", "run_finished"}


def test_path_highlighting_marks_exactly_the_taken_links(runner, write) -> None:
    path = write(FAILING)
    result = runner.run(path)
    drawn = run_path(result.trace)
    assert drawn.links == {("start", "first"), ("first", "boom")}
    assert drawn.failed == "boom" and drawn.blocks == {"start", "first", "boom"}
    graph = runner.load(path).graph
    mermaid = to_mermaid(graph, drawn)
    edges = [line.strip() for line in mermaid.splitlines() if "-->" in line]
    styled = {int(line.split()[1]) for line in mermaid.splitlines() if line.strip().startswith("linkStyle")}
    assert {edges[i].split()[0] + ">" + edges[i].split()[-1] for i in styled} == {"start>first", "first>boom"}
    assert "class boom failed" in mermaid
    dot = to_dot(graph, drawn)
    assert dot.count('color="#1a7f37", penwidth=3') == 2 and '"boom" [label' in dot


def test_loop_passes_are_counted_on_the_loop_node(runner, write) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, next: loop}
          - {id: loop, type: Loop, with: {count: 3}, body: step}
          - {id: step, type: Set, next: loop}
    """)
    drawn = run_path(runner.run(path).trace)
    assert drawn.passes == {"loop": 3}
    assert "3 passes" in to_mermaid(runner.load(path).graph, drawn)


def test_runs_lists_newest_first_and_last_finds_it(runner, write) -> None:
    first = runner.run(write(FAILING))
    second = runner.run(write(FAILING.replace("failing", "second"), "second.yaml"))
    found = list_runs(runner.runs_dir)
    assert [r.run_id for r in found][:2] == sorted([first.run_id, second.run_id], reverse=True)
    assert found[0].status == "failed" and found[0].steps == 3
    assert find_trace("last", runner.runs_dir) == found[0].trace
    listed = cli.invoke(app(), ["runs", "--runs-dir", str(runner.runs_dir)])
    assert first.run_id in listed.stdout and "failed" in listed.stdout


def test_unknown_run_is_a_usage_error(tmp_path: Path) -> None:
    shown = cli.invoke(app(), ["trace", "nope", "--runs-dir", str(tmp_path)])
    assert shown.exit_code == 2 and "no run 'nope'" in shown.stderr
