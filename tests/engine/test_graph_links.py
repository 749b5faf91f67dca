"""Two links between the same blocks (a condition and the fallback; `next` and `on_error`) are two arrows, each with
its own label, in Mermaid and in DOT, and a run's path marks the links it took between them (security review,
finding C: the fallback disappeared from the drawings, and `--run last` marked the labelled link it did not take)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.compile.graph import to_dot, to_mermaid
from engine.runs.trace_steps import run_path
from tests.conftest import Runner

SAME_TARGET = """
    diagram: d
    blocks:
      - {id: start, type: Start, inputs: {n: 0}, next: check}
      - id: check
        type: Set
        set: {seen: "{{ n }}"}
        next:
          - {to: done, when: "{{ n > 1 }}"}
          - {to: other, when: "{{ n < 0 }}"}
          - {to: done}
      - {id: other, type: Set, next: done}
      - {id: done, type: Set}
"""

NEXT_AND_ON_ERROR = """
    diagram: d
    blocks:
      - {{id: start, type: Start, error_level: Handle, next: risky}}
      - {{id: risky, type: {block}, next: after, on_error: after}}
      - {{id: after, type: Set}}
"""


def arrows(mermaid: str) -> list[str]:
    """The Mermaid text's links, in order: linkStyle N is the Nth."""
    return [line.strip() for line in mermaid.splitlines() if "-->" in line or "-.->" in line]


def styled(mermaid: str) -> list[str]:
    """The links a run's path marks."""
    found = arrows(mermaid)
    return [found[int(line.split()[1])] for line in mermaid.splitlines() if line.strip().startswith("linkStyle")]


def dot_edges(dot: str) -> list[str]:
    return [line.strip() for line in dot.splitlines() if " -> " in line]


def test_a_condition_and_the_fallback_to_the_same_block_are_two_labelled_links(runner: Runner, write: Callable[..., Path]) -> None:
    graph = runner.load(write(SAME_TARGET)).graph
    assert arrows(to_mermaid(graph)) == [
        "start --> check", "check -->|n > 1| done", "check -->|otherwise| done", "check -->|n < 0| other",
        "other --> done"]
    assert dot_edges(to_dot(graph)) == [
        '"start" -> "check";', '"check" -> "done" [label="n > 1"];', '"check" -> "done" [label="otherwise"];',
        '"check" -> "other" [label="n < 0"];', '"other" -> "done";']
    # The graph keeps one edge a pair (validation's walks, the studio): both links are in its `links`.
    assert [link["when"] for link in graph.edges["check", "done"]["links"]] == ["{{ n > 1 }}", None]


@pytest.mark.parametrize(("n", "taken"), [
    (0, "check -->|otherwise| done"),  # neither > 1 nor < 0: the fallback
    (5, "check -->|n > 1| done"),  # the condition
])
def test_a_run_marks_the_one_of_two_links_to_the_same_block_it_took(runner: Runner, write: Callable[..., Path],
                                                                     n: int, taken: str) -> None:
    path = write(SAME_TARGET)
    graph = runner.load(path).graph
    result = runner.run(path, {"n": n})
    finished = [e for e in runner.events(result) if e["event"] == "block_finished" and e["block"] == "check"]
    assert [e.get("link") for e in finished] == [2 if n == 0 else 0]  # the link's index in `next`
    drawn = run_path(result.trace)
    assert styled(to_mermaid(graph, drawn)) == ["start --> check", taken]
    label = taken.split("|")[1]
    assert [edge for edge in dot_edges(to_dot(graph, drawn)) if "penwidth=3" in edge] == [
        '"start" -> "check" [color="#1a7f37", penwidth=3];',
        f'"check" -> "done" [label="{label}", color="#1a7f37", penwidth=3];']


def test_a_release_trace_which_records_no_steps_marks_both_links_of_the_pair(
        runner: Runner, write: Callable[..., Path]) -> None:
    path = write(SAME_TARGET.replace("type: Start, inputs", "type: Start, message_level: Release, inputs"))
    drawn = run_path(runner.run(path, {"n": 0}).trace)
    assert not drawn.went  # only the path: which of the two links was taken is not written down
    assert styled(to_mermaid(runner.load(path).graph, drawn)) == [
        "start --> check", "check -->|n > 1| done", "check -->|otherwise| done"]


@pytest.mark.parametrize(("block", "taken"), [
    ("Fail", ["start --> risky", "risky -.->|on_error| after"]),  # failed, handled: on_error was taken
    ("Echo", ["start --> risky", "risky --> after"]),  # succeeded: next was taken, on_error was not
])
def test_next_and_on_error_to_the_same_block_are_two_links_and_the_run_marks_the_one_it_took(
        runner: Runner, write: Callable[..., Path], block: str, taken: list[str]) -> None:
    path = write(NEXT_AND_ON_ERROR.format(block=block))
    graph = runner.load(path).graph
    result = runner.run(path)
    assert result.path == ["start", "risky", "after"] and result.status == "succeeded"
    mermaid = to_mermaid(graph, run_path(result.trace))
    assert arrows(mermaid) == ["start --> risky", "risky --> after", "risky -.->|on_error| after"]
    assert styled(mermaid) == taken
    dot = to_dot(graph, run_path(result.trace))
    assert '"risky" -> "after" [label="on_error", style=dashed' in dot
    marked = [edge for edge in dot_edges(dot) if "penwidth=3" in edge]
    assert len(marked) == 2 and ("on_error" in marked[1]) == (block == "Fail")


def test_diagrama_graph_run_last_draws_both_links(runner: Runner, write: Callable[..., Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.cli import app

    path = write(SAME_TARGET)
    runner.run(path, {"n": 5})
    monkeypatch.setattr("engine.cli.blocks_registry", lambda: runner.registry)
    for format, fallback in (("mermaid", "check -->|otherwise| done"), ("dot", '"check" -> "done" [label="otherwise"')):
        shown = CliRunner().invoke(app, ["graph", str(path), "--format", format, "--run", "last",
                                         "--runs-dir", str(runner.runs_dir)])
        assert shown.exit_code == 0, shown.output
        assert fallback in shown.stdout


def test_a_block_in_a_loop_that_failed_once_and_went_on_once_marks_both_links(
        runner: Runner, write: Callable[..., Path]) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, error_level: Handle, next: loop}
          - {id: loop, type: Loop, with: {for_each: [2, 0, 5]}, body: risky}
          - {id: risky, type: Set, set: {x: "{{ 10 // item }}"}, next: loop, on_error: loop}
    """)
    result = runner.run(path)
    assert result.status == "succeeded" and [e.get("handled_by") for e in result.errors] == ["loop"]
    drawn = run_path(result.trace)
    mermaid = to_mermaid(runner.load(path).graph, drawn)
    # Run three times: it went on by `next` twice and by `on_error` once; the path cannot say which pass did what.
    assert {"risky --> loop", "risky -.->|on_error| loop"} <= set(styled(mermaid))
