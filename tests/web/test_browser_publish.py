"""Issue 42, item 5, in headless Chromium: Publish in the studio's header. A diagram is published with a note (the
header says "published v1"), a property is edited and saved (the header says "draft · live v1"), and what
`diagrama api` serves (the API app over the same folder) still answers v1's behaviour until Publish, then v2's.
Screenshots of the versions popover in both themes go to /work/notes/studio-publish-{light,dark}.png."""

from __future__ import annotations

import asyncio
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web.test_browser import fill_template, open_diagram, save, select_block, valid
from tests.web.test_studio_publish import GREETER

pytestmark = pytest.mark.browser  # Debian's Chromium through Playwright (slow too)

NOTES = Path("/work/notes")
KEY = "dgk_publish-test-0123456789abcdef"


def served_greeting(folder: Path, tmp_path: Path) -> str:
    """A run of the greeter through `diagrama api`'s app over the studio's folder (offline)."""
    from blocks.registry import registry
    from engine.runtime.context import Services
    from engine.web.api import create_app

    app = create_app(folder, registry=registry(), services=Services(environ={"DIAGRAMA_API_KEYS": f"ci={KEY}"}),
                     runs_dir=tmp_path / "api-runs", offline=True)

    async def go() -> str:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as caller:
            answered = await caller.post("/v1/robots/greeter/runs", json={"inputs": {"name": "Bea"}},
                                         headers={"Authorization": f"Bearer {KEY}"})
            assert answered.status_code == 200, answered.text
            return str(answered.json()["variables"]["greeting"])

    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API runs its own event loop in this thread
        return thread.submit(asyncio.run, go()).result()


def header_says(page: Any, text: str) -> None:
    page.wait_for_function("t => document.querySelector('[data-testid=\"publish-state\"]')?.textContent === t", arg=text)


def publish(page: Any, note: str, number: int) -> None:
    button = page.locator(".publish__button")
    page.wait_for_function("() => !document.querySelector('.publish__button')?.disabled")
    button.click()
    page.get_by_label(f"Publish the saved file as v{number}").fill(note)
    page.get_by_role("button", name=f"Publish v{number}").click()
    header_says(page, f"published v{number}")


def test_publish_in_the_studio_and_the_api_serves_the_published_version(page: Any, studio: Any,
                                                                        tmp_path: Path) -> None:
    folder = tmp_path / "robots"
    folder.mkdir()
    (folder / "greeter.yaml").write_text(textwrap.dedent(GREETER).lstrip(), encoding="utf-8")
    served = studio(folder)
    open_diagram(page, served, "greeter.yaml", blocks=2)
    valid(page)
    header_says(page, "never published")
    publish(page, "first greeting", 1)
    assert served_greeting(folder, tmp_path) == "Hello Bea"

    select_block(page, "greet")
    fill_template(page, "field-set-greeting", "Bye {{ name }}")
    page.locator(".publish__button:disabled").wait_for()  # unsaved: Publish waits for the save
    save(page)
    header_says(page, "draft · live v1")
    assert served_greeting(folder, tmp_path) == "Hello Bea"  # saved, not published: the API still serves v1

    publish(page, "say bye", 2)
    assert served_greeting(folder, tmp_path) == "Bye Bea"

    page.get_by_test_id("publish-state").click()
    versions = page.get_by_role("list", name="Versions")
    versions.wait_for()
    assert "say bye" in versions.inner_text() and "first greeting" in versions.inner_text()
    NOTES.mkdir(parents=True, exist_ok=True)
    for theme in ("light", "dark"):
        page.evaluate("t => window.__diagramaStudio.getState().setTheme(t)", theme)
        page.wait_for_function("t => document.documentElement.dataset.theme === t", arg=theme)
        page.screenshot(path=str(NOTES / f"studio-publish-{theme}.png"))

    page.get_by_role("button", name="Roll back to v1").click()
    header_says(page, "draft · live v3")
    assert served_greeting(folder, tmp_path) == "Hello Bea"
