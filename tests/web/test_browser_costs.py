"""What a run cost, in the studio's run view, end to end in headless Chromium (issue 40): the order agent run offline
(claude-sonnet-5-5, which the table prices) shows its request block's cost on its node (both of its calls summed,
with the count), the run's total in the run panel (the trace's own figure, to 4 significant digits) and each step's
cost and tokens; with a model the price table does not have (gemini-3.5-flash), "cost unknown", never $0.
Screenshots go to tests/artifacts/ (git-ignored) and to /work/notes/studio-cost.png where that folder can be made."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import Served
from tests.web.test_browser import DIAGRAMS, ORDER_AGENT, node, open_diagram, select_block, shot, still_view

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

UNPRICED = "order_agent_unpriced.yaml"
NOTES = Path("/work/notes")


@pytest.fixture(scope="module")
def costs(studio: Any, tmp_path_factory: pytest.TempPathFactory) -> Served:
    """The examples, and the order agent again on a model prices.yaml has no price for: gemini-3.5-flash (no price
    from a source that could be checked), as a GeminiRequest."""
    root = tmp_path_factory.mktemp("costs") / "diagrams"
    shutil.copytree(DIAGRAMS, root, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
    text = (root / ORDER_AGENT).read_text(encoding="utf-8")
    unpriced = (text.replace("type: ClaudeRequest", "type: GeminiRequest").replace("label: Ask Claude", "label: Ask Gemini")
                .replace("model: claude-sonnet-5-5", "model: gemini-3.5-flash"))
    assert unpriced != text
    (root / UNPRICED).write_text(unpriced, encoding="utf-8")
    return studio(root)


def run_offline(page: Any, served: Served, path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Opens a diagram, runs it from the run panel and waits until it succeeded; its trace's run_finished event and
    its provider_called events."""
    open_diagram(page, served, path, blocks=5)
    page.get_by_role("button", name="Open the run panel").click()
    panel = page.locator(".run-panel")
    panel.get_by_test_id("run-input-question").wait_for()
    panel.get_by_role("button", name="Run", exact=True).click()
    page.locator(".run-status strong").filter(has_text=re.compile("^succeeded$")).wait_for(timeout=30_000)
    run_id = re.search(r"run (\S+)", panel.locator(".run-status .muted").first.inner_text())
    assert run_id, panel.locator(".run-status").inner_text()
    events = [json.loads(line) for line in (served.runs / run_id.group(1) / "trace.jsonl").read_text().splitlines()]
    finished: dict[str, Any] = next(e for e in reversed(events) if e["event"] == "run_finished")
    return finished, [e for e in events if e["event"] == "provider_called"]


def dollars(text: str) -> float:
    found = re.fullmatch(r"\$(\d+\.\d+)", text)
    assert found, text
    return float(found.group(1))


def test_a_run_shows_each_blocks_cost_and_the_total(page: Any, costs: Served, artifacts: Path) -> None:
    finished, called = run_offline(page, costs, ORDER_AGENT)
    usd = finished["cost"]["usd"]
    assert finished["cost"]["requests"] == 2 and usd > 0, finished["cost"]
    # claude-sonnet-5-5 at the shipped table's 2 USD in and 10 out per million tokens
    assert usd == pytest.approx(sum(e["usage"]["input_tokens"] * 2 + e["usage"]["output_tokens"] * 10
                                    for e in called) / 1e6), called

    # the total, in the run panel: the trace's figure to 4 significant digits, with its requests and tokens
    total = page.get_by_test_id("run-cost-total").inner_text()
    assert dollars(total) == pytest.approx(usd, rel=1e-3), (total, usd)
    summary = page.get_by_test_id("run-cost").inner_text()
    assert re.search(r"2 requests · tokens in \d+ · out \d+", summary), summary

    # the request block's node: both of its calls (the loop through the tools) summed, with the count
    badge = node(page, "ask").get_by_test_id("cost-ask")
    assert badge.inner_text() == f"{total} · 2 calls"
    assert "2 requests" in (badge.get_attribute("title") or "")
    for block in ("start", "dispatch", "done"):  # no request: no badge (never "$0")
        assert node(page, block).locator(".cost-badge").count() == 0, block

    # the steps table's Cost column: each request step's own cost, nothing for the others
    rows = page.locator(".run-panel .steps-table tbody tr")
    cells = [rows.nth(i).locator("td").last.inner_text() for i in range(rows.count())]
    assert [c == "" for c in cells] == [True, False, True, False, True], cells
    assert sum(dollars(c) for c in cells if c) == pytest.approx(usd, rel=1e-3), cells

    # the inspector: the block's sum over its two steps, and each step's tokens and cost
    select_block(page, "ask")
    section = page.get_by_role("region", name="Last run of this block")
    assert section.get_by_test_id("block-cost").inner_text().startswith(f"Cost of its 2 requests: {total} · tokens in ")
    facts = section.locator("details.step").last.locator(".step__facts").inner_text()
    assert re.search(r"Tokens\s+in \d+ · out \d+", facts) and re.search(r"Cost\s+\$0\.\d+", facts), facts
    page.get_by_role("button", name="Open the run panel").click()
    for _ in range(2):  # near enough to read the badges
        page.locator(".react-flow__controls-zoomin").click()
    still_view(page)
    shot(page, artifacts, "run-costs")
    try:
        NOTES.mkdir(parents=True, exist_ok=True)
    except OSError:  # not this machine's layout: the artifact above is the screenshot
        return
    page.screenshot(path=str(NOTES / "studio-cost.png"))


def test_a_model_with_no_price_shows_cost_unknown_never_zero(page: Any, costs: Served) -> None:
    finished, _ = run_offline(page, costs, UNPRICED)
    assert finished["cost"] == {"usd": None, "known_usd": 0.0, "requests": 2, "unknown_steps": 2}
    assert page.get_by_test_id("run-cost-total").inner_text() == "cost unknown"
    assert node(page, "ask").get_by_test_id("cost-ask").inner_text() == "cost unknown · 2 calls"
    assert "$0" not in page.locator(".run-panel").inner_text()
