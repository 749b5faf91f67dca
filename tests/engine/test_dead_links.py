"""Issue 43, fix 2: a `next` link after one without `when` can never run. A warning naming the file, line, block and
field with the fix, that `validate --strict` fails on; the studio's problems read the same check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from engine import BlockRegistry
from engine.cli import app
from engine.compile.loader import load_diagram
from engine.web.view import compile_text, problem_json

Write = Callable[..., Path]

DIAGRAM = """
    diagram: d
    blocks:
      - id: start
        type: Start
        variables: {{n: 1}}
        next:
          - {{to: small{first}}}
          - {{to: big}}
      - id: small
        type: Set
        set: {{size: small}}
      - id: big
        type: Set
        set: {{size: big}}
"""


def test_a_second_link_without_when_is_a_dead_link_warning(write: Write, registry: BlockRegistry) -> None:
    path = write(DIAGRAM.format(first=""))
    loaded = load_diagram(path, registry)  # a warning: a draft that just drew the link still loads and runs
    [problem] = [p for p in loaded.warnings if p.code == "dead_link"]
    assert (problem.file, problem.line, problem.block, problem.field) == (str(path), 8, "start", "next[1]")
    assert problem.severity == "warning"
    assert "never runs" in problem.message and "'small'" in problem.message
    assert problem.hint is not None and "give it a 'when'" in problem.hint and "or remove it" in problem.hint


def test_when_true_is_always_taken_too_and_a_condition_keeps_the_link_alive(write: Write,
                                                                           registry: BlockRegistry) -> None:
    dead = load_diagram(write(DIAGRAM.format(first=", when: true")), registry)
    assert [p.field for p in dead.warnings if p.code == "dead_link"] == ["next[1]"]
    alive = load_diagram(write(DIAGRAM.format(first=', when: "{{ n > 3 }}"')), registry)
    assert not [p for p in alive.warnings if p.code == "dead_link"]


def test_validate_lists_it_and_strict_fails_on_it(write: Write) -> None:
    path = write(DIAGRAM.format(first=""))
    listed = CliRunner().invoke(app, ["validate", str(path)])
    assert listed.exit_code == 0, listed.output
    assert f"{path}:8" in listed.output and "warning" in listed.output and "never runs" in listed.output
    strict = CliRunner().invoke(app, ["validate", "--strict", str(path)])
    assert strict.exit_code != 0 and "never runs" in strict.output, strict.output


def test_the_studio_reads_the_same_problem(write: Write, registry: BlockRegistry) -> None:
    path = write(DIAGRAM.format(first=""))
    diagram, problems = compile_text(path.read_text(encoding="utf-8"), path, registry)
    assert diagram is not None  # still drawn and runnable
    [shown] = [problem_json(p, own=path) for p in problems if p.code == "dead_link"]
    assert (shown["line"], shown["block"], shown["field"], shown["severity"]) == (8, "start", "next[1]", "warning")
