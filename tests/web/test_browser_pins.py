"""Pinned outputs end to end in headless Chromium (issue 43, add 4): a request block's step in a run's view pins its
output ("Pin this output"), the pin is edited by hand, and a "Run from here" of that run takes the pinned text instead
of asking the vendor (offline: the simulator); the node wears the pin badge and the pins scenario file sits beside the
diagram. Screenshots in both themes go to tests/artifacts/ (git-ignored), and to /work/notes when it exists."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.web.test_browser import DIAGRAMS, node, open_diagram, select_block, shot
from tests.web.test_browser_accessibility import stack, use_theme

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

NOTES = Path("/work/notes")
DIAGRAM = "classify_one.yaml"
PINS = "classify_one.pins.scenario.yaml"


def test_pin_a_steps_output_and_run_from_here_with_it(page: Any, studio: Any, tmp_path: Path, artifacts: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    root = tmp_path / "diagrams"
    root.mkdir()
    shutil.copy(DIAGRAMS / DIAGRAM, root / DIAGRAM)
    served = studio(root)

    open_diagram(page, served, DIAGRAM, blocks=2)
    page.get_by_role("button", name="Open the run panel").click()
    panel = page.locator(".run-panel")
    panel.get_by_role("button", name="Run", exact=True).click()
    page.locator(".run-status strong").filter(has_text=re.compile("^succeeded$")).wait_for(timeout=30_000)
    made_up = page.get_by_role("table", name="Final variables").inner_text()

    # the request block's step: Pin this output
    select_block(page, "classify")
    page.get_by_role("region", name="Last run of this block").get_by_test_id("pin-classify").click()
    node(page, "classify").get_by_test_id("pin-badge-classify").wait_for()
    pinned = page.get_by_test_id("pinned-classify")
    pinned.wait_for()
    assert pinned.inner_text().strip() in made_up  # the step's own output
    assert (root / PINS).is_file()

    # typed over by hand: a label the simulator would not make up
    pin_section = page.get_by_role("region", name="Pinned output")
    pin_section.get_by_role("button", name="Edit pin").click()
    pin_section.get_by_role("textbox", name="Pinned output of classify").fill("where_is_my_order")
    pin_section.get_by_role("button", name="Pin it").click()
    page.get_by_test_id("pinned-classify").filter(has_text="where_is_my_order").wait_for()
    assert "where_is_my_order" in (root / PINS).read_text(encoding="utf-8")

    # Run from here (the run shown): the pinned text, not the vendor's
    node(page, "classify").click(button="right")
    page.get_by_role("menuitem", name="Run from here").click()
    result = page.get_by_role("table", name="Final variables")
    result.get_by_text("where_is_my_order").wait_for(timeout=30_000)
    page.locator(".run-status strong").filter(has_text=re.compile("^succeeded$")).wait_for(timeout=30_000)
    assert node(page, "classify").get_by_test_id("pin-badge-classify").is_visible()

    for theme in ("light", "dark"):
        use_theme(page, theme)
        page.get_by_role("tab", name="Run").click()
        result.get_by_text("where_is_my_order").wait_for()
        shot(page, artifacts, f"pins-run-{theme}")
        select_block(page, "classify")
        page.get_by_test_id("pinned-classify").scroll_into_view_if_needed()
        shot(page, artifacts, f"pins-block-{theme}")
        stack(page, [artifacts / f"studio-pins-block-{theme}.png", artifacts / f"studio-pins-run-{theme}.png"],
              artifacts / f"studio-pins-{theme}.png")
        if NOTES.is_dir():
            shutil.copy(artifacts / f"studio-pins-{theme}.png", NOTES / f"studio43-pins-{theme}.png")
