"""Issue 17, items 4 and 5: diagrams `validate` passed that fail at every run, and load problems reported in the wrong
place (or not at all). Each problem names the file, the line, the block and the field."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine import BlockRegistry, DiagramInvalid, Problem
from engine.cli import app
from engine.compile.loader import load_diagram
from engine.errors import TableError
from engine.format.tables import history_rows, to_table
from engine.runtime.context import Services
from engine.web.view import compile_text, problem_json

cli = CliRunner()
Write = Callable[..., Path]


def problems_of(path: Path, registry: BlockRegistry) -> list[Problem]:
    with pytest.raises(DiagramInvalid) as caught:
        load_diagram(path, registry)
    return caught.value.problems


def only(problems: list[Problem], code: str) -> Problem:
    found = [p for p in problems if p.code == code]
    assert len(found) == 1, problems
    return found[0]


def where(problem: Problem) -> tuple[str, int | None, str | None, str | None]:
    return problem.file, problem.line, problem.block, problem.field


# -- item 4: what fails at every run is a load error ---------------------------------------------------------------

def test_an_unknown_filter_is_a_load_error_with_a_suggestion(write: Write, registry: BlockRegistry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables: {result: hi, flag: true}
            next: s
          - id: s
            type: Set
            set:
              out: "{{ result | trimm }}"
              later: "{% if flag %}{{ result | uper }}{% endif %}"
    """)
    problems = problems_of(path, registry)
    filters = sorted((p for p in problems if p.code == "template_unknown_filter"), key=lambda p: p.line or 0)
    assert [where(p) for p in filters] == [(str(path), 10, "s", "set.out"), (str(path), 11, "s", "set.later")]
    assert "no filter named 'trimm'" in filters[0].message and filters[0].hint == "did you mean 'trim'?"
    assert "no filter named 'uper'" in str(filters[1])  # jinja2 would find this one only when the branch runs


def test_an_unknown_test_is_a_load_error(write: Write, registry: BlockRegistry) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, variables: {n: 1}, next: s}
          - {id: s, type: Set, set: {odd: "{{ n is oddd }}"}}
    """)
    problem = only(problems_of(path, registry), "template_unknown_test")
    assert where(problem) == (str(path), 4, "s", "set.odd")
    assert "no test named 'oddd'" in str(problem) and "did you mean 'odd'?" in str(problem)


def _registry(folder: Path) -> None:
    (folder / "registry.yaml").write_text("registry: r\nstandard_tools: [calculator]\n", encoding="utf-8")


def test_a_literal_unknown_tool_group_is_a_load_error(write: Write, registry: BlockRegistry, tmp_path: Path) -> None:
    _registry(tmp_path)
    path = write("""
        diagram: d
        tools: registry.yaml
        blocks:
          - id: start
            type: Start
            inputs: {question: hi, group: standard}
            variables:
              chosen: "{{ tools(group='estoq') }}"
              known: "{{ tools('standard') }}"
              later: "{{ tools(group) }}"
            next: ask
          - id: ask
            type: ClaudeRequest
            with:
              model: claude-sonnet-4-5
              request: "{{ question }}"
              tools: "{{ tools('estoq', query=question, top_k=3) }}"
    """)
    problems = [p for p in problems_of(path, registry) if p.code == "unknown_tool_group"]
    assert sorted(where(p) for p in problems) == [(str(path), 8, "start", "variables.chosen"),
                                                   (str(path), 17, "ask", "with.tools")]
    assert all("no tool group 'estoq'" in p.message and "standard" in (p.hint or "") for p in problems)


HISTORY_CSV = "role,content\nuser,hello\nusuario,hi again\n"


def test_a_history_csv_in_start_variables_with_a_bad_role_is_a_load_error_at_its_row(
        write: Write, registry: BlockRegistry, tmp_path: Path) -> None:
    (tmp_path / "history.csv").write_text(HISTORY_CSV, encoding="utf-8")
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables:
              history: {csv: history.csv}
            next: ask
          - id: ask
            type: ClaudeRequest
            with: {model: claude-sonnet-4-5, request: hi, history: "{{ history }}"}
            set: {history: "{{ history }}"}
    """)
    problem = only(problems_of(path, registry), "invalid_input")
    assert where(problem) == (str(tmp_path / "history.csv"), 3, "start", "variables.history")
    assert "history row 2 has role 'usuario'" in problem.message and "'ask'" in problem.message


