"""The studio's second round in headless Chromium, as its first users worked it (issue 29): a broken file opens in
its YAML and is repaired there; the YAML beside the canvas follows the canvas and drives it; drafts survive a
reload and two tabs merge; problems and a run's errors lead to their field; the run's result; the palette, the
context menu on blocks and links, dark mode and its toggle, the files tree, the address, the version history.
Screenshots go to tests/artifacts/ (git-ignored).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.web.conftest import Served
from tests.web.test_browser import (
    BLOCKS_SELECTOR,
    ORDER_AGENT,
    cli,
    create_diagram,
    deselect,
    node,
    open_diagram,
    save,
    select_block,
    settle,
    shot,
    still_view,
    valid,
)
from tests.web.test_browser_canvas_habits import OVERLAPS

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

PANE_TEXT = "() => window.__diagramaStudio.getState().sourceText"


def open_pane(page: Any) -> Any:
    """Opens the YAML beside the canvas (if it is not open) and waits for its editor."""
    toggle = page.get_by_role("button", name="YAML source")
    opening = toggle.get_attribute("aria-pressed") != "true"
    if opening:
        toggle.click()
    editor = page.get_by_test_id("yaml-editor")
    editor.wait_for()
    if opening and page.locator(".react-flow__viewport").count():
        # the canvas is fitted to its new width, animated: a click aimed at a block meanwhile lands on another
        still_view(page)
    return editor


def pane_text(page: Any) -> str:
    text: str = page.evaluate(PANE_TEXT)
    return text


def replace_text(page: Any, text: str) -> None:
    """Selects the whole YAML and types `text` over it (as an input event: no auto-indent, as a paste)."""
    page.get_by_test_id("yaml-editor").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)


def no_page_errors(page: Any) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


@pytest.fixture
def served(studio: Any, folder: Path) -> Served:
    """The studio over a copy of the examples."""
    return studio(folder)


# ---------------------------------------------------------------- item 1, 2: a broken file opens


BROKEN = {
    "aaa_unclosed.yaml": "diagram: broken\nblocks:\n  - id: start\n    type: Start\n    next: ask\n"
                         "  - id: ask\n    type: ClaudeRequest\n    with: {model: claude-sonnet-5-5, request: hi, max_tokens: [512\n",
    "empty.yaml": "",
    "tabbed.yaml": "diagram: tabbed\nblocks:\n\t- id: start\n",
    "five.yaml": "diagram: five\nblocks: 5\n",
    "ones.yaml": "diagram: ones\nblocks: [1]\n",
}


def test_a_broken_file_opens_in_its_yaml_and_is_repaired_there(page: Any, served: Served, artifacts: Path) -> None:
    for name, text in BROKEN.items():
        (served.root / name).write_text(text, encoding="utf-8")
    errors = no_page_errors(page)
    # the broken file sorts first: the root address opens it, and the page shows it instead of a blank
    page.goto(served.url + "/")
    editor = page.get_by_test_id("yaml-editor")
    editor.wait_for()
    page.wait_for_function("() => window.__diagramaStudio.getState().path === 'aaa_unclosed.yaml'")
    page.get_by_role("tab", name=re.compile("Problems")).wait_for()
    problems = page.locator(".problems")
    problems.get_by_text(re.compile("not valid YAML")).wait_for()
    assert "never closed" in problems.inner_text() or "expected" in problems.inner_text()
    page.locator(".cm-lintRange-error").first.wait_for()
    assert pane_text(page) == BROKEN["aaa_unclosed.yaml"]
    # its problem leads to its line
    problems.locator(".problem-row__btn").first.click()
    page.locator(".cm-activeLine").filter(has_text="max_tokens: [512").wait_for()
    shot(page, artifacts, "broken-file")

    # repaired by typing: the canvas draws it as soon as it reads, and the save writes the text as typed
    replace_text(page, BROKEN["aaa_unclosed.yaml"].replace("[512\n", "512}\n") + "    next: done\n"
                 "  - id: done  # typed in the pane\n    type: Set\n")
    page.wait_for_function(f"document.querySelectorAll('{BLOCKS_SELECTOR}').length === 3")
    settle(page)
    save(page)
    written = (served.root / "aaa_unclosed.yaml").read_text(encoding="utf-8")
    assert "# typed in the pane" in written
    checked = cli("validate", str(served.root / "aaa_unclosed.yaml"), cwd=served.root)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # every other kind of broken file opens too, in its YAML, with its problems
    for name in ("empty.yaml", "tabbed.yaml", "five.yaml", "ones.yaml"):
        page.goto(f"{served.url}/#{name}")
        page.wait_for_function("name => window.__diagramaStudio.getState().path === name "
                               "&& window.__diagramaStudio.getState().sourceText !== null", arg=name)
        page.get_by_test_id("yaml-editor").wait_for()
        assert pane_text(page) == BROKEN[name]
        assert page.locator(".problems .problem-row").count() >= 1, name
    assert errors == []


# ---------------------------------------------------------------- the YAML beside the canvas


def test_the_yaml_pane_follows_the_canvas_and_drives_it(page: Any, served: Served, artifacts: Path,
                                                        record_property: Any) -> None:
    errors = no_page_errors(page)
    open_diagram(page, served, ORDER_AGENT, blocks=5)
    open_pane(page)
    page.wait_for_function(PANE_TEXT + " !== null")
    assert pane_text(page) == (served.root / ORDER_AGENT).read_text(encoding="utf-8")

    # selecting a block selects its lines
    select_block(page, "dispatch")
    page.wait_for_function("() => getSelection().toString().includes('id: dispatch') "
                           "|| document.querySelector('.cm-selectionBackground') !== null")
    lines = page.evaluate("() => window.__diagramaStudio.getState().blockLines.dispatch")
    assert lines["last"] > lines["first"]

    # an edit in the form: the pane shows the change the save will write, nothing else
    before = pane_text(page)
    page.get_by_test_id("field-label").fill("Call the tools")
    page.wait_for_function(PANE_TEXT + ".includes('Call the tools')")
    changed = [(a, b) for a, b in zip(before.splitlines(), pane_text(page).splitlines(), strict=False) if a != b]
    assert len(changed) == 1 and "Call the tools" in changed[0][1], changed
    preview = pane_text(page)
    save(page)
    assert (served.root / ORDER_AGENT).read_text(encoding="utf-8") == preview

    # typing in the pane: the canvas and the form follow once the text reads
    text = pane_text(page).replace("label: Call the tools", "label: Tools, typed")
    page.evaluate("""() => {
        window.__typedAt = null;
        document.addEventListener('beforeinput', () => { window.__typedAt ??= performance.now(); }, {capture: true, once: true});
    }""")
    replace_text(page, text)
    node(page, "dispatch").get_by_text("Tools, typed").wait_for()
    elapsed = page.evaluate("() => performance.now() - window.__typedAt")
    record_property("yaml_to_canvas_ms", round(elapsed))
    select_block(page, "dispatch")
    assert page.get_by_test_id("field-label").input_value() == "Tools, typed"
    # the cursor in a block's lines selects that block
    page.locator(".cm-line").filter(has_text="id: done").first.click()
    page.locator(".props__title").filter(has_text="done").wait_for()

    # a mistake typed: underlined at its line, listed among the problems
    replace_text(page, text.replace("{{ result }}", "{{ resutl }}"))
    page.locator(".cm-lintRange-error").first.wait_for()
    page.locator(".problems, .toolbar__file .pill--error").first.wait_for()
    assert "1 error" in page.locator(".toolbar__file .pill--error").inner_text()

    # completion from the format's schema: a ClaudeRequest's inputs
    replace_text(page, text)
    settle(page)
    page.get_by_test_id("yaml-editor").click()
    page.keyboard.press("Control+Home")
    for _ in range(pane_text(page).splitlines().index("      max_tokens: 512")):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("End")
    page.keyboard.insert_text("\n      temp")
    page.keyboard.press("Control+Space")
    completions = page.locator(".cm-tooltip-autocomplete li")
    completions.first.wait_for()
    assert "temperature" in completions.all_inner_texts()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+z")
    valid(page)  # the completion typed is undone: the text is the valid one again
    # the page itself never scrolls (the editor's scrolling into view once moved the toolbar off the top)
    assert page.evaluate("() => [document.documentElement.scrollTop, "
                         "document.querySelector('.toolbar').getBoundingClientRect().top]") == [0, 0]
    shot(page, artifacts, "yaml-pane")

    # hovering a key shows its documentation
    page.locator(".cm-yaml-key").filter(has_text=re.compile(r"^model$")).first.hover()
    page.locator(".cm-schema-doc").wait_for()
    assert "model id" in page.locator(".cm-schema-doc").inner_text()
    assert errors == []


# ---------------------------------------------------------------- the pane never loses an edit

NOT_PARSING = "() => !window.__diagramaStudio.getState().parsing"


def test_a_form_edit_made_before_the_yaml_pane_opens_is_in_it_and_typing_there_keeps_it(page: Any, studio: Any) -> None:
    """The pane opened after an edit in a form once showed the file's text without it (while saying "unsaved"), and
    typing in it read that text back over the document: the form's edit was gone from the canvas and the save."""
    served = studio()
    page.goto(served.url + "/")
    create_diagram(page, "fresh.yaml")
    page.wait_for_selector('[data-testid="node-start"]')
    page.reload()  # a page that has not read the file's text
    page.wait_for_selector('[data-testid="node-start"]')
    deselect(page)
    page.get_by_test_id("field-description").fill("Typed in the form")
    editor = open_pane(page)
    page.wait_for_function(PANE_TEXT + "?.includes('description: Typed in the form')")

    # typed on line 1 (`diagram: fresh`): the form keeps its edit, and the pane's shows in it
    editor.locator(".cm-line").first.click()
    page.keyboard.press("Control+Home")
    page.keyboard.press("End")
    page.keyboard.type("-typed")
    page.wait_for_function("() => document.querySelector('#diagram-name')?.value === 'fresh-typed'")
    page.wait_for_function(NOT_PARSING)
    assert page.get_by_test_id("field-description").input_value() == "Typed in the form"
    assert "description: Typed in the form" in pane_text(page)
    save(page)
    written = yaml.safe_load((served.root / "fresh.yaml").read_text(encoding="utf-8"))
    assert (written["diagram"], written.get("description")) == ("fresh-typed", "Typed in the form")


