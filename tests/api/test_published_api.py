"""`diagrama api` serves a robot's published version: a save changes nothing it answers until the next publish;
`--drafts` serves the files as they are; a run records the version it ran."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from engine import BlockRegistry
from engine.runs.published import publish, rollback

PARENT = """
diagram: greeter
blocks:
  - id: start
    type: Start
    inputs: {name: Ana}
    next: ask
  - id: ask
    type: Subdiagram
    with: {diagram: parts/child.yaml, inputs: {name: "{{ name }}"}}
    set: {said: "{{ variables.said }}"}
    next: greet
  - id: greet
    type: Set
    set: {greeting: "GREETING {{ said }}"}
"""
CHILD = """
diagram: child
blocks:
  - id: start
    type: Start
    inputs: {name: ""}
    next: say
  - id: say
    type: Set
    set: {said: "CHILD, {{ name }}"}
"""


def _write(folder: Path, greeting: str = "Hello", child: str = "from the child") -> None:
    (folder / "parts").mkdir(exist_ok=True)
    (folder / "greeter.yaml").write_text(textwrap.dedent(PARENT).lstrip().replace("GREETING", greeting))
    (folder / "parts" / "child.yaml").write_text(textwrap.dedent(CHILD).lstrip().replace("CHILD", child))


def _greeting(make: Callable[..., httpx.AsyncClient], app: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with make(app) as caller:
            answered = await caller.post("/v1/robots/greeter/runs", json={"inputs": {"name": "Bea"}})
            assert answered.status_code == 200, answered.text
            body: dict[str, Any] = answered.json()
            return body

    return asyncio.run(go())


def test_a_saved_edit_is_not_served_until_it_is_published(client: Callable[..., httpx.AsyncClient],
                                                         make_app: Callable[..., Any], robots_dir: Path,
                                                         api_registry: BlockRegistry) -> None:
    _write(robots_dir)
    publish(robots_dir / "greeter.yaml", api_registry, note="first")
    app = make_app()
    assert _greeting(client, app)["variables"]["greeting"] == "Hello from the child, Bea"
    _write(robots_dir, greeting="Bye", child="from the new child")  # saved, not published: parent and child
    assert _greeting(client, app)["variables"]["greeting"] == "Hello from the child, Bea"
    publish(robots_dir / "greeter.yaml", api_registry, note="second")
    assert _greeting(client, app)["variables"]["greeting"] == "Bye from the new child, Bea"
    rollback(robots_dir / "greeter.yaml", 1, api_registry)
    assert _greeting(client, app)["variables"]["greeting"] == "Hello from the child, Bea"


def test_drafts_serves_the_files_as_they_are(client: Callable[..., httpx.AsyncClient], make_app: Callable[..., Any],
                                             robots_dir: Path, api_registry: BlockRegistry) -> None:
    _write(robots_dir)
    publish(robots_dir / "greeter.yaml", api_registry)
    _write(robots_dir, greeting="Bye")
    assert _greeting(client, make_app(drafts=True))["variables"]["greeting"] == "Bye from the child, Bea"


def test_a_robot_never_published_is_served_as_its_file_is(client: Callable[..., httpx.AsyncClient],
                                                          make_app: Callable[..., Any], robots_dir: Path) -> None:
    _write(robots_dir, greeting="Hi")
    assert _greeting(client, make_app())["variables"]["greeting"] == "Hi from the child, Bea"


def test_a_run_records_the_version_it_ran(client: Callable[..., httpx.AsyncClient], make_app: Callable[..., Any],
                                          robots_dir: Path, api_registry: BlockRegistry, tmp_path: Path) -> None:
    _write(robots_dir)
    publish(robots_dir / "greeter.yaml", api_registry)
    publish(robots_dir / "greeter.yaml", api_registry)
    run_id = _greeting(client, make_app())["run_id"]
    started = json.loads((tmp_path / "runs" / run_id / "trace.jsonl").read_text().splitlines()[0])
    assert started["event"] == "run_started" and started["version"] == 2
    assert ".diagrama/versions/greeter/2/greeter.yaml" in started["path"]
