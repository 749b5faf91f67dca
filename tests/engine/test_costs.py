"""What a run cost (issue 40, 2): each request step's usage and cost in `provider_called`, the run's total in its
result and `run --output json`, a Loop's passes and a Subdiagram's children counted in their caller's total, and an
unknown price said as such, never summed as if it were the whole."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engine import read_events
from engine.cli import app
from engine.providers.prices import cost_of, reset_prices
from engine.runs.store import RunStore, default_store_url

ROOT = Path(__file__).resolve().parents[2]
cli = CliRunner()


@pytest.fixture(autouse=True)
def _fresh_table(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("DIAGRAMA_PRICES", raising=False)
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)  # the runs folder's own store
    reset_prices()
    yield
    reset_prices()


def _run(diagram: str | Path, tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    path = diagram if isinstance(diagram, Path) else ROOT / "diagrams" / diagram
    result = cli.invoke(app, ["run", str(path), "--offline", "--runs-dir", str(tmp_path), "--output", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    called = [event for event in read_events(Path(payload["trace"])) if event["event"] == "provider_called"]
    return payload, called, result.stderr


def _unpriced(tmp_path: Path) -> Path:
    """The order agent on gemini-3.5-flash (a GeminiRequest), which the shipped table leaves unpriced (no price from a
    source that could be checked), in a copy of the examples' folder (its tool registry and their handlers beside it)."""
    folder = tmp_path / "unpriced"
    shutil.copytree(ROOT / "diagrams", folder, ignore=shutil.ignore_patterns("__pycache__"))
    diagram = folder / "order_agent.yaml"
    text = diagram.read_text(encoding="utf-8")
    unpriced = (text.replace("type: ClaudeRequest", "type: GeminiRequest").replace("label: Ask Claude", "label: Ask Gemini")
                .replace("model: claude-sonnet-5-5", "model: gemini-3.5-flash"))
    assert "claude" not in unpriced.split("id: ask")[1].split("id: dispatch")[0]
    assert cost_of("gemini", "gemini-3.5-flash", {"input_tokens": 1}) is None
    diagram.write_text(unpriced, encoding="utf-8")
    return diagram


def test_a_model_with_no_price_makes_the_runs_cost_unknown(tmp_path: Path) -> None:
    payload, called, console = _run(_unpriced(tmp_path), tmp_path)
    assert {event["model"] for event in called} == {"gemini-3.5-flash"}
    assert [event["cost"] for event in called] == [None, None]
    assert payload["cost"] == {"usd": None, "known_usd": 0.0, "requests": 2, "unknown_steps": 2}
    assert payload["usage_by_block"]["ask"]["usd"] is None and payload["usage_by_block"]["ask"]["requests"] == 2
    assert payload["usage"] == {kind: sum(event["usage"][kind] for event in called)
                                for kind in ("input_tokens", "output_tokens")}
    assert console.count("cost unknown") == 2
    table = cli.invoke(app, ["trace", payload["run_id"], "--runs-dir", str(tmp_path)])
    assert table.exit_code == 0, table.output
    assert [line for line in table.stdout.splitlines() if "GeminiRequest" in line and "cost unknown" in line] \
        and "$" not in table.stdout


def test_a_priced_model_costs_its_usage_at_the_tables_prices(tmp_path: Path) -> None:
    # The order agent's claude-sonnet-5-5, at the shipped table's 2 USD in and 10 out per million tokens.
    payload, called, console = _run("order_agent.yaml", tmp_path)
    assert {event["model"] for event in called} == {"claude-sonnet-5-5"}
    assert all(set(event["usage"]) == {"input_tokens", "output_tokens"} for event in called)  # no cache kinds
    costs = [event["cost"]["usd"] for event in called]
    assert costs == [pytest.approx((e["usage"]["input_tokens"] * 2 + e["usage"]["output_tokens"] * 10) / 1e6)
                     for e in called]
    assert all(cost > 0 for cost in costs)
    assert payload["cost"] == {"usd": pytest.approx(sum(costs)), "requests": 2, "unknown_steps": 0}
    assert payload["usage_by_block"] == {"ask": {  # per request block: both of ask's requests
        "requests": 2, "usd": pytest.approx(sum(costs)),
        "usage": {kind: sum(e["usage"][kind] for e in called) for kind in ("input_tokens", "output_tokens")}}}
    assert f"${costs[0]:.6f}" in console
    table = cli.invoke(app, ["trace", payload["run_id"], "--runs-dir", str(tmp_path)])
    shown = [line for line in table.stdout.splitlines() if "ClaudeRequest" in line]
    assert [f"${cost:.6f}" in line for line, cost in zip(shown, costs, strict=True)] == [True, True]


LONG = """\
diagram: long
blocks:
  - id: start
    type: Start
    inputs: {words: 10}
    next: ask
  - id: ask
    type: ClaudeRequest
    with: {model: claude-haiku-5-5, request: "{{ 'word ' * words }}", max_tokens: 50}
"""


