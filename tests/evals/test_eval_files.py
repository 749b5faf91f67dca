"""Eval files (issue 39, 1): read into models, every problem at its file, line and field; the schema editors read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import app
from engine.errors import DiagramInvalid
from engine.runs.evals.spec import load_eval

ROOT = Path(__file__).resolve().parents[2]
TWO_BLOCKS = """\
diagram: two-blocks
blocks:
  - id: start
    type: Start
    inputs: {question: "", count: 0}
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {model: claude-sonnet-4-5, request: "{{ question }}", max_tokens: 50}
    set: {answer: "{{ result }}"}
"""


def write(folder: Path, text: str, name: str = "robot.eval.yaml") -> Path:
    (folder / "robot.yaml").write_text(TWO_BLOCKS, encoding="utf-8")
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(DiagramInvalid) as raised:
        load_eval(path)
    return [f"{p.line} {p.field}: {p.message}" for p in raised.value.problems]


def test_a_good_file_reads_its_cases_scorers_and_diagram(tmp_path: Path) -> None:
    path = write(tmp_path, """\
diagram: robot.yaml
cases:
  - {id: one, inputs: {question: hi}, expected: hi}
scorers:
  - {id: same, equals: }
  - {id: near, similar: {threshold: 0.5}}
  - {id: fast, max_latency_ms: 1000}
threshold: 0.5
""")
    loaded = load_eval(path)
    assert loaded.diagram == (tmp_path / "robot.yaml").resolve()
    assert [case.id for case in loaded.cases] == ["one"]
    assert [(s.id, s.kind) for s in loaded.spec.scorers] == [("same", "equals"), ("near", "similar"),
                                                             ("fast", "max_latency_ms")]


def test_each_problem_names_its_line_field_and_fix(tmp_path: Path) -> None:
    path = write(tmp_path, """\
diagram: robot.yaml
cases:
  - {id: a, inputs: {question: hi}}
  - {id: a, inptus: {}}
scorers:
  - {id: x, chek: "{{ 1 }}"}
  - {id: y, check: "{{ outptu }}"}
  - {id: z, matches: "(?=a)"}
  - {id: j, judge: {model: claude-x, rubric: r, scale: "2-7"}}
threshold: 2
""")
    found = problems_of(path)
    assert found == [
        "4 cases.1.inptus: unknown key",
        "6 scorers.0: a scorer has exactly one of check, equals, contains, matches, json_schema, similar, "
        "path_includes, max_latency_ms, max_cost, judge (found none; 'chek' is not one (did you mean 'check'?))",
        "9 scorers.3.judge.scale: the scale is [low, high] (e.g. [0, 1]), pass/fail or 1-5, not '2-7'",
        "10 threshold: Input should be less than or equal to 1 (got 2)",
    ]


def test_templates_patterns_and_duplicate_ids_are_found_once_the_shape_is_right(tmp_path: Path) -> None:
    path = write(tmp_path, """\
diagram: missing.yaml
cases:
  - {id: a}
  - {id: a}
scorers:
  - {id: y, check: "{{ outptu }}"}
  - {id: z, matches: "(?=a)"}
""")
    found = problems_of(path)
    assert found[0] == "1 diagram: no diagram file missing.yaml beside this file"
    assert found[1] == "4 cases.1.id: case id 'a' appears twice"
    assert found[2] == "6 scorers.0.check: the template reads 'outptu', which a check does not have"
    assert found[3].startswith("7 scorers.1.matches: the pattern '(?=a)' is not one RE2 takes")


def test_a_judge_whose_model_takes_no_response_schema_is_refused_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, """\
diagram: robot.yaml
cases: [{id: a}]
scorers:
  - id: right
    judge: {model: llama-3.3-70b-versatile, rubric: Is it right?}
""")
    (found,) = problems_of(path)
    assert found.startswith("5 scorers.0.judge.model: the judge's model cannot answer with a score and a reason: "
                            "llama-3.3-70b-versatile takes no response schema")


def test_cases_come_from_csv_and_json_lines_files(tmp_path: Path) -> None:
    (tmp_path / "cases.csv").write_text("id,question,count,expected\nfirst,hello,2,hello\n", encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text('{"id": "j", "inputs": {"question": "q"}, "expected": 1}\n\nnot json\n',
                                          encoding="utf-8")
    loaded = load_eval(write(tmp_path, "diagram: robot.yaml\ncases: {csv: cases.csv}\nscorers: [{id: s, equals: }]\n"))
    assert [(c.id, c.inputs, c.expected) for c in loaded.cases] == [("first", {"question": "hello", "count": "2"},
                                                                     "hello")]
    path = write(tmp_path, "diagram: robot.yaml\ncases: {jsonl: cases.jsonl}\nscorers: [{id: s, equals: }]\n")
    with pytest.raises(DiagramInvalid) as raised:
        load_eval(path)
    (problem,) = raised.value.problems
    assert (problem.file, problem.line) == (str(tmp_path / "cases.jsonl"), 3)


def test_a_bad_file_exits_2_listing_its_problems_without_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, "diagram: robot.yaml\ncases:\n  - {id: a, inputs: {questio: hi}}\nscorers: [{id: s, equals: }]\n")
    result = CliRunner().invoke(app, ["eval", str(path), "--offline"])
    assert result.exit_code == 2
    assert f"{path}:3: field 'cases.0.inputs': the diagram has no input 'questio'; did you mean 'question'?" in \
        result.output
    assert "Traceback" not in result.output


def test_the_committed_schema_is_the_one_the_command_prints() -> None:
    result = CliRunner().invoke(app, ["schema", "--kind", "eval"])
    assert result.exit_code == 0
    printed = json.loads(result.output)
    assert printed == json.loads((ROOT / "eval.schema.json").read_text(encoding="utf-8"))
    assert printed["title"] == "diagrama eval file"
    assert set(printed["$defs"]["Scorer"]["properties"]) >= {"check", "judge", "similar", "max_cost"}


def test_the_studio_does_not_take_an_eval_file_for_a_diagram() -> None:
    from engine.web.files import file_kind

    assert file_kind("order_agent.eval.yaml", "diagram: ../order_agent.yaml\ncases: []\n") == "eval"
    assert file_kind("order_agent.yaml", "diagram: order-agent\nblocks: []\n") == "diagram"
