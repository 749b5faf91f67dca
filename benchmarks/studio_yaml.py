"""An edit typed in the studio's YAML pane, until the canvas shows it, on a generated diagram (300 blocks), in ms.

Opens the generated diagram in headless Chromium, opens the YAML pane, gives one block a label, then types one
character at a time at the end of that label `--edits` times. Each figure is the time from the keystroke's input
event (the page's own clock) to the block on the canvas showing the new text (its title, or zoomed out past reading,
where the block is a tile, its tooltip; `tiles` in the output says which): the pane's debounce, the
server's reading and check of the whole text (POST /api/parse), the store and the canvas's render. The server is
the real one on a free 127.0.0.1 port; Chromium is Debian's (/usr/bin/chromium). Prints one JSON line: median,
95th percentile, min and max.

    python -m benchmarks.studio_yaml [--blocks 300] [--edits 15]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.studio_open import ALL_PLACED, CHROMIUM_ARGS, generated_diagram, serve

# the label a block shows: its title's text, or zoomed out past reading (a tile, no text), its tooltip's first part
SHOWN = """(block) => {
    const node = document.querySelector(`.react-flow__node[data-id="${block}"]`);
    if (!node) return null;
    const title = node.querySelector('.block-node__title');
    if (title) return title.textContent;
    return (node.querySelector('.block-node')?.getAttribute('title') ?? '').split(' (')[0];
}"""
WATCH = """(block) => {
    window.__typed = [];
    window.__shown = [];
    document.addEventListener('beforeinput', () => window.__typed.push(performance.now()), {capture: true});
    const shown = """ + SHOWN + """;
    const node = document.querySelector(`.react-flow__node[data-id="${block}"]`);
    new MutationObserver(() => window.__shown.push([performance.now(), shown(block)]))
        .observe(node, {childList: true, characterData: true, subtree: true, attributes: true});
}"""


def measure(url: str, blocks: int, edits: int) -> tuple[list[float], bool]:
    from playwright.sync_api import sync_playwright

    block = "b3"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{url}/#generated.yaml")
        page.wait_for_function(ALL_PLACED, arg=blocks, polling="raf", timeout=120_000)
        page.get_by_role("button", name="YAML source").click()
        page.get_by_test_id("yaml-editor").wait_for()
        page.wait_for_function("() => window.__diagramaStudio.getState().sourceText !== null")
        text: str = page.evaluate("() => window.__diagramaStudio.getState().sourceText")
        lines = text.splitlines()
        at = lines.index(f"  - id: {block}")
        page.get_by_test_id("yaml-editor").click()
        page.keyboard.press("Control+Home")
        for _ in range(at):
            page.keyboard.press("ArrowDown")
        page.keyboard.press("End")
        page.keyboard.insert_text("\n    label: Edited ")
        page.wait_for_function(f"b => ({SHOWN})(b) === 'Edited'", arg=block, timeout=30_000)
        page.wait_for_timeout(800)  # the view fitted again and settled: zoomed out past reading or not, from here on
        overview = page.evaluate("document.querySelector('.canvas').classList.contains('is-overview')")
        page.evaluate(WATCH, block)
        times = []
        for index in range(edits):
            char = "abcdefghijklmnopqrstuvwxyz"[index % 26]
            page.keyboard.insert_text(char)
            expected = "Edited " + "".join("abcdefghijklmnopqrstuvwxyz"[i % 26] for i in range(index + 1))
            page.wait_for_function("t => window.__shown.some(([, text]) => text === t)", arg=expected, timeout=30_000)
            typed, shown = page.evaluate("t => [window.__typed.at(-1), window.__shown.find(([, text]) => text === t)[0]]",
                                         expected)
            times.append(shown - typed)
        browser.close()
    return times, overview


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=300)
    parser.add_argument("--edits", type=int, default=15)
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "processor": platform.processor()}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "diagrams"
        root.mkdir()
        (root / "generated.yaml").write_text(generated_diagram(args.blocks), encoding="utf-8")
        url, _app, server, thread = serve(root, Path(folder) / "runs")
        try:
            times, overview = measure(url, args.blocks, args.edits)
        finally:
            server.should_exit = True
            thread.join(timeout=5)
    ordered = sorted(times)
    figure: dict[str, Any] = {
        "name": "studio_yaml_edit_to_canvas", "blocks": args.blocks, "edits": len(times),
        "median_ms": round(statistics.median(times), 1), "p95_ms": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 1),
        "min_ms": round(ordered[0], 1), "max_ms": round(ordered[-1], 1), "tiles": overview, **machine,
    }
    print(json.dumps(figure))


if __name__ == "__main__":
    main()
