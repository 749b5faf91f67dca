"""Load errors: each names the file, the line, the block and the field."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from engine import BlockRegistry, DiagramInvalid, Problem
from engine.compile.loader import load_diagram
from engine.format.yamlfile import MAX_DEPTH, MAX_NODES, read_yaml_text

ROOT = Path(__file__).resolve().parents[2]


def problems_of(path: Path, registry: BlockRegistry) -> list[Problem]:
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    return caught.value.problems


def only(problems: list[Problem], code: str) -> Problem:
    found = [p for p in problems if p.code == code]
    assert len(found) == 1, problems
    return found[0]


def test_unknown_block_type_names_file_line_block_and_suggests(write: Callable[..., Path], registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next: ask
          - id: ask
            type: Ech
    """)
    problem = only(problems_of(path, registry), "unknown_block_type")
    assert (problem.file, problem.line, problem.block, problem.field) == (str(path), 7, "ask", "type")
    assert "did you mean 'Echo'?" in str(problem)
    assert str(problem).startswith(f"{path}:7:")


def test_unknown_key_suggests_the_right_one(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            nxt: b
          - id: b
            type: Set
    """)
    problems = problems_of(path, registry)
    problem = only(problems, "unknown_key")
    assert (problem.line, problem.block, problem.field) == (5, "start", "nxt")
    assert "did you mean 'next'?" in str(problem)


def test_zero_and_several_start_blocks(write, registry) -> None:
    none = write("diagram: d\nblocks:\n  - {id: a, type: Set}\n", "none.yaml")
    assert only(problems_of(none, registry), "no_start").line == 2
    two = write("""
        diagram: d
        blocks:
          - {id: a, type: Start, next: b}
          - {id: b, type: Start}
    """, "two.yaml")
    problem = only(problems_of(two, registry), "several_starts")
    assert (problem.line, problem.block) == (4, "b")


def test_dangling_link_and_on_error_targets(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next:
              - to: finsh
                when: "{{ true }}"
              - to: finish
            on_error: nowhere
          - id: finish
            type: Set
    """)
    problems = [p for p in problems_of(path, registry) if p.code == "unknown_link_target"]
    assert [(p.line, p.field) for p in problems] == [(6, "next[0].to"), (9, "on_error")]
    assert "did you mean 'finish'?" in str(problems[0])


def test_duplicate_ids_and_duplicate_keys(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next: a
          - id: a
            type: Set
            set:
              x: 1
              x: 2
          - id: a
            type: Set
    """)
    problems = problems_of(path, registry)
    assert only(problems, "duplicate_id").line == 11
    duplicate_key = [p for p in problems if "duplicate key 'x'" in p.message]
    assert duplicate_key and duplicate_key[0].line == 10 and "line 9" in duplicate_key[0].message


def test_unreachable_block_is_warned_once_per_part(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start}
          - {id: lost, type: Set, next: behind}
          - {id: behind, type: Set}
    """)
    # A warning since issue 17: the diagram loads (and runs) without the blocks Start does not reach.
    problem = only(load_diagram(path, registry).warnings, "unreachable_block")
    assert (problem.line, problem.block, problem.severity) == (4, "lost", "warning")
    assert "behind" in problem.message
    assert "behind" in problem.message


def test_invalid_when_syntax(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next:
              - to: a
                when: "i > 3"
              - to: a
                when: "{{ i > }}"
          - {id: a, type: Set}
    """)
    problems = problems_of(path, registry)
    assert only(problems, "invalid_when").field == "next[0].when"
    assert "'{{ i > 3 }}'" in only(problems, "invalid_when").hint
    syntax = only(problems, "template_syntax")
    assert (syntax.line, syntax.field) == (9, "next[1].when")


def test_unbound_template_name_suggests_the_input(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {question: "Onde está o meu pedido?"}
            next: echo
          - id: echo
            type: Echo
            with:
              value: "{{ qustion }}"
    """)
    problem = only(problems_of(path, registry), "template_unbound_name")
    assert (problem.line, problem.block, problem.field) == (10, "echo", "with.value")
    assert "did you mean 'question'?" in str(problem)


