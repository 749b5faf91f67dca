"""Finding your way in the studio (issue 43), end to end in headless Chromium: a block found by search in a 300-block
diagram (benchmarks/studio_open's generator); a drill into a Subdiagram and back by its breadcrumb; chat sessions
listed after a reload, the last one offered; the gallery creating a diagram; the runs list filtered by status.
Screenshots of the new views in both themes go to tests/artifacts/ (git-ignored), and to /work/notes when it exists."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks.studio_open import generated_diagram
from tests.web.test_browser import DIAGRAMS, node, open_diagram, shot

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

NOTES = Path("/work/notes")
REPLIES = "[...document.querySelectorAll('[data-testid=chat-reply]')]"


def copy_examples(root: Path, *names: str) -> None:
    root.mkdir(exist_ok=True)
    for name in names:
        source = DIAGRAMS / name
        if source.is_dir():
            shutil.copytree(source, root / name)
        else:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, root / name)


def test_find_a_block_in_a_300_block_diagram(page: Any, studio: Any, tmp_path: Path) -> None:
    root = tmp_path / "big"
    root.mkdir()
    (root / "big.yaml").write_text(generated_diagram(300), encoding="utf-8")
    open_diagram(page, studio(root), "big.yaml", blocks=300)
    page.locator(".react-flow__pane").click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+k")
    box = page.get_by_role("searchbox", name="Find a block")
    box.wait_for()
    box.fill("b287")
    page.get_by_role("option").first.wait_for()
    assert page.get_by_role("option").first.locator("strong").inner_text() == "b287"  # the id first; b286 links to it
    box.press("Enter")
    page.wait_for_selector(".react-flow__node[data-id='b287'].selected")
    target = node(page, "b287").bounding_box()
    canvas = page.get_by_test_id("canvas").bounding_box()
    assert target is not None and canvas is not None
    middle = target["x"] + target["width"] / 2
    assert canvas["x"] < middle < canvas["x"] + canvas["width"]  # centred: in view

    # several matches: the arrows step through them
    box.fill("b28")
    page.wait_for_function("document.querySelectorAll('[role=option]').length > 1")
    box.press("ArrowDown")
    page.wait_for_selector("[role=option][aria-selected=true]:has-text('b280')")
    box.press("Escape")
    page.get_by_role("search", name="Find a block").wait_for(state="detached")


def test_drill_into_a_subdiagram_and_back_by_its_breadcrumb(page: Any, studio: Any, tmp_path: Path,
                                                            artifacts: Path) -> None:
    root = tmp_path / "triage"
    copy_examples(root, "triage_inbox.yaml", "classify_one.yaml", "data")
    served = studio(root)
    open_diagram(page, served, "triage_inbox.yaml")
    # a run first: drilling in shows the child's steps on the child's canvas
    page.get_by_role("tab", name="Run").click()
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_selector(".run-status strong:text-is('succeeded')", timeout=60_000)

    node(page, "classify").dblclick()
    crumbs = page.get_by_role("navigation", name="Breadcrumbs")
    crumbs.wait_for()
    page.wait_for_function("location.hash === '#classify_one.yaml'")
    assert "triage_inbox.yaml" in crumbs.inner_text() and "classify_one.yaml" in crumbs.inner_text()
    # the run's child steps (classify/start, classify/classify) mark the child's own blocks, three passes each
    page.wait_for_selector(".react-flow__node[data-id='classify'] .run-badge--ok:has-text('×3')")
    page.get_by_role("tab", name="Run").click()
    page.get_by_test_id("run-result").wait_for()
    page.locator(".react-flow__pane").click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+k")
    page.get_by_role("searchbox", name="Find a block").fill("classify")
    page.get_by_role("option").first.wait_for()
    for theme in ("light", "dark"):
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        page.wait_for_function(f"document.documentElement.dataset.theme === '{theme}'")
        shot(page, artifacts, f"nav-{theme}")
        if NOTES.is_dir():
            shutil.copy(artifacts / f"studio-nav-{theme}.png", NOTES / f"studio43-nav-{theme}.png")
    page.keyboard.press("Escape")

    crumbs.get_by_role("button", name="triage_inbox.yaml").click()
    page.wait_for_selector(".react-flow__node[data-id='each_message']")
    crumbs.wait_for(state="detached")
    page.wait_for_selector(".react-flow__node[data-id='classify'].selected")

    # the context menu's item does the same
    node(page, "classify").click(button="right")
    page.get_by_role("menuitem", name="Open subdiagram").click()
    crumbs.wait_for()


def test_chat_sessions_are_listed_after_a_reload(page: Any, studio: Any, tmp_path: Path) -> None:
    root = tmp_path / "chat"
    copy_examples(root, "chat_memory.yaml")
    served = studio(root)
    open_diagram(page, served, "chat_memory.yaml")
    page.get_by_role("tab", name="Chat").click()
    for answered, message in enumerate(("Hi, I'm Alice", "What is my name?"), start=1):
        page.get_by_test_id("chat-message").fill(message)
        page.get_by_test_id("chat-message").press("Enter")
        page.wait_for_function(f"{REPLIES}.filter((e) => e.textContent.includes('You said')).length >= {answered}",
                               timeout=60_000)
    page.reload()
    page.wait_for_selector(".toolbar__name")
    page.get_by_role("tab", name="Chat").click()
    sessions = page.get_by_role("list", name="Sessions")
    sessions.wait_for()
    assert "2 turns" in sessions.inner_text()
    page.get_by_test_id("chat-offer").get_by_role("button", name="Continue it").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=chat-reply]').length === 2")
    assert "Alice" in page.get_by_role("list", name="Conversation").inner_text()


def test_the_gallery_creates_a_diagram(page: Any, studio: Any, tmp_path: Path) -> None:
    root = tmp_path / "empty"
    copy_examples(root, "greeting_counter.yaml")
    served = studio(root)
    open_diagram(page, served, "greeting_counter.yaml")
    page.get_by_role("button", name="From example").click()
    dialog = page.get_by_role("dialog", name="New from example")
    dialog.get_by_role("button", name="triage-inbox").click()
    assert "classify_one.yaml" in dialog.inner_text()
    dialog.get_by_label("New file").fill("my_triage.yaml")
    dialog.get_by_role("button", name="Create").click()
    page.wait_for_function("location.hash === '#my_triage.yaml'")
    page.wait_for_selector(".react-flow__node[data-id='classify']")
    assert (served.root / "my_triage.yaml").is_file() and (served.root / "classify_one.yaml").is_file()


def test_the_runs_list_filters_by_status(page: Any, studio: Any, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    copy_examples(root, "greeting_counter.yaml")
    served = studio(root)
    open_diagram(page, served, "greeting_counter.yaml")
    page.get_by_role("tab", name="Run").click()
    for _ in range(2):
        page.get_by_role("button", name="Run", exact=True).click()
        page.wait_for_selector(".run-status strong:text-is('succeeded')")
        page.get_by_role("button", name="clear").click()
    runs = page.get_by_role("list", name="Past runs")
    page.wait_for_function("document.querySelectorAll('[aria-label=\"Past runs\"] li').length === 2")
    page.get_by_label("Status").select_option("failed")
    page.get_by_text("No run matches.").wait_for()
    page.get_by_label("Status").select_option("succeeded")
    runs.wait_for()
    page.wait_for_function("document.querySelectorAll('[aria-label=\"Past runs\"] li').length === 2")
    # two runs side by side
    for box in page.get_by_role("checkbox", name="Compare").all()[:2]:
        box.check()
    page.get_by_test_id("run-compare").wait_for()
    assert "the same" in page.get_by_test_id("run-compare").inner_text()
