"""The studio with a generated 200-block diagram, in ms: open it in headless Chromium, validate an edit, save a move.

(a) navigation → every block drawn and laid out (ELK; nodes stay hidden until placed), a fresh page each
time; (b) the server's validation round trip of an edit (POST /api/validate with the whole 200-block
diagram), in process through httpx against the ASGI app and over the loopback socket; (c) saving after
moving one block: the page's Ctrl+S until it shows "saved" (the file must differ by exactly one line), and
the PUT alone, in process. The server is the real one under uvicorn on a free 127.0.0.1 port; Chromium is
Debian's (/usr/bin/chromium), never downloaded. Prints one JSON line per figure (median and min).

    python -m benchmarks.studio_open [--blocks 200] [--opens 5] [--repeat 20]
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import platform
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from blocks.registry import registry
from engine.web.app import create_app

TOKEN = "benchmark-token"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ALL_PLACED = """(count) => {
    const nodes = document.querySelectorAll('.react-flow__node-block');
    if (nodes.length !== count) return false;
    for (const n of nodes) if (getComputedStyle(n).visibility !== 'visible') return false;
    return performance.now();
}"""


IN_VIEW = """() => {
    const pane = document.querySelector('.react-flow').getBoundingClientRect();
    for (const n of document.querySelectorAll('.react-flow__node-block')) {
        const r = n.getBoundingClientRect();
        const x = r.left + r.width / 2, y = r.top + r.height / 2;
        if (x > pane.left + 80 && x < pane.right - 200 && y > pane.top + 80 && y < pane.bottom - 200) return n.dataset.id;
    }
    return null;
}"""


def generated_diagram(blocks: int) -> str:
    """A valid chain of Set blocks with a `when` branch every 25 blocks and a loop back; no positions."""
    lines = ["diagram: generated", "description: A generated chain with branches and a loop back.", "blocks:",
             "  - id: start", "    type: Start", "    variables: {n: 0}", "    next: b1"]
    last = blocks - 1
    for index in range(1, blocks):
        lines += [f"  - id: b{index}", "    type: Set", "    set:", "      n: \"{{ n + 1 }}\""]
        if index == last:
            lines += ["    next:", f"      - to: b{max(1, blocks * 3 // 4)}", "        when: \"{{ n < 250 }}\""]
        elif index % 25 == 0 and index + 2 <= last:
            lines += ["    next:", f"      - to: b{index + 2}", "        when: \"{{ n % 2 == 0 }}\"", f"      - to: b{index + 1}"]
        else:
            lines.append(f"    next: b{index + 1}")
    return "\n".join(lines) + "\n"


def figures(name: str, times: list[float], machine: dict[str, str], **extra: Any) -> str:
    return json.dumps({"benchmark": name, "ms_median": round(statistics.median(times), 1), "ms_min": round(min(times), 1),
                       "n": len(times), **extra, **machine})


def one_line_changed(before: str, after: str) -> bool:
    """True when the texts differ in exactly one line (changed, or added where there was none)."""
    changes = [op for op in difflib.SequenceMatcher(None, before.splitlines(), after.splitlines()).get_opcodes()
               if op[0] != "equal"]
    return len(changes) == 1 and changes[0][2] - changes[0][1] <= 1 and changes[0][4] - changes[0][3] == 1


def serve(root: Path, runs: Path) -> tuple[str, Any, uvicorn.Server, threading.Thread]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(root, runs, registry(), port=port, token=TOKEN)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return f"http://127.0.0.1:{port}", app, server, thread


def timed(repeat: int, call: Callable[[], httpx.Response]) -> list[float]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        response = call()
        times.append((time.perf_counter() - began) * 1000)
        assert response.status_code == 200, response.text[:300]
    return times


async def in_process(app: Any, url: str, name: str, repeat: int) -> tuple[list[float], list[float]]:
    """Validation and save round trips through httpx's ASGI transport: the server's own time, no socket."""
    headers = {"x-diagrama-token": TOKEN, "origin": url}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=url) as client:
        loaded = (await client.get(f"/api/diagrams/{name}")).json()
        diagram = loaded["diagram"]
        validate, save = [], []
        for _ in range(repeat):
            began = time.perf_counter()
            response = await client.post("/api/validate", json={"diagram": diagram, "path": name}, headers=headers)
            validate.append((time.perf_counter() - began) * 1000)
            assert response.status_code == 200 and response.json()["valid"], response.text[:300]
        digest = loaded["hash"]
        for index in range(repeat):
            diagram["blocks"][100]["position"] = [40 * index, 40 * index]
            began = time.perf_counter()
            response = await client.put(f"/api/diagrams/{name}", json={"base_hash": digest, "diagram": diagram},
                                        headers=headers)
            save.append((time.perf_counter() - began) * 1000)
            assert response.status_code == 200, response.text[:300]
            digest = response.json()["hash"]
    return validate, save


def over_socket(url: str, name: str, repeat: int) -> list[float]:
    with httpx.Client(base_url=url) as client:
        diagram = client.get(f"/api/diagrams/{name}").json()["diagram"]
        headers = {"x-diagrama-token": TOKEN, "origin": url}
        return timed(repeat, lambda: client.post("/api/validate", json={"diagram": diagram, "path": name}, headers=headers))


def in_browser(url: str, file: Path, blocks: int, opens: int) -> tuple[list[float], list[float]]:
    """Opens the diagram `opens` times (a fresh page each); then, on the last page, moves a block and saves, `opens` times."""
    from playwright.sync_api import sync_playwright

    executable = "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else shutil.which("chromium")
    if executable is None:
        raise SystemExit("Chromium is absent (apt-get install chromium)")
    opened, saved = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        page = None
        for _ in range(opens):
            if page is not None:
                page.context.close()
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            page.goto(f"{url}/#{file.name}")
            placed = page.wait_for_function(ALL_PLACED, arg=blocks, polling="raf", timeout=120_000).json_value()
            opened.append(float(placed))
        assert page is not None
        page.wait_for_timeout(500)  # the fit-view animation
        for _ in range(opens):
            block = page.evaluate(IN_VIEW)
            box = page.locator(f'.react-flow__node-block[data-id="{block}"]').bounding_box()
            assert box is not None
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.mouse.down()
            page.mouse.move(box["x"] + box["width"] / 2 + 12, box["y"] + box["height"] / 2 + 30, steps=4)
            page.mouse.up()
            page.locator(".pill--dirty").wait_for()
            before = file.read_text(encoding="utf-8")
            began = time.perf_counter()
            page.keyboard.press("Control+s")
            page.locator(".pill--clean").wait_for()
            saved.append((time.perf_counter() - began) * 1000)
            after = file.read_text(encoding="utf-8")
            assert one_line_changed(before, after), "".join(difflib.unified_diff(
                before.splitlines(True), after.splitlines(True)))
        browser.close()
    return opened, saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--blocks", type=int, default=200)
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    machine = {"python": sys.version.split()[0], "machine": platform.machine(), "processor": platform.processor()}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "diagrams"
        root.mkdir()
        file = root / "generated.yaml"
        file.write_text(generated_diagram(args.blocks), encoding="utf-8")
        url, app, server, thread = serve(root, Path(folder) / "runs")
        try:
            opened, saved = in_browser(url, file, args.blocks, args.opens)
            print(figures("studio_open_rendered_and_laid_out", opened, machine, blocks=args.blocks))
            validate_asgi, save_asgi = asyncio.run(in_process(app, url, file.name, args.repeat))
            print(figures("studio_validate_round_trip_in_process", validate_asgi, machine, blocks=args.blocks))
            print(figures("studio_validate_round_trip_socket", over_socket(url, file.name, args.repeat), machine,
                          blocks=args.blocks))
            print(figures("studio_save_after_move_page", saved, machine, blocks=args.blocks, one_line_changed=True))
            print(figures("studio_save_after_move_put_in_process", save_asgi, machine, blocks=args.blocks))
        finally:
            server.should_exit = True
            thread.join(timeout=5)


if __name__ == "__main__":
    main()
