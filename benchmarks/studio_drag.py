"""Dragging a block on a large generated diagram in the studio, in headless Chromium: how smooth each frame is.

Opens a generated diagram (300 blocks by default, laid out by ELK), then drags one block in view along a path of
`--steps` mouse moves, `--drags` times. While the pointer moves, the page records the time between animation
frames (requestAnimationFrame); a frame that took long to draw shows as a long interval. Prints one JSON line per
figure: the frame interval's median and 95th percentile, and the time per pointer move (the page handles each move
and draws before Playwright's next one is dispatched). The server is the real one on a free 127.0.0.1 port;
Chromium is Debian's (/usr/bin/chromium), never downloaded.

    python -m benchmarks.studio_drag [--blocks 300] [--drags 5] [--steps 60]
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

FRAMES_START = """() => {
    window.__frames = [];
    let last = performance.now();
    const tick = (now) => {
        if (!window.__frames) return;
        window.__frames.push(now - last);
        last = now;
        requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
}"""
FRAMES_STOP = "() => { const f = window.__frames; window.__frames = null; return f; }"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def drag(page: Any, block: str, steps: int, sign: int) -> tuple[list[float], float]:
    """One drag of `block` over `steps` pointer moves; the frame intervals seen meanwhile, and ms per move."""
    box = page.locator(f'.react-flow__node-block[data-id="{block}"]').bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.evaluate(FRAMES_START)
    began = time.perf_counter()
    for step in range(1, steps + 1):
        page.mouse.move(x + sign * 3 * step, y + sign * 2 * step)
    per_move = (time.perf_counter() - began) * 1000 / steps
    frames: list[float] = page.evaluate(FRAMES_STOP)
    page.mouse.up()
    return frames[1:], per_move


def in_browser(url: str, name: str, blocks: int, drags: int, steps: int) -> tuple[list[float], list[float]]:
    from playwright.sync_api import sync_playwright

    executable = "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else shutil.which("chromium")
    if executable is None:
        raise SystemExit("Chromium is absent (apt-get install chromium)")
    frames: list[float] = []
    moves: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        page.goto(f"{url}/#{name}")
        page.wait_for_function(ALL_PLACED, arg=blocks, polling="raf", timeout=120_000)
        page.wait_for_timeout(800)  # the fit-view animation
        block = page.evaluate(IN_VIEW)
        assert block, "no block in view to drag"
        for index in range(drags):
            seen, per_move = drag(page, block, steps, 1 if index % 2 == 0 else -1)
            frames += seen
            moves.append(per_move)
            page.locator(".pill--dirty").wait_for()
        browser.close()
    return frames, moves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=300)
    parser.add_argument("--drags", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "processor": platform.processor()}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "diagrams"
        root.mkdir()
        file = root / "generated.yaml"
        file.write_text(generated_diagram(args.blocks), encoding="utf-8")
        url, _app, server, thread = serve(root, Path(folder) / "runs")
        try:
            frames, moves = in_browser(url, file.name, args.blocks, args.drags, args.steps)
        finally:
            server.should_exit = True
            thread.join(timeout=5)
    common = {"blocks": args.blocks, **machine}
    print(json.dumps({"benchmark": "studio_drag_frame_interval", "ms_median": round(statistics.median(frames), 1),
                      "ms_p95": round(percentile(frames, 0.95), 1), "frames": len(frames), **common}))
    print(json.dumps({"benchmark": "studio_drag_per_pointer_move", "ms_median": round(statistics.median(moves), 1),
                      "ms_p95": round(percentile(moves, 0.95), 1), "drags": len(moves), "steps": args.steps,
                      **common}))


if __name__ == "__main__":
    main()