def test_typing_in_the_yaml_pane_before_it_shows_a_form_edit_keeps_both(page: Any, served: Served) -> None:
    """A form's edit reaches the pane a round trip later (the text its save would write): keys typed in the pane
    meanwhile are typed over a text without it, whose reading once replaced the document, the form's edit lost."""
    open_diagram(page, served, ORDER_AGENT, blocks=5)
    open_pane(page)
    page.wait_for_function(PANE_TEXT + " !== null")
    deselect(page)
    # the form's text is held back until the user has typed in the pane (a slow server, a fast user)
    held: list[Any] = []
    released = False

    def hold(route: Any) -> None:
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route("**/preview", hold)
    with page.expect_request("**/preview"):
        page.get_by_test_id("field-description").fill("Typed in the form")
    page.locator(".cm-line").first.click()  # a line outside the blocks' (whose lines would select their block)
    page.keyboard.press("Control+Home")
    page.keyboard.press("ArrowDown")  # line 2: `diagram: order-agent`
    page.keyboard.press("End")
    with page.expect_response(lambda r: r.url.endswith("/api/parse") and "order-agent-typed" in (r.request.post_data or "")):
        page.keyboard.type("-typed")
    for _ in range(500):  # the intercepted request reaches its handler on Playwright's next message
        if held:
            break
        page.wait_for_timeout(10)
    released = True
    for route in held:
        route.continue_()

    page.wait_for_function(PANE_TEXT + "?.includes('diagram: order-agent-typed\\ndescription: Typed in the form')")
    page.wait_for_function(NOT_PARSING)
    assert page.get_by_test_id("field-description").input_value() == "Typed in the form"
    assert page.locator("#diagram-name").input_value() == "order-agent-typed"
    save(page)
    written = yaml.safe_load((served.root / ORDER_AGENT).read_text(encoding="utf-8"))
    assert (written["diagram"], written.get("description")) == ("order-agent-typed", "Typed in the form")