def test_an_inline_history_csv_with_a_bad_role_is_a_load_error_at_its_row(
        write: Write, registry: BlockRegistry, tmp_path: Path) -> None:
    (tmp_path / "history.csv").write_text(HISTORY_CSV, encoding="utf-8")
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, inputs: {question: hi}, next: ask}
          - id: ask
            type: ClaudeRequest
            with:
              model: claude-sonnet-4-5
              request: "{{ question }}"
              history: {csv: history.csv}
    """)
    problem = only(problems_of(path, registry), "invalid_input")
    assert where(problem) == (str(tmp_path / "history.csv"), 3, "ask", "with.history")
    assert "history row 2 has role 'usuario'" in problem.message


def test_a_constant_history_table_with_a_bad_role_is_a_load_error_at_its_row(write: Write,
                                                                             registry: BlockRegistry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables:
              history:
                - {role: user, content: hi}
                - {role: wizard, content: boo}
            next: ask
          - id: ask
            type: ClaudeRequest
            with: {model: claude-sonnet-4-5, request: hi, history: "{{ history }}"}
            next: again
          - id: again
            type: ToolDispatch
            with:
              history:
                - {role: wizard, content: boo}
    """)
    problems = sorted((p for p in problems_of(path, registry) if p.code == "invalid_input"), key=lambda p: p.line or 0)
    assert [where(p) for p in problems] == [(str(path), 8, "start", "variables.history"),
                                            (str(path), 18, "again", "with.history")]
    assert "history row 2 has role 'wizard'" in problems[0].message and "'ask'" in problems[0].message
    assert "history row 1 has role 'wizard'" in problems[1].message


def test_a_tools_table_with_a_bad_tool_name_under_start_variables_is_a_load_error_at_its_row(
        write: Write, registry: BlockRegistry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            variables:
              my_tools:
                - {name: lookup, description: Looks up, parameters: {type: object}}
                - {name: "bad name!", description: Broken, parameters: {type: object}}
            next: ask
          - id: ask
            type: GroqChatRequest
            with: {model: llama-3.3-70b-versatile, request: hi, tools: "{{ my_tools }}"}
    """)
    problem = only(problems_of(path, registry), "invalid_input")
    assert where(problem) == (str(path), 8, "start", "variables.my_tools")
    assert "tools row 2: tool name 'bad name!'" in problem.message


def test_at_run_time_a_history_csv_error_names_the_file_and_row(write: Write, runner, tmp_path: Path) -> None:
    (tmp_path / "history.csv").write_text(HISTORY_CSV, encoding="utf-8")
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, inputs: {name: history}, next: ask}
          - id: ask
            type: ClaudeRequest
            with: {model: claude-sonnet-4-5, request: hi, history: {csv: "{{ name }}.csv"}}
    """)
    result = runner.run(path, services=Services(environ={}, offline=True))
    assert result.status == "failed"
    message = result.errors[0]["message"]
    assert f"{tmp_path / 'history.csv'}:3:" in message and "history row 2 has role 'usuario'" in message


def test_a_history_error_without_a_file_names_the_row_only() -> None:
    with pytest.raises(TableError) as caught:
        history_rows(to_table([{"role": "wizard", "content": "boo"}]))
    assert (caught.value.row, caught.value.file, caught.value.message) == (
        1, None, "history row 1 has role 'wizard'; a role is one of system, user, assistant, tool")


# -- item 5: more validation slips ---------------------------------------------------------------------------------

def test_links_of_a_block_with_an_unknown_type_are_checked_too(write: Write, registry: BlockRegistry) -> None:
    path = write("""
        diagram: d
        blocks:
          - {id: start, type: Start, next: a}
          - id: a
            type: Sett
            next: [{to: missing, when: "{{ true }}"}]
            on_error: gone
    """)
    problems = problems_of(path, registry)
    assert where(only(problems, "unknown_block_type")) == (str(path), 5, "a", "type")
    links = sorted((p for p in problems if p.code == "unknown_link_target"), key=lambda p: p.line or 0)
    assert [where(p) for p in links] == [(str(path), 6, "a", "next[0].to"), (str(path), 7, "a", "on_error")]


def test_a_bad_level_on_start_is_no_missing_start_and_the_rest_is_still_checked(write: Write,
                                                                               registry: BlockRegistry) -> None:
    path = write("""
        diagram: d
        blocks:
          - id: start
            type: Start
            message_level: Debugg
            next: a
          - {id: a, type: Set, set: {x: "{{ y }}"}}
    """)
    problems = problems_of(path, registry)
    assert not [p for p in problems if p.code == "no_start"], problems
    level = only(problems, "literal_error")
    assert where(level) == (str(path), 5, "start", "message_level") and "'Debugg'" in level.message
    assert where(only(problems, "template_unbound_name")) == (str(path), 7, "a", "set.x")


