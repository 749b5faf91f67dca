"""Dragging a block on a large generated diagram in the studio, in headless Chromium: how smooth each frame is.

Opens a generated diagram (300 blocks by default, laid out by ELK), then drags one block in view `--drags` times
over `--steps` pointer moves, two ways. Paced: one move a frame, as a 60 Hz mouse sends them, recording the time
between animation frames (a move that took long to handle and draw shows as a long interval; 16.7 ms is smooth)
and, from Chromium's own counters (DevTools' Performance.getMetrics), the page's main-thread time per frame: all of
it (script, style, layout, paint) and its script alone. The block sits near the top left, so every second drag
runs into the pane's edge and React Flow pans the view under it. Driven: Playwright's mouse, each move sent once
the page handled the last (the time a move takes, Playwright's round trip included). Prints one JSON line per
figure: median and 95th percentile (the main-thread figures: the mean of each drag's frames, median and max over
the drags). The server is the real one on a free 127.0.0.1 port; Chromium is Debian's (/usr/bin/chromium), never
downloaded.

    python -m benchmarks.studio_drag [--blocks 300] [--drags 5] [--steps 60] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.studio_open import ALL_PLACED, CHROMIUM_ARGS, IN_VIEW, generated_diagram, serve

PACED_DRAG = """async ({block, steps, sign}) => {
    // one pointer move a frame, as a mouse at 60 Hz sends them, through the same handlers (d3-drag listens on the
    // window); the time between frames shows how long handling a move and drawing it took
    const node = document.querySelector(`.react-flow__node-block[data-id="${block}"]`);
    const box = node.getBoundingClientRect();
    const x = box.x + box.width / 2, y = box.y + box.height / 2;
    const at = (dx, dy) => ({bubbles: true, cancelable: true, view: window, button: 0, buttons: 1,
                             clientX: x + dx, clientY: y + dy});
    const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
    // after React's own scheduled work (its scheduler posts messages too, in order)
    const settled = () => new Promise((resolve) => {
        const channel = new MessageChannel();
        channel.port1.onmessage = resolve;
        channel.port2.postMessage(0);
    });
    node.dispatchEvent(new MouseEvent('mousedown', at(0, 0)));
    // a frame's time is the one the browser gives its animation callbacks (when the frame began), the same for each
    // of them: what the page's own callbacks do first in a frame does not count twice
    // (`callbacks`: the time our callback ran, performance.now(), as this benchmark measured before: it adds the
    // time the page's earlier callbacks took in that frame to one interval and takes it from the next)
    let last = await frame();
    let lastCalled = performance.now();
    const intervals = [], callbacks = [];
    for (let step = 1; step <= steps; step++) {
        window.dispatchEvent(new MouseEvent('mousemove', at(sign * 3 * step, sign * 2 * step)));
        await settled();
        const now = await frame();
        const called = performance.now();
        intervals.push(now - last);
        callbacks.push(called - lastCalled);
        last = now;
        lastCalled = called;
    }
    window.dispatchEvent(new MouseEvent('mouseup', at(sign * 3 * steps, sign * 2 * steps)));
    return {intervals, callbacks};
}"""
# Chromium's cumulative counters for the page's main thread, in seconds
MAIN_THREAD = ("TaskDuration", "ScriptDuration")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main_thread(cdp: Any) -> dict[str, float]:
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {name: metrics[name] for name in MAIN_THREAD}


def paced_drag(page: Any, cdp: Any, block: str, steps: int,
               sign: int) -> tuple[list[float], list[float], dict[str, float]]:
    """One drag of `block`, a pointer move each frame: the time between frames meanwhile (by the frames' own times,
    and by when our callback ran in each), and the page's main-thread time per frame (all of it, and script alone),
    in ms."""
    before = main_thread(cdp)
    seen: dict[str, list[float]] = page.evaluate(PACED_DRAG, {"block": block, "steps": steps, "sign": sign})
    after = main_thread(cdp)
    busy = {name: (after[name] - before[name]) * 1000 / steps for name in MAIN_THREAD}
    return seen["intervals"], seen["callbacks"], busy


def driven_drag(page: Any, block: str, steps: int, sign: int) -> float:
    """One drag of `block` with Playwright's mouse, each move sent when the page has handled the last: ms a move."""
    box = page.locator(f'.react-flow__node-block[data-id="{block}"]').bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    began = time.perf_counter()
    for step in range(1, steps + 1):
        page.mouse.move(x + sign * 3 * step, y + sign * 2 * step)
    per_move = (time.perf_counter() - began) * 1000 / steps
    page.mouse.up()
    return per_move