def test_a_broken_file_s_pane_stays_open_while_it_is_typed_back_to_reading(page: Any, served: Served) -> None:
    """A file that does not read opens in its YAML (the pane closed otherwise): the keystroke that makes it read
    draws the canvas, and the pane stays, so the keys typed next still go into it."""
    broken = "diagram: repaired\nblocks:\n  - id: start\n    type: Start\n    inputs: {question: hi"
    (served.root / "aaa_broken.yaml").write_text(broken, encoding="utf-8")
    page.goto(f"{served.url}/#aaa_broken.yaml")
    editor = page.get_by_test_id("yaml-editor")
    editor.wait_for()
    page.wait_for_function(PANE_TEXT + " === " + repr(broken))
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("}")
    page.wait_for_function(f"document.querySelectorAll('{BLOCKS_SELECTOR}').length === 1")
    page.keyboard.type(" # typed after it read")
    page.wait_for_function(PANE_TEXT + " === " + repr(broken + "} # typed after it read"))
    assert page.get_by_test_id("yaml-editor").is_visible()
    page.wait_for_function(NOT_PARSING)
    # the pane, open now, closes when asked
    page.get_by_role("button", name="Close the YAML pane").click()
    page.get_by_test_id("yaml-pane").wait_for(state="detached")
    save(page)
    assert (served.root / "aaa_broken.yaml").read_text(encoding="utf-8") == broken + "} # typed after it read"


