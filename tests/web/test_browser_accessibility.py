"""The studio's accessibility (issue 43, fix 7), end to end in headless Chromium: axe-core (engine/web/ui's
devDependency, injected from node_modules) finds no serious or critical violation on the main views — the editor with
a diagram open and a block's form, the Problems tab, the YAML pane, a run's view — in the light theme and the dark;
blocks take the keyboard's focus with a visible ring, and the arrow keys move a selected block 10 px (Shift: 50 px).
Screenshots of the focus ring, a dead link's warning and the `?` help go to tests/artifacts/ (git-ignored), and to
/work/notes when it exists."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import ROOT
from tests.web.test_browser import DIAGRAMS, node, open_diagram, select_block, shot

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

NOTES = Path("/work/notes")
AXE = ROOT / "engine" / "web" / "ui" / "node_modules" / "axe-core" / "axe.min.js"

DEAD_LINK = """\
diagram: dead-link
description: A second link without a condition never runs (the studio draws it dotted, with its warning).
blocks:
  - id: start
    type: Start
    variables: {n: 1}
    next:
      - {to: small}
      - {to: big}
  - id: small
    type: Set
    set: {size: small}
  - id: big
    type: Set
    set: {size: big}
"""

# each serious or critical violation: its rule, its help and the first few elements, with axe's summary
SERIOUS = """async () => {
    const found = await axe.run(document, { resultTypes: ['violations'] });
    return found.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => ({
        rule: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.slice(0, 6).map((n) =>
            `${n.target.join(' ')} :: ${(n.failureSummary || '').replace(/\\s+/g, ' ').slice(0, 240)}`),
    }));
}"""


def serious_violations(page: Any) -> list[dict[str, Any]]:
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(SERIOUS)
    return found


def stack(page: Any, shots: list[Path], into: Path) -> None:
    """Screenshots one above the other in one picture (drawn by a page of the same browser: no imaging library)."""
    images = "".join(f'<img style="display:block;width:1400px" src="data:image/png;base64,'
                     f'{base64.b64encode(shot_file.read_bytes()).decode()}">' for shot_file in shots)
    sheet = page.context.new_page()
    try:
        sheet.set_viewport_size({"width": 1400, "height": 900 * len(shots)})
        sheet.set_content(f'<body style="margin:0">{images}</body>')
        sheet.wait_for_function("() => [...document.images].every((i) => i.complete && i.naturalWidth)")
        sheet.screenshot(path=str(into), full_page=True)
    finally:
        sheet.close()


def use_theme(page: Any, theme: str) -> None:
    """The page follows the system's scheme (no choice made in the toolbar): emulate it, wait for the page to follow."""
    page.emulate_media(color_scheme=theme)
    page.wait_for_function("theme => document.documentElement.dataset.theme === theme", arg=theme)


def node_x_y(page: Any, block: str) -> tuple[float, float]:
    """The block's place in the diagram's coordinates (React Flow's translate on the node)."""
    transform = node(page, block).evaluate("e => e.closest('.react-flow__node').style.transform")
    x, y = re.findall(r"-?[\d.]+", transform)[:2]
    return float(x), float(y)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "diagrams"
    root.mkdir()
    for name in ("order_agent.yaml", "classify_one.yaml"):
        shutil.copy(DIAGRAMS / name, root / name)
    (root / "dead_link.yaml").write_text(DEAD_LINK, encoding="utf-8")
    return root


