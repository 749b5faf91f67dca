"""HttpRequest in scenarios and offline runs: scripted answers, expected requests, and no network, ever."""

from __future__ import annotations

from pathlib import Path

from blocks.registry import registry as real_registry
from engine import Services
from engine.testing.scenarios import load_scenarios, run_scenario

ROOT = Path(__file__).resolve().parents[2]
DIAGRAM = ROOT / "diagrams" / "order_lookup.yaml"


def scenario(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"scenario: s\ndiagram: {DIAGRAM}\n{body}", encoding="utf-8")
    return run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs").failures


def test_an_offline_run_does_not_reach_the_network_without_a_script(runner, tmp_path: Path) -> None:
    result = runner.run(DIAGRAM, {"order_id": 7, "question": "?"}, services=Services(environ={}, offline=True))
    assert result.path == ["start", "fetch", "unavailable"]
    error = result.errors[0]
    assert error["type"] == "http_offline"
    assert error["message"] == ("HttpRequest 'fetch' does not reach the network in an offline run; a scenario scripts "
                                "its answers (replies: {fetch: [{status: 200, json: ...}]})")


def test_a_dropped_connection_takes_the_next_scripted_answer(tmp_path: Path) -> None:
    assert scenario(tmp_path, """
replies:
  fetch: [{error: connection}, {status: 200, json: {status: lost}}]
  answer: [{text: "Lost."}]
expect: {status: succeeded, variables: {order: {status: lost}}}
""") == []


def test_more_calls_than_answers_fail_the_scenario(tmp_path: Path) -> None:
    failures = scenario(tmp_path, """
replies:
  fetch: [{status: 503}, {status: 503}]
expect: {status: succeeded}
""")
    assert failures[0] == "block 'fetch' asked more times than the scenario scripted replies for it"


def test_an_answer_never_asked_for_fails_the_scenario(tmp_path: Path) -> None:
    failures = scenario(tmp_path, """
replies:
  fetch: [{status: 404}, {status: 200, json: {}}]
expect: {status: succeeded}
""")
    assert failures == ["replies: reply 2 for block 'fetch' was never used"]


def test_expected_http_requests_show_what_was_sent_and_hide_the_secrets(tmp_path: Path) -> None:
    failures = scenario(tmp_path, """
secrets: {SHOP_API_TOKEN: scenario-token-1234}
replies:
  fetch: [{status: 200, json: {status: shipped}}]
  answer: [{text: "Shipped."}]
expect:
  http_requests: [{block: fetch, method: post, query: {expand: everything}}]
""")
    assert len(failures) == 1
    assert failures[0].startswith('http_requests: expected [{"block":"fetch","method":"POST","query":{"expand":"everything"}}]')
    assert '"method":"GET"' in failures[0] and '"url":"https://api.shop.example/v1/orders/42"' in failures[0]
    assert "scenario-token-1234" not in failures[0] and '"authorization":"Bearer [REDACTED]"' in failures[0]


def test_a_secret_a_scenario_does_not_give_reads_as_a_stand_in(tmp_path: Path) -> None:
    assert scenario(tmp_path, """
replies:
  fetch: [{status: 200, json: {status: shipped}}]
  answer: [{text: "Shipped."}]
expect:
  http_requests: [{headers: {authorization: "Bearer offline-secret-SHOP_API_TOKEN"}}]
""") == []


def test_a_reply_of_the_wrong_kind_is_named_before_anything_runs(tmp_path: Path) -> None:
    failures = scenario(tmp_path, """
replies:
  fetch: [{text: "not an HTTP answer"}]
  answer: [{status: 200, json: {}}]
""")
    assert failures == [
        "replies: block 'fetch' (HttpRequest): reply 1 must be an HTTP answer ({status: 200, json: ...}, or "
        "{error: timeout})",
        "replies: block 'answer' (ClaudeRequest): reply 1 must be a model's reply ({text: ...}, {tool_calls: [...]}, "
        "or {error: {status: 529}})",
    ]


def test_a_bad_http_reply_is_a_problem_at_its_line(tmp_path: Path) -> None:
    import pytest

    from engine import DiagramInvalid

    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"scenario: s\ndiagram: {DIAGRAM}\nreplies:\n  fetch:\n    - {{status: 200, json: {{}}, text: x}}\n")
    with pytest.raises(DiagramInvalid) as caught:
        load_scenarios(path)
    problem = caught.value.problems[0]
    assert problem.line == 5 and "json and text are both given" in problem.message


def test_a_recorded_run_replays_its_http_answers_offline(runner, tmp_path: Path) -> None:
    import httpx
    import yaml

    from engine.providers import Simulator
    from engine.testing.recorded import record_scenario

    def shop(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"id": 42, "status": "shipped", "token_seen": request.headers["authorization"]})

    recorded: list[dict[str, object]] = []
    services = Services(environ={"SHOP_API_TOKEN": "recorded-token-55aa", "ANTHROPIC_API_KEY": "sk-ant-test-0123456789"},
                        transports={"http": httpx.MockTransport(shop), "anthropic": Simulator().transport("anthropic")},
                        reply_observers=[lambda block, reply: recorded.append({"block": block, **reply})])
    inputs = {"order_id": 42, "question": "Where is it?"}
    result = runner.run(DIAGRAM, inputs, services=services)
    assert result.status == "succeeded", result.errors
    path = tmp_path / "recorded.scenario.yaml"
    record_scenario(path, DIAGRAM, inputs, result, recorded)
    written = yaml.safe_load(path.read_text())["scenarios"][0]
    assert written["replies"]["fetch"] == [{"status": 200, "json": {"id": 42, "status": "shipped",
                                                                    "token_seen": "Bearer [REDACTED]"}}]
    assert run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs").failures == []