@pytest.mark.parametrize(
    ("template", "bound"),
    [
        ("{{ question }}", "input"),
        ("{{ history }}", "variable"),
        ("{{ later }}", "set key of another block"),
        ("{{ tojson }}", None),
    ],
)
def test_names_bound_by_inputs_variables_and_set_keys(write, registry, template: str, bound: str | None) -> None:
    path = write(f"""
        diagram: d
        blocks:
          - id: start
            type: Start
            inputs: {{question: q}}
            variables: {{history: []}}
            next: echo
          - id: echo
            type: Echo
            with: {{value: "{template}"}}
            next: other
          - id: other
            type: Set
            set: {{later: 1}}
    """)
    if bound is None:
        assert only(problems_of(path, registry), "template_unbound_name")
    else:
        load_diagram(path, registry)


def test_outputs_only_in_set_and_when_and_error_only_in_handlers(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next: echo
          - id: echo
            type: Echo
            with: {value: "{{ result }}"}
            set: {copied: "{{ result }}"}
            next: [{to: done, when: "{{ count > 0 }}"}]
            on_error: handler
          - id: handler
            type: Set
            set: {why: "{{ error.message }}"}
          - id: done
            type: Set
            set: {bad: "{{ error }}"}
    """)
    problems = [p for p in problems_of(path, registry) if p.code == "template_unbound_name"]
    assert [(p.block, p.field) for p in problems] == [("echo", "with.value"), ("done", "set.bad")]


def test_unknown_and_missing_inputs_and_bad_types(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next: echo
          - id: echo
            type: Echo
            with: {valeu: 1, count: "many"}
    """)
    problems = problems_of(path, registry)
    unknown = only(problems, "unknown_input")
    assert (unknown.field, unknown.line) == ("with.valeu", 8)
    assert "did you mean 'value'?" in str(unknown)
    bad = only(problems, "invalid_input")
    assert bad.field == "with.count" and "integer" in bad.message


def test_all_problems_of_a_file_are_reported_sorted_by_line(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next: echo
          - id: echo
            type: Eco
          - id: x
            type: Set
            set: {a: "{{ nope }}"}
            next: y
    """)
    problems = problems_of(path, registry)
    assert len(problems) >= 3
    assert [p.line for p in problems] == sorted(p.line or 0 for p in problems)


def test_python_tags_are_refused(write, registry) -> None:
    path = write("""
        diagram: !!python/object/apply:os.system ["echo hacked"]
        blocks: []
    """)
    tagged = [p for p in problems_of(path, registry) if "unsupported YAML tag" in p.message]
    assert tagged and tagged[0].line == 1


def test_alias_bomb_is_refused_fast() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for level in range(1, 9):
        previous = chr(ord("a") + level - 1)
        name = chr(ord("a") + level)
        lines.append(f"{name}: &{name} [" + ",".join(f"*{previous}" for _ in range(10)) + "]")
    with pytest.raises(DiagramInvalid) as caught:
        read_yaml_text("\n".join(lines), "bomb.yaml")
    assert f"more than {MAX_NODES}" in str(caught.value)


def test_broken_yaml_names_line() -> None:
    with pytest.raises(DiagramInvalid) as caught:
        read_yaml_text("diagram: d\nblocks:\n  - id: [unclosed\n", "broken.yaml")
    assert caught.value.problems[0].file == "broken.yaml"
    assert caught.value.problems[0].line is not None


def test_missing_file_is_a_problem_not_a_traceback(tmp_path: Path, registry) -> None:
    problems = problems_of(tmp_path / "absent.yaml", registry)
    assert problems[0].code == "no_file"


def test_valid_diagram_builds_the_graph(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            next: [{to: a, when: "{{ true }}"}, {to: b}]
            on_error: b
          - {id: a, type: Set, next: b}
          - {id: b, type: Set}
    """)
    diagram = load_diagram(path, registry)
    graph = diagram.graph
    assert set(graph.nodes) == {"start", "a", "b"}
    assert graph.edges["start", "a"]["kind"] == "next"
    assert graph.edges["start", "a"]["when"] == "{{ true }}"
    kinds = {link["kind"] for link in graph.edges["start", "b"]["links"]}
    assert kinds == {"next", "error"}


