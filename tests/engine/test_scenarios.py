"""Scenario files: loading, verdicts with readable diffs, recording, and the pytest plugin."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from blocks.registry import registry as real_registry
from engine import DiagramInvalid
from engine.cli import app
from engine.testing.scenarios import load_scenarios, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "scenarios"
cli = CliRunner()

pytest_plugins = ["pytester"]


def broken_copy(tmp_path: Path) -> Path:
    text = (SCENARIOS / "order_agent.scenario.yaml").read_text()
    text = text.replace("diagram: ../../diagrams/order_agent.yaml", f"diagram: {ROOT / 'diagrams/order_agent.yaml'}")
    text = text.replace("called_tools: [{block: ask, name: get_order_status, arguments: {order_id: 42}}]",
                        "called_tools: [{block: ask, name: cancel_order, arguments: {order_id: 42}}]")
    path = tmp_path / "broken.scenario.yaml"
    path.write_text(text)
    return path


def test_a_wrong_expected_tool_fails_with_a_readable_diff(tmp_path: Path) -> None:
    scenario = load_scenarios(broken_copy(tmp_path))[0]
    verdict = run_scenario(scenario, real_registry(), tmp_path / "runs")
    assert not verdict.passed
    report = verdict.report()
    assert "called_tools: expected" in report and '"name":"cancel_order"' in report
    assert '"name":"get_order_status"' in report
    assert f"{scenario.file}:" in report and "trace:" in report
    shown = cli.invoke(app, ["test", str(tmp_path / "broken.scenario.yaml"), "--runs-dir", str(tmp_path / "runs")])
    assert shown.exit_code == 1
    assert shown.stdout.strip().splitlines()[-1] == "4 passed, 1 failed"


def test_path_and_variable_failures_show_expected_and_actual(tmp_path: Path) -> None:
    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"""
scenario: wrong expectations
diagram: {ROOT / 'diagrams/greeting_counter.yaml'}
inputs: {{times: 1}}
expect:
  path: [start, greet]
  variables: {{greeting: "Hello"}}
""")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), None)
    report = verdict.report()
    assert "path: expected start → greet" in report and "got start → count → greet" in report
    assert 'variables.greeting: expected "Hello"' in report and "Olá, Ana! Counted to 1." in report


def test_running_out_of_replies_names_the_block(tmp_path: Path) -> None:
    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"""
scenario: too few replies
diagram: {ROOT / 'diagrams/order_agent.yaml'}
replies:
  ask: [{{tool_calls: [{{name: get_order_status, arguments: {{order_id: 42}}}}]}}]
""")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), None)
    assert any("block 'ask' asked more times" in f for f in verdict.failures)


def test_scenario_file_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.scenario.yaml"
    path.write_text("- scenario: a\n  diagram: x.yaml\n  expect:\n    statu: succeeded\n")
    with pytest.raises(DiagramInvalid) as caught:
        load_scenarios(path)
    problem = caught.value.problems[0]
    assert problem.line == 4 and "unknown key" in problem.message and problem.field == "0.expect.statu"


def test_record_then_replay_passes(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded.scenario.yaml"
    ran = cli.invoke(app, ["run", str(ROOT / "diagrams/order_agent.yaml"), "--offline", "-q", "--runs-dir",
                           str(tmp_path / "runs"), "--record", str(recorded), "-i", "question=Where is my order 57?"])
    assert ran.exit_code == 0, ran.output
    text = recorded.read_text()
    assert "get_order_status" in text and "order_id: 57" in text
    replay = cli.invoke(app, ["test", str(recorded), "--runs-dir", str(tmp_path / "runs")])
    assert replay.exit_code == 0, replay.stdout
    assert replay.stdout.strip().splitlines()[-1] == "1 passed, 0 failed"


def test_scenarios_run_as_pytest_items(pytester: pytest.Pytester) -> None:
    for name in ("order_agent.scenario.yaml",):
        text = (SCENARIOS / name).read_text().replace("../../diagrams/", f"{ROOT / 'diagrams'}/")
        (pytester.path / name).write_text(text)
    broken_copy(pytester.path)
    outcome = pytester.runpytest("-q")  # the plugin comes from the installed pytest11 entry point
    outcome.assert_outcomes(passed=9, failed=1)
    assert "called_tools: expected" in outcome.stdout.str()


def test_scenario_schema_is_valid() -> None:
    import json

    import jsonschema
    import yaml

    schema = json.loads(cli.invoke(app, ["schema", "--kind", "scenario"]).stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in SCENARIOS.glob("*.scenario.yaml"):
        assert not list(validator.iter_errors(yaml.safe_load(path.read_text()))), path


def test_a_misspelt_tool_stub_fails_before_the_real_handler_runs(tmp_path: Path) -> None:
    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"""