def test_claude_haiku_5_5_costs_its_short_or_long_prompt_band(tmp_path: Path) -> None:
    # daily_digest: claude-haiku-5-5 on a short prompt, at 0.10 USD in and 0.50 out per million tokens.
    payload, called, _ = _run("daily_digest.yaml", tmp_path)
    ((usage, cost),) = [(event["usage"], event["cost"]) for event in called]
    assert usage["input_tokens"] <= 100_000
    assert cost == {"usd": pytest.approx((usage["input_tokens"] * 0.10 + usage["output_tokens"] * 0.50) / 1e6)}
    assert payload["cost"] == {"usd": cost["usd"], "requests": 1, "unknown_steps": 0} and cost["usd"] > 0
    # a prompt over 100,000 tokens: every token at 0.50 in and 2.50 out
    (tmp_path / "long.yaml").write_text(LONG, encoding="utf-8")
    result = cli.invoke(app, ["run", str(tmp_path / "long.yaml"), "--offline", "--runs-dir", str(tmp_path),
                              "--output", "json", "--input", "words=90000"])
    assert result.exit_code == 0, result.output
    long = json.loads(result.stdout)
    assert long["usage"]["input_tokens"] > 100_000
    assert long["cost"] == {"usd": pytest.approx((long["usage"]["input_tokens"] * 0.50
                                                  + long["usage"]["output_tokens"] * 2.50) / 1e6),
                            "requests": 1, "unknown_steps": 0}
    # a budget's estimate takes the long band: about 0.056 USD, which 0.05 does not allow (0.011 at the short band)
    stopped = cli.invoke(app, ["run", str(tmp_path / "long.yaml"), "--offline", "--runs-dir", str(tmp_path),
                               "--input", "words=90000", "--budget", "usd=0.05"])
    assert stopped.exit_code != 0 and "budget_exceeded" in stopped.output, stopped.output
    assert "may cost $0.056" in stopped.output, stopped.output


def test_a_users_price_file_overrides_the_shipped_price(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("anthropic:\n  claude-sonnet-5-5*:\n    input: 3\n    output: 15\n    taken: 2026-12-01\n"
                      "    source: https://example.com/prices\n")
    monkeypatch.setenv("DIAGRAMA_PRICES", str(prices))
    reset_prices()
    payload, called, _ = _run("order_agent.yaml", tmp_path)
    costs = [event["cost"]["usd"] for event in called]
    assert costs == [pytest.approx((e["usage"]["input_tokens"] * 3 + e["usage"]["output_tokens"] * 15) / 1e6)
                     for e in called]
    assert payload["cost"] == {"usd": pytest.approx(sum(costs)), "requests": 2, "unknown_steps": 0}


def test_a_loops_passes_and_their_children_count_in_the_top_runs_cost(tmp_path: Path) -> None:
    # triage_inbox: a concurrent Loop whose passes each run classify_one (llama-3.3-70b-versatile) as a Subdiagram.
    payload, called, _ = _run("triage_inbox.yaml", tmp_path)
    rows = len((ROOT / "diagrams/data/customer_messages.csv").read_text().splitlines()) - 1
    assert len(called) == rows and {event["model"] for event in called} == {"llama-3.3-70b-versatile"}
    for event in called:
        known = cost_of("groq", "llama-3.3-70b-versatile", event["usage"])
        assert known is not None and event["cost"] == {"usd": known.usd}
    assert payload["cost"] == {"usd": pytest.approx(sum(event["cost"]["usd"] for event in called)), "requests": rows,
                               "unknown_steps": 0}
    assert payload["usage"]["input_tokens"] == sum(event["usage"]["input_tokens"] for event in called)


def test_the_run_store_keeps_each_runs_cost_and_diagrama_runs_shows_it(tmp_path: Path) -> None:
    # A store made before costs: its runs table lacks the cost columns, which opening it adds (existing rows NULL).
    import sqlalchemy

    old = sqlalchemy.create_engine(default_store_url(tmp_path))
    with old.begin() as connection:
        connection.execute(sqlalchemy.text(
            "CREATE TABLE runs (run_id VARCHAR(80) PRIMARY KEY, diagram TEXT NOT NULL, content_hash VARCHAR(64) NOT "
            "NULL, inputs JSON, status VARCHAR(16) NOT NULL, started FLOAT, finished FLOAT, duration_ms FLOAT, steps "
            "INTEGER, errors JSON, variables JSON, tokens INTEGER, batch_id VARCHAR(80), row INTEGER, trace TEXT)"))
        connection.execute(sqlalchemy.text(
            "INSERT INTO runs (run_id, diagram, content_hash, status, started, steps) "
            "VALUES ('20200101-000000-000000', '/x/old.yaml', 'h', 'succeeded', 1, 1)"))
    old.dispose()
    unknown, _, _ = _run(_unpriced(tmp_path), tmp_path)
    priced, _, _ = _run("triage_inbox.yaml", tmp_path)
    store = RunStore(default_store_url(tmp_path))
    rows = {row["run_id"]: row for row in store.recent(10)}
    store.close()
    assert rows[unknown["run_id"]]["cost_usd"] is None and rows[unknown["run_id"]]["cost"] == unknown["cost"]
    assert rows[priced["run_id"]]["cost_usd"] == priced["cost"]["usd"] > 0
    assert rows["20200101-000000-000000"]["cost_usd"] is None and rows["20200101-000000-000000"]["cost"] is None
    listed = cli.invoke(app, ["runs", "--runs-dir", str(tmp_path)])
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert "cost $" in lines[0]
    shown = {line.split()[0]: line.split()[7] for line in lines[1:]}
    assert shown == {unknown["run_id"]: "unknown", priced["run_id"]: f"{priced['cost']['usd']:.6f}",
                     "20200101-000000-000000": "-"}


def test_a_wrong_price_file_stops_a_command_before_any_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("anthropic:\n  claude-sonnet-5-5:\n    input: 3\n    output: free\n")
    monkeypatch.setenv("DIAGRAMA_PRICES", str(prices))
    reset_prices()
    result = cli.invoke(app, ["run", str(ROOT / "diagrams/order_agent.yaml"), "--offline", "--runs-dir",
                              str(tmp_path / "runs")])
    assert result.exit_code == 2
    assert f"{prices}:4: field 'anthropic.claude-sonnet-5-5.output': input should be a valid number" in result.stderr
    assert f"{prices}:2: field 'anthropic.claude-sonnet-5-5.taken': field required" in result.stderr
    assert not (tmp_path / "runs").exists()  # nothing ran