# ---------------------------------------------------------------- item 8: a problem leads to its field; item 10


def test_a_problem_and_a_run_error_lead_to_their_field_and_the_run_shows_its_result(page: Any, served: Served) -> None:
    open_diagram(page, served, ORDER_AGENT, blocks=5)
    select_block(page, "ask")
    page.get_by_test_id("field-max_tokens").fill("-3")
    settle(page)
    page.get_by_test_id("canvas").click(position={"x": 20, "y": 20})
    page.get_by_role("tab", name=re.compile("Problems")).click()
    page.locator(".problem-row__btn").filter(has_text="max_tokens").first.click()
    page.wait_for_function("() => document.activeElement?.dataset?.testid === 'field-max_tokens'")
    box = page.get_by_test_id("field-max_tokens").bounding_box()
    assert box is not None and 0 <= box["y"] <= 900 - box["height"]
    page.keyboard.press("Control+z")
    settle(page)

    # the run's result at the top of the run panel: the final answer, and errors that select their block
    page.get_by_role("button", name="Open the run panel").click()
    panel = page.locator(".run-panel")
    panel.get_by_role("button", name="Run", exact=True).click()
    result = page.get_by_test_id("run-result")
    result.get_by_role("table", name="Final variables").wait_for(timeout=30_000)
    answer = result.get_by_role("row").filter(has=page.locator("th code", has_text=re.compile("^answer$")))
    assert "simulated" in answer.inner_text()
    # the result comes before the run form
    assert page.evaluate("""() => {
        const r = document.querySelector('[data-testid="run-result"]'), f = document.querySelector('.run-panel form');
        return !!(r.compareDocumentPosition(f) & Node.DOCUMENT_POSITION_FOLLOWING);
    }""")
    # the ✓ ×2 badge is not clipped
    badge = node(page, "ask").locator(".run-badge")
    assert badge.inner_text() == "✓ ×2"
    assert badge.evaluate("b => b.scrollWidth <= b.clientWidth + 1 && b.scrollHeight <= b.clientHeight + 1")
    inside = badge.evaluate("""b => {
        const r = b.getBoundingClientRect(), n = b.closest('.block-node').getBoundingClientRect();
        return r.left >= n.left && r.right <= n.right && r.top >= n.top && r.bottom <= n.bottom;
    }""")
    assert inside


