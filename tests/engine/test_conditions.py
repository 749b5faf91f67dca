"""Conditions (a link's `when`, a Loop's `while` and `break_when`): a value's own truth; text is true unless it is
empty or spells false; `validate` warns where a condition can only be free text."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.compile.loader import load_diagram
from engine.compile.templating import truthy
from tests.conftest import Runner

BRANCH = """
diagram: branch
blocks:
  - id: start
    type: Start
    inputs: {s: ""}
    next:
      - {to: yes_way, when: "{{ s }}"}
      - {to: otherwise}
  - {id: yes_way, type: Set, set: {went: "yes"}}
  - {id: otherwise, type: Set, set: {went: "otherwise"}}
"""


@pytest.mark.parametrize(("text", "went"), [
    ("delta kilo lima", "yes"), ("true", "yes"), ("Yes", "yes"), ("1", "yes"), ("não", "yes"), ("2", "yes"),
    ("", "otherwise"), ("   ", "otherwise"), ("false", "otherwise"), (" FALSE ", "otherwise"), ("no", "otherwise"),
    ("off", "otherwise"), ("0", "otherwise"), ("None", "otherwise"), ("null", "otherwise"),
])
def test_a_text_condition_is_true_unless_empty_or_a_false_spelling(write: Callable[..., Path], runner: Runner,
                                                                    text: str, went: str) -> None:
    result = runner.run(write(BRANCH), {"s": text})
    assert result.succeeded and result.variables["went"] == went


def test_values_keep_their_own_truth() -> None:
    assert [truthy(value) for value in (0, 1, 0.0, [], [0], {}, {"a": 1}, None, True, False)] == \
           [False, True, False, False, True, False, True, False, True, False]


def test_a_loop_reads_its_text_conditions_the_same_way(write: Callable[..., Path], runner: Runner) -> None:
    path = write("""
        diagram: loop
        blocks:
          - id: start
            type: Start
            variables: {left: [a, b, c], said: []}
            next: each
          - id: each
            type: Loop
            with: {while: "{{ left | join(',') }}", break_when: "{{ 'stop' if item == 'b' else '' }}"}
            body: take
          - id: take
            type: Set
            set: {said: "{{ said + [left[0]] }}", left: "{{ left[1:] }}", item: "{{ left[0] }}"}
            next: each
    """)
    result = runner.run(path)
    assert result.succeeded and result.variables["said"] == ["a", "b"]


@pytest.mark.slow
def test_validate_warns_where_a_condition_can_only_be_free_text(write: Callable[..., Path], runner: Runner) -> None:
    path = write("""
        diagram: texts
        blocks:
          - id: start
            type: Start
            inputs: {x: 5, flag: false}
            next:
              - {to: big, when: "{{ x }} > 3"}
              - {to: chosen, when: "{% if flag %}yes{% endif %}"}
              - {to: named, when: "{{ flag }}"}
              - {to: small}
          - {id: big, type: Set}
          - {id: chosen, type: Set}
          - {id: named, type: Set}
          - id: small
            type: Loop
            with: {while: "{{ x }} and more"}
            body: back
          - {id: back, type: Set, next: small}
    """)
    warnings = runner.load(path).warnings
    assert [(w.line, w.block, w.field, w.code, w.severity) for w in warnings] == [
        (7, "start", "next[0].when", "condition_is_text", "warning"),
        (16, "small", "with.while", "condition_is_text", "warning"),
    ]
    assert "write the whole condition inside one {{ }}" in str(warnings[0])
    # As a command: listed, exit 0; with --strict, exit 2.
    checked = subprocess.run([sys.executable, "-m", "engine.cli", "validate", str(path)], capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0 and "next[0].when': this condition renders text ('{{ x }} > 3')" in checked.stderr
    strict = subprocess.run([sys.executable, "-m", "engine.cli", "validate", "--strict", str(path)],
                            capture_output=True, text=True, check=False)
    assert strict.returncode == 2


def test_the_examples_have_no_text_conditions() -> None:
    from blocks.registry import registry

    root = Path(__file__).resolve().parents[2] / "diagrams"
    for path in sorted(root.glob("*.yaml")):
        assert not [w for w in load_diagram(path, registry()).warnings if w.code == "condition_is_text"], path
