"""The canvas habits of issue 43, end to end in headless Chromium: on a one-block diagram, five blocks added with the
keyboard (the palette's search and items, and a handle's "+" with the quick-add search) land where no block is, the
handle's links (next, a Loop's body) are in the saved YAML; a sticky note (Markdown) is added, edited and saved in
`notes:`; a selection aligned with Alt+Shift+T. Screenshots in both themes go to tests/artifacts/ (git-ignored), and
to /work/notes when it exists."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.web.test_browser import BLOCKS_SELECTOR, node, open_diagram, save, shot, still_view

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

NOTES = Path("/work/notes")
ONE_BLOCK = "diagram: habits\nblocks:\n  - id: start\n    type: Start\n    position: [0, 0]\n"

# every pair of drawn blocks whose boxes overlap (by their ids)
OVERLAPS = """(selector) => {
    const boxes = [...document.querySelectorAll(selector)].map((n) => [n.dataset.id, n.getBoundingClientRect()]);
    const hits = [];
    for (const [i, [a, p]] of boxes.entries()) for (const [b, q] of boxes.slice(i + 1)) {
        if (p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom) hits.push([a, b]);
    }
    return hits;
}"""


def blocks_drawn(page: Any, count: int) -> None:
    page.wait_for_function(f"document.querySelectorAll('{BLOCKS_SELECTOR}').length === {count}")


def selected_id(page: Any) -> str:
    """The id of the selected block (the new one: an added block is selected)."""
    page.wait_for_function("document.querySelectorAll('.react-flow__node-block.selected').length === 1")
    return str(page.locator(".react-flow__node-block.selected").get_attribute("data-id"))


def add_from_handle(page: Any, source: str, handle: str, block_type: str, count: int) -> str:
    """Selects `source`, tabs to the "+" of its `handle` and chooses `block_type` in the quick-add search by keyboard."""
    node(page, source).locator(".block-node__title").click()
    plus = page.get_by_role("button", name=f"Add a block after {source} ({handle})")
    plus.focus()
    page.keyboard.press("Enter")
    search = page.get_by_role("dialog", name=f"Add a block after {source}").get_by_role("searchbox")
    search.wait_for()
    page.keyboard.type(block_type)
    page.keyboard.press("Enter")
    blocks_drawn(page, count)
    return selected_id(page)


def saved(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    return data


def test_blocks_added_by_keyboard_never_overlap_and_notes_and_align_are_kept(page: Any, studio: Any, artifacts: Path,
                                                                            tmp_path: Path) -> None:
    root = tmp_path / "diagrams"
    root.mkdir()
    (root / "habits.yaml").write_text(ONE_BLOCK)
    served = studio(root)
    open_diagram(page, served, "habits.yaml", blocks=1)

    # three from the palette: Enter in its search (at the view's centre, where Start is), then Enter on an item (after
    # the block just added, which is selected)
    search = page.get_by_role("searchbox", name="Search blocks")
    search.fill("Set")
    search.press("Enter")
    blocks_drawn(page, 2)
    first = selected_id(page)
    page.get_by_test_id("palette-Set").focus()
    page.keyboard.press("Enter")
    blocks_drawn(page, 3)
    page.get_by_test_id("palette-Set").focus()
    page.keyboard.press("Enter")
    blocks_drawn(page, 4)

    # two from handles: a Loop after Start (its next), a Set in the Loop's body
    loop = add_from_handle(page, "start", "next", "Loop", 5)
    body = add_from_handle(page, loop, "body", "Set", 6)
    still_view(page)
    assert page.evaluate(OVERLAPS, BLOCKS_SELECTOR) == []

    save(page)
    data = saved(root / "habits.yaml")
    by_id = {b["id"]: b for b in data["blocks"]}
    assert len(by_id) == 6 and first in by_id
    assert by_id["start"]["next"] == loop
    assert by_id[loop]["type"] == "Loop" and by_id[loop]["body"] == body

    # a sticky note: added, its Markdown edited in place, rendered, kept in `notes:`
    page.get_by_role("button", name="+ Note").click()
    note = page.get_by_test_id("note-0")
    note.dblclick()
    editor = page.get_by_role("textbox", name="Note text (Markdown)")
    editor.fill("# Intake\nThe **loop** tags each message.")
    editor.press("Control+Enter")
    note.locator("h1").filter(has_text="Intake").wait_for()
    assert note.locator("strong").inner_text() == "loop"
    save(page)
    notes = saved(root / "habits.yaml")["notes"]
    assert notes[0]["text"] == "# Intake\nThe **loop** tags each message." and notes[0]["color"] == "yellow"

    # align: two blocks at different heights, selected, Alt+Shift+T puts them on one top
    node(page, "start").locator(".block-node__title").click()
    node(page, body).locator(".block-node__title").click(modifiers=["Control"])
    page.get_by_role("toolbar", name="2 blocks selected").wait_for()
    page.keyboard.press("Alt+Shift+T")
    save(page)
    by_id = {b["id"]: b for b in saved(root / "habits.yaml")["blocks"]}
    assert by_id["start"]["position"][1] == by_id[body]["position"][1]
    still_view(page)
    assert page.evaluate(OVERLAPS, BLOCKS_SELECTOR) == []

    # the new views in both themes: the selection toolbar, the handles' "+", a note
    page.keyboard.press("f")
    still_view(page)
    for theme in ("light", "dark"):
        page.emulate_media(color_scheme=theme)
        page.wait_for_function("theme => document.documentElement.dataset.theme === theme", arg=theme)
        shot(page, artifacts, f"canvas-habits-{theme}")
        if NOTES.is_dir():
            shutil.copy(artifacts / f"studio-canvas-habits-{theme}.png", NOTES / f"studio43-canvas-{theme}.png")
