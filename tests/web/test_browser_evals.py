"""The studio's Evaluations tab, end to end in headless Chromium (issue 39, 4): two eval runs recorded in the run store
(as `diagrama eval` records them), listed with the score history; picked, they show side by side, the cases that
got worse first. A screenshot goes to tests/artifacts/ (git-ignored)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from engine.runs.store import RunStore
from tests.web.test_browser import DIAGRAMS, ORDER_AGENT, open_diagram, shot

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)


def report(scores: dict[str, float]) -> dict[str, Any]:
    """A report as `diagrama eval --output json` prints it."""
    passed = sum(1 for value in scores.values() if value >= 0.5)
    return {
        "summary": {"score": sum(scores.values()) / len(scores), "cases": len(scores), "passed": passed,
                    "failed": len(scores) - passed, "tokens": 200, "latency_ms": {"p50": 4.0, "p95": 9.0},
                    "scorers": {"mentions_status": sum(scores.values()) / len(scores)}},
        "cases": [{"id": case, "score": value, "scores": {"mentions_status": value}, "status": "succeeded",
                   "run_id": f"run-{case}"} for case, value in scores.items()],
    }


def test_two_eval_runs_side_by_side_show_each_cases_delta_worse_first(page: Any, studio: Any, artifacts: Path,
                                                                       tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    root = tmp_path / "diagrams"
    root.mkdir()
    shutil.copytree(DIAGRAMS / "registry", root / "registry")
    shutil.copytree(DIAGRAMS / "shop", root / "shop")
    shutil.copy(DIAGRAMS / ORDER_AGENT, root / ORDER_AGENT)
    served = studio(root)
    store = RunStore(f"sqlite:///{served.runs / 'diagrama.db'}")
    try:
        store.record_eval(eval_id="ev-before", eval_file=root / "order.eval.yaml", diagram=root / ORDER_AGENT,
                          content_hash="a" * 64, revision="HEAD~1", created=1_700_000_000.0,
                          report=report({"where_is_57": 1.0, "refund_12": 0.5, "late_88": 1.0, "lost_9": 0.0}))
        store.record_eval(eval_id="ev-after", eval_file=root / "order.eval.yaml", diagram=root / ORDER_AGENT,
                          content_hash="b" * 64, revision=None, created=1_700_086_400.0,
                          report=report({"where_is_57": 1.0, "refund_12": 1.0, "late_88": 0.25, "lost_9": 0.0}))
    finally:
        store.close()

    open_diagram(page, served, ORDER_AGENT)
    page.get_by_role("tab", name="Evaluations").click()
    runs = page.get_by_role("table", name="Eval runs")
    runs.wait_for()
    assert [row.get_attribute("data-eval") for row in runs.locator("tbody tr").all()] == ["ev-after", "ev-before"]
    assert page.get_by_role("img", name="Score over time, from 0.625 to 0.563").is_visible()

    # Picked newer first: the older is still the base.
    runs.get_by_role("checkbox", name="ev-after").check()
    runs.get_by_role("checkbox", name="ev-before").check()
    deltas = page.get_by_role("table", name="Case deltas")
    deltas.wait_for()
    rows = [[cell.inner_text() for cell in row.locator("td").all()] for row in deltas.locator("tbody tr").all()]
    assert rows == [["late_88", "1.000", "0.250", "−0.750"], ["lost_9", "0.000", "0.000", "±0.000"],
                    ["where_is_57", "1.000", "1.000", "±0.000"], ["refund_12", "0.500", "1.000", "+0.500"]]
    scorers = page.get_by_role("table", name="Scorer deltas").locator("tbody tr td").all_inner_texts()
    assert scorers == ["mentions_status", "0.625", "0.563", "−0.063"]
    overall = page.get_by_test_id("evals-overall").inner_text()
    assert "0.625 → 0.563" in overall and "−0.063" in overall and "1 worse, 1 better, 2 same" in overall
    shot(page, artifacts, "evals-compare")
