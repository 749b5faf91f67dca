"""Nested runs as people read them: `diagrama trace` and `graph`, scenario addresses, the studio's picture, secrets."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from blocks.registry import registry as real_registry
from engine import Services, execute
from engine.cli import app
from engine.compile.loader import load_diagram
from engine.runtime.trace import REDACTED
from engine.testing.scenarios import load_scenarios, run_scenario

ROOT = Path(__file__).resolve().parents[2]
cli = CliRunner()

CHILD = """
    diagram: child
    blocks:
      - {id: start, type: Start, inputs: {q: ""}, next: ask}
      - id: ask
        type: GroqChatRequest
        with: {model: llama-3.3-70b-versatile, request: "{{ q }}"}
        set: {answer: "{{ result }}"}
"""
PARENT = """
    diagram: parent
    blocks:
      - {id: start, type: Start, variables: {qs: [one, two]}, next: each}
      - id: each
        type: Loop
        with: {for_each: "{{ qs }}", concurrency: 2, collect: "{{ got }}"}
        body: sub
        set: {answers: "{{ collected }}"}
      - id: sub
        type: Subdiagram
        with: {diagram: child.yaml, inputs: {q: "{{ item }}"}}
        set: {got: "{{ variables.answer }}"}
        next: each
"""


@pytest.fixture
def folder(write) -> Path:
    write(CHILD, "child.yaml")
    return write(PARENT, "parent.yaml").parent


def test_trace_indents_a_childs_steps_and_marks_each_pass(folder: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = cli.invoke(app, ["run", str(folder / "parent.yaml"), "--offline", "--runs-dir", str(runs)])
    assert done.exit_code == 0, done.output
    shown = cli.invoke(app, ["trace", "last", "--runs-dir", str(runs)]).stdout.splitlines()
    rows = [line[6:25].rstrip() for line in shown if line[:5].strip().isdigit()]
    assert rows[:2] == ["start", "each"]
    assert sorted(rows[2:]) == ["  ask", "  ask", "  start", "  start", "sub [0]", "sub [1]"]
    assert rows.index("sub [0]") < rows.index("  start")  # the child's steps come after the step that ran them
    only = cli.invoke(app, ["trace", "last", "--runs-dir", str(runs), "--block", "sub"]).stdout.splitlines()
    rows = [line[6:25].rstrip() for line in only if line[:5].strip().isdigit()]
    assert sorted(rows) == ["  ask", "  ask", "  start", "  start", "sub [0]", "sub [1]"]


def test_graph_draws_a_child_and_the_path_its_calls_took(folder: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    cli.invoke(app, ["run", str(folder / "parent.yaml"), "--offline", "--runs-dir", str(runs)])
    drawn = cli.invoke(app, ["graph", str(folder / "parent.yaml"), "--subdiagram", "sub", "--run", "last",
                             "--runs-dir", str(runs)])
    assert drawn.exit_code == 0, drawn.output
    assert "start --> ask" in drawn.stdout and "class ask,start taken" in drawn.stdout
    refused = cli.invoke(app, ["graph", str(folder / "parent.yaml"), "--subdiagram", "each"])
    assert refused.exit_code == 2 and "not a Subdiagram" in refused.output


def test_scenario_replies_address_a_childs_block_and_an_unknown_address_is_named(folder: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"""
diagram: {folder / 'parent.yaml'}
scenario: each pass's child is answered
replies:
  sub/ask: [{{match: one, text: "1"}}, {{match: two, text: "2"}}]
expect:
  variables: {{answers: ["1", "2"]}}
  requests: [{{block: sub/ask, contains_message: {{role: user, content: two}}}}]
""")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs")
    assert verdict.passed, verdict.report()
    path.write_text(path.read_text().replace("sub/ask:", "sub/asks:"))
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs")
    assert verdict.failures[0].startswith("replies name blocks the diagram does not have: sub/asks")


def test_a_child_at_detailed_in_a_release_run_has_its_headers_redacted(write, tmp_path: Path) -> None:
    write(CHILD.replace("type: Start,", "type: Start, message_level: Detailed,"), "child.yaml")
    parent = write("""
        diagram: parent
        blocks:
          - {id: start, type: Start, message_level: Release, next: sub}
          - {id: sub, type: Subdiagram, with: {diagram: child.yaml, inputs: {q: hi}}}
    """, "parent.yaml")
    services = Services(offline=True, environ={})  # the simulator's key: no secret the sink would scrub anyway
    result = asyncio.run(execute(load_diagram(parent, real_registry()), runs_dir=tmp_path / "runs", services=services))
    text = result.trace.read_text()
    assert "offline-simulator-key" not in text
    request = next(line for line in text.splitlines() if '"http_request"' in line and '"sub/ask"' in line)
    # The run's chain was made for Release; the child's Detailed events are scrubbed all the same.
    assert f'"authorization":"{REDACTED}"' in request


def test_the_studio_names_the_file_each_subdiagram_runs(tmp_path: Path) -> None:
    import httpx

    from engine.web.app import create_app

    folder = tmp_path / "diagrams"
    shutil.copytree(ROOT / "diagrams", folder, ignore=shutil.ignore_patterns("*.embeddings.json"))
    app = create_app(folder, tmp_path / "runs", real_registry(), token="t")

    async def get(url: str) -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as client:
            return await client.get(url)

    view = asyncio.run(get("/api/diagrams/triage_inbox.yaml")).json()
    assert view["compiled"]["subdiagrams"] == {"classify": {"written": "classify_one.yaml", "file": "classify_one.yaml"}}
    assert view["problems"] == []
    # A child with a problem: the block still names its file (to open and fix it), the problem names the child.
    (folder / "classify_one.yaml").write_text((folder / "classify_one.yaml").read_text().replace("type: Start", "type: Strat"))
    broken = asyncio.run(get("/api/diagrams/triage_inbox.yaml")).json()
    assert broken["compiled"]["subdiagrams"]["classify"]["file"] == "classify_one.yaml"
    assert any(p["file"] == "classify_one.yaml" and p["code"] == "unknown_block_type" for p in broken["problems"])
    assert any(p["block"] == "classify" and p["code"] == "subdiagram_invalid" for p in broken["problems"])
    palette = {entry["type"]: entry for entry in asyncio.run(get("/api/blocks")).json()}
    subdiagram = palette["Subdiagram"]
    assert set(subdiagram["inputs_schema"]["properties"]) == {"diagram", "inputs"}
    assert subdiagram["outputs"] == ["variables", "status", "run_id"]
    assert "concurrency" in palette["Loop"]["inputs_schema"]["properties"]


def test_a_tool_stub_reaches_a_childs_tool_dispatch(tmp_path: Path) -> None:
    folder = tmp_path / "diagrams"
    shutil.copytree(ROOT / "diagrams", folder, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
    (folder / "desk.yaml").write_text("""
