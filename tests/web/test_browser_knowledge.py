"""The studio's Knowledge tab, end to end in headless Chromium (issue 41, 3): the policy bot's knowledge base listed,
a retrieval test ("refund") showing a passage of diagrams/kb with its score; the Retrieve block's `knowledge` field a
select of the diagram's bases. A screenshot goes to tests/artifacts/ (git-ignored), and to /work/notes when it exists."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.web.test_browser import DIAGRAMS, open_diagram, shot

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

NOTES = Path("/work/notes")


def test_the_knowledge_tab_searches_the_policy_bots_documents(page: Any, studio: Any, artifacts: Path,
                                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    root = tmp_path / "diagrams"
    root.mkdir()
    shutil.copytree(DIAGRAMS / "kb", root / "kb", ignore=shutil.ignore_patterns(".diagrama-index*"))
    shutil.copy(DIAGRAMS / "policy_bot.yaml", root / "policy_bot.yaml")
    served = studio(root)

    open_diagram(page, served, "policy_bot.yaml")
    page.get_by_role("tab", name="Knowledge").click()
    bases = page.get_by_role("table", name="Knowledge bases")
    bases.wait_for()
    assert bases.locator("tbody tr td").all_inner_texts()[:3] == ["policies", "kb", "5"]

    page.get_by_role("searchbox", name="Query").fill("refund")
    page.get_by_role("button", name="Search").click()
    found = page.get_by_role("list", name="Passages found")
    found.wait_for()
    first = found.get_by_test_id("passage").first
    assert first.locator(".passage__where").inner_text().startswith("refunds.md:")
    score = float(first.get_by_test_id("passage-score").inner_text())
    assert 0 < score <= 1
    assert "refund" in first.locator(".passage__text").inner_text().lower()
    shot(page, artifacts, "knowledge")
    if NOTES.is_dir():
        shutil.copy(artifacts / "studio-knowledge.png", NOTES / "studio-knowledge.png")

    # Retrieve's `knowledge` field picks one of the diagram's bases.
    page.get_by_role("tab", name="Properties").click()
    page.locator(".react-flow__node[data-id='search']").click()
    field = page.get_by_test_id("field-knowledge")
    assert field.evaluate("element => element.tagName") == "SELECT"
    assert field.input_value() == "policies"
