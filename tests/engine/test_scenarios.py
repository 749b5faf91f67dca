"""Scenario files: loading, verdicts with readable diffs, recording, and the pytest plugin."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

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
    assert any("block 'ask' asked the model more times" in f for f in verdict.failures)


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