def test_a_failed_run_error_selects_its_block(page: Any, served: Served) -> None:
    (served.root / "fails.yaml").write_text(
        "diagram: fails\nblocks:\n  - id: start\n    type: Start\n    next: broken\n"
        "  - id: broken\n    type: Set\n    set:\n      x: \"{{ 1 / 0 }}\"\n", encoding="utf-8")
    open_diagram(page, served, "fails.yaml", blocks=2)
    page.get_by_role("button", name="Open the run panel").click()
    page.locator(".run-panel").get_by_role("button", name="Run", exact=True).click()
    error = page.get_by_test_id("run-result").locator(".run-result__error").first
    error.wait_for(timeout=30_000)
    error.click()
    page.locator(".props__title").filter(has_text="broken").wait_for()


# ---------------------------------------------------------------- item 9: drafts survive; two tabs merge


def test_unsaved_edits_survive_a_reload_and_two_tabs_merge(page: Any, served: Served) -> None:
    page.on("dialog", lambda dialog: dialog.accept())  # the browser's "leave the page?" accepted
    open_diagram(page, served, ORDER_AGENT, blocks=5)
    select_block(page, "done")
    page.get_by_test_id("field-label").fill("Finished")
    page.locator(".pill--dirty").wait_for()
    page.wait_for_function("() => Object.keys(localStorage).some((k) => k.startsWith('diagrama:draft:'))")
    page.reload()
    banner = page.get_by_role("alertdialog", name=re.compile("Unsaved edits"))
    banner.wait_for()
    banner.get_by_role("button", name="Restore my edits").click()
    node(page, "done").get_by_text("Finished").wait_for()
    page.locator(".pill--dirty").wait_for()

    # another tab saves a change to another block meanwhile; this tab's save is refused, and merging keeps both
    other = page.context.new_page()
    open_diagram(other, served, ORDER_AGENT, blocks=5)
    select_block(other, "apologise")
    other.get_by_test_id("field-label").fill("Sorry path")
    save(other)
    other.close()
    page.keyboard.press("Control+s")
    conflict = page.get_by_role("alertdialog", name=re.compile("changed on disk"))
    conflict.wait_for()
    conflict.get_by_role("button", name=re.compile("^Merge")).click()
    merge = page.get_by_role("dialog", name=re.compile("Merge your edits"))
    merge.wait_for()
    assert "No change collides" in merge.inner_text()
    merge.get_by_role("button", name="Use the result").click()
    page.wait_for_function("() => !window.__diagramaStudio.getState().parsing")
    save(page)
    saved = {b["id"]: b for b in yaml.safe_load((served.root / ORDER_AGENT).read_text(encoding="utf-8"))["blocks"]}
    assert saved["done"].get("label") == "Finished"
    assert saved["apologise"].get("label") == "Sorry path"
    assert not page.evaluate("() => Object.keys(localStorage).some((k) => k.startsWith('diagrama:draft:'))")


# ---------------------------------------------------------------- finding things


