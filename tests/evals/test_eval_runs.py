"""`diagrama eval` (issue 39, 2): cases run through the diagram offline and scored by every kind of scorer; the table,
the JSON, the exit status at the threshold, JUnit XML, the HTML report; a second version side by side."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import httpx
import orjson
import pytest
from click.testing import CliRunner

from blocks.registry import registry
from engine.cli import app
from engine.runs.evals.evaluate import evaluate, load_for_eval
from engine.runtime.context import Services

ROBOT = """\
diagram: robot
blocks:
  - id: start
    type: Start
    inputs: {question: ""}
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {model: claude-sonnet-4-5, role: "PROMPT", request: "{{ question }}", max_tokens: 50}
    set: {answer: "{{ result }}"}
"""
ECHO = "(simulated claude-sonnet-4-5) You said: "
EVAL = """\
diagram: robot.yaml
cases:
  - {id: hello, inputs: {question: hello there}, expected: hello there}
  - {id: order, inputs: {question: where is order 42}, expected: parcel}
scorers:
  - {id: says_it, check: "{{ expected in output }}"}
  - {id: reached, path_includes: ask}
threshold: 0.75
"""


def folder_with(tmp_path: Path, eval_text: str = EVAL, robot: str = ROBOT) -> Path:
    (tmp_path / "robot.yaml").write_text(robot, encoding="utf-8")
    path = tmp_path / "robot.eval.yaml"
    path.write_text(eval_text, encoding="utf-8")
    return path


def run_cli(*arguments: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["eval", *arguments], env=env)
    return result.exit_code, result.output


def as_json(tmp_path: Path, *arguments: str) -> tuple[int, dict[str, Any]]:
    code, output = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--output", "json",
                           "--runs-dir", str(tmp_path / "runs"), *arguments)
    return code, json.loads(output)


def test_every_plain_scorer_scores_the_simulators_answers(tmp_path: Path) -> None:
    folder_with(tmp_path, """\
diagram: robot.yaml
cases:
  - {id: hi, inputs: {question: hi}, expected: "(simulated claude-sonnet-4-5) You said: hi"}
scorers:
  - {id: same, equals: }
  - {id: other, equals: bye}
  - {id: has, contains: "You said"}
  - {id: pattern, matches: "said: h[a-z]$"}
  - {id: text, json_schema: {type: string}}
  - {id: number, json_schema: {type: integer}}
  - {id: near, similar: {threshold: 0.9}}
  - {id: far, check: "{{ 0.25 }}"}
  - {id: went, path_includes: ask}
  - {id: not_went, path_includes: elsewhere}
  - {id: fast, max_latency_ms: 60000}
  - {id: cheap, max_cost: 1}
  - {id: broken, check: "{{ output + 1 }}"}
  - {id: status, check: "{{ status == 'succeeded' and path == ['start', 'ask'] }}"}
