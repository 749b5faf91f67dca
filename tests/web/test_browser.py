"""End to end in headless Chromium (Debian's package, driven by Playwright): draw, run, see the path."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is absent (apt-get install chromium); browser tests skipped")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import uvicorn

    from blocks.registry import registry
    from engine.web.app import create_app

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(ROOT / "diagrams", tmp_path_factory.mktemp("runs"), registry())
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    for _ in range(100):
        if running.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    running.should_exit = True
    thread.join(timeout=5)


@pytest.fixture(scope="module")
def page(server: str) -> Iterator[object]:
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        yield page
        browser.close()


def test_every_example_diagram_is_listed(page, server: str) -> None:
    page.goto(server + "/#/")
    page.wait_for_selector("#diagram-list li")
    names = page.locator("#diagram-list li a").all_inner_texts()
    assert len(names) == len(list((ROOT / "diagrams").glob("*.yaml")))
    assert "order-agent" in names


def test_diagram_page_draws_blocks_and_links(page, server: str) -> None:
    page.goto(server + "/#/d/order_agent.yaml")
    page.wait_for_selector("svg#diagram g.node")
    assert sorted(page.locator("g.node").evaluate_all("nodes => nodes.map(n => n.dataset.block)")) == \
        ["apologise", "ask", "dispatch", "done", "start"]
    assert page.locator("path.edge").count() == 5
    assert page.locator("path.edge.error").count() == 1
    page.locator('g.node[data-block="ask"]').click()
    panel = page.locator("#block-panel").inner_text()
    assert "ClaudeRequest" in panel and "inherited from Start 'start'" in panel and "tools('orders'" in panel


def test_an_offline_run_colours_the_path(page, server: str) -> None:
    page.goto(server + "/#/d/order_agent.yaml")
    page.wait_for_selector("#run-form")
    page.fill("#input-question", "Onde está o meu pedido 42?")
    page.click("#run-button")
    page.wait_for_selector("#run-status.succeeded", timeout=15000)
    visited = page.locator("g.node.visited").evaluate_all("nodes => nodes.map(n => n.dataset.block)")
    assert sorted(visited) == ["ask", "dispatch", "done", "start"]
    taken = page.locator("path.edge.taken").evaluate_all("p => p.map(e => e.dataset.source + '>' + e.dataset.target)")
    assert sorted(taken) == ["ask>dispatch", "ask>done", "dispatch>ask", "start>ask"]
    page.locator('g.node[data-block="ask"]').click()
    assert "claude-sonnet-5-5" in page.locator("#block-panel").inner_text()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "order_agent_run.png"), full_page=True)
    assert (ARTIFACTS / "order_agent_run.png").stat().st_size > 10_000