def test_palette_context_menu_dark_mode_files_and_the_address(page: Any, served: Served, artifacts: Path) -> None:
    (served.root / "team").mkdir()
    shutil.copy(served.root / "greeting_counter.yaml", served.root / "team" / "inner.yaml")
    (served.root / "team" / "one.yaml").write_text("diagram: one\nblocks:\n  - id: start\n    type: Start\n",
                                                   encoding="utf-8")
    (served.root / "tests").mkdir()
    (served.root / "tests" / "greeting.scenario.yaml").write_text(
        "- scenario: counts twice\n  diagram: ../greeting_counter.yaml\n  inputs: {name: Giulia, times: 2}\n"
        "  expect:\n    status: succeeded\n    path: [start, count, count, greet]\n", encoding="utf-8")
    open_diagram(page, served, ORDER_AGENT, blocks=5)

    # palette: a click adds a block; typing filters, Enter adds the first match
    page.get_by_test_id("palette-Set").click()
    page.wait_for_function(f"document.querySelectorAll('{BLOCKS_SELECTOR}').length === 6")
    search = page.get_by_role("searchbox", name="Search blocks")
    search.fill("dispatch")
    assert page.locator('[data-testid^="palette-"]').count() == 1
    ids = set(page.locator(BLOCKS_SELECTOR).evaluate_all("ns => ns.map(n => n.dataset.id)"))
    search.press("Enter")
    page.wait_for_function(f"document.querySelectorAll('{BLOCKS_SELECTOR}').length === 7")
    (added,) = set(page.locator(BLOCKS_SELECTOR).evaluate_all("ns => ns.map(n => n.dataset.id)")) - ids
    # added at the first free place after the selected block (the Set just added), never over another block
    still_view(page)
    assert page.evaluate(OVERLAPS, BLOCKS_SELECTOR) == []
    assert page.locator(".react-flow__node-block.selected").get_attribute("data-id") == added

    # the context menu on a block: duplicate, and the items that wait for other work say why
    node(page, "done").locator(".block-node__title").click(button="right")
    menu = page.get_by_role("menu")
    menu.wait_for()
    assert menu.get_by_role("menuitem", name="Run from here").is_disabled()
    menu.get_by_role("menuitem", name=re.compile("^Duplicate")).click()
    page.wait_for_function(f"document.querySelectorAll('{BLOCKS_SELECTOR}').length === 8")
    boxes = page.locator(BLOCKS_SELECTOR).evaluate_all("ns => ns.map(n => { const r = n.getBoundingClientRect(); "
                                                       "return [n.dataset.id, r.x, r.y, r.width, r.height]; })")
    pasted = next(b for b in boxes if b[0] == "done_2")
    for other in boxes:
        if other[0] != "done_2":  # the duplicate lands on no block
            assert not (pasted[1] < other[1] + other[3] and other[1] < pasted[1] + pasted[3]
                        and pasted[2] < other[2] + other[4] and other[2] < pasted[2] + pasted[4]), (pasted, other)

    # subfolders as a tree; scenario files listed and runnable
    page.get_by_role("list", name="team files").get_by_role("button", name=re.compile("inner.yaml")).wait_for()
    files = page.locator(".files").inner_text()
    assert "one.yaml · 1 block" in files and "1 blocks" not in files
    page.locator(".files__scenarios > summary").click()
    page.get_by_role("button", name="Run scenario tests/greeting.scenario.yaml").click()
    page.locator(".scenarios .is-pass").filter(has_text="counts twice").wait_for(timeout=30_000)

    # the address opens files, and Back returns
    page.keyboard.press("Control+z")
    page.keyboard.press("Control+z")
    page.keyboard.press("Control+z")
    page.evaluate("() => { location.hash = 'team/inner.yaml'; }")
    page.wait_for_function("() => window.__diagramaStudio.getState().path === 'team/inner.yaml'")
    page.go_back()
    page.wait_for_function("() => window.__diagramaStudio.getState().path === 'order_agent.yaml'")

    # dark mode follows the system
    page.emulate_media(color_scheme="dark")
    page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    still_view(page)
    background = page.evaluate("() => getComputedStyle(document.querySelector('.toolbar')).backgroundColor")
    assert background != "rgb(255, 255, 255)"
    shot(page, artifacts, "dark-mode")
    page.emulate_media(color_scheme="light")
    page.wait_for_function("() => document.documentElement.dataset.theme === 'light'")


EDGE_POINT = """id => {
    const path = document.querySelector(`.react-flow__edge[data-id="${id}"] .react-flow__edge-interaction`);
    const point = path.getPointAtLength(path.getTotalLength() / 4).matrixTransform(path.getScreenCTM());
    return [point.x, point.y];
}"""