def in_browser(url: str, name: str, blocks: int, drags: int,
               steps: int) -> tuple[list[float], list[float], list[dict[str, float]], list[float]]:
    from playwright.sync_api import sync_playwright

    executable = "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else shutil.which("chromium")
    if executable is None:
        raise SystemExit("Chromium is absent (apt-get install chromium)")
    frames: list[float] = []
    called: list[float] = []
    per_drag: list[dict[str, float]] = []
    moves: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        page.goto(f"{url}/#{name}")
        page.wait_for_function(ALL_PLACED, arg=blocks, polling="raf", timeout=120_000)
        page.wait_for_timeout(800)  # the fit-view animation
        block = page.evaluate(IN_VIEW)
        assert block, "no block in view to drag"
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        for index in range(drags):
            intervals, callbacks, busy = paced_drag(page, cdp, block, steps, 1 if index % 2 == 0 else -1)
            frames += intervals
            called += callbacks
            per_drag.append(busy)
            page.locator(".pill--dirty").wait_for()
            moves.append(driven_drag(page, block, steps, -1 if index % 2 == 0 else 1))
        browser.close()
    return frames, called, per_drag, moves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=300)
    parser.add_argument("--drags", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=1,
                        help="browser sessions, each with its own drags: the figures pool their frames")
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "processor": platform.processor()}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "diagrams"
        root.mkdir()
        file = root / "generated.yaml"
        file.write_text(generated_diagram(args.blocks), encoding="utf-8")
        url, _app, server, thread = serve(root, Path(folder) / "runs")
        frames: list[float] = []
        called: list[float] = []
        per_drag: list[dict[str, float]] = []
        moves: list[float] = []
        session_p95: list[float] = []
        try:
            for _ in range(args.repeat):
                seen, callbacks, busy, moved = in_browser(url, file.name, args.blocks, args.drags, args.steps)
                frames += seen
                called += callbacks
                per_drag += busy
                moves += moved
                session_p95.append(round(percentile(seen, 0.95), 1))
        finally:
            server.should_exit = True
            thread.join(timeout=5)
    common = {"blocks": args.blocks, **machine}
    print(json.dumps({"benchmark": "studio_drag_frame_interval", "ms_median": round(statistics.median(frames), 1),
                      "ms_p95": round(percentile(frames, 0.95), 1), "frames": len(frames),
                      "ms_p95_by_session": session_p95, **common}))
    print(json.dumps({"benchmark": "studio_drag_callback_interval", "ms_median": round(statistics.median(called), 1),
                      "ms_p95": round(percentile(called, 0.95), 1), "frames": len(called), **common}))
    for name, figure in (("TaskDuration", "studio_drag_main_thread_per_frame"),
                         ("ScriptDuration", "studio_drag_script_per_frame")):
        values = [drag[name] for drag in per_drag]
        print(json.dumps({"benchmark": figure, "ms_median": round(statistics.median(values), 2),
                          "ms_max": round(max(values), 2), "drags": len(values), **common}))
    print(json.dumps({"benchmark": "studio_drag_per_pointer_move", "ms_median": round(statistics.median(moves), 1),
                      "ms_p95": round(percentile(moves, 0.95), 1), "drags": len(moves), "steps": args.steps,
                      **common}))


if __name__ == "__main__":
    main()