diagram: desk
blocks:
  - {id: start, type: Start, next: agent}
  - id: agent
    type: Subdiagram
    with: {diagram: order_agent.yaml, inputs: {question: "Where is order 999?"}}
    set: {answer: "{{ variables.answer }}"}
""")
    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"""
diagram: {folder / 'desk.yaml'}
scenario: the child's tool is stubbed (its real handler knows no order 999)
replies:
  agent/ask:
    - tool_calls: [{{name: get_order_status, arguments: {{order_id: 999}}}}]
    - text: "Order 999 is lost."
tools: {{get_order_status: {{status: lost}}}}
expect:
  variables: {{answer: "Order 999 is lost."}}
  called_tools: [{{block: agent/ask, name: get_order_status, arguments: {{order_id: 999}}}}]
  requests: [{{block: agent/ask, contains_message: {{role: tool, name: get_order_status, content: '{{"status":"lost"}}'}}}}]
""")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs")
    assert verdict.passed, verdict.report()
    path.write_text(path.read_text().replace("tools: {get_order_status:", "tools: {get_order_statsu:"))
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs")
    assert verdict.result is None and verdict.failures[0].startswith(
        "tools: the stub 'get_order_statsu' names no tool of the diagram's registries; did you mean 'get_order_status'?")


def test_a_childs_function_is_scripted_and_its_calls_expected_by_address(tmp_path: Path) -> None:
    folder = tmp_path / "diagrams"
    shutil.copytree(ROOT / "diagrams", folder, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
    (folder / "desk.yaml").write_text("""
diagram: desk
blocks:
  - {id: start, type: Start, next: quote}
  - id: quote
    type: Subdiagram
    with: {diagram: order_quote.yaml, inputs: {order_id: 7}}
    set: {answer: "{{ variables.answer }}", total: "{{ variables.quote.total }}"}
""")
    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"""
diagram: {folder / 'desk.yaml'}
scenario: the child's Function answers as scripted
replies:
  quote/price: [{{result: {{order_id: 7, currency: EUR, lines: [], total: 0}}}}]
  quote/write: [{{text: "Order 7 is free."}}]
expect:
  variables: {{answer: "Order 7 is free.", total: 0}}
  function_calls: [{{block: quote/price, function: "shop.pricing:quote", arguments: {{order_id: 7}}}}]
""")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs")
    assert verdict.passed, verdict.report()
    # Vendor replies for the child's Function are refused as they are for a Function of the diagram itself.
    path.write_text(path.read_text().replace("quote/price: [{result: {order_id: 7, currency: EUR, lines: [], total: 0}}]",
                                             'quote/price: [{text: "7"}]'))
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs")
    assert verdict.result is None and verdict.failures == [
        "replies: block 'quote/price' (Function): reply 1 must be {result: ...} or {error: \"...\"}"]


def test_a_childs_http_request_is_scripted_and_expected_by_address_with_its_secret(tmp_path: Path) -> None:
    folder = tmp_path / "diagrams"
    shutil.copytree(ROOT / "diagrams", folder, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
    (folder / "desk.yaml").write_text("""
diagram: desk
blocks:
  - {id: start, type: Start, next: lookup}
  - id: lookup
    type: Subdiagram
    with: {diagram: order_lookup.yaml, inputs: {order_id: 42, question: "Where is my order 42?"}}
    set: {reply: "{{ variables.reply }}"}
""")
    path = tmp_path / "s.scenario.yaml"
    path.write_text(f"""
diagram: {folder / 'desk.yaml'}
scenario: the child's HttpRequest is answered as scripted, with the child's secret
secrets: {{SHOP_API_TOKEN: test-token-7f3a}}
replies:
  lookup/fetch: [{{status: 200, json: {{id: 42, status: shipped}}}}]
  lookup/answer: [{{text: "Order 42 has shipped."}}]
expect:
  variables: {{reply: "Order 42 has shipped."}}
  http_requests: [{{block: lookup/fetch, method: GET, headers: {{authorization: "Bearer test-token-7f3a"}}}}]
""")
    verdict = run_scenario(load_scenarios(path)[0], real_registry(), tmp_path / "runs")
    assert verdict.passed, verdict.report()
    assert verdict.result is not None and verdict.result.trace is not None
    assert b"test-token-7f3a" not in verdict.result.trace.read_bytes()  # the child's listed secret, redacted
