"""The studio end to end, in headless Chromium (Debian's package, driven by Playwright), as a user works it.

Each test reads as the user's steps: build the order agent from an empty folder by dragging blocks and
links, edit a history table, open a 200-block diagram, run offline and see the path lit, read problems
on blocks and fields, watch a foreign page fail to start a run, use a read-only studio, undo and redo.
Screenshots of the key states go to tests/artifacts/ (git-ignored).
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.web.conftest import ROOT, Served, free_port

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

DIAGRAMS = ROOT / "diagrams"
ORDER_AGENT = "order_agent.yaml"
BLOCKS_SELECTOR = ".react-flow__node-block"


# ---------------------------------------------------------------- helpers: the page as a user sees it


def shot(page: Any, artifacts: Path, name: str) -> None:
    page.screenshot(path=str(artifacts / f"studio-{name}.png"))


def open_diagram(page: Any, served: Served, path: str, blocks: int | None = None) -> None:
    """Navigates to `/#path` and waits until the diagram's blocks are drawn."""
    page.goto(f"{served.url}/#{path}")
    page.wait_for_selector(".toolbar__name")
    if blocks is None:
        page.wait_for_selector(BLOCKS_SELECTOR)
    else:
        page.wait_for_function(f"document.querySelectorAll('{BLOCKS_SELECTOR}').length === {blocks}")
    still_view(page)


STILL_VIEW = """() => new Promise((resolve) => {
    const view = document.querySelector('.react-flow__viewport');
    let last = view.style.transform, same = 0;
    const tick = () => {
        const now = view.style.transform;
        same = now === last ? same + 1 : 0;
        last = now;
        if (same >= 15) resolve(now); else requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
})"""


# the ids of the elements (by selector) that reach past the canvas's pane
OUTSIDE_PANE = """(selector) => {
    const pane = document.querySelector('.react-flow').getBoundingClientRect();
    return [...document.querySelectorAll(selector)].filter((e) => {
        const b = e.getBoundingClientRect();
        return b.left < pane.left - 1 || b.right > pane.right + 1 || b.top < pane.top - 1 || b.bottom > pane.bottom + 1;
    }).map((e) => e.id);
}"""


# each link's path's first and last points, by link id (the path data starts `M x y` and ends `L x y`)
LINK_ENDS = """(selector) => Object.fromEntries([...document.querySelectorAll(selector)].map((p) => {
    const n = p.getAttribute('d').match(/-?[\\d.]+/g).map(Number);
    return [p.id, [n[0], n[1], n[n.length - 2], n[n.length - 1]].map((v) => Math.round(v))];
}))"""


def still_view(page: Any) -> None:
    """Waits until the canvas stops moving (the fit-view animation after a diagram opens)."""
    page.evaluate(STILL_VIEW)


def node(page: Any, block: str) -> Any:
    return page.get_by_test_id(f"node-{block}")


def select_block(page: Any, block: str) -> None:
    node(page, block).locator(".block-node__title").click()
    page.locator(".props__title").wait_for()
    page.wait_for_function("id => document.querySelector('[data-testid=\"field-id\"]')?.value === id", arg=block)


def deselect(page: Any) -> None:
    """Clicks the empty canvas: the panel shows the diagram's own keys."""
    page.get_by_test_id("canvas").click(position={"x": 20, "y": 20})
    page.locator("#diagram-name").wait_for()


# The HTML5 drag and drop of a user's drag, event by event: the palette item's own dragstart handler fills the
# DataTransfer; the element under the point takes dragenter, dragover and drop. (Playwright's drag_to decides that a
# drag began only if dragstart fires within one setTimeout(0) of the first mouse move; on a busy machine it fires
# later, drag_to then drops nothing, and the test waited 15 s for a block.)
DROP = """([source, canvas, x, y]) => {
    const data = new DataTransfer();
    const box = canvas.getBoundingClientRect();
    const point = {clientX: box.left + x, clientY: box.top + y, bubbles: true, cancelable: true, dataTransfer: data};
    source.dispatchEvent(new DragEvent('dragstart', {bubbles: true, cancelable: true, dataTransfer: data}));
    const under = document.elementFromPoint(point.clientX, point.clientY);
    for (const type of ['dragenter', 'dragover', 'drop']) under.dispatchEvent(new DragEvent(type, point));
    source.dispatchEvent(new DragEvent('dragend', {bubbles: true, dataTransfer: data}));
}"""


def create_diagram(page: Any, name: str) -> None:
    """Creates a diagram with the files list's "+ New" (the studio opens it, a Start block in it)."""
    page.locator(".files").get_by_role("button", name="+ New").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("File name").fill(name)
    dialog.get_by_role("button", name="Create").click()


def drag_from_palette(page: Any, block_type: str, x: float, y: float) -> None:
    """Drags a palette item onto the canvas at (x, y) of the canvas, as HTML5 drag and drop events (see DROP)."""
    before = page.locator(BLOCKS_SELECTOR).count()
    item = page.get_by_test_id(f"palette-{block_type}")
    assert item.get_attribute("draggable") == "true"
    page.evaluate(DROP, [item.element_handle(), page.get_by_test_id("canvas").element_handle(), x, y])
    page.wait_for_function(f"document.querySelectorAll('{BLOCKS_SELECTOR}').length === {before + 1}")


HANDLES_READY = """([source, port, target]) => {
    const find = (block, id) => document.querySelector(`.react-flow__handle[data-nodeid="${block}"][data-handleid="${id}"]`);
    const handles = [find(source, port), find(target, 'in')];
    if (handles.some((h) => !h)) return false;
    const boxes = handles.map((h) => h.getBoundingClientRect());
    const under = boxes.map((b) => document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2));
    const pressable = handles.every((h, i) => under[i] === h || h.contains(under[i]));
    const key = JSON.stringify(boxes.map((b) => [b.x, b.y, b.width, b.height]));
    const steady = window.__handlesSeen === key;
    window.__handlesSeen = key;
    // What the last look found, for the message of a test that times out here.
    window.__handlesWhy = {boxes: key, steady, under: under.map((u) => u ? `${u.tagName}.${u.className}` : null)};
    return pressable && steady;
}"""