def test_a_link_s_context_menu_and_the_theme_toggle(page: Any, served: Served) -> None:
    page.emulate_media(color_scheme="light")
    open_diagram(page, served, ORDER_AGENT, blocks=5)
    edges = page.locator(".react-flow__edge").count()
    x, y = page.evaluate(EDGE_POINT, "next:start:0")
    page.mouse.click(x, y, button="right")
    menu = page.get_by_role("menu", name="Link")
    menu.wait_for()
    assert menu.get_by_role("menuitem", name="Go to start").is_enabled()
    menu.get_by_role("menuitem", name="Delete link").click()
    page.wait_for_function(f"document.querySelectorAll('.react-flow__edge').length === {edges - 1}")
    assert not page.locator('.react-flow__edge[data-id="next:start:0"]').count()

    # the toolbar's toggle: dark whatever the system says, then light, then the system's again
    assert page.evaluate("() => document.documentElement.dataset.theme") == "light"
    page.get_by_role("button", name=re.compile("^Theme: system")).click()
    page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    page.get_by_role("button", name=re.compile("^Theme: dark")).click()
    page.wait_for_function("() => document.documentElement.dataset.theme === 'light'")
    page.get_by_role("button", name=re.compile("^Theme: light")).click()
    page.emulate_media(color_scheme="dark")
    page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    page.reload()  # the choice is remembered
    page.get_by_role("button", name=re.compile("^Theme: system")).wait_for()


def test_the_registry_is_picked_from_the_folder_and_its_groups_stay_while_building(page: Any, served: Served) -> None:
    open_diagram(page, served, ORDER_AGENT, blocks=5)
    select_block(page, "ask")
    page.get_by_test_id("field-max_tokens").fill("-3")  # a problem: the groups used to vanish until a valid save
    page.locator(".toolbar__file .pill--error").wait_for()
    page.get_by_test_id("canvas").click(position={"x": 20, "y": 20})
    page.locator(".registry-group").filter(has_text="orders").first.wait_for()
    page.get_by_test_id("field-tools").focus()
    page.wait_for_function("() => [...document.querySelectorAll('#registry-files option')]"
                           ".some((o) => o.value === 'registry/orders.yaml')")


# ---------------------------------------------------------------- version history


def test_version_history_lists_the_saves_and_restores_an_older_text(page: Any, served: Served) -> None:
    original = (served.root / ORDER_AGENT).read_text(encoding="utf-8")
    open_diagram(page, served, ORDER_AGENT, blocks=5)
    select_block(page, "done")
    page.get_by_test_id("field-label").fill("Finished")
    save(page)
    page.get_by_test_id("field-label").fill("Finished twice")
    save(page)

    page.get_by_role("button", name="Version history").click()
    dialog = page.get_by_role("dialog", name=re.compile("Version history"))
    versions = dialog.get_by_role("list", name="Saved versions").get_by_role("button")
    versions.nth(2).wait_for()
    assert versions.count() == 3  # the text the first save replaced, and each save's
    assert "the file now" in versions.first.inner_text()
    versions.last.click()
    changes = dialog.get_by_label("What restoring it changes")
    changes.wait_for()
    assert "-    label: Finished twice" in changes.inner_text()

    # restored as an unsaved edit: the canvas shows it, the save writes it
    dialog.get_by_role("button", name="Restore this version").click()
    node(page, "done").get_by_text("Finished twice").wait_for(state="detached")
    page.locator(".pill--dirty").wait_for()
    page.wait_for_function("() => !window.__diagramaStudio.getState().parsing")
    save(page)
    assert (served.root / ORDER_AGENT).read_text(encoding="utf-8") == original


def test_text_on_the_canvas_is_readable_at_fit_zoom(page: Any, served: Served) -> None:
    open_diagram(page, served, ORDER_AGENT, blocks=5)
    page.get_by_role("button", name="Fit to view").click()
    still_view(page)
    smallest = page.evaluate("""() => {
        const t = document.querySelector('.react-flow__viewport').style.transform;
        const zoom = Number(/scale\\(([\\d.]+)\\)/.exec(t)[1]);
        let least = Infinity;
        for (const el of document.querySelectorAll('.block-node__title, .block-node__type, .edge-label__chip')) {
            least = Math.min(least, parseFloat(getComputedStyle(el).fontSize) * zoom);
        }
        return least;
    }""")
    assert smallest >= 11, smallest


