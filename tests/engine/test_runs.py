"""Reading runs back: `diagrama trace`, `diagrama runs`, and the run's path on the graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine import read_events
from engine.compile.graph import to_dot, to_mermaid
from engine.runs.trace_steps import run_path
from engine.runs.traces import find_trace, list_runs

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
    from engine.cli import app as cli_app

    return cli_app


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


# -- run records that do not lie: a killed run is interrupted, a failure says how long it took ----

ENDLESS = """
    diagram: endless
    blocks:
      - {id: start, type: Start, max_steps: 100000000, next: spin}
      - {id: spin, type: Loop, with: {count: 10000000, max_iterations: 100000000}, body: step}
      - {id: step, type: Set, set: {x: 1}, next: spin}
"""


def _diagrama(*args: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "engine.cli", *args]


def _wait_for_trace(runs_dir: Path, count: int, timeout: float = 30.0) -> list[Path]:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        traces = sorted(runs_dir.glob("*/trace.jsonl"))
        if len(traces) >= count and all(t.read_bytes().endswith(b"\n") for t in traces):
            return traces
        time.sleep(0.05)
    raise AssertionError(f"no trace appeared in {runs_dir}")


@pytest.mark.slow
def test_a_run_killed_with_sigkill_shows_as_interrupted(write, tmp_path: Path) -> None:
    import signal
    import subprocess

    path = write(ENDLESS, "endless.yaml")
    runs_dir = tmp_path / "runs"
    quick = write("""
        diagram: quick
        blocks:
          - {id: start, type: Start, max_steps: 3, next: loop}
          - {id: loop, type: Set, next: [{to: loop, when: "{{ true }}"}]}  # a loop validation cannot rule out
    """, "quick.yaml")
    # A finished run first, so that the run store exists: `diagrama runs` then lists from it.
    assert cli.invoke(app(), ["run", str(quick), "--runs-dir", str(runs_dir), "-q"]).exit_code == 1
    store_runs = len(list(runs_dir.glob("*/trace.jsonl")))
    process = subprocess.Popen(_diagrama("run", str(path), "--runs-dir", str(runs_dir), "-q"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_trace(runs_dir, store_runs + 1)
        running = cli.invoke(app(), ["runs", "--runs-dir", str(runs_dir)])
        line = next(line for line in running.stdout.splitlines() if "endless.yaml" in line)
        assert line.split()[2] == "running", running.stdout
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    killed = next(s for s in list_runs(runs_dir) if s.diagram == "endless")
    assert killed.status == "interrupted" and killed.duration_ms is None
    listed = cli.invoke(app(), ["runs", "--runs-dir", str(runs_dir)])
    line = next(line for line in listed.stdout.splitlines() if line.startswith(killed.run_id))
    assert line.split()[2] == "interrupted", listed.stdout
    assert any("failed" in line for line in listed.stdout.splitlines()), listed.stdout  # the stored run is still there
    (runs_dir / "diagrama.db").unlink()  # without a store, the traces alone say the same
    for extra in runs_dir.glob("diagrama.db-*"):
        extra.unlink()
    bare = cli.invoke(app(), ["runs", "--runs-dir", str(runs_dir)])
    assert next(line for line in bare.stdout.splitlines() if line.startswith(killed.run_id)).split()[2] == "interrupted"


def test_a_run_of_a_live_process_is_running_and_of_a_dead_one_interrupted() -> None:
    import os
    import socket
    import time

    from engine.runs.traces import run_status

    started = {"event": "run_started", "pid": os.getpid(), "host": socket.gethostname(), "timestamp": time.time()}
    assert run_status(started, started) == "running"
    assert run_status(started, {"event": "run_finished", "status": "failed"}) == "failed"
    dead = {**started, "pid": 2**22 + 12345}  # above any pid_max: no such process
    assert run_status(dead, dead) == "interrupted"
    elsewhere = {**dead, "host": "another-machine"}
    assert run_status(elsewhere, elsewhere) == "running"  # nothing is known of another host's processes
    older = {key: value for key, value in dead.items() if key not in ("pid", "host")}
    assert run_status(older, older) == "running"  # a trace from before pids were recorded


def test_a_resumed_run_still_going_is_running_by_its_latest_run_started(tmp_path: Path) -> None:
    """A resumed run appends to its trace: the first run_started names the killed process, the latest the live one."""
    import os
    import socket
    import time

    import orjson

    from engine.runs.traces import latest_start, list_runs, run_status, unfinished_runs

    host, now = socket.gethostname(), time.time()
    killed = {"event": "run_started", "run_id": "r1", "diagram": "d", "pid": 2**22 + 12345, "host": host,
              "timestamp": now - 5}
    step = {"event": "block_started", "run_id": "r1", "block": "ask", "note": "x" * 40_000}  # two: past the tail's 64 KiB
    resumed = {**killed, "pid": os.getpid(), "timestamp": now, "resumed_at": "ask"}
    trace = tmp_path / "runs" / "r1" / "trace.jsonl"
    trace.parent.mkdir(parents=True)
    trace.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in (killed, step, resumed, step, step)))
    [summary] = list_runs(tmp_path / "runs")
    assert summary.status == "running" and summary.started == now - 5
    assert [s.run_id for s in unfinished_runs(tmp_path / "runs")] == ["r1"]
    events = [killed, step, resumed, step]
    assert latest_start(events) is resumed and run_status(latest_start(events), step) == "running"
    assert run_status(events[0], step) == "interrupted"  # what the first run_started alone would say
    # Its resuming process killed in turn: interrupted again.
    trace.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in (killed, step, {**resumed, "pid": 2**22 + 7}, step, step)))
    assert list_runs(tmp_path / "runs")[0].status == "interrupted"


def test_block_failed_says_how_long_the_block_ran(write, runner) -> None:
    from engine.runtime.trace import Event

    failing = runner.run(write(FAILING))
    timed_out = runner.run(write("""
        diagram: d
        blocks:
          - {id: start, type: Start, timeout: 0.2, next: wait}
          - {id: wait, type: Sleep, with: {seconds: 30}}
    """, "timeout.yaml"))
    looping = runner.run(write("""
        diagram: d
        blocks:
          - {id: start, type: Start, max_steps: 3, next: loop}
          - {id: loop, type: Set, next: [{to: loop, when: "{{ true }}"}]}  # a loop validation cannot rule out
    """, "steps.yaml"))
    for result, at_least in ((failing, 0.0), (timed_out, 150.0), (looping, 0.0)):
        failed = [e for e in runner.events(result) if e["event"] == Event.BLOCK_FAILED]
        assert failed, result.errors
        for event in failed:
            assert isinstance(event["duration_ms"], float) and event["duration_ms"] >= at_least, event