def handle(page: Any, block: str, port: str) -> Any:
    return page.locator(f'.react-flow__handle[data-nodeid="{block}"][data-handleid="{port}"]')


def connect(page: Any, source: str, target: str, port: str = "next") -> None:
    """Drags a link from a block's port handle (next on the right, on_error at the bottom) to a block's input."""
    # Wait until both handles are where they will stay and are what a pointer there would press: a view still
    # settling, or a block re-measured, moves a handle between reading its box and pressing it.
    try:
        page.wait_for_function(HANDLES_READY, arg=[source, port, target], polling="raf")
    except Exception as exc:  # say what the handles were under and whether they moved
        why = page.evaluate("() => window.__handlesWhy")
        raise AssertionError(f"the handles of {source}/{port} → {target}/in never got ready: {why}") from exc
    start = handle(page, source, port).bounding_box()
    end = handle(page, target, "in").bounding_box()
    assert start and end, f"handles of {source}/{port} or {target}/in are not on screen"
    edges = page.locator(".react-flow__edge").count()
    page.mouse.move(start["x"] + start["width"] / 2, start["y"] + start["height"] / 2)
    page.mouse.down()
    page.mouse.move((start["x"] + end["x"]) / 2, (start["y"] + end["y"]) / 2 + 5, steps=5)
    page.mouse.move(end["x"] + end["width"] / 2, end["y"] + end["height"] / 2, steps=5)
    page.mouse.up()
    page.wait_for_function(f"document.querySelectorAll('.react-flow__edge').length === {edges + 1}")


def fill_template(page: Any, test_id: str, text: str) -> None:
    """Types into a template field and leaves it (closing any completion list)."""
    box = page.get_by_test_id(test_id)
    box.fill(text)
    box.evaluate("el => el.blur()")


def add_row(page: Any, container_test_id: str, button: str, key: str, value: str, *, template: bool) -> None:
    """Adds a name/value row to a mapping field (Start inputs, variables, a block's `set`)."""
    rows = page.get_by_test_id(container_test_id)
    rows.get_by_role("button", name=button).click()
    key_box = rows.locator("td.kv__key input").last
    key_box.fill(key)
    key_box.press("Enter")
    value_id = f"{container_test_id}-{key}"
    page.get_by_test_id(value_id).wait_for()
    if template:
        fill_template(page, value_id, value)
    else:
        page.get_by_test_id(value_id).fill(value)


def save(page: Any) -> None:
    page.keyboard.press("Control+s")
    page.locator(".pill--clean").wait_for()


def valid(page: Any) -> None:
    """Waits until the toolbar says the diagram is valid (a check still running, or one an edit started after the
    last, is waited for; problems fail the wait, listed)."""
    status = page.locator(".toolbar__file .pill--ok").filter(has_text=re.compile("^valid$"))
    try:
        status.wait_for()
    except Exception:  # Playwright's timeout, reported with the problems the page lists
        raise AssertionError(f"not valid: {page.locator('.problems').all_inner_texts()}") from None


def settle(page: Any) -> None:
    """Waits for the debounced validation round trip to be over (the status says "checking" from the edit on)."""
    page.wait_for_function("!document.querySelector('.toolbar__file .pill')?.textContent?.includes('checking')")


# Records each moment the number of drawn links falls (no link is deleted while the order agent is built).
WATCH_LINKS = """() => {
    window.__linksLost = [];
    let drawn = 0;
    new MutationObserver(() => {
        const now = document.querySelectorAll('.react-flow__edge').length;
        if (now < drawn) window.__linksLost.push({from: drawn, to: now, at: Math.round(performance.now())});
        drawn = now;
    }).observe(document.body, {childList: true, subtree: true});
}"""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("diagrama")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "engine.cli"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


# ---------------------------------------------------------------- 1. build the order agent from an empty folder


