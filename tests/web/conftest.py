"""Fixtures for the studio's tests: a copy of the examples (`folder`) and a client over the studio app in process
(`client`); for the browser tests, a real server on a loopback port, one headless Chromium per module.

The server is `engine.web.app.create_app` under uvicorn in a background thread (`lifespan="off"`), bound to a
free 127.0.0.1 port that is also passed to `create_app`, so the Host guard sees its own address. Chromium is
Debian's package, driven by Playwright; nothing is downloaded. The browser tests skip, saying why, when
Chromium, Playwright or the built front-end (engine/web/ui/dist) is absent.
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
UI_BUILD = ROOT / "engine" / "web" / "ui" / "dist"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the examples (diagrams/), each test's own to edit."""
    target = tmp_path / "diagrams"
    shutil.copytree(ROOT / "diagrams", target, ignore=shutil.ignore_patterns("*.embeddings.json", "__pycache__"))
    return target


@pytest.fixture
def client(folder: Path, tmp_path: Path) -> Callable[..., Any]:
    """The studio over `folder` (tests/web/studio_client.make_client), its runs under tmp_path/runs."""
    from tests.web.studio_client import make_client

    return make_client(folder, tmp_path / "runs")


def chromium_path() -> str | None:
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@dataclass
class Served:
    """A running studio: its base URL, the folder it serves, where its runs go."""

    url: str
    root: Path
    runs: Path
    port: int
    _server: Any = field(repr=False)
    _thread: threading.Thread = field(repr=False)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)


def serve_studio(root: Path, runs: Path, **options: Any) -> Served:
    """Starts the studio over `root` on a free loopback port; `options` go to create_app (read_only, ...)."""
    import uvicorn

    from blocks.registry import registry
    from engine.web.app import create_app

    port = free_port()
    app = create_app(root, runs, registry(), port=port, **options)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, name=f"studio-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the studio did not start on port {port}")
        time.sleep(0.02)
    return Served(f"http://127.0.0.1:{port}", root, runs, port, server, thread)


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Served]]:
    """A factory: `studio(root=None, **create_app_options)` serves a folder (a fresh empty one by default)."""
    started: list[Served] = []

    def start(root: Path | None = None, **options: Any) -> Served:
        root = root if root is not None else tmp_path_factory.mktemp("studio")
        runs = tmp_path_factory.mktemp("runs")
        served = serve_studio(root, runs, **options)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module (Debian's binary; Playwright never downloads one here)."""
    executable = chromium_path()
    if executable is None:
        pytest.skip("Chromium is absent (apt-get install chromium): browser tests skipped")
    if not (UI_BUILD / "index.html").is_file():
        pytest.skip("the studio front-end is not built (cd engine/web/ui && npm ci && npm run build): browser tests skipped")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (its own context: no storage shared between tests) of 1400×900."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