# -- inputs that used to end in a RecursionError or an OSError traceback ----------------------

_PARENS = "(" * 300 + "1" + ")" * 300
_NESTED = "[" * 500 + "]" * 500
DEEP_INPUTS = {
    "self_alias": ("diagram: d\nextra: &a [*a]\nblocks:\n  - {id: start, type: Start}\n", 2),
    "self_alias_in_a_block": ("diagram: d\nblocks:\n  - id: start\n    type: Start\n    variables:\n"
                              "      x: &x {y: *x}\n", 6),
    "300_parentheses": (f'diagram: d\nblocks:\n  - id: start\n    type: Start\n    variables:\n'
                        f'      x: "{{{{ {_PARENS} }}}}"\n', 6),
    "deep_operators": ('diagram: d\nblocks:\n  - id: start\n    type: Start\n    variables:\n'
                       '      x: "{{ ' + "1 + (" * 80 + "1" + ")" * 80 + ' }}"\n', 6),
    "500_nested_lists": (f"diagram: d\nblocks:\n  - id: start\n    type: Start\n    variables:\n"
                         f"      x: {_NESTED}\n", 6),
    "very_long_tools_path": ("diagram: d\ntools: " + "x" * 5000 + "\nblocks:\n  - {id: start, type: Start}\n", 2),
    "long_tools_path_of_many_parts": ("diagram: d\ntools: " + "ab/" * 2000 + "\nblocks:\n  - {id: start, type: Start}\n",
                                      2),
}


@pytest.mark.parametrize("name", list(DEEP_INPUTS))
def test_deep_or_odd_input_is_a_problem_with_a_line(tmp_path: Path, registry, name: str) -> None:
    text, line = DEEP_INPUTS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    problems = problems_of(path, registry)
    assert line in {p.line for p in problems if p.file == str(path)}, problems


def test_nesting_past_the_limit_names_the_limit() -> None:
    text = "x: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    with pytest.raises(DiagramInvalid) as caught:
        read_yaml_text(text, "deep.yaml")
    assert f"more than {MAX_DEPTH} levels" in str(caught.value)
    data, _ = read_yaml_text("x: " + "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2), "fine.yaml")
    assert data is not None


@pytest.mark.slow
@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", ["self_alias", "300_parentheses", "very_long_tools_path"])
def test_cli_reports_deep_input_with_file_and_line_and_exit_2(tmp_path: Path, command: str, name: str) -> None:
    text, line = DEEP_INPUTS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    extra = ["--runs-dir", str(tmp_path / "runs"), "--offline"] if command == "run" else []
    done = subprocess.run([sys.executable, "-m", "engine.cli", command, str(path), *extra], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{path}:{line}" in done.stderr


def test_studio_notes_load_and_a_malformed_note_names_its_line(write, registry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
        notes:
          - {text: "# Why\\nbecause", x: 0, y: -120, width: 240, height: 100, color: yellow}
          - {text: Retries, x: -20, y: -20, width: 400, height: 200, frame: true}
    """)
    assert [b.id for b in load_diagram(path, registry).blocks.values()] == ["start"]
    bad = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
        notes:
          - {text: hi, x: 0, y: 0, width: -5}
    """)
    problem = next(p for p in problems_of(bad, registry) if "notes" in (p.field or "") or p.line == 6)
    assert problem.line == 6