def test_build_the_order_agent_from_an_empty_folder(page: Any, studio: Any, artifacts: Path, tmp_path: Path) -> None:
    served = studio()
    shutil.copytree(DIAGRAMS / "registry", served.root / "registry", ignore=shutil.ignore_patterns("*.embeddings.json"))
    shutil.copytree(DIAGRAMS / "shop", served.root / "shop", ignore=shutil.ignore_patterns("__pycache__"))
    assert not list(served.root.glob("*.yaml"))

    page.goto(served.url + "/")
    page.evaluate(WATCH_LINKS)
    create_diagram(page, ORDER_AGENT)
    page.wait_for_selector('[data-testid="node-start"]')
    file = served.root / ORDER_AGENT
    assert file.is_file()

    # the diagram's own keys: its tool registry
    deselect(page)
    page.get_by_test_id("field-tools").fill("registry/orders.yaml")

    # Start: an input and a variable
    select_block(page, "start")
    add_row(page, "field-inputs", "+ Add inputs", "question", "Where is my order 42?", template=False)
    add_row(page, "field-variables", "+ Add variables", "history", "[]", template=False)
    shot(page, artifacts, "build-1-start")

    # the request block, dragged from the palette
    drag_from_palette(page, "ClaudeRequest", 200, 150)
    page.get_by_test_id("field-id").fill("ask")
    page.get_by_test_id("field-id").press("Enter")
    node(page, "ask").wait_for()
    fill_template(page, "field-model", "claude-sonnet-5-5")
    fill_template(page, "field-request", "{{ question if history | length == 0 else '' }}")
    history = page.get_by_test_id("field-history")
    history.get_by_role("radio", name="Expression").click()
    fill_template(page, "field-history-expression", "{{ history }}")
    page.get_by_test_id("field-tools").get_by_role("radio", name="Expression").click()
    fill_template(page, "field-tools-expression", "{{ tools('orders') }}")
    page.get_by_test_id("field-max_tokens").fill("512")
    add_row(page, "field-set", "+ Add variable", "answer", "{{ result }}", template=True)
    add_row(page, "field-set", "+ Add variable", "history", "{{ history }}", template=True)
    add_row(page, "field-set", "+ Add variable", "calls", "{{ called_tools }}", template=True)
    shot(page, artifacts, "build-2-ask")

    # the tool dispatch
    drag_from_palette(page, "ToolDispatch", 560, 100)
    page.get_by_test_id("field-id").fill("dispatch")
    page.get_by_test_id("field-id").press("Enter")
    node(page, "dispatch").wait_for()
    fill_template(page, "field-calls", "{{ calls }}")
    page.get_by_test_id("field-history").get_by_role("radio", name="Expression").click()
    fill_template(page, "field-history-expression", "{{ history }}")
    add_row(page, "field-set", "+ Add variable", "history", "{{ history }}", template=True)

    # two Set blocks: the end, and the error handler
    drag_from_palette(page, "Set", 560, 300)
    page.get_by_test_id("field-id").fill("done")
    page.get_by_test_id("field-id").press("Enter")
    node(page, "done").wait_for()
    drag_from_palette(page, "Set", 200, 680)
    page.get_by_test_id("field-id").fill("apologise")
    page.get_by_test_id("field-id").press("Enter")
    node(page, "apologise").wait_for()
    add_row(page, "field-set", "+ Add variable", "answer", "Sorry ({{ error.type }})", template=True)

    # the links, drawn from the handles, with every block in view
    page.get_by_role("button", name="Fit to view").click()
    still_view(page)
    shot(page, artifacts, "build-3-blocks")
    connect(page, "start", "ask")
    connect(page, "ask", "dispatch")
    connect(page, "ask", "done")
    connect(page, "dispatch", "ask")
    connect(page, "ask", "apologise", port="on_error")
    select_block(page, "ask")
    fill_template(page, "field-when-dispatch", "{{ called_tools | length > 0 }}")
    settle(page)
    shot(page, artifacts, "build-4-linked")
    # the two conditions' chips on ask's links, which leave it the same way, are drawn apart
    chips = page.locator(".edge-label__chip").evaluate_all(
        "cs => cs.map(c => { const b = c.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })")
    assert len(chips) == 2
    (l1, t1, r1, b1), (l2, t2, r2, b2) = chips
    assert r1 <= l2 or r2 <= l1 or b1 <= t2 or b2 <= t1, f"link labels overlap: {chips}"
    # No drawn link ever vanished meanwhile: a node rebuilt without its measured size loses its handles for a frame
    # or more, its links go undrawn and a drag started on it is lost (connect() waited 15 s for an edge, issue 25).
    assert page.evaluate("window.__linksLost") == []
    valid(page)

    save(page)
    shot(page, artifacts, "build-5-saved")
    text = file.read_text(encoding="utf-8")
    saved = yaml.safe_load(text)
    blocks = {b["id"]: b for b in saved["blocks"]}
    assert saved["tools"] == "registry/orders.yaml"
    assert list(blocks) == ["start", "ask", "dispatch", "done", "apologise"]
    assert blocks["start"]["inputs"] == {"question": "Where is my order 42?"}
    assert blocks["start"]["variables"] == {"history": []}
    assert blocks["start"]["next"] == "ask"
    assert blocks["ask"]["with"] == {
        "model": "claude-sonnet-5-5", "request": "{{ question if history | length == 0 else '' }}",
        "history": "{{ history }}", "tools": "{{ tools('orders') }}", "max_tokens": 512}
    assert blocks["ask"]["set"] == {"answer": "{{ result }}", "history": "{{ history }}", "calls": "{{ called_tools }}"}
    assert blocks["ask"]["next"] == [{"to": "dispatch", "when": "{{ called_tools | length > 0 }}"}, {"to": "done"}]
    assert blocks["ask"]["on_error"] == "apologise"
    assert blocks["dispatch"]["with"] == {"calls": "{{ calls }}", "history": "{{ history }}"}
    assert blocks["dispatch"]["next"] == "ask"
    assert blocks["apologise"]["set"] == {"answer": "Sorry ({{ error.type }})"}
    # positions: only on blocks, as two integers each; nothing else carries one
    for block in saved["blocks"]:
        assert set(block) <= {"id", "type", "position", "with", "set", "next", "on_error", "inputs", "variables"}, block
        x, y = block["position"]
        assert isinstance(x, int) and isinstance(y, int)
    assert text.count("position:") == len(blocks)

    # the CLI agrees: it validates and runs offline through the tools
    checked = cli("validate", str(file), cwd=served.root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ran = cli("run", str(file), "--offline", "--runs-dir", str(tmp_path / "cli-runs"), "--output", "json", cwd=served.root)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = json.loads(ran.stdout)
    assert result["status"] == "succeeded"
    assert "ask" in result["path"] and "dispatch" in result["path"], result["path"]

    # reloading shows the same diagram, and saving nothing changes nothing
    page.reload()
    open_diagram(page, served, ORDER_AGENT, blocks=5)
    assert sorted(page.locator(BLOCKS_SELECTOR).evaluate_all("ns => ns.map(n => n.dataset.id)")) == sorted(blocks)
    assert page.locator(".react-flow__edge").count() == 5
    assert page.locator(".pill--clean").is_visible()
    assert file.read_text(encoding="utf-8") == text

    # moving one block and saving rewrites that block's position line and nothing else
    box = node(page, "done").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + 40, box["y"] + box["height"] / 2 + 60, steps=5)
    page.mouse.up()
    page.locator(".pill--dirty").wait_for()
    save(page)
    changed = [line for line in difflib.unified_diff(text.splitlines(), file.read_text(encoding="utf-8").splitlines(),
                                                     lineterm="", n=0) if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert [line[:1] for line in changed] == ["-", "+"], changed
    assert changed[0].strip().startswith("-    position:") and changed[1].startswith("+    position: ["), changed
    moved = {b["id"]: b["position"] for b in yaml.safe_load(file.read_text(encoding="utf-8"))["blocks"]}
    assert [b for b in blocks if moved[b] != blocks[b]["position"]] == ["done"]

    # the same agent typed in the YAML pane, in a new file: it validates and runs as the drawn one does
    from tests.web.test_browser_source import PANE_TEXT, TYPED_AGENT, open_pane, replace_text

    create_diagram(page, "typed_agent.yaml")
    page.wait_for_function("() => window.__diagramaStudio.getState().path === 'typed_agent.yaml'")
    open_pane(page)
    page.wait_for_function(PANE_TEXT + " !== null")
    replace_text(page, TYPED_AGENT)
    page.wait_for_function(f"document.querySelectorAll('{BLOCKS_SELECTOR}').length === 5")
    settle(page)
    valid(page)
    shot(page, artifacts, "build-6-typed")
    save(page)
    typed = served.root / "typed_agent.yaml"
    assert typed.read_text(encoding="utf-8") == TYPED_AGENT  # written as typed, comment and all
    typed_blocks = {b["id"]: {k: v for k, v in b.items() if k != "position"} for b in yaml.safe_load(TYPED_AGENT)["blocks"]}
    drawn_blocks = {b["id"]: {k: v for k, v in b.items() if k != "position"}
                    for b in yaml.safe_load(file.read_text(encoding="utf-8"))["blocks"]}
    assert typed_blocks == drawn_blocks
    checked = cli("validate", str(typed), cwd=served.root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ran_typed = cli("run", str(typed), "--offline", "--runs-dir", str(tmp_path / "cli-runs"), "--output", "json",
                    cwd=served.root)
    assert ran_typed.returncode == 0, ran_typed.stdout + ran_typed.stderr
    typed_result = json.loads(ran_typed.stdout)
    assert (typed_result["status"], typed_result["path"]) == (result["status"], result["path"])


# ---------------------------------------------------------------- a folder of examples, shared by the tests below


def generated_diagram(blocks: int = 200) -> str:
    """A valid chain of Set blocks with a few `when` branches and a loop back, and no positions."""
    lines = ["diagram: generated", "description: A generated chain with branches and a loop back.", "blocks:",
             "  - id: start", "    type: Start", "    variables: {n: 0}", "    next: b1"]
    last = blocks - 1
    for index in range(1, blocks):
        lines += [f"  - id: b{index}", "    type: Set", "    set:", "      n: \"{{ n + 1 }}\""]
        if index == last:
            lines += ["    next:", "      - to: b150", "        when: \"{{ n < 250 }}\""]
        elif index % 25 == 0 and index + 2 <= last:
            lines += ["    next:", f"      - to: b{index + 2}", "        when: \"{{ n % 2 == 0 }}\"", f"      - to: b{index + 1}"]
        else:
            lines.append(f"    next: b{index + 1}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def examples(studio: Any, tmp_path_factory: pytest.TempPathFactory) -> Served:
    """The example diagrams (and copies for the tests that edit them) plus a generated 200-block diagram."""
    root = tmp_path_factory.mktemp("examples") / "diagrams"
    shutil.copytree(DIAGRAMS, root, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
    for copy in ("history_table.yaml", "undo.yaml"):
        shutil.copy(root / ORDER_AGENT, root / copy)
    shutil.copy(root / "order_quote.yaml", root / "function.yaml")
    shutil.copy(root / "claude_qa.yaml", root / "problems.yaml")
    (root / "big.yaml").write_text(generated_diagram(200), encoding="utf-8")
    return studio(root)


def field_row(page: Any, test_id: str) -> Any:
    """The form row (label, control, its problems) around a field."""
    return page.locator(".field").filter(has=page.get_by_test_id(test_id)).last


FIRST_DIALOG_VALUE = """() => new Promise((resolve) => {
    // The dialog's input as React first puts it in the page, before any effect or frame: a value set later (by an
    // effect) moves the caret behind a name already being typed, which then lands after the suggestion.
    const observer = new MutationObserver(() => {
        const input = document.querySelector('[role="dialog"] input');
        if (input) { observer.disconnect(); resolve([input.value, document.activeElement === input]); }
    });
    observer.observe(document.body, {childList: true, subtree: true});
    [...document.querySelectorAll('.files button')].find((b) => b.textContent === '+ New').click();
})"""


def test_the_new_file_dialog_holds_its_suggested_name_from_the_first_frame(page: Any, studio: Any) -> None:
    """The "+ New" dialog's name field has its suggestion (focused) the moment it shows, so a name typed at once
    replaces it: CI's create_diagram once filled a field still empty and got `new_diagram.yamltyped_agent.yaml`."""
    served = studio()
    (served.root / "new_diagram.yaml").write_text("diagram: taken\nblocks:\n  - id: start\n    type: Start\n",
                                                  encoding="utf-8")
    page.goto(served.url + "/")
    # the list of files is read after the page shows: the suggestion keeps clear of the names in it
    page.wait_for_function("() => window.__diagramaStudio.getState().files.some((f) => f.path === 'new_diagram.yaml')")
    assert page.evaluate(FIRST_DIALOG_VALUE) == ["new_diagram_2.yaml", True]
    name = page.get_by_role("dialog").get_by_label("File name")
    name.fill("typed.yaml")
    page.get_by_role("dialog").get_by_role("button", name="Create").click()
    page.wait_for_function("() => window.__diagramaStudio.getState().path === 'typed.yaml'")
    assert (served.root / "typed.yaml").is_file()


def test_a_new_diagram_is_fitted_at_once_so_a_first_click_keeps_it_in_view(page: Any, studio: Any) -> None:
    """A diagram's first fit is not animated: a click on the pane as soon as its blocks show (which stops an animated
    fit where it is) leaves the view where the fit puts it, and the next drop lands clear of Start."""
    served = studio()
    page.goto(served.url + "/")
    create_diagram(page, "fresh.yaml")
    page.wait_for_selector('[data-testid="node-start"]')
    deselect(page)  # at once, as a user may
    first = page.evaluate(STILL_VIEW)
    page.get_by_role("button", name="Fit to view").click()
    assert page.evaluate(STILL_VIEW) == first, "the view stopped short of the fit"
    drag_from_palette(page, "Set", 200, 150)
    dropped = page.locator(f'{BLOCKS_SELECTOR}:not([data-id="start"])').bounding_box()
    start = node(page, "start").bounding_box()
    assert dropped and start
    assert dropped["y"] + dropped["height"] < start["y"] or dropped["x"] + dropped["width"] < start["x"], (dropped, start)


# ---------------------------------------------------------------- 2. a history table edited as a table


def test_a_history_table_edited_as_a_table(page: Any, examples: Served, artifacts: Path) -> None:
    open_diagram(page, examples, "history_table.yaml", blocks=5)
    select_block(page, "ask")
    history = page.get_by_test_id("field-history")
    assert history.get_by_role("radio", name="Expression").get_attribute("aria-checked") == "true"
    history.get_by_role("radio", name="Table").click()
    history.get_by_text("No rows.").wait_for()
    history.get_by_role("button", name="+ Add row").click()
    history.get_by_label("History row 1 Role").select_option("system")
    history.get_by_label("History row 1 Content").fill("You answer in one sentence.")
    history.get_by_role("button", name="+ Add row").click()
    assert history.get_by_label("History row 2 Role").input_value() == "user"
    history.get_by_label("History row 2 Content").fill("Where is my order 42?")
    assert history.get_by_label("History row 1 Role").evaluate("s => [...s.options].map(o => o.value)") == \
        ["system", "user", "assistant", "tool"]
    shot(page, artifacts, "history-table")
    save(page)

    file = examples.root / "history_table.yaml"
    ask = next(b for b in yaml.safe_load(file.read_text(encoding="utf-8"))["blocks"] if b["id"] == "ask")
    assert ask["with"]["history"] == [{"role": "system", "content": "You answer in one sentence."},
                                      {"role": "user", "content": "Where is my order 42?"}]
    checked = cli("validate", str(file), cwd=examples.root)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# ---------------------------------------------------------------- 3. open a 200-block generated diagram


def test_open_a_200_block_generated_diagram(page: Any, examples: Served, artifacts: Path,
                                            record_property: Any) -> None:
    page.goto(f"{examples.url}/#big.yaml")
    # the nodes stay hidden until ELK has placed them: every block drawn and visible means layout is done
    rendered_at = page.wait_for_function(
        """() => {
            const nodes = document.querySelectorAll('.react-flow__node-block');
            if (nodes.length !== 200) return false;
            for (const n of nodes) if (getComputedStyle(n).visibility !== 'visible') return false;
            return performance.now();
        }""", polling="raf", timeout=60_000).json_value()
    assert page.locator(BLOCKS_SELECTOR).count() == 200
    # (the links are counted below, once the view is still: React Flow draws them until the canvas, fitted, turns to
    # its overview, a moment later on a busy machine, and the overview draws them as one SVG)
    ids = set(page.locator(BLOCKS_SELECTOR).evaluate_all("ns => ns.map(n => n.dataset.id)"))
    assert ids == {"start", *(f"b{i}" for i in range(1, 200))}
    valid(page)
    fitted = page.evaluate(STILL_VIEW)
    # fitted, the view is zoomed out past reading: tiles without text or handles, the links drawn in one SVG
    page.locator(".canvas.is-overview").wait_for()
    assert page.locator(".block-node--tile").count() == 200
    assert page.locator(".react-flow__handle").count() == 0 and page.locator(".block-node__title").count() == 0
    assert page.locator(".react-flow__edge").count() == 0
    assert page.locator("[data-testid=overview-links] path").count() == 199 + 7 + 1  # the chain, 7 branches, the loop
    # the fit takes in the links as well as the blocks: the back-links routed round the rows stay in the pane
    assert page.evaluate(OUTSIDE_PANE, "[data-testid=overview-links] path") == []
    assert page.locator(".react-flow__minimap").count() == 0
    assert node(page, "b42").get_attribute("title") == "b42 · Set"  # a tile says what it is on hover
    node(page, "b42").click()  # and is selected, dragged and opened like a block
    page.wait_for_function("() => document.querySelector('[data-testid=\"field-id\"]')?.value === 'b42'")
    assert "is-selected" in (node(page, "b42").get_attribute("class") or "")
    deselect(page)
    shot(page, artifacts, "open-200-blocks")
    # zoomed in again, blocks and links are React Flow's own once more, their ends where the tiles' links had them
    tile_ends = page.evaluate(LINK_ENDS, "[data-testid=overview-links] path")
    for _ in range(6):
        page.get_by_role("button", name="Zoom In").click()
    page.wait_for_function("!document.querySelector('.canvas').classList.contains('is-overview')")
    assert page.locator(".react-flow__edge").count() == 199 + 7 + 1
    assert page.locator(".block-node--tile").count() == 0 and page.locator(".block-node__title").count() == 200
    assert page.evaluate(LINK_ENDS, ".react-flow__edge-path") == tile_ends
    # Fit to view goes back to the view the diagram opened in
    page.get_by_role("button", name="Fit to view").click()
    assert page.evaluate(STILL_VIEW) == fitted
    record_property("open_200_blocks_ms", round(rendered_at))
    print(f"\nstudio: 200-block diagram rendered and laid out {rendered_at:.0f} ms after navigation")
    (artifacts / "studio-open-200-blocks.json").write_text(json.dumps({"blocks": 200, "ms": round(rendered_at)}))


def zoom_until(page: Any, button: str, overview: bool) -> None:
    """Clicks the zoom button until the canvas is (or is no longer) zoomed out past reading, and the view is still."""
    for _ in range(12):
        if page.evaluate("document.querySelector('.canvas').classList.contains('is-overview')") == overview:
            break
        page.get_by_role("button", name=button).click()
        page.wait_for_timeout(250)  # the zoom settles before the canvas says it is zoomed out (Canvas, ZoomVariable)
    else:
        raise AssertionError(f"{button} never made the overview {overview}")
    still_view(page)


def test_links_end_on_their_handles(page: Any, examples: Served) -> None:
    """A link's ends come from each node's declared handles (canvas/handles.ts), not from measuring the page: they
    must be where the page draws the handles, on a Loop's body port as on next, error and input handles."""
    open_diagram(page, examples, "plan_and_execute.yaml", blocks=5)
    # React Flow measures the page's handles when a block mounts, and takes the declared ones for each node object it
    # is given after: zoomed out to tiles and in again, every node is a new object, its link ends the declared ones
    zoom_until(page, "Zoom Out", overview=True)
    zoom_until(page, "Zoom In", overview=False)
    seen = page.evaluate("""() => {
        const pane = document.querySelector('.react-flow').getBoundingClientRect();
        const view = new DOMMatrix(getComputedStyle(document.querySelector('.react-flow__viewport')).transform);
        const flow = (x, y) => [(x - pane.left - view.e) / view.a, (y - pane.top - view.f) / view.a];
        const ends = {source: [], target: []};
        for (const h of document.querySelectorAll('.react-flow__handle')) {
            const r = h.getBoundingClientRect();
            const pos = h.dataset.handlepos;
            const at = pos === 'right' ? [r.right, r.top + r.height / 2] : pos === 'bottom' ? [r.left + r.width / 2, r.bottom]
                : [r.left, r.top + r.height / 2];
            ends[h.classList.contains('source') ? 'source' : 'target'].push(flow(...at));
        }
        const links = [...document.querySelectorAll('.react-flow__edge-path')].map((p) => {
            const n = p.getAttribute('d').match(/-?[\\d.]+/g).map(Number);
            return [p.id, [n[0], n[1]], [n[n.length - 2], n[n.length - 1]]];
        });
        return {ends, links};
    }""")
    assert len(seen["links"]) == 5 and any(link[0].startswith("body:") for link in seen["links"]), seen
    near = lambda p, q: abs(p[0] - q[0]) < 0.6 and abs(p[1] - q[1]) < 0.6  # noqa: E731
    for link, start, end in seen["links"]:
        assert any(near(start, e) for e in seen["ends"]["source"]), (link, start, seen["ends"]["source"])
        assert any(near(end, e) for e in seen["ends"]["target"]), (link, end, seen["ends"]["target"])


# ---------------------------------------------------------------- 4. run offline and see the path lit


def test_run_offline_and_see_the_path_lit(page: Any, examples: Served, artifacts: Path) -> None:
    open_diagram(page, examples, ORDER_AGENT, blocks=5)
    page.get_by_role("button", name="Open the run panel").click()
    panel = page.locator(".run-panel")
    question = panel.get_by_test_id("run-input-question")
    question.wait_for()
    assert question.input_value() == "Onde está o meu pedido 42?"  # filled from Start's inputs at once
    offline = panel.get_by_role("checkbox", name="Offline")
    assert offline.is_checked() and offline.is_disabled()  # this server allows offline runs only
    panel.get_by_role("button", name="Run", exact=True).click()
    page.locator(".run-status strong").filter(has_text=re.compile("^succeeded$")).wait_for(timeout=30_000)

    lit = {b: node(page, b).get_attribute("class") for b in ("start", "ask", "dispatch", "done", "apologise")}
    for block in ("start", "ask", "dispatch", "done"):
        assert "run-ok" in lit[block], lit
    assert "run-skipped" in lit["apologise"], lit
    assert node(page, "ask").locator(".run-badge--ok").inner_text() == "✓ ×2"
    taken = page.locator("path.link.is-taken").evaluate_all("ps => ps.map(p => p.id).sort()")
    assert taken == ["next:ask:0", "next:ask:1", "next:dispatch:0", "next:start:0"]
    assert page.locator("path.link.is-dimmed").evaluate_all("ps => ps.map(p => p.id)") == ["error:ask"]
    steps = panel.locator(".steps-table tbody tr")
    assert [steps.nth(i).locator("td").nth(1).locator("button").inner_text() for i in range(steps.count())] == \
        ["start", "ask", "dispatch", "ask", "done"]
    shot(page, artifacts, "run-path-lit")

    select_block(page, "ask")
    run_section = page.get_by_role("region", name="Last run of this block")
    assert run_section.locator("h3").text_content() == "Run (succeeded)"
    assert run_section.locator("details.step").count() == 2
    last = run_section.locator("details.step").last
    facts = last.locator(".step__facts").inner_text()
    assert re.search(r"Model\s+claude-sonnet-5-5\s+Tokens\s+in \d+ · out \d+\s+Link taken\s+done", facts), facts
    assert '"model": "claude-sonnet-5-5"' in last.inner_text()  # its inputs
    shot(page, artifacts, "run-step-details")


def test_a_typed_run_input_is_kept_while_the_diagram_is_edited(page: Any, examples: Served) -> None:
    """The run form keeps what was typed while another tab shows and the diagram is edited (the run takes the saved
    file, whose Start inputs did not change): it was the component's own state, lost when a click on a block showed
    its properties."""
    open_diagram(page, examples, "undo.yaml", blocks=5)
    page.get_by_role("button", name="Open the run panel").click()
    question = page.locator(".run-panel").get_by_test_id("run-input-question")
    question.fill("Dov'è il mio ordine 7?")
    node(page, "apologise").click()  # its properties show
    page.get_by_test_id("field-id").wait_for()
    page.keyboard.press("Delete")
    page.locator(".pill--dirty").wait_for()
    assert node(page, "apologise").count() == 0
    page.get_by_role("button", name="Open the run panel").click()
    assert question.input_value() == "Dov'è il mio ordine 7?"


# ---------------------------------------------------------------- 5. problems show on blocks and fields


def test_problems_show_on_blocks_and_fields(page: Any, examples: Served, artifacts: Path) -> None:
    open_diagram(page, examples, "problems.yaml", blocks=3)
    ask = node(page, "ask")
    assert ask.locator(".problem-badge").count() == 0
    select_block(page, "ask")

    page.get_by_test_id("field-temperature").fill("3")
    temperature = field_row(page, "field-temperature")
    temperature.locator(".field-problems").get_by_text("Input should be less than or equal to 1 (got 3)").wait_for()
    assert ask.locator(".problem-badge--error").inner_text() == "1"
    assert "has-errors" in (ask.get_attribute("class") or "")
    temperature.scroll_into_view_if_needed()
    shot(page, artifacts, "problem-temperature")

    # the server also knows which models take a temperature at all
    page.get_by_test_id("field-temperature").fill("0.5")
    temperature.locator(".field-problems").get_by_text(
        re.compile(r"claude-sonnet-5-5 takes only its default temperature.*claude-sonnet-4-6")).wait_for()
    temperature.get_by_role("button", name="Reset Temperature to its default").click()
    ask.locator(".problem-badge").wait_for(state="detached")

    # a mistyped name in a template: did you mean
    fill_template(page, "field-request", "{{ questoin }}")
    request = field_row(page, "field-request")
    request.locator(".field-problems").get_by_text("did you mean 'question'?").wait_for()
    assert "questoin" in request.locator(".field-problems").inner_text()
    shot(page, artifacts, "problem-did-you-mean")
    fill_template(page, "field-request", "{{ question }}")
    ask.locator(".problem-badge").wait_for(state="detached")
    save(page)

    # links are picked from lists in the studio, so a mistyped link target comes from the file, edited elsewhere;
    # the page reloads it (no unsaved edits) and shows the problem with its hint
    file = examples.root / "problems.yaml"
    file.write_text(file.read_text(encoding="utf-8").replace("on_error: apologise", "on_error: apologize"),
                    encoding="utf-8")
    ask.locator(".problem-badge--error").wait_for(timeout=10_000)
    select_block(page, "ask")
    links = page.locator(".section").filter(has=page.get_by_test_id("field-on_error"))
    links.get_by_text("links to unknown block 'apologize'").wait_for()
    assert "did you mean 'apologise'?" in links.locator(".field-problems").inner_text()
    on_error = page.get_by_test_id("field-on_error")
    assert on_error.input_value() == "apologize"
    assert "unknown block" in on_error.locator("option:checked").inner_text()
    on_error.scroll_into_view_if_needed()
    shot(page, artifacts, "problem-link-target")


# ---------------------------------------------------------------- 6. cross-site refusal from a real browser


class _ForeignPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<!doctype html><title>elsewhere</title><p>another site on this machine</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def foreign_site() -> Iterator[str]:
    """A page on another loopback origin (another port), as a malicious local site would be."""
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), _ForeignPage)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}/"
    server.shutdown()
    server.server_close()


CROSS_SITE_SCRIPT = """async (target) => {
    const attempts = [
        ['POST', '/runs', 'text/plain', 'cors', '{"offline":false}'],
        ['POST', '/runs', 'application/json', 'cors', '{"offline":false}'],
        ['POST', '/runs', 'text/plain', 'no-cors', '{"offline":true}'],
        ['PUT', '', 'application/json', 'cors', '{"base_hash":"x","diagram":{"blocks":[]}}'],
    ];
    const outcomes = [];
    for (const [method, suffix, type, mode, body] of attempts) {
        try {
            const r = await fetch(target + suffix, {method, mode, body, headers: {'Content-Type': type}});
            outcomes.push(`${method} ${type} ${mode}: ${r.type} ${r.status}`);
        } catch (e) {
            outcomes.push(`${method} ${type} ${mode}: ${e.name}`);
        }
    }
    return outcomes;
}"""


def test_cross_site_requests_from_a_real_browser_are_refused(page: Any, studio: Any, foreign_site: str,
                                                             tmp_path: Path) -> None:
    root = tmp_path / "diagrams"
    shutil.copytree(DIAGRAMS, root, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
    served = studio(root)
    before = (root / ORDER_AGENT).read_bytes()

    page.goto(foreign_site)
    outcomes = page.evaluate(CROSS_SITE_SCRIPT, f"{served.url}/api/diagrams/{ORDER_AGENT}")
    # the simple (text/plain) request reaches the server, which refuses it; the others never leave the browser
    # (their preflight is not answered) or come back opaque
    assert outcomes[0] == "POST text/plain cors: TypeError", outcomes
    assert outcomes[1] == "POST application/json cors: TypeError", outcomes
    assert outcomes[2] == "POST text/plain no-cors: opaque 0", outcomes
    assert outcomes[3] == "PUT application/json cors: TypeError", outcomes
    time.sleep(0.5)  # a run, had one started, would be writing its trace by now
    assert not served.runs.exists() or not any(served.runs.iterdir()), list(served.runs.rglob("*"))
    assert (root / ORDER_AGENT).read_bytes() == before


# ---------------------------------------------------------------- 6b. a Function block from the palette


def test_a_function_block_from_the_palette_with_its_form_and_allowed_modules(page: Any, examples: Served,
                                                                             artifacts: Path) -> None:
    open_diagram(page, examples, "function.yaml", blocks=4)
    drag_from_palette(page, "Function", 300, 560)
    page.get_by_test_id("field-id").fill("tax")
    page.get_by_test_id("field-id").press("Enter")
    node(page, "tax").wait_for()
    # the form comes from the block's Inputs model: function, arguments (name → value), timeout
    fill_template(page, "field-function", "shop.pricing:quote")
    arguments = field_row(page, "field-arguments")
    # the signature is checked at load, so the studio shows a missing argument on the field
    arguments.locator(".field-problems").get_by_text("missing argument 'order_id' of shop.pricing:quote").wait_for()
    add_row(page, "field-arguments", "+ Add arguments", "order_id", "57", template=True)
    arguments.locator(".field-problems").wait_for(state="detached")
    page.get_by_test_id("field-timeout").fill("2")
    shot(page, artifacts, "function-form")

    # the module must be in the diagram's allowed_modules, edited with nothing selected
    deselect(page)
    modules = page.get_by_test_id("field-allowed_modules")
    assert modules.input_value() == "shop.pricing"
    modules.fill("shop.tools")
    select_block(page, "tax")
    field_row(page, "field-function").locator(".field-problems").get_by_text(
        "module 'shop.pricing' is not in allowed_modules").wait_for()
    deselect(page)
    page.get_by_test_id("field-allowed_modules").fill("shop.tools, shop.pricing")
    node(page, "tax").locator(".problem-badge--error").wait_for(state="detached")
    save(page)

    file = examples.root / "function.yaml"
    saved = yaml.safe_load(file.read_text(encoding="utf-8"))
    assert saved["allowed_modules"] == ["shop.tools", "shop.pricing"]
    tax = next(b for b in saved["blocks"] if b["id"] == "tax")
    assert tax["type"] == "Function"
    assert tax["with"] == {"function": "shop.pricing:quote", "arguments": {"order_id": 57}, "timeout": 2}
    checked = cli("validate", str(file), cwd=examples.root)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# ---------------------------------------------------------------- 7. read-only mode


def test_read_only_studio_disables_editing_but_runs(page: Any, studio: Any, artifacts: Path, tmp_path: Path) -> None:
    root = tmp_path / "diagrams"
    shutil.copytree(DIAGRAMS, root, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
    served = studio(root, read_only=True)
    before = (root / ORDER_AGENT).read_bytes()
    open_diagram(page, served, ORDER_AGENT, blocks=5)

    page.locator(".pill--ro").wait_for()
    assert page.get_by_role("button", name="Save", exact=True).is_disabled()
    assert page.get_by_role("button", name="+ New").is_disabled()
    assert page.get_by_role("button", name="Undo", exact=True).is_disabled()
    for item in page.locator('[data-testid^="palette-"]').all():
        assert item.get_attribute("draggable") == "false"
        assert item.get_attribute("aria-disabled") == "true"
    page.get_by_test_id("palette-Set").drag_to(page.get_by_test_id("canvas"), target_position={"x": 300, "y": 300})
    page.get_by_test_id("palette-Set").press("Enter")
    page.wait_for_timeout(300)
    assert page.locator(BLOCKS_SELECTOR).count() == 5
    select_block(page, "ask")
    assert page.get_by_test_id("field-id").is_disabled()
    assert page.get_by_test_id("field-model").is_disabled()
    page.keyboard.press("Control+s")
    shot(page, artifacts, "read-only")

    page.get_by_role("button", name="Open the run panel").click()
    page.locator(".run-panel").get_by_role("button", name="Run", exact=True).click()
    page.locator(".run-status strong").filter(has_text=re.compile("^succeeded$")).wait_for(timeout=30_000)
    assert "run-ok" in (node(page, "dispatch").get_attribute("class") or "")
    assert (root / ORDER_AGENT).read_bytes() == before


# ---------------------------------------------------------------- 8. undo, redo, keyboard help


def test_undo_redo_and_keyboard_help(page: Any, examples: Served, artifacts: Path) -> None:
    open_diagram(page, examples, "undo.yaml", blocks=5)
    undo = page.get_by_role("button", name="Undo", exact=True)
    assert undo.is_disabled()

    drag_from_palette(page, "Set", 150, 600)
    node(page, "set").wait_for()
    page.get_by_test_id("canvas").click(position={"x": 20, "y": 20})  # leave the new block's form
    page.keyboard.press("Control+z")
    node(page, "set").wait_for(state="detached")
    assert page.locator(BLOCKS_SELECTOR).count() == 5
    page.keyboard.press("Control+Shift+z")
    node(page, "set").wait_for()
    assert page.locator(BLOCKS_SELECTOR).count() == 6

    # moving a block is one undo step too
    done = node(page, "done")
    was = done.bounding_box()
    assert was is not None
    page.mouse.move(was["x"] + was["width"] / 2, was["y"] + 10)
    page.mouse.down()
    page.mouse.move(was["x"] + was["width"] / 2 - 60, was["y"] + 110, steps=8)
    page.mouse.up()
    moved = done.bounding_box()
    assert moved is not None and abs(moved["y"] - was["y"]) > 50
    page.keyboard.press("Control+z")
    page.wait_for_function("y => Math.abs(document.querySelector('[data-testid=\"node-done\"]')"
                           ".getBoundingClientRect().y - y) < 2", arg=was["y"])
    assert page.locator(BLOCKS_SELECTOR).count() == 6
    shot(page, artifacts, "undo")

    page.keyboard.press("?")
    help_dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    help_dialog.wait_for()
    assert help_dialog.get_by_role("row").filter(has_text="Undo").locator("kbd").inner_text() == "Ctrl+Z"
    assert "Ctrl+Shift+Z" in help_dialog.inner_text()
    shot(page, artifacts, "shortcuts-help")
    page.keyboard.press("Escape")
    help_dialog.wait_for(state="detached")