def test_the_main_views_have_no_serious_axe_violation_in_either_theme(page: Any, studio: Any, folder: Path,
                                                                       artifacts: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if not AXE.is_file():
        pytest.skip("axe-core is not installed (cd engine/web/ui && npm ci): the accessibility check is skipped")
    monkeypatch.delenv("DIAGRAMA_STORE", raising=False)
    served = studio(folder)
    found: dict[str, list[dict[str, Any]]] = {}
    for theme in ("light", "dark"):
        open_diagram(page, served, "order_agent.yaml", blocks=5)
        use_theme(page, theme)
        select_block(page, "ask")
        found[f"{theme}: the editor, a block's form"] = serious_violations(page)


        page.get_by_role("tab", name=re.compile("^Problems")).click()
        page.locator("#side-panel-body").wait_for()
        found[f"{theme}: the Problems tab"] = serious_violations(page)

        yaml = page.get_by_role("button", name="YAML source")
        yaml.click()
        page.locator(".source-pane .cm-content").wait_for()
        found[f"{theme}: the YAML pane"] = serious_violations(page)
        yaml.click()
        page.locator(".source-pane").wait_for(state="detached")

        open_diagram(page, served, "classify_one.yaml", blocks=2)
        page.get_by_role("button", name="Open the run panel").click()
        panel = page.locator(".run-panel")
        panel.get_by_role("button", name="Run", exact=True).click()
        page.locator(".run-status strong").filter(has_text=re.compile("^succeeded$")).wait_for(timeout=30_000)
        found[f"{theme}: a run's view"] = serious_violations(page)
        select_block(page, "classify")
        page.get_by_role("region", name="Last run of this block").wait_for()
        found[f"{theme}: a run's step"] = serious_violations(page)
    (artifacts / "axe-violations.json").write_text(json.dumps(found, indent=1), encoding="utf-8")
    assert not [v for views in found.values() for v in views], {view: v for view, v in found.items() if v}


def test_blocks_take_the_keyboards_focus_with_a_ring_and_move_with_the_arrows(page: Any, studio: Any, folder: Path,
                                                                               artifacts: Path) -> None:
    served = studio(folder)
    for theme in ("light", "dark"):
        open_diagram(page, served, "dead_link.yaml", blocks=3)
        use_theme(page, theme)
        # the dead link: dotted in the warning colour, its problem on its label
        page.locator(".react-flow__edge-path.link.has-problem").first.wait_for()
        select_block(page, "small")
        page.keyboard.press("Escape")  # a key first: focus given now is the keyboard's, as a Tab's would be
        node(page, "small").evaluate("e => e.closest('.react-flow__node').focus()")
        ring = node(page, "small").evaluate("e => { const s = getComputedStyle(e); return [s.outlineStyle, s.outlineWidth]; }")
        assert ring == ["solid", "3px"], ring

        # the arrows move the selected block: 10 px, with Shift 50 px (not React Flow's own 4 px as well)
        select_block(page, "small")
        node(page, "small").evaluate("e => e.closest('.react-flow__node').focus()")
        x, y = node_x_y(page, "small")
        page.keyboard.press("ArrowRight")
        page.wait_for_function("([x]) => parseFloat(document.querySelector('.react-flow__node[data-id=\"small\"]')"
                               ".style.transform.match(/-?[\\d.]+/)[0]) !== x", arg=[x])
        assert node_x_y(page, "small") == (x + 10, y)
        page.keyboard.press("Shift+ArrowDown")
        page.wait_for_function("([y]) => parseFloat(document.querySelector('.react-flow__node[data-id=\"small\"]')"
                               ".style.transform.match(/-?[\\d.]+/g)[1]) !== y", arg=[y])
        assert node_x_y(page, "small") == (x + 10, y + 50)
        page.keyboard.press("Control+z")  # one undo step for both
        page.wait_for_function("([x, y]) => { const n = document.querySelector('.react-flow__node[data-id=\"small\"]')"
                               ".style.transform.match(/-?[\\d.]+/g).map(Number); return n[0] === x && n[1] === y; }",
                               arg=[x, y])

        node(page, "big").evaluate("e => e.closest('.react-flow__node').focus()")
        page.get_by_role("button", name=re.compile("^(valid|\\d+ (error|warning))")).wait_for()  # checked, not checking
        shot(page, artifacts, f"focus-ring-{theme}")
        page.keyboard.press("?")
        help_dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
        help_dialog.wait_for()
        arrows = help_dialog.get_by_role("row").filter(has_text="Move the selected blocks 10 px (with Shift: 50 px)")
        arrows.scroll_into_view_if_needed()
        shot(page, artifacts, f"shortcuts-help-{theme}")
        stack(page, [artifacts / f"studio-focus-ring-{theme}.png", artifacts / f"studio-shortcuts-help-{theme}.png"],
              artifacts / f"studio-a11y-{theme}.png")
        if NOTES.is_dir():
            shutil.copy(artifacts / f"studio-a11y-{theme}.png", NOTES / f"studio43-a11y-{theme}.png")
        page.keyboard.press("Escape")
        help_dialog.wait_for(state="detached")
