"""Budgets (issue 40, 3): a request that would pass the run's budget, or a tighter one of its block or of a block
around it, is not sent and fails with `budget_exceeded` under the block's error level; `--budget` lowers Start's,
never raises it; a Subdiagram's child and a Loop's passes draw on their caller's; a waiting run resumes with the
budget it started with."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engine import Services, read_events
from engine.cli import app
from engine.errors import UsageError
from engine.format.spec import Budget
from engine.providers.prices import reset_prices
from engine.runtime.budgets import budget_from_text
from tests.conftest import Runner

cli = CliRunner()

# A robot that asks again and again: without a budget only max_steps would stop it.
LOOPING = """
diagram: looping
blocks:
  - id: start
    type: Start
    {start}
    variables: {{asked: 0}}
    next: ask
  - id: ask
    type: ClaudeRequest
    {level}
    with:
      model: claude-haiku-4-5
      request: "Is it done yet? ({{{{ asked }}}})"
      max_tokens: 200
    set: {{asked: "{{{{ asked + 1 }}}}"}}
    next: [{{to: ask, when: "{{{{ asked < 100 }}}}"}}]
    {handler}
  - id: handled
    type: Set
    set: {{stopped_by: "{{{{ error.type }}}}"}}
"""


@pytest.fixture(autouse=True)
def _own_prices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("DIAGRAMA_PRICES", raising=False)
    reset_prices()
    yield
    reset_prices()


def looping(write: Callable[..., Path], *, budget: str, level: str = "", handler: str = "") -> Path:
    return write(LOOPING.format(start=f"budget: {budget}", level=level, handler=handler))


def provider_calls(runner: Runner, result: Any) -> list[dict[str, Any]]:
    return [event for event in runner.events(result) if event["event"] == "provider_called"]


def test_default_level_a_requests_budget_fails_the_run_before_the_request_past_it(
        runner: Runner, write: Callable[..., Path]) -> None:
    result = runner.run(looping(write, budget="{requests: 3}"), services=Services(offline=True))
    assert result.status == "failed"
    assert [error["type"] for error in result.errors] == ["budget_exceeded"]
    assert result.errors[0]["block"] == "ask"
    assert "the run's budget allows 3 requests and 3 were made" in result.errors[0]["message"]
    assert len(provider_calls(runner, result)) == 3 and result.cost["requests"] == 3
    assert result.variables["asked"] == 3


def test_handle_routes_budget_exceeded_to_on_error(runner: Runner, write: Callable[..., Path]) -> None:
    diagram = looping(write, budget="{tokens: 2000}", level="error_level: Handle", handler="on_error: handled")
    result = runner.run(diagram, services=Services(offline=True))
    assert result.status == "succeeded" and result.variables["stopped_by"] == "budget_exceeded"
    calls = provider_calls(runner, result)
    spent = sum(event["usage"]["input_tokens"] + event["usage"]["output_tokens"] for event in calls)
    assert spent <= 2000 and calls  # the request that would have passed it was not sent
    assert result.path[-2:] == ["ask", "handled"]


def test_ignore_goes_on_past_the_refused_request(runner: Runner, write: Callable[..., Path]) -> None:
    # Ignored, the refused request's block goes on to its next (itself): each later request is refused too, so
    # the run ends only at max_steps, with no request sent past the budget.
    text = LOOPING.format(start="budget: {requests: 2}\n    max_steps: 12", level="error_level: Ignore", handler="")
    result = runner.run(write(text), services=Services(offline=True))
    assert len(provider_calls(runner, result)) == 2
    assert result.errors[-1]["type"] == "step_limit_reached"
    ignored = [e for e in runner.events(result)
               if e["event"] == "block_failed" and e["error_type"] == "budget_exceeded"]
    assert len(ignored) >= 8


def test_a_usd_budget_counts_the_price_of_input_and_max_tokens(runner: Runner, write: Callable[..., Path]) -> None:
    # claude-haiku-4-5: $1 in, $5 out per million; 200 max_tokens alone may cost $0.001.
    result = runner.run(looping(write, budget="{usd: 0.004}"), services=Services(offline=True))
    assert result.errors[0]["type"] == "budget_exceeded" and "$0.004" in result.errors[0]["message"]
    estimate = 200 * 5 / 1e6  # its max_tokens; its input (a few dozen tokens) adds a little
    assert 0.004 - 1.2 * estimate < result.cost["usd"] <= 0.004
    assert "may cost $0.001" in result.errors[0]["message"]


def test_a_model_without_a_price_is_not_sent_under_a_usd_budget(runner: Runner, write: Callable[..., Path]) -> None:
    text = LOOPING.format(start="budget: {usd: 1}", level="", handler="").replace("claude-haiku-4-5",
                                                                                      "claude-unpriced-9")
    result = runner.run(write(text), services=Services(offline=True))
    assert result.errors[0]["type"] == "budget_exceeded" and "price of" in result.errors[0]["message"]
    assert provider_calls(runner, result) == []


def test_a_blocks_own_budget_is_tighter_for_its_requests(runner: Runner, write: Callable[..., Path]) -> None:
    result = runner.run(looping(write, budget="{requests: 10}", level="budget: {requests: 1}"),
                        services=Services(offline=True))
    assert len(provider_calls(runner, result)) == 1
    assert "the budget of block 'ask' allows 1 requests" in result.errors[0]["message"]


def test_a_loops_passes_and_a_subdiagrams_child_draw_on_the_callers_budget(
        runner: Runner, write: Callable[..., Path]) -> None:
    write("""
        diagram: child
        blocks:
          - id: start
            type: Start
            inputs: {item: ""}
            next: ask
          - id: ask
            type: GroqChatRequest
            with: {model: llama-3.3-70b-versatile, request: "{{ item }}", max_tokens: 50}
        """, "child.yaml")
    diagram = write("""
        diagram: parent
        blocks:
          - id: start
            type: Start
            budget: {requests: 3}
            next: each
          - id: each
            type: Loop
            with: {for_each: [a, b, c, d, e]}
            body: call
          - id: call
            type: Subdiagram
            with: {diagram: child.yaml, inputs: {item: "{{ item }}"}}
            next: each
        """)
    result = runner.run(diagram, services=Services(offline=True))
    assert result.status == "failed" and result.cost["requests"] == 3
    assert "budget_exceeded" in json.dumps(result.errors)


def test_a_subdiagram_blocks_own_budget_bounds_its_childs_requests(runner: Runner, write: Callable[..., Path]) -> None:
    write("""
        diagram: child
        blocks:
          - id: start
            type: Start
            next: one
          - id: one
            type: GroqChatRequest
            with: {model: llama-3.3-70b-versatile, request: "one", max_tokens: 50}
            next: two
          - id: two
            type: GroqChatRequest
            with: {model: llama-3.3-70b-versatile, request: "two", max_tokens: 50}
        """, "child.yaml")
    diagram = write("""
        diagram: parent
        blocks:
          - id: start
            type: Start
            next: call
          - id: call
            type: Subdiagram
            budget: {requests: 1}
            with: {diagram: child.yaml}
        """)
    result = runner.run(diagram, services=Services(offline=True))
    assert result.cost["requests"] == 1
    assert "the budget of block 'call' allows 1 requests" in json.dumps(result.errors)


def test_a_lowered_budget_is_the_tighter_never_the_looser(runner: Runner, write: Callable[..., Path]) -> None:
    diagram = runner.load(looping(write, budget="{requests: 2}"))
    lowered = runner.run(diagram, services=Services(offline=True), budget=Budget(requests=1))
    raised = runner.run(diagram, services=Services(offline=True), budget=Budget(requests=50))
    assert lowered.cost["requests"] == 1 and raised.cost["requests"] == 2


def test_budget_text_is_read_or_refused_with_the_option_named() -> None:
    assert budget_from_text(["usd=0.1,tokens=500", "requests=3"]) == Budget(usd=0.1, tokens=500, requests=3)
    for wrong, said in (("dollars=3", "not 'dollars=3'"), ("usd=-1", "usd: input should be greater than 0"),
                        ("tokens=lots", "tokens: input should be a valid integer")):
        with pytest.raises(UsageError, match="--budget") as raised:
            budget_from_text([wrong])
        assert said in str(raised.value)


def test_a_budget_on_start_is_checked_at_load(write: Callable[..., Path], runner: Runner) -> None:
    from engine.errors import DiagramInvalid

    with pytest.raises(DiagramInvalid) as raised:
        runner.load(looping(write, budget="{usd: 0, dollars: 3}"))
    problems = {(problem.block, problem.field) for problem in raised.value.problems}
    assert ("start", "budget.usd") in problems and ("start", "budget.dollars") in problems


def test_run_budget_option_lowers_the_budget_and_says_so(tmp_path: Path, write: Callable[..., Path]) -> None:
    diagram = looping(write, budget="{requests: 5}")
    result = cli.invoke(app, ["run", str(diagram), "--offline", "--runs-dir", str(tmp_path / "runs"),
                              "--budget", "requests=2", "--output", "json"])
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)
    assert payload["cost"]["requests"] == 2 and payload["errors"][0]["type"] == "budget_exceeded"
    wrong = cli.invoke(app, ["run", str(diagram), "--offline", "--budget", "usd=free"])
    assert wrong.exit_code == 2 and "--budget: usd: input should be a valid number" in wrong.output
    events = read_events(Path(payload["trace"]))
    assert [e["error_type"] for e in events if e["event"] == "block_failed"] == ["budget_exceeded"]


def test_a_waiting_run_resumes_with_the_budget_it_started_with(tmp_path: Path, write: Callable[..., Path]) -> None:
    diagram = write("""
        diagram: ask_then_wait
        blocks:
          - id: start
            type: Start
            next: first
          - id: first
            type: GroqChatRequest
            with: {model: llama-3.3-70b-versatile, request: "one", max_tokens: 50}
            next: wait
          - id: wait
            type: Wait
            with: {prompt: "go on?", form: {type: object, properties: {ok: {type: boolean}}, required: [ok]}}
            next: second
          - id: second
            type: GroqChatRequest
            with: {model: llama-3.3-70b-versatile, request: "two", max_tokens: 50}
        """)
    runs = str(tmp_path / "runs")
    started = cli.invoke(app, ["run", str(diagram), "--offline", "--runs-dir", runs, "--budget", "requests=1",
                               "--output", "json"])
    assert started.exit_code == 3, started.output
    run_id = json.loads(started.stdout)["run_id"]
    resumed = cli.invoke(app, ["resume", run_id, "--offline", "--runs-dir", runs, "--input", "ok=true",
                               "--output", "json"])
    assert resumed.exit_code == 1, resumed.output
    payload = json.loads(resumed.stdout)
    assert payload["errors"][0]["type"] == "budget_exceeded" and payload["errors"][0]["block"] == "second"