# The order agent as test_browser.test_build_the_order_agent_from_an_empty_folder draws it on the canvas (the same
# blocks, keys and values), typed in the YAML pane there instead.
TYPED_AGENT = """# typed in the studio's YAML pane
diagram: typed-agent
tools: registry/orders.yaml
blocks:
  - id: start
    type: Start
    inputs:
      question: Where is my order 42?
    variables:
      history: []
    next: ask
  - id: ask
    type: ClaudeRequest
    with:
      model: claude-sonnet-5-5
      request: "{{ question if history | length == 0 else '' }}"
      history: "{{ history }}"
      tools: "{{ tools('orders') }}"
      max_tokens: 512
    set:
      answer: "{{ result }}"
      history: "{{ history }}"
      calls: "{{ called_tools }}"
    next:
      - to: dispatch
        when: "{{ called_tools | length > 0 }}"
      - to: done
    on_error: apologise
  - id: dispatch
    type: ToolDispatch
    with:
      calls: "{{ calls }}"
      history: "{{ history }}"
    set:
      history: "{{ history }}"
    next: ask
  - id: done
    type: Set
  - id: apologise
    type: Set
    set:
      answer: "Sorry ({{ error.type }})"
"""


LABELS = """diagram: labels
blocks:
  - id: start
    type: Start
    next: short
  - id: short
    type: Set
    label: Tally
    set: {n: 1}
    next: long
  - id: long
    type: Set
    label: Tally every order the customer placed over the last twelve months
    set: {n: 2}
"""

BLOCK_GEOMETRY = """(block) => {
    const node = document.querySelector(`[data-testid="node-${block}"]`);
    const box = node.getBoundingClientRect();
    const style = getComputedStyle(node);
    const edges = {left: box.left + parseFloat(style.borderLeftWidth), right: box.right - parseFloat(style.borderRightWidth),
                   bottom: box.bottom - parseFloat(style.borderBottomWidth)};
    const title = node.querySelector('.block-node__title');
    const t = title.getBoundingClientRect();
    const handles = [...document.querySelectorAll(`.react-flow__handle[data-nodeid="${block}"]`)].map((h) => {
        const r = h.getBoundingClientRect();
        return {side: ['left', 'right', 'bottom'].find((s) => h.classList.contains(`react-flow__handle-${s}`)),
                x: r.left + r.width / 2, y: r.top + r.height / 2};
    });
    return {edges, handles, titleRight: t.right, clipped: title.scrollWidth > title.clientWidth,
            overflow: getComputedStyle(title).overflow, ellipsis: getComputedStyle(title).textOverflow};
}"""


def test_a_long_label_ends_in_an_ellipsis_inside_its_block_and_handles_sit_on_its_edges(page: Any, served: Served) -> None:
    # a line that surely fits is drawn unclipped and a handle is centred by margins (each clip or transform on every
    # block costs a drag on a large diagram a regrouping of them all, each frame): the look is the same
    (served.root / "labels.yaml").write_text(LABELS, encoding="utf-8")
    open_diagram(page, served, "labels.yaml", blocks=3)
    long = page.evaluate(BLOCK_GEOMETRY, "long")
    assert (long["overflow"], long["ellipsis"], long["clipped"]) == ("hidden", "ellipsis", True)
    assert long["titleRight"] <= long["edges"]["right"]
    short = page.evaluate(BLOCK_GEOMETRY, "short")
    assert (short["overflow"], short["clipped"]) == ("visible", False)
    assert short["titleRight"] <= short["edges"]["right"]
    for block in ("start", "short", "long"):
        seen = page.evaluate(BLOCK_GEOMETRY, block)
        assert {h["side"] for h in seen["handles"]} >= {"right"}, seen
        for handle in seen["handles"]:
            side = handle["side"]
            at = handle["y"] if side == "bottom" else handle["x"]
            assert abs(at - seen["edges"][side]) < 0.75, (block, handle, seen["edges"])