scenario: a typo in a stub
diagram: {ROOT / 'diagrams/order_agent.yaml'}
inputs: {{question: "Where is my order 42?"}}
tools: {{get_order_statsu: {{status: lost}}}}
""")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), None)
    assert verdict.result is None  # nothing ran: the production handler was never called
    assert verdict.failures == ["tools: the stub 'get_order_statsu' names no tool of the diagram's registries; "
                                "did you mean 'get_order_status'?"]


def test_a_scripted_reply_never_used_fails_the_scenario(tmp_path: Path) -> None:
    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"""
scenario: one reply too many
diagram: {ROOT / 'diagrams/order_agent.yaml'}
inputs: {{question: "Where is my order 42?"}}
replies:
  ask:
    - tool_calls: [{{name: get_order_status, arguments: {{order_id: 42}}}}]
    - text: "Shipped."
    - text: "Never asked for."
expect: {{status: succeeded}}
""")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), None)
    assert verdict.failures == ["replies: reply 3 for block 'ask' was never used"]


def test_recorded_scenarios_are_plain_yaml_in_the_documented_shape(tmp_path: Path) -> None:
    import yaml

    recorded = tmp_path / "recorded.scenario.yaml"
    ran = cli.invoke(app, ["run", str(ROOT / "diagrams/order_agent.yaml"), "--offline", "-q", "--runs-dir",
                           str(tmp_path / "runs"), "--record", str(recorded), "-i", "question=Where is my order 57?"])
    assert ran.exit_code == 0, ran.output
    text = recorded.read_text()
    assert "&id" not in text and "*id" not in text  # the arguments appear twice, written out both times
    data = yaml.safe_load(text)
    assert list(data) == ["setup", "scenarios"] and data["setup"]["diagram"].endswith("order_agent.yaml")
    assert [list(s)[:4] for s in data["scenarios"]] == [["scenario", "inputs", "replies", "expect"]]


def function_scenario(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "f.scenario.yaml"
    path.write_text(f"scenario: pricing\ndiagram: {ROOT / 'diagrams/order_quote.yaml'}\n{body}")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs")
    return verdict.failures


def test_function_calls_are_matched_with_a_readable_diff(tmp_path: Path) -> None:
    failures = function_scenario(tmp_path, """
replies: {write: [{text: ok}]}
expect:
  function_calls: [{block: price, arguments: {order_id: 57}}]