""")
    code, report = as_json(tmp_path)
    (case,) = report["cases"]
    assert case["scores"] == {"same": 1.0, "other": 0.0, "has": 1.0, "pattern": 1.0, "text": 1.0, "number": 0.0,
                              "near": 1.0, "far": 0.25, "went": 1.0, "not_went": 0.0, "fast": 1.0, "cheap": 1.0,
                              "broken": 0.0, "status": 1.0}
    assert 0 < case["cost"] < 1 and case["reasons"]["cheap"] == f"cost {case['cost']:g}"  # claude-sonnet-4-5: priced
    assert case["reasons"]["number"].startswith("output:")
    assert case["reasons"]["broken"].startswith("the check failed: ")
    assert case["score"] == round(sum(case["scores"].values()) / 14, 4)
    assert report["summary"]["cost"] == case["cost"]
    assert code == 0  # no threshold: nothing to fall below


def test_a_run_of_unknown_cost_never_meets_max_cost_and_the_summary_says_unknown(tmp_path: Path) -> None:
    folder_with(tmp_path, EVAL.replace("threshold: 0.75\n", "") + "  - {id: cheap, max_cost: 1}\n",
                ROBOT.replace("ClaudeRequest", "GeminiRequest").replace("claude-sonnet-4-5", "gemini-3.5-flash"))  # no price
    _, report = as_json(tmp_path)
    assert [case["scores"]["cheap"] for case in report["cases"]] == [0.0, 0.0]
    assert [case["reasons"]["cheap"] for case in report["cases"]] == ["cost unknown", "cost unknown"]
    assert [case["cost"] for case in report["cases"]] == [None, None] and report["summary"]["cost"] is None
    _, table = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--runs-dir", str(tmp_path / "runs"))
    assert "cost unknown" in table


def test_the_summary_costs_the_sum_of_its_runs(tmp_path: Path) -> None:
    folder_with(tmp_path)
    _, report = as_json(tmp_path)
    costs = [case["cost"] for case in report["cases"]]
    assert all(cost > 0 for cost in costs) and report["summary"]["cost"] == pytest.approx(sum(costs))
    _, table = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--runs-dir", str(tmp_path / "runs"))
    assert f"cost ${report['summary']['cost']:.6f}" in table


@pytest.mark.slow
def test_the_json_summary_cases_and_exit_status_follow_the_threshold(tmp_path: Path) -> None:
    folder_with(tmp_path)
    code, report = as_json(tmp_path)
    summary = report["summary"]
    assert (summary["score"], summary["cases"], summary["passed"], summary["failed"]) == (0.75, 2, 1, 1)
    assert summary["scorers"] == {"says_it": 0.5, "reached": 1.0}
    assert summary["tokens"] > 0 and summary["latency_ms"]["p50"] is not None
    assert [(c["id"], c["score"], c["status"]) for c in report["cases"]] == [("hello", 1.0, "succeeded"),
                                                                          ("order", 0.5, "succeeded")]
    assert (tmp_path / "runs" / report["cases"][0]["run_id"] / "trace.jsonl").is_file()
    assert code == 0  # 0.75 is at the file's threshold
    assert as_json(tmp_path, "--fail-under", "0.8")[0] == 1
    code, text = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--fail-under", "0.8",
                         "--runs-dir", str(tmp_path / "runs"))
    assert code == 1 and "score 0.750 is below 0.8" in text
    assert "hello" in text and "1 of 2 cases passed" in text


def test_junit_and_the_html_report_are_written_escaped_and_offline(tmp_path: Path) -> None:
    folder_with(tmp_path, EVAL.replace("hello there", "<script>alert(1)</script>"))
    code, _ = as_json(tmp_path, "--junit", str(tmp_path / "out" / "eval.xml"), "--report", str(tmp_path / "r.html"))
    assert code == 0
    suite = ElementTree.parse(tmp_path / "out" / "eval.xml").getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    failed = [case.get("name") for case in suite if case.find("failure") is not None]
    assert failed == ["order"]
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "http://" not in page and "https://" not in page and "<link" not in page
    assert "file://" in page  # each case's trace is linked


def test_a_key_in_the_environment_never_reaches_the_json_or_the_report(tmp_path: Path) -> None:
    key = "sk-test-abcdefghijklmnopqrstuvwxyz012345"
    folder_with(tmp_path, EVAL.replace("hello there", key))
    code, output = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--output", "json", "--report",
                           str(tmp_path / "r.html"), "--runs-dir", str(tmp_path / "runs"),
                           env={"SHOP_API_KEY": key})
    assert code == 1  # the answer it checks is scrubbed of the key too: the first case's check is not met
    assert key not in output and key not in (tmp_path / "r.html").read_text(encoding="utf-8")
    assert json.loads(output)["cases"][0]["inputs"]["question"] != key


def test_against_another_file_puts_the_worse_cases_first(tmp_path: Path) -> None:
    folder_with(tmp_path)
    # The other version answers nothing the first case expects, and the second's parcel.
    other = ROBOT.replace('request: "{{ question }}"', "request: \"{{ 'your parcel' }}\"")
    (tmp_path / "other.yaml").write_text(other, encoding="utf-8")
    code, report = as_json(tmp_path, "--against", str(tmp_path / "other.yaml"))
    assert code == 0
    assert report["against"]["summary"]["score"] == 0.75
    assert [(d["id"], d["delta"]) for d in report["deltas"]] == [("order", -0.5), ("hello", 0.5)]
    assert report["delta"]["score"] == 0.0
    code, output = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--against", str(tmp_path / "none.yaml"))
    assert code == 2 and "none.yaml: no such diagram file (or give a git revision)" in output


def test_against_a_git_revision_runs_the_folder_as_it_was(tmp_path: Path) -> None:
    folder = tmp_path / "repo" / "robots"
    folder.mkdir(parents=True)
    folder_with(folder)

    def git(*arguments: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *arguments], cwd=tmp_path / "repo",
                       check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "v1")
    (folder / "robot.yaml").write_text(ROBOT.replace('request: "{{ question }}"', "request: parcel"), encoding="utf-8")
    code, report = as_json(folder, "--against", "HEAD")
    assert report["against"]["revision"] == "HEAD"
    assert report["against"]["summary"]["diagram"] == "HEAD:robots/robot.yaml"
    assert [(d["id"], d["delta"]) for d in report["deltas"]] == [("hello", -0.5), ("order", 0.5)]
    code, output = run_cli(str(folder / "robot.eval.yaml"), "--offline", "--against", "no-such-revision")
    assert code == 2 and "git archive" in output


def test_repeats_report_a_spread_and_a_judge_is_reproducible(tmp_path: Path) -> None:
    folder_with(tmp_path, EVAL.replace("threshold: 0.75\n", """\
  - id: helpful
    judge: {model: claude-sonnet-4-5, rubric: Is it helpful?, scale: 1-5}
  - id: verdict
    judge: {model: openai/gpt-oss-120b, rubric: Is it right?, scale: pass/fail}
