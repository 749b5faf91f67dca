"""Issue 43's done-when as one session in headless Chromium, on one studio: a robot built with add-from-handle and
the keyboard only, no block ever over another; a drill into a Subdiagram and back by its breadcrumb; an output
pinned and run from; a block found by search in a 300-block diagram. Each part has its own, finer test beside this
one (test_browser_canvas_habits, test_browser_navigation, test_browser_pins); this one walks them in a row, as a
person would in one afternoon."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.studio_open import generated_diagram
from tests.web.test_browser import BLOCKS_SELECTOR, DIAGRAMS, node, open_diagram, save, select_block, still_view
from tests.web.test_browser_canvas_habits import OVERLAPS, add_from_handle

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

ONE_BLOCK = "diagram: built\nblocks:\n  - id: start\n    type: Start\n    position: [0, 0]\n"


def no_overlap(page: Any) -> None:
    still_view(page)
    assert page.evaluate(OVERLAPS, BLOCKS_SELECTOR) == []


def test_build_drill_pin_and_find_in_one_session(page: Any, studio: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    root = tmp_path / "robots"
    root.mkdir()
    (root / "built.yaml").write_text(ONE_BLOCK)
    for name in ("triage_inbox.yaml", "classify_one.yaml"):
        shutil.copy(DIAGRAMS / name, root / name)
    shutil.copytree(DIAGRAMS / "data", root / "data")
    (root / "big.yaml").write_text(generated_diagram(300), encoding="utf-8")
    served = studio(root)

    # 1. A robot from one Start block: every block added from a handle's "+" and chosen by keyboard.
    open_diagram(page, served, "built.yaml", blocks=1)
    ask = add_from_handle(page, "start", "next", "ClaudeRequest", 2)
    no_overlap(page)
    loop = add_from_handle(page, ask, "next", "Loop", 3)
    no_overlap(page)
    body = add_from_handle(page, loop, "body", "Set", 4)
    no_overlap(page)
    after = add_from_handle(page, loop, "next", "Set", 5)
    no_overlap(page)
    save(page)
    blocks = {block["id"]: block for block in yaml.safe_load((root / "built.yaml").read_text())["blocks"]}
    assert blocks["start"]["next"] == ask and blocks[ask]["type"] == "ClaudeRequest"
    assert blocks[ask]["next"] == loop and blocks[loop]["body"] == body and blocks[loop]["next"] == after

    # 2. Into a Subdiagram (double-click) and back by its breadcrumb.
    open_diagram(page, served, "triage_inbox.yaml")
    node(page, "classify").dblclick()
    crumbs = page.get_by_role("navigation", name="Breadcrumbs")
    crumbs.wait_for()
    page.wait_for_function("location.hash === '#classify_one.yaml'")
    crumbs.get_by_role("button", name="triage_inbox.yaml").click()
    page.wait_for_selector(".react-flow__node[data-id='each_message']")
    page.wait_for_selector(".react-flow__node[data-id='classify'].selected")

    # 3. A request block's output pinned from a run, then a run from here that takes it instead of the vendor's.
    open_diagram(page, served, "classify_one.yaml", blocks=2)
    page.get_by_role("button", name="Open the run panel").click()
    page.locator(".run-panel").get_by_role("button", name="Run", exact=True).click()
    page.locator(".run-status strong").filter(has_text=re.compile("^succeeded$")).wait_for(timeout=30_000)
    select_block(page, "classify")
    page.get_by_role("region", name="Last run of this block").get_by_test_id("pin-classify").click()
    pin = page.get_by_role("region", name="Pinned output")
    pin.get_by_role("button", name="Edit pin").click()
    pin.get_by_role("textbox", name="Pinned output of classify").fill("cancel_order")
    pin.get_by_role("button", name="Pin it").click()
    page.get_by_test_id("pinned-classify").filter(has_text="cancel_order").wait_for()
    node(page, "classify").click(button="right")
    page.get_by_role("menuitem", name="Run from here").click()
    page.get_by_role("table", name="Final variables").get_by_text("cancel_order").wait_for(timeout=30_000)
    assert (root / "classify_one.pins.scenario.yaml").is_file()

    # 4. A block found by search in the 300-block diagram.
    open_diagram(page, served, "big.yaml", blocks=300)
    page.locator(".react-flow__pane").click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+k")
    box = page.get_by_role("searchbox", name="Find a block")
    box.fill("b213")
    page.get_by_role("option").first.wait_for()
    box.press("Enter")
    page.wait_for_selector(".react-flow__node[data-id='b213'].selected")