""")
    assert len(failures) == 1 and failures[0].startswith("function_calls: expected")
    assert '"order_id":57' in failures[0] and '"function":"shop.pricing:quote"' in failures[0]


def test_function_replies_too_many_too_few_and_of_the_wrong_kind(tmp_path: Path) -> None:
    unused = function_scenario(tmp_path, "replies: {price: [{result: 1}, {result: 2}], write: [{text: ok}]}\n")
    assert unused == ["replies: reply 2 for block 'price' was never used"]
    wrong = function_scenario(tmp_path, "replies: {price: [{text: hi}], write: [{result: 1}]}\n")
    assert wrong == ["replies: block 'price' (Function): reply 1 must be {result: ...} or {error: \"...\"}",
                     "replies: block 'write' (ClaudeRequest): reply 1 must be a model's reply ({text: ...}, "
                     "{tool_calls: [...]}, or {error: {status: 529}})"]


def test_a_function_reply_cannot_be_both_a_result_and_an_error(tmp_path: Path) -> None:
    path = tmp_path / "f.scenario.yaml"
    path.write_text(f"scenario: x\ndiagram: {ROOT / 'diagrams/order_quote.yaml'}\n"
                    "replies: {price: [{result: 1, error: boom}]}\n")
    with pytest.raises(DiagramInvalid) as caught:
        load_scenarios(path)
    assert any(p.line == 3 for p in caught.value.problems)


def test_a_function_error_that_reads_like_an_http_one_is_the_functions(tmp_path: Path) -> None:
    # {error: timeout} is also how an HttpRequest's timeout is scripted: for a Function block it is its error message.
    failures = function_scenario(tmp_path, """
replies: {price: [{error: timeout}]}
expect:
  errors: [{block: price, type: function_error, message_contains: timeout}]
""")
    assert failures == []


def wait_scenario(tmp_path: Path, body: str) -> tuple[list[str], object]:
    path = tmp_path / "w.scenario.yaml"
    path.write_text(f"scenario: approval\ndiagram: {ROOT / 'diagrams/approve_reply.yaml'}\n{body}")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs")
    return verdict.failures, verdict.result


def test_a_scenario_answers_a_wait_by_block_id_good_wrong_and_late(tmp_path: Path) -> None:
    good, result = wait_scenario(tmp_path, """
replies:
  draft: [{text: "It ships today."}]
  approve: [{answer: {approved: true, note: ok}, waited: 30}]
expect:
  status: succeeded
  path: [start, draft, approve, send]
  variables: {approved: true, sent: "It ships today."}
""")
    assert good == []
    assert result.outputs["approve"] == {"answer": {"approved": True, "note": "ok"}, "waited": 30.0}  # type: ignore[attr-defined]
    # A wrong answer is held to the form as a person's is: the Wait fails (answer_invalid), its on_error goes on.
    wrong, _ = wait_scenario(tmp_path, """
replies:
  draft: [{text: "It ships today."}]
  approve: [{answer: {approved: "yes"}}]
expect:
  path: [start, draft, approve, hold]
  errors: [{block: approve, type: answer_invalid, message_contains: 'approved: "yes" is not of type "boolean"'}]
""")
    assert wrong == []
    late, _ = wait_scenario(tmp_path, """
replies:
  draft: [{text: "It ships today."}]
  approve: [{answer: {approved: true}, waited: 90000}]
expect:
  path: [start, draft, approve, hold]
  variables: {sent: ""}
  errors: [{block: approve, type: wait_timeout}]
""")
    assert late == []


def test_wait_answers_of_the_wrong_kind_or_unused_fail_the_scenario(tmp_path: Path) -> None:
    wrong, _ = wait_scenario(tmp_path, "replies: {draft: [{text: x}], approve: [{text: yes}]}\n")
    assert wrong == ["replies: block 'approve' (Wait): reply 1 must be a person's answer ({answer: ..., waited: "
                     "seconds})"]
    wrong, _ = wait_scenario(tmp_path, "replies: {draft: [{answer: true}]}\n")
    assert wrong == ["replies: block 'draft' (ClaudeRequest): reply 1 must be a model's reply ({text: ...}, "
                     "{tool_calls: [...]}, or {error: {status: 529}})"]
    unused, _ = wait_scenario(tmp_path, """
replies: {draft: [{text: x}], approve: [{answer: {approved: false}}, {answer: {approved: true}}]}
expect: {path: [start, draft, approve, hold]}
""")
    assert unused == ["replies: reply 2 for block 'approve' was never used"]