"""))
    code, first = as_json(tmp_path, "--repeat", "2")
    assert code == 0
    _, second = as_json(tmp_path)
    assert first["summary"]["repeat"] == 2 and first["summary"]["spread"] == 0.0  # the simulator is seeded
    assert [c["scores"] for c in first["cases"]] == [c["scores"] for c in second["cases"]]
    for case in first["cases"]:
        assert case["scores"]["helpful"] in (0.0, 0.25, 0.5, 0.75, 1.0)
        assert case["scores"]["verdict"] in (0.0, 1.0)
        assert case["reason"] == case["reasons"]["helpful"]
        # Each judge is traced beside the case's run: its request, its reply, its verdict.
        judged = [json.loads(line) for line in Path(case["judges"]).read_text(encoding="utf-8").splitlines()]
        assert [line["event"] for line in judged] == ["http_request", "http_response", "judged"] * 2
        assert judged[2]["judge"] == f"eval/{case['id']}/helpful" and judged[2]["score"] == case["scores"]["helpful"]
        assert "Rubric: Is it helpful?" in json.dumps(judged[0]["body"])


def test_a_judge_asks_its_vendor_for_a_score_and_a_reason() -> None:
    seen: list[dict[str, Any]] = []
    key = "sk-ant-test-0123456789abcdefghijklmnop"

    def anthropic(request: httpx.Request) -> httpx.Response:
        body = orjson.loads(request.content)
        seen.append({"body": body, "key": request.headers.get("x-api-key")})
        judging = "output_config" in body
        text = '{"score": 4, "reason": "Names the order.\\nMore."}' if judging else "Order 42 shipped."
        return httpx.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5}})

    root = Path(__file__).resolve().parent / "files"
    loaded, diagram = load_for_eval(root / "judged.eval.yaml", registry())
    services = Services(environ={"ANTHROPIC_API_KEY": key}, transports={"anthropic": httpx.MockTransport(anthropic)})
    report = asyncio.run(evaluate(loaded, diagram, services=services, runs_dir=None, threshold=0.5))
    (case,) = report["cases"]
    assert case["scores"] == {"helpful": 0.75} and case["reason"] == "Names the order."
    judged = seen[-1]["body"]
    assert judged["output_config"]["format"]["schema"]["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]
    assert "Answer: Order 42 shipped." in judged["messages"][0]["content"]
    assert all(request["key"] == key for request in seen)


def test_vendor_limits_are_read_as_batch_reads_them(tmp_path: Path) -> None:
    folder_with(tmp_path)
    code, report = as_json(tmp_path, "--rpm", "claude=6000", "--max-concurrent", "claude=1")
    assert code == 0 and report["summary"]["cases"] == 2
    code, output = run_cli(str(tmp_path / "robot.eval.yaml"), "--offline", "--rpm", "nobody=3")
    assert code == 2 and "--rpm 'nobody=3': the vendor is one of claude, groq, gemini" in output


def test_each_eval_is_handed_to_the_run_store_with_its_report(tmp_path: Path) -> None:
    from engine.runs.store import RunStore

    folder_with(tmp_path)
    url = f"sqlite:///{tmp_path / 'kept.db'}"
    code, report = as_json(tmp_path, "--store", url)
    assert code == 0
    store = RunStore(url)
    try:
        (kept,) = store.evals()
        found = store.eval(kept["eval_id"])
    finally:
        store.close()
    assert found is not None and found["report"]["summary"] == report["summary"]
    assert (found["diagram"], found["content_hash"]) == (str((tmp_path / "robot.yaml").resolve()),
                                                         report["summary"]["content_hash"])
    assert found["eval_file"] == str((tmp_path / "robot.eval.yaml").resolve()) and found["revision"] is None


DATED = """\
diagram: dated
blocks:
  - id: start
    type: Start
    inputs: {question: ""}
    next: stamp
  - id: stamp
    type: Set
    set: {answer: "{{ today() }} {{ now().hour }}h"}
"""


def test_the_files_clock_and_a_cases_own_are_what_now_and_today_read(tmp_path: Path) -> None:
    # An eval's answers must not drift by the day: `clock:` fixes the instant its runs read, a case's own wins.
    folder_with(tmp_path, """\
diagram: robot.yaml
clock: "2026-03-01T09:30:00+01:00"
cases:
  - {id: files, inputs: {question: a}, expected: "2026-03-01 8h"}  # 09:30 at +01:00 is 08:30 UTC
  - {id: own, inputs: {question: b}, expected: "2027-12-31 23h", clock: "2027-12-31T23:59:00+00:00"}
scorers:
  - {id: same, equals: }
""", robot=DATED)
    code, payload = as_json(tmp_path)
    assert code == 0, payload
    answers = {case["id"]: (case["output"], case["score"]) for case in payload["cases"]}
    assert answers == {"files": ("2026-03-01 8h", 1.0), "own": ("2027-12-31 23h", 1.0)}