def test_a_file_that_is_not_utf8_names_the_line_and_column(tmp_path: Path, registry: BlockRegistry) -> None:
    path = tmp_path / "diagram.yaml"
    path.write_bytes("diagram: d\nblocks:\n  - {id: start, type: Start, label: café}\n".encode("latin-1"))
    problem = only(problems_of(path, registry), "not_text")
    assert (problem.file, problem.line, problem.column) == (str(path), 3, 40)
    assert "not UTF-8" in problem.message and "0xe9" in problem.message


def test_a_registry_that_is_not_utf8_names_the_line(write: Write, registry: BlockRegistry, tmp_path: Path) -> None:
    (tmp_path / "registry.yaml").write_bytes("registry: r\n# catálogo\nstandard_tools: [calculator]\n".encode("latin-1"))
    path = write("""
        diagram: d
        tools: registry.yaml
        blocks:
          - {id: start, type: Start}
    """)
    problem = only(problems_of(path, registry), "not_text")
    assert (problem.file, problem.line) == (str(tmp_path / "registry.yaml"), 2)


def test_a_tab_in_the_indentation_says_tab(write: Write, registry: BlockRegistry) -> None:
    path = write("diagram: d\nblocks:\n  - id: start\n    type: Start\n    variables:\n    \tx: 1\n")
    problem = only(problems_of(path, registry), "yaml")
    assert (problem.line, problem.column) == (6, 5)
    assert "tab" in problem.message and "spaces" in (problem.hint or "")


def test_an_unclosed_quote_is_reported_where_it_opened(write: Write, registry: BlockRegistry) -> None:
    path = write('diagram: d\nblocks:\n  - id: "start\n    type: Start\n  - id: b\n    type: Set\n')
    problem = only(problems_of(path, registry), "yaml")
    assert (problem.file, problem.line, problem.column) == (str(path), 3, 9)
    assert "never closed" in problem.message


def test_an_unclosed_bracket_is_reported_where_it_opened(write: Write, registry: BlockRegistry) -> None:
    path = write("diagram: d\nblocks: [{id: start, type: Start}\n\n")
    problem = only(problems_of(path, registry), "yaml")
    assert (problem.line, problem.column) == (2, 9) and "[ opened here is never closed" in problem.message


UNREACHABLE = """
    diagram: d
    blocks:
      - {id: start, type: Start, next: a}
      - {id: a, type: Set, set: {x: 1}}
      - id: sorry
        type: Set
        set: {answer: "Sorry ({{ error.type }})"}
        next: after
      - {id: after, type: Set, set: {why: "{{ error.message }}"}}
"""


def test_an_unreachable_block_is_a_warning_without_cascading_errors(write: Write, runner) -> None:
    path = write(UNREACHABLE)
    diagram = runner.load(path)  # loads: a draft may keep blocks it does not link yet
    warning = only(diagram.warnings, "unreachable_block")
    assert (warning.file, warning.line, warning.block, warning.severity) == (str(path), 5, "sorry", "warning")
    assert str(warning).startswith(f"{path}:5:5: warning: block 'sorry':")
    result = runner.run(diagram)
    assert result.status == "succeeded" and result.path == ["start", "a"]


def test_validate_prints_warnings_and_passes_unless_strict(write: Write) -> None:
    path = write(UNREACHABLE)
    result = cli.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert f"{path}:5:5: warning: block 'sorry'" in result.stderr
    assert f"ok  {path} (4 blocks, 1 warning)" in result.stdout
    strict = cli.invoke(app, ["validate", "--strict", str(path)])
    assert strict.exit_code == 2
    assert f"{path}:5:5: block 'sorry'" in strict.stderr and "1 of 1 diagram invalid" in strict.stderr


def test_run_runs_a_diagram_with_only_warnings(write: Write, tmp_path: Path) -> None:
    path = write(UNREACHABLE)
    result = cli.invoke(app, ["run", str(path), "--runs-dir", str(tmp_path / "runs"), "--output", "json"])
    assert result.exit_code == 0, result.output
    assert "warning: block 'sorry'" in result.stderr


def test_the_studio_passes_a_warning_on_as_one(write: Write, registry: BlockRegistry) -> None:
    path = write(UNREACHABLE)
    diagram, problems = compile_text(path.read_text(encoding="utf-8"), path, registry)
    assert diagram is not None
    shown = [problem_json(p) for p in problems]
    assert [(p["block"], p["code"], p["severity"], p["line"]) for p in shown] == [
        ("sorry", "unreachable_block", "warning", 5)]


def test_errors_and_warnings_are_listed_together(write: Write, registry: BlockRegistry) -> None:
    path = write(textwrap.dedent(UNREACHABLE) + "  - {id: broken, type: Set, set: {y: '{{ nope }}'}}\n")
    problems = problems_of(path, registry)
    assert {(p.code, p.severity) for p in problems} == {("unreachable_block", "warning"),
                                                        ("template_unbound_name", "error")}
