"""A case may script its replies as a scenario does (issue 39, 1: a judge "runs offline on the simulator or on a
scenario's scripted replies"): the robot's request blocks answer with the case's replies, and a judge named there
answers with its own, so an eval of a judge's verdicts is exact; a reply that is no scenario reply, or names neither a
block nor a judge, is a problem at its line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.evals.test_eval_runs import folder_with, run_cli

SCRIPTED = """\
diagram: robot.yaml
cases:
  - id: scripted
    inputs: {question: where is my order}
    expected: shipped
    replies:
      ask: [{text: "Your order has shipped."}]
      helpful: [{output: {score: 1, reason: "It says where the order is."}}]
  - id: unscripted
    inputs: {question: where is my order}
    expected: shipped
scorers:
  - {id: says_it, check: "{{ expected in output }}"}
  - id: helpful
    judge: {model: claude-sonnet-4-5, rubric: Does it say where the order is?, scale: [0, 1]}
"""


def test_a_case_runs_on_its_scripted_replies_and_its_judge_answers_with_its_own(tmp_path: Path) -> None:
    folder_with(tmp_path, SCRIPTED)
    code, output = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--output", "json", "--runs-dir",
                           str(tmp_path / "runs"))
    assert code in (0, 1), output
    cases = {case["id"]: case for case in json.loads(output)["cases"]}
    scripted, unscripted = cases["scripted"], cases["unscripted"]
    assert scripted["scores"] == {"says_it": 1.0, "helpful": 1.0}
    assert scripted["reasons"] == {"helpful": "It says where the order is."}
    assert scripted["output"] == "Your order has shipped."
    assert scripted["judge_tokens"] > 0 and json.loads(output)["summary"]["judge_tokens"] >= scripted["judge_tokens"]
    # The other case is the simulator's: it echoes the question (no "shipped"), and its judge is the seeded one.
    assert unscripted["scores"]["says_it"] == 0.0


def test_a_reply_that_is_no_scenario_reply_or_names_nothing_is_a_problem_at_its_line(tmp_path: Path) -> None:
    folder_with(tmp_path, SCRIPTED.replace('{text: "Your order has shipped."}', '{txet: "typo"}')
                .replace("      helpful:", "      nobody: [{text: x}]\n      helpful:"))
    code, output = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--runs-dir", str(tmp_path / "runs"))
    assert code == 2, output
    assert "robot.eval.yaml:7" in output and "reply 1 for 'ask'" in output and "txet" in output
    # The reply's fault is found first; fixed, the unknown name is the next problem.
    folder_with(tmp_path, SCRIPTED.replace("      helpful:", "      nobody: [{text: x}]\n      helpful:"))
    code, output = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--runs-dir", str(tmp_path / "runs"))
    assert code == 2, output
    assert "robot.eval.yaml:8" in output and "'nobody', which is neither a block of robot.yaml nor a judge's id" \
        in output
