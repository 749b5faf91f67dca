"""Work that never gives the event loop back is bounded all the same (issue 37, 5).

An async def that blocks is reported (`blocking_call`, at any message level) and its late result is a block_timeout,
not a success; steps that never wait (a Subdiagram tree of Sets) stop at the run's deadline; a tree that fans out
stops at the run's Subdiagram calls budget; a template's loops, macros and regex filters stop at the render's budget.
Before, each of these ran to its end however long that took (the tree below, minutes past a one-second deadline).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.compile.render_budget import MAX_STEPS
from tests.conftest import Runner

BLOCKER = """
import asyncio
import time


async def blocks(seconds):
    time.sleep(seconds)
    return "late"


async def awaits_then_blocks(seconds):
    await asyncio.sleep(0)
    time.sleep(seconds)
    return "late"
"""


@pytest.fixture
def blocker(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "blocker_code.py").write_text(BLOCKER)
    sys.path.insert(0, str(tmp_path))
    try:
        yield "blocker_code"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("blocker_code", None)


@pytest.mark.slow
@pytest.mark.parametrize("function", ["blocks", "awaits_then_blocks"])
def test_an_async_def_that_blocks_past_its_timeout_is_reported_and_timed_out(
        runner: Runner, write: Callable[..., Path], blocker: str, function: str) -> None:
    path = write(f"""
        diagram: blocking
        allowed_modules: [{blocker}]
        blocks:
          - {{id: start, type: Start, message_level: Release, next: call}}
          - id: call
            type: Function
            with: {{function: "{blocker}:{function}", arguments: {{seconds: 0.6}}, timeout: 0.2}}
    """)
    result = runner.run(path)
    assert result.status == "failed"
    [error] = result.errors
    assert error["type"] == "block_timeout" and "kept the event loop" in error["message"]
    held = [e for e in runner.events(result) if e["event"] == "blocking_call"]
    assert [e["block"] for e in held] == ["call"]  # told at Release too
    assert held[0]["held_ms"] >= 600 and "must await" in held[0]["message"]


def test_an_async_def_that_blocks_briefly_is_reported_and_its_result_kept(
        runner: Runner, write: Callable[..., Path], blocker: str) -> None:
    path = write(f"""
        diagram: blocking
        allowed_modules: [{blocker}]
        blocks:
          - {{id: start, type: Start, next: call}}
          - id: call
            type: Function
            with: {{function: "{blocker}:awaits_then_blocks", arguments: {{seconds: 0.25}}, timeout: 5}}
            set: {{got: "{{{{ result }}}}"}}
    """)
    result = runner.run(path)
    assert result.status == "succeeded" and result.variables["got"] == "late"
    assert [e["block"] for e in runner.events(result) if e["event"] == "blocking_call"] == ["call"]


TREE = """
    diagram: tree
    blocks:
      - id: start
        type: Start
        max_steps: 1000000000
        {budget}
        timeout: 1
        inputs: {{depth: 0}}
        next: fan
      - id: fan
        type: Loop
        with: {{for_each: "{{{{ range(10) | list if depth < 7 else [] }}}}"}}
        body: call
      - id: call
        type: Subdiagram
        with: {{diagram: "{{{{ 'tree' ~ '.yaml' }}}}", inputs: {{depth: "{{{{ depth + 1 }}}}"}}}}
        next: fan
"""


@pytest.mark.slow
def test_steps_that_never_wait_stop_at_the_runs_deadline(runner: Runner, write: Callable[..., Path]) -> None:
    result = runner.run(write(TREE.format(budget="max_subdiagram_calls: 1000000000"), "tree.yaml"))
    assert result.status == "failed"
    assert result.errors[-1]["type"] == "run_timeout", result.errors[-1]


def test_a_subdiagram_tree_stops_at_the_runs_calls_budget(runner: Runner, write: Callable[..., Path]) -> None:
    result = runner.run(write(TREE.format(budget="max_subdiagram_calls: 50"), "tree.yaml"))
    assert result.status == "failed"
    assert {error["type"] for error in result.errors} <= {"subdiagram_too_many_calls", "subdiagram_failed"}
    assert any("its 50 Subdiagram calls" in error["message"] for error in result.errors), result.errors


@pytest.mark.slow
@pytest.mark.parametrize(("template", "inputs"), [
    ("{% for a in items %}{% for b in items %}{% for c in items %}{% endfor %}{% endfor %}{% endfor %}",
     {"items": list(range(200))}),
    ("{% macro m(n) %}{% if n > 0 %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(40) }}", {}),
    ("{{ text | regex_replace('a', 'b') }}", {"text": "a" * 1_200_000}),
    ("{% for x in [1] %}{{ text | regex_findall('a') | length }}{% endfor %}", {"text": "a" * 1_200_000}),
])
def test_a_template_stops_at_its_renders_budget(runner: Runner, write: Callable[..., Path], template: str,
                                                inputs: dict[str, object]) -> None:
    path = write("""
        diagram: render
        blocks:
          - {id: start, type: Start, inputs: {items: [], text: ""}, next: render}
          - {id: render, type: Set, set: {out: TEMPLATE}}
    """.replace("TEMPLATE", repr(template)))
    result = runner.run(path, inputs)
    assert result.status == "failed"
    [error] = result.errors
    assert error["type"] == "template_over_budget", error
    assert f"{MAX_STEPS:,} steps" in error["message"] or "matches in one call" in error["message"]


def test_a_large_but_reasonable_template_renders(runner: Runner, write: Callable[..., Path]) -> None:
    path = write("""
        diagram: table
        blocks:
          - {id: start, type: Start, inputs: {rows: []}, next: render}
          - id: render
            type: Set
            set: {out: "{% for row in rows %}{% for cell in row %}{{ cell }},{% endfor %}{% endfor %}"}
    """)
    result = runner.run(path, {"rows": [list(range(10))] * 10_000})  # 110,000 iterations
    assert result.status == "succeeded" and result.variables["out"].count(",") == 100_000
